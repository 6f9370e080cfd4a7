"""Two robots meeting in a passage: the convention for who gives way, and where the one giving way backs off to."""

from __future__ import annotations

import math

from coteam.domain.navigation import NavGrid
from coteam.domain.world import FloorPlan, Room
from coteam.home.passage import PassageRule, refuge

# two 4 x 4 m rooms joined by a hallway one cell (0.5 m) wide and 3.5 m long (x = 4.5 .. 8.0, y = 2.0 .. 2.5)
ROWS = (
    "#########################",
    "#........#######........#",
    "#........#######........#",
    "#........#######........#",
    "#.......................#",
    "#........#######........#",
    "#........#######........#",
    "#........#######........#",
    "#########################",
)
PLAN = FloorPlan(0.5, ROWS, (Room(1, "west", 0, 0, 9, 9), Room(2, "hall", 9, 0, 17, 9), Room(3, "east", 17, 0, 25, 9)))


def test_the_later_name_gives_way_and_a_teammate_counts_only_when_close() -> None:
    rule = PassageRule(near_m=1.5)
    assert rule.gives_way("robot2", "robot1") and not rule.gives_way("robot1", "robot2")
    assert rule.in_the_way((5.0, 2.2), {"robot2": (6.0, 2.2), "robot3": (5.5, 2.2)}) == "robot3"
    assert rule.in_the_way((5.0, 2.2), {"robot2": (7.0, 2.2)}) is None
    # gone by: it moved on from where it was and is no longer close
    assert not rule.gone_by((3.0, 1.0), (6.0, 2.2), (5.0, 2.2))  # moved only 1 m
    assert not rule.gone_by((3.0, 1.0), (6.0, 2.2), (3.5, 2.2))  # moved on, but still close
    assert rule.gone_by((3.0, 0.5), (6.0, 2.2), (1.0, 2.2))


def test_the_robot_giving_way_backs_off_out_of_the_hallway_and_off_the_others_line() -> None:
    nav = NavGrid(PLAN)
    here, other = (5.25, 2.25), (6.75, 2.25)  # face to face in the hallway, robot at here heading east
    spot = refuge(nav, here, other, clear_m=1.0)
    assert spot is not None
    assert spot[0] < 4.5, "back in the west room, out of the hallway"
    assert abs(spot[1] - 2.25) >= 1.0, "off the line the other robot comes along"
    assert math.dist(spot, other) > math.dist(here, other)
    assert nav.path_length(here, spot) <= 6.0
    # the other way round: back into the east room, never past the other robot
    spot = refuge(nav, other, here, clear_m=1.0)
    assert spot is not None and spot[0] > 8.0 and abs(spot[1] - 2.25) >= 1.0, spot
    # nowhere to go within reach: None (the robot can only wait)
    assert refuge(nav, here, other, clear_m=1.0, reach_m=1.0) is None


def test_the_robot_giving_way_never_squeezes_past_the_other_in_a_hallway_wide_enough_to_try() -> None:
    """A hallway 1 m wide (four 0.25 m cells): the cells beside the other robot are free, but a robot giving way
    backs off the way it came rather than round the robot it gives way to."""
    wall, room, hall = "#" * 50, "#" + "." * 16 + "#" * 16 + "." * 16 + "#", "#" + "." * 48 + "#"
    rows = (wall, *[room] * 7, *[hall] * 4, *[room] * 5, wall)
    nav = NavGrid(FloorPlan(0.25, rows, (Room(1, "west", 0, 0, 17, 18), Room(2, "east", 17, 0, 50, 18))))
    east, west = (6.05, 2.1), (5.37, 2.1)  # 0.68 m apart, face to face in the hallway (x = 4.25 .. 8.25)
    spot = refuge(nav, east, west, clear_m=1.0)
    assert spot is not None and spot[0] > 8.25, spot
    spot = refuge(nav, west, east, clear_m=1.0)
    assert spot is not None and spot[0] < 4.25, spot


def test_the_robot_with_the_right_of_way_drives_on_once_the_other_stands_clear_of_its_way() -> None:
    from coteam.home.passage import way_clear

    nav = NavGrid(PLAN)
    here, goal = (5.25, 2.25), (10.0, 2.25)  # in the hallway, heading east
    assert not way_clear(nav, here, goal, (6.75, 2.25), clear_m=1.0)  # the other in the hallway ahead
    assert not way_clear(nav, here, goal, (9.0, 2.25), clear_m=1.0)  # out of the hallway, still on the way
    assert way_clear(nav, here, goal, (8.75, 3.75), clear_m=1.0)  # stepped aside in the east room
    assert way_clear(nav, here, goal, (2.0, 2.25), clear_m=1.0)  # behind
