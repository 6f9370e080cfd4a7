"""The camera frames of a sim-bridge status, and what the robot's perception confirmed (or saw empty) in them.

:class:`CameraSightings` collects, per camera frame (by stamp), the ids of the semantic-map objects the frame's
detections added or confirmed (``coteam.perception.CameraPerception``) and adds those objects, as the map has them,
to the observation of the status that announces the frames (the perception node in the visual suites). ROS-free,
so it is tested without DDS.
"""

from __future__ import annotations

from collections.abc import Iterable

from coteam.observation import Observation
from coteam.perception import CameraPerception, FusedFrame

KEPT_FRAMES = 256  # frames whose sightings are kept while their status is awaited


class CameraSightings:
    """The map objects each camera frame confirmed, added to the observation of the status that announces the frame
    (by stamp, in nanoseconds). Frames no status asked for are kept (a status can arrive after its frames were
    detected in), the newest :data:`KEPT_FRAMES` of them."""

    def __init__(self, perception: CameraPerception) -> None:
        self.perception = perception
        self.frames: dict[int, FusedFrame] = {}
        self.expected: tuple[int, ...] = ()

    def add(self, stamp_ns: int, fused: FusedFrame) -> None:
        self.frames[stamp_ns] = fused
        if len(self.frames) > KEPT_FRAMES:
            for old in sorted(self.frames)[: len(self.frames) - KEPT_FRAMES]:
                if old not in self.expected:
                    del self.frames[old]

    def expect(self, stamps_ns: Iterable[int]) -> None:
        self.expected = tuple(stamps_ns)

    def missing(self) -> list[int]:
        return [t for t in self.expected if t not in self.frames]

    def merged(self, obs: Observation) -> Observation:
        """``obs`` with the map's items that the expected frames confirmed and that it does not already show, and
        those whose places they saw empty; the frames are then forgotten."""
        fused = [f for f in (self.frames.pop(t, None) for t in self.expected) if f is not None]
        self.frames = {t: f for t, f in self.frames.items() if t > max(self.expected, default=-1)}
        self.expected = ()
        confirmed = [i for f in fused for i in f.confirmed]
        return self.perception.merged(obs, confirmed, [i for f in fused for i in f.seen_empty])
