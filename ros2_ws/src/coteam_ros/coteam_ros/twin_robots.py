"""The twin's robots: what some real mobile manipulators do, as their makers document them, for the twin to play
(``twin: {robots: {robot1: tiago}}`` in a team file). A profile is the robot's truth in the twin, not what coteam's
nodes are told: the team file's ``robots[].capabilities`` says what the nodes believe, and a run shows whether the
two agree.

Each profile's figures come from the maker's own packages and documentation (cited per profile): the number of
grippers, whether a door needs a free gripper (a robot whose one gripper holds an item has nothing to pull a handle
with; a two-armed one needs one of its two), the top speed its own Nav2 configuration drives at, and the radius of
its base (robots are obstacles to each other: :func:`robot_in_the_way`). ``generic`` is the benchmarks' robot the
twin played before profiles: two grippers, doors opened with full hands, one simulator move a step, a 0.25 m base.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from coteam.agent.skills import Manipulation, ManipulationKind
from coteam.domain.navigation import NavGrid
from coteam.domain.world import WorldState
from coteam.senses.perception import Detection
from coteam_ros.tf import RigidTransform

CLEARANCE_M = 0.1  # the gap a robot's Nav2 keeps to another robot's base, beyond both bases
Vec = tuple[float, float]


@dataclass(frozen=True)
class TwinRobot:
    """One robot the twin can play."""

    name: str
    grippers: int
    open_needs_free_gripper: bool
    speed_mps: float | None  # the top speed its navigation drives at; None: the simulator's, one move a step
    radius_m: float  # the base's radius (half its diameter, or of its footprint's diagonal)
    source: str  # where the figures come from

    def capabilities(self) -> dict[str, object]:
        """The team file's ``robots[].capabilities`` that describe this robot as its maker does."""
        body: dict[str, object] = {"grippers": self.grippers, "open_needs_free_gripper": self.open_needs_free_gripper}
        return body if self.speed_mps is None else {**body, "speed_mps": self.speed_mps}

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
        TwinRobot("generic", 2, False, None, 0.25, "the benchmarks' robot (C-WAH, TDW-MAT): two hands, no door rule"),
        # PAL TIAGo: one arm with the parallel pal-gripper; PMB2 base (54 cm across), Nav2 DWB max_vel_x 1.0
        # (pal-robotics/tiago_robot tiago_description; tiago_navigation tiago_2dnav/params/tiago_nav_public_sim.yaml)
        TwinRobot("tiago", 1, True, 1.0, 0.27, "PAL TIAGo: tiago_description, tiago_2dnav nav2 params"),
        # PAL TIAGo++ (tiago_dual): two arms, pal-gripper on both; the same PMB2 base at 1.0 m/s
        # (pal-robotics/tiago_dual_robot tiago_dual_description/robots/tiago_dual.urdf.xacro)
        TwinRobot("tiago_dual", 2, True, 1.0, 0.27, "PAL TIAGo++: tiago_dual_description"),
        # Hello Robot Stretch 3: one gripper; a 34 x 33 cm base; its Nav2 drives at 0.26 m/s (driver maximum 0.3)
        # (hello-robot/stretch_ros2 stretch_nav2/config/nav2_params.yaml; stretch_body robot_params_SE3.py)
        TwinRobot("stretch3", 1, True, 0.26, 0.24, "Hello Robot Stretch 3: stretch_nav2 params, stretch_body"),
        # Fetch: one 7-DoF arm with a parallel gripper; a 56 cm round base; move_base max_vel_x 1.0
        # (ZebraDevs/fetch_ros fetch_navigation/config/fetch/move_base.yaml)
        TwinRobot("fetch", 1, True, 1.0, 0.28, "Fetch: fetch_navigation move_base params"),
        # Toyota HSR: one hand (two fingers and a suction pad); a 43 cm round base; Nav2 max_vel_x 0.3
        # (hsr-project/hsrb_rosnav foxy)
        TwinRobot("hsr", 1, True, 0.3, 0.22, "Toyota HSR: hsrb_rosnav_config nav2 params"),
        # Trossen LoCoBot (WX250s arm, parallel gripper) on a Kobuki base (35 cm round): Nav2 max_vel_x 0.26
        # (Interbotix/interbotix_ros_rovers interbotix_xslocobot_nav/config/nav2_params.yaml)
        TwinRobot("locobot", 1, True, 0.26, 0.18, "Trossen LoCoBot: interbotix_xslocobot_nav params"),
    )
}


