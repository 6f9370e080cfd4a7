"""The twin's robots: what some real mobile manipulators do, as their makers document them, for the twin to play
(``twin: {robots: {robot1: tiago}}`` in a team file). A profile is the robot's truth in the twin, not what coteam's
nodes are told: the team file's ``robots[].capabilities`` says what the nodes believe, and a run shows whether the
two agree.

Each profile's figures come from the maker's own packages and documentation (cited per profile): the number of
grippers, whether a door needs a free gripper (a robot whose one gripper holds an item has nothing to pull a handle
with; a two-armed one needs one of its two), and the top speed its own Nav2 configuration drives at. ``generic`` is
the benchmarks' robot the twin played before profiles: two grippers, doors opened with full hands, one simulator
move a step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TwinRobot:
    """One robot the twin can play."""

    name: str
    grippers: int
    open_needs_free_gripper: bool
    speed_mps: float | None  # the top speed its navigation drives at; None: the simulator's, one move a step
    source: str  # where the figures come from

    def grasp_refusal(self, held: int) -> str:
        """What the robot's arm driver answers to a grasp while it holds ``held`` items ('' when it can grasp)."""
        return "gripper occupied" if held >= self.grippers else ""

    def open_refusal(self, held: int) -> str:
        """What the arm driver answers to opening or closing a door while it holds ``held`` items ('' when it can)."""
        full = held >= self.grippers
        return "no free gripper to open or close with" if self.open_needs_free_gripper and full else ""


TWIN_ROBOTS: dict[str, TwinRobot] = {
    robot.name: robot
    for robot in (
        TwinRobot("generic", 2, False, None, "the benchmarks' robot (C-WAH, TDW-MAT): two hands, no door rule"),
        # PAL TIAGo: one arm with the parallel pal-gripper; PMB2 base, Nav2 DWB max_vel_x 1.0
        # (pal-robotics/tiago_robot tiago_description; tiago_navigation tiago_2dnav/params/tiago_nav_public_sim.yaml)
        TwinRobot("tiago", 1, True, 1.0, "PAL TIAGo: tiago_description, tiago_2dnav nav2 params"),
        # PAL TIAGo++ (tiago_dual): two arms, pal-gripper on both; the same PMB2 base at 1.0 m/s
        # (pal-robotics/tiago_dual_robot tiago_dual_description/robots/tiago_dual.urdf.xacro)
        TwinRobot("tiago_dual", 2, True, 1.0, "PAL TIAGo++: tiago_dual_description"),
        # Hello Robot Stretch 3: one gripper; its Nav2 drives at 0.26 m/s (driver maximum 0.3)
        # (hello-robot/stretch_ros2 stretch_nav2/config/nav2_params.yaml; stretch_body robot_params_SE3.py)
        TwinRobot("stretch3", 1, True, 0.26, "Hello Robot Stretch 3: stretch_nav2 params, stretch_body"),
        # Fetch: one 7-DoF arm with a parallel gripper; move_base max_vel_x 1.0
        # (ZebraDevs/fetch_ros fetch_navigation/config/fetch/move_base.yaml)
        TwinRobot("fetch", 1, True, 1.0, "Fetch: fetch_navigation move_base params"),
        # Toyota HSR: one hand (two fingers and a suction pad); Nav2 max_vel_x 0.3 (hsr-project/hsrb_rosnav foxy)
        TwinRobot("hsr", 1, True, 0.3, "Toyota HSR: hsrb_rosnav_config nav2 params"),
        # Trossen LoCoBot (WX250s arm, parallel gripper): Nav2 max_vel_x 0.26
        # (Interbotix/interbotix_ros_rovers interbotix_xslocobot_nav/config/nav2_params.yaml)
        TwinRobot("locobot", 1, True, 0.26, "Trossen LoCoBot: interbotix_xslocobot_nav params"),
    )
}


def twin_robot(name: str) -> TwinRobot:
    """The profile called ``name``; a one-line ValueError naming the known ones otherwise."""
    if name not in TWIN_ROBOTS:
        raise ValueError(f"no twin robot {name!r} (one of {', '.join(TWIN_ROBOTS)})")
    return TWIN_ROBOTS[name]
