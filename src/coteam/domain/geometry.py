"""Headings and bearings on the map, in degrees: what a robot faces and sees (the simulator's field of view and a
memory's look-around sectors share them)."""

from __future__ import annotations

import math

from coteam.domain.world import Vec2

FULL_TURN_BINS = 24  # 15-degree sectors of a full turn
HALF_FOV_DEG = 45.0  # TDW-MAT cameras see 90 degrees


def heading_bin(heading: float) -> int:
    """The 15-degree sector a heading falls in."""
    return round((heading % 360) / 15.0) % FULL_TURN_BINS


def bearing(a: Vec2, b: Vec2) -> float:
    """The heading from ``a`` towards ``b``."""
    return math.degrees(math.atan2(b[1] - a[1], b[0] - a[0])) % 360


def angle_between(a: float, b: float) -> float:
    """The smaller angle between two headings."""
    d = abs(a - b) % 360
    return min(d, 360 - d)