def twin_robot(name: str) -> TwinRobot:
    """The profile called ``name``; a one-line ValueError naming the known ones otherwise."""
    if name not in TWIN_ROBOTS:
        raise ValueError(f"no twin robot {name!r} (one of {', '.join(TWIN_ROBOTS)})")
    return TWIN_ROBOTS[name]


@dataclass(frozen=True)
class TwinDetector:
    """What a twin robot's object detector gets wrong, as real ones do (``twin: {detector: {...}}``): a position
    error (Gaussian, ``noise_m`` across), objects in view missed in a frame (``miss``, a probability), a false
    detection of some class in view (``false_rate`` per frame; only a detector of classes without ids makes them),
    and a view limited to ``range_m`` and a camera's horizontal ``fov_deg``, the head panning by one field of view a
    frame (a look all round every 360 / ``fov_deg`` frames; what is beside the base is always seen). The defaults
    see everything in the room exactly."""

    noise_m: float = 0.0
    miss: float = 0.0
    false_rate: float = 0.0
    range_m: float | None = None
    fov_deg: float | None = None

    BESIDE_M = 0.6  # what is this close to the base is seen whatever the head looks at (the arm's own camera)

    def looks(self, heading_deg: float, frame: int) -> float:
        """The direction (degrees) the camera looks in at ``frame``."""
        if self.fov_deg is None:
            return heading_deg
        return (heading_deg + (frame % math.ceil(360.0 / self.fov_deg)) * self.fov_deg) % 360.0

    def in_view(self, robot_at: Vec, heading_deg: float, frame: int, at: Vec) -> bool:
        far = math.dist(robot_at, at)
        if far <= self.BESIDE_M:
            return True
        if self.range_m is not None and far > self.range_m:
            return False
        if self.fov_deg is None:
            return True
        bearing = math.degrees(math.atan2(at[1] - robot_at[1], at[0] - robot_at[0]))
        off = (bearing - self.looks(heading_deg, frame) + 180.0) % 360.0 - 180.0
        return abs(off) <= self.fov_deg / 2

    def detect(
        self,
        truth: Sequence[Detection],
        robot_at: Vec,
        heading_deg: float,
        frame: int,
        rng: random.Random,
        false_classes: Sequence[Detection] = (),
    ) -> list[Detection]:
        """What the detector reports of ``truth`` (the objects the robot could see, exactly) at ``frame``;
        ``false_classes``: detections of the classes it may wrongly see (a false one takes one's class, at a place in
        view); none when empty."""
        seen = []
        for d in truth:
            if not self.in_view(robot_at, heading_deg, frame, d.position) or rng.random() < self.miss:
                continue
            if self.noise_m > 0:
                d = replace(
                    d, position=(d.position[0] + rng.gauss(0, self.noise_m), d.position[1] + rng.gauss(0, self.noise_m))
                )
            seen.append(d)
        if false_classes and rng.random() < self.false_rate:
            like = rng.choice(list(false_classes))
            far = rng.uniform(self.BESIDE_M, self.range_m or 3.0)
            half = (self.fov_deg or 360.0) / 2
            towards = math.radians(self.looks(heading_deg, frame) + rng.uniform(-half, half))
            at = (robot_at[0] + far * math.cos(towards), robot_at[1] + far * math.sin(towards))
            seen.append(replace(like, object_id=-1, container="", position=at, holder=""))
        return seen


@dataclass
class TwinOdometry:
    """A twin robot's wheel odometry, which drifts as real odometry does, and its localisation, which corrects it
    at its own rate (``twin: {odometry: {...}}``): each metre driven adds a random error of ``drift_m_per_m`` metres
    and ``drift_deg_per_m`` degrees to the odometry (``odom -> base_link``), and ``map -> odom`` (the robot's
    localisation, as AMCL publishes it) takes the error out ``localisation_hz`` times a second, stamped
    ``future_s`` ahead (AMCL's transform_tolerance). Between two corrections the robot's pose on the map is off by
    the drift since the last one."""

    drift_m_per_m: float = 0.0
    drift_deg_per_m: float = 0.0
    localisation_hz: float = 2.0
    future_s: float = 0.5
    map_to_odom: RigidTransform = field(default_factory=RigidTransform.identity)

    @property
    def drifts(self) -> bool:
        return self.drift_m_per_m > 0 or self.drift_deg_per_m > 0

    def drove(self, at: Vec, metres: float, rng: random.Random) -> None:
        """The robot drove ``metres`` to ``at``: the odometry's error grows by a random step about where it is."""
        if metres <= 0 or not self.drifts:
            return
        spread = self.drift_m_per_m * metres
        step = RigidTransform.of(
            rng.gauss(0, spread), rng.gauss(0, spread), yaw_deg=rng.gauss(0, self.drift_deg_per_m * metres)
        )
        about = RigidTransform.of(at[0], at[1])
        self.map_to_odom = about @ step @ about.inverse() @ self.map_to_odom

    def odom_pose(self, base: RigidTransform) -> RigidTransform:
        """``base_link -> odom`` of a robot whose true pose on the map is ``base``."""
        return self.map_to_odom.inverse() @ base


