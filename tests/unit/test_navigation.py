"""Grid navigation: A*, distance fields, lane paths, and polyline walking."""

from __future__ import annotations

import itertools
import math

import pytest

from coteam.domain.navigation import NavGrid, NoPathError, walk_along
from coteam.domain.world import FloorPlan, Room

# Two rooms joined by a one-cell door at (4, 2).
ROWS = (
    "#########",
    "#...#...#",
    "#.......#",
    "#...#...#",
    "#########",
)
PLAN = FloorPlan(1.0, ROWS, (Room(1, "left", 0, 0, 5, 5), Room(2, "right", 5, 0, 9, 5)))


def test_astar_goes_through_the_door_and_never_through_walls():
    nav = NavGrid(PLAN)
    path = nav.astar((1, 1), (7, 3))
    assert path[0] == (1, 1) and path[-1] == (7, 3)
    assert (4, 2) in path
    assert all(PLAN.is_free(*c) for c in path)
    for a, b in itertools.pairwise(path):
        assert max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1


def test_distance_field_matches_astar_length():
    nav = NavGrid(PLAN)
    field = nav.distance_field((1, 1))
    path = nav.astar((1, 1), (7, 3))
    length = sum(math.dist(a, b) for a, b in itertools.pairwise(path))
    assert field[(7, 3)] == pytest.approx(length)
    assert nav.path_length((1.5, 1.5), (7.5, 3.5)) == pytest.approx(length)


def test_cell_distance_reads_whichever_end_has_a_field():
    nav = NavGrid(PLAN)
    expected = nav.distance_field((1, 1))[(7, 3)]
    fresh = NavGrid(PLAN)
    assert fresh.cell_distance((7, 3), (1, 1)) == pytest.approx(expected)  # no field yet: computed from (7, 3)
    assert fresh.cell_distance((2, 3), (7, 3)) == pytest.approx(nav.distance_field((2, 3))[(7, 3)])  # (7, 3)'s field
    assert fresh.cell_distance((1, 1), (0, 0)) is None  # a wall cell is never reached
    assert nav.neighbours((0, 0)) == ()


def test_unreachable_goal_raises_and_is_infinite():
    walled = FloorPlan(1.0, ("#####", "#.#.#", "#####"), (Room(1, "a", 0, 0, 5, 3),))
    nav = NavGrid(walled)
    with pytest.raises(NoPathError):
        nav.astar((1, 1), (3, 1))
    assert math.isinf(nav.path_length((1.5, 1.5), (3.5, 1.5)))


def test_lane_path_is_four_connected_and_prefers_straight_lines():
    nav = NavGrid(PLAN)
    lane = nav.lane_path((1.5, 2.5), (7.5, 2.5))
    assert lane == [(x, 2) for x in range(1, 8)]  # straight through the door, no detour
    lane = nav.lane_path((1.5, 1.5), (7.5, 3.5))
    for a, b in itertools.pairwise(lane):
        assert abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1
    turns = sum(
        1
        for a, b, c in zip(lane, lane[1:], lane[2:], strict=False)
        if (b[0] - a[0], b[1] - a[1]) != (c[0] - b[0], c[1] - b[1])
    )
    assert turns <= 4


def test_walk_along_advances_a_fixed_distance():
    pos, rest = walk_along([(1.0, 0.0), (1.0, 2.0)], (0.0, 0.0), 1.5)
    assert pos == pytest.approx((1.0, 0.5))
    assert rest == [(1.0, 2.0)]
    pos, rest = walk_along([(1.0, 0.0)], (0.0, 0.0), 5.0)
    assert pos == (1.0, 0.0) and rest == []
