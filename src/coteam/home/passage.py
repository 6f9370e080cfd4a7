"""Two robots in one passage: who gives way, and where to.

Real robots are obstacles to each other. Face to face in a hallway or a doorway, each robot's Nav2 sees the other
in its way, makes no progress and aborts; both planners then decide again, and without a convention they send the
same goals again and meet again. The convention here is one both robots know without talking: **the robot later in
name order gives way** (it backs off to a place off the passage, out of the line the other comes along, and waits
there until the other has gone by), and the earlier one holds until its way is clear, then drives on. The executor
applies it when a navigation goal fails with a teammate close (:class:`PassageRule`), a bounded number of times per
action; past that the failure goes to the planner as any other does.

ROS-free and planner-free: the executor calls it with the teammates' poses it hears, so it is tested without DDS.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass

from coteam.domain.navigation import Cell, NavGrid, NoPathError
from coteam.domain.world import Vec2

REFUGE_REACH_M = 6.0  # the farthest a robot backs off (along its way) to leave a passage free


@dataclass(frozen=True)
class PassageRule:
    """When a failed navigation goal is a meeting in a passage, and how long the robots give it.

    ``near_m``: a teammate this close when the goal fails is in the way; ``wait_s``: the longest either robot waits
    (the one with the right of way for its way to clear, the other for it to go by); ``tries``: meetings resolved so
    per action, after which the failure is the planner's; ``clear_m``: how far off the other's line the robot giving
    way stands; ``pass_m``: how far from a robot's way the other must be for it to drive on (two bases and a
    margin)."""

    near_m: float = 1.5
    wait_s: float = 20.0
    tries: int = 3
    clear_m: float = 1.0
    pass_m: float = 0.8

    def in_the_way(self, here: Vec2, teammates: Mapping[str, Vec2]) -> str | None:
        """The teammate nearest ``here`` within ``near_m`` (ties: the first in name order); None when none is."""
        near = sorted(
            (math.dist(here, at), name) for name, at in teammates.items() if math.dist(here, at) <= self.near_m
        )
        return near[0][1] if near else None

    @staticmethod
    def gives_way(me: str, other: str) -> bool:
        """Whether ``me`` gives way to ``other``: the later name in order does (both robots agree without a word)."""
        return me > other

    def gone_by(self, here: Vec2, other_from: Vec2, other_now: Vec2) -> bool:
        """Whether the other robot has gone by a robot waiting at ``here``: it has moved on (``near_m`` from where it
        was when the robot gave way) and is not close."""
        return math.dist(other_from, other_now) >= self.near_m and math.dist(here, other_now) > self.near_m


def way_clear(
    nav: NavGrid, here: Vec2, goal: Vec2, other: Vec2, clear_m: float, ahead_m: float = REFUGE_REACH_M
) -> bool:
    """Whether a robot at ``here`` can drive on to ``goal``: ``other`` stands at least ``clear_m`` from the first
    ``ahead_m`` of its way (the grid's shortest path; a goal it has no path to is no business of a meeting)."""
    fp = nav.floorplan
    try:
        cells = nav.astar(nav.nearest_free(here), nav.nearest_free(goal))
    except NoPathError:
        return True
    for k, cell in enumerate(cells):
        if k * fp.cell_size > ahead_m:
            break
        if math.dist(fp.center_of(cell), other) < clear_m:
            return False
    return True


def refuge(nav: NavGrid, here: Vec2, other: Vec2, clear_m: float, reach_m: float = REFUGE_REACH_M) -> Vec2 | None:
    """Where a robot at ``here`` backs off to let a robot at ``other`` through: the free place nearest by way (within
    ``reach_m``, on a way that never passes the other robot: within ``clear_m`` of it, every move takes the robot
    farther from it) that lies farther from ``other``
    than ``here`` does and at least ``clear_m`` off the line from ``other`` through ``here`` (the way the other comes).
    None when there is no such place (then the robot can only wait where it is)."""
    fp = nav.floorplan
    dx, dy = here[0] - other[0], here[1] - other[1]
    norm = math.hypot(dx, dy) or 1.0
    ux, uy = dx / norm, dy / norm
    ahead = math.dist(here, other)

    def apart(cell: Cell) -> float:
        return math.dist(fp.center_of(cell), other)

    start = nav.nearest_free(here)
    way: dict[Cell, float] = {start: 0.0}
    heap = [(0.0, start)]
    while heap:  # Dijkstra round the other robot: within clear_m of it, a way only moves off from it
        cells, cell = heapq.heappop(heap)
        if cells > way[cell]:
            continue
        x, y = fp.center_of(cell)
        off_line = abs((x - other[0]) * uy - (y - other[1]) * ux)
        if off_line >= clear_m and math.dist((x, y), other) > ahead:
            return (x, y)  # the nearest by way: Dijkstra settles cells in order of their way
        for nxt, cost in nav.neighbours(cell):
            through = cells + cost
            if (
                through * fp.cell_size <= reach_m
                and through < way.get(nxt, math.inf)
                and (apart(nxt) >= clear_m or apart(nxt) > apart(cell))
            ):
                way[nxt] = through
                heapq.heappush(heap, (through, nxt))
    return None