def object_in_front(
    world: WorldState, robot: str, request: Manipulation, object_class: str, near: Vec | None, reach_m: float
) -> int:
    """The object a real arm whose robot's detector gives no ids handles for ``request`` (the id the robot's map
    labels it by, of ``object_class``, seen at ``near``): a grasp takes the object of that class within ``reach_m``
    of the robot that is nearest ``near`` (the labelled one when it is such an object; a door is never in the way
    of a class); a put or drop lets go of what the hand holds, the labelled object or one of its class. The
    labelled object when there is none such (the twin's rules then say what fails)."""
    asked = request.object_id
    if not object_class and world.is_item(asked):
        object_class = world.item(asked).name
    agent = world.agents[robot]
    if request.kind == ManipulationKind.GRASP:
        here = agent.position if near is None else near
        candidates = [
            item
            for item in world.placements
            if world.item(item).name == object_class
            and world.held_by(item) is None
            and not world.hidden_in_closed(item)
            and math.dist(agent.position, world.position_of(item)) <= reach_m + 1e-6
        ]
        return min(candidates, key=lambda i: (math.dist(here, world.position_of(i)), i != asked), default=asked)
    if request.kind in (ManipulationKind.PUT, ManipulationKind.PUT_IN, ManipulationKind.DROP):
        hands = [agent.hands[request.hand]] if 0 <= request.hand < len(agent.hands) else list(agent.hands)
        held = [item for item in hands if item is not None]
        if asked in held:
            return asked
        return next((item for item in held if world.item(item).name == object_class), asked)
    return asked


def robot_in_the_way(
    me: str,
    before: tuple[float, float],
    after: tuple[float, float],
    bases: Mapping[str, tuple[tuple[float, float], float]],
) -> str | None:
    """The robot that keeps ``me`` from moving from ``before`` to ``after`` (``bases``: each robot's position and base
    radius, ``me``'s own included): one whose base the move comes within :data:`CLEARANCE_M` of, closing in on it. A
    move away from a robot is free (a robot can always back off). None when the way is clear."""
    radius = bases[me][1]
    for other, (at, other_radius) in sorted(bases.items()):
        gap = radius + other_radius + CLEARANCE_M
        if other != me and math.dist(after, at) < gap and math.dist(after, at) < math.dist(before, at):
            return other
    return None


NEAR_ENDS_M = 0.75  # a held robot's way round may pass by walls this close to its start and its goal


def detour(nav: NavGrid, here: Vec, goal: Vec, radius: float, others: Sequence[tuple[Vec, float]]) -> Vec | None:
    """Where a robot held by other robots heads next to get round them, as Nav2's planner routes round an obstacle
    in its costmap: the next cell of the shortest way to ``goal`` that keeps off every other robot's disc
    (``others``: position and the gap to keep) and keeps the robot's base (``radius``) off the walls, but near its
    start and goal (:data:`NEAR_ENDS_M`). None when there is no way round (a passage too narrow for two): the robot
    stays held."""
    fp = nav.floorplan
    round_base = [(radius * math.cos(a * math.pi / 4), radius * math.sin(a * math.pi / 4)) for a in range(8)]

    def passable(point: Vec) -> bool:
        if any(math.dist(point, at) < gap for at, gap in others):
            return False
        if min(math.dist(point, here), math.dist(point, goal)) < NEAR_ENDS_M:
            return True
        return all(fp.is_free(*fp.cell_of((point[0] + dx, point[1] + dy))) for dx, dy in round_base)

    start, end = nav.nearest_free(here), nav.nearest_free(goal)
    came: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
    cost = {start: 0.0}
    heap = [(0.0, start)]
    while heap:
        d, cell = heapq.heappop(heap)
        if cell == end:
            break
        if d > cost[cell]:
            continue
        for nxt, step in nav.neighbours(cell):
            if d + step < cost.get(nxt, math.inf) and passable(fp.center_of(nxt)):
                cost[nxt], came[nxt] = d + step, cell
                heapq.heappush(heap, (d + step, nxt))
    if end not in came or end == start:
        return None
    cell = end
    while came[cell] != start:
        cell = came[cell]  # type: ignore[assignment]
    return fp.center_of(cell)
