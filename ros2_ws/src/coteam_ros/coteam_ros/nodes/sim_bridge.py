"""The sim_bridge node: the embedded simulator as the robots' world, over ROS 2.

One per world. It runs the task of the scene file ``scene_path`` (the one every robot's nodes read, see
``coteam_ros.episode``) with ``seed``; the results name the suite ``suite``. A bridge suite's episode ``episode``
runs on ``engine`` (``coteam_sim.bridges``: AI2-THOR or TDW, ``unity`` or ``fake``), its Unity build started as
``thor_executable``, ``thor_platform``, ``tdw_port`` and ``tdw_launch`` say. For every robot (namespace from
``namespaces``, default ``/<robot>``) it publishes after every simulation step ``status``
(``coteam_interfaces/RobotStatus``: the robot's observation as JSON; latched), ``odom`` (``nav_msgs/Odometry``) and
``detections`` (``vision_msgs/Detection3DArray``: an oracle detector, what the robot sees but holds), and serves
``navigate_to_pose`` (the simulator's navigator, one primitive per step, with Nav2's interface: feedback every step,
cancel, a newer goal preempts) and ``manipulate`` (one primitive in the next step). World topics: ``/map``
(``nav_msgs/OccupancyGrid``, latched), ``/clock`` (simulated time: one benchmark clock unit lasts ``1 / tick_hz`` s)
and the transforms (``coteam_ros.tf``): ``map -> <robot>/odom`` and
``<robot>/camera_link -> <robot>/camera_optical_frame`` on ``/tf_static``, ``<robot>/odom -> <robot>/base_link`` at
every step on ``/tf``.

Cameras (parameter ``cameras``, for the visual suites): every step, each robot's head camera (``coteam_sim.camera``:
C-WAH looks round its room in six views, TDW-MAT ahead) is published as ``camera/image_raw`` (``rgb8``),
``camera/depth/image_raw`` (``32FC1``, metres) and ``camera/camera_info``, frame ``<robot>/camera_optical_frame``,
one stamp per view (the step's stamp plus 1, 2, ... microseconds) with ``<robot>/odom -> <robot>/base_link`` and
``<robot>/base_link -> <robot>/camera_link`` (the mount, turned by the head's pan) on ``/tf`` at that stamp. The
robots' perception nodes detect the items. The bridge publishes no ``detections`` then, and it publishes the status
as ``sim_status``: it lists only what the hand camera sees (items within reach,
``coteam_sim.camera.VisualObservations``) and, in ``camera_stamps``, the frames of the step; the perception node
adds what it detected in them and publishes the robot's ``status``. Camera topics and ``/tf`` are not latched, so
the first step is published once every robot's perception node listens (or after ``startup_timeout_s``).

Modes (parameter ``mode``):

* ``lockstep``: step ``t`` happens once every robot has sent its ``step_tick`` for ``t``
  (``coteam_interfaces/StepTick``: a robot ready at ``t`` acts through its accepted goal, sends a message, or
  idles; a robot in the middle of an action answers ``OBSERVED`` once its planner has taken the status in, so no
  planner misses a step's observation) -- deterministic, step for step the in-process runner. A robot silent for
  ``tick_timeout_s`` (``startup_timeout_s`` before its first tick) idles that step if it is ready and is not waited
  for again until it ticks: a dead teammate never hangs the team.
* ``realtime``: a step every ``1 / tick_hz`` s with whatever the robots have ready (a navigation goal drives
  on by itself); a robot without anything waits. The clock starts once every robot has answered step 0 (or after
  ``startup_timeout_s``).

Twin mode (parameter ``twin``, with ``mode`` realtime; ``coteam launch`` of a hardware team file with ``twin:``): the
bridge stands in for real robots, whose nodes run as on hardware (``robot_state``, ``navigation: nav2``). Robots keep
their names (``robots``: the task's, e.g. a world file's robot1, robot2; the simulator knows them as its agents in the
order of their start poses), and each is offered exactly what a real robot offers: ``navigate_to_pose``, ``manipulate``
(its result when done), ``detections`` (what the robot sees), ``odom`` and its TF; no status, nor ticks: the clock
starts once every robot's ``detections`` and ``odom`` have a subscriber (or after ``startup_timeout_s``). The episode
goes on past the goal (the team must see for itself that it is done) until the bridge is stopped or the task's
``time_limit_s`` passes (a serving team's twin, ``serve``, runs until it is stopped: its tasks come and go);
``results_path`` then holds what really happened (complete, with every robot's Nav2 and arm goals by how they ended
under ``meta.goals``, and those still running when it stopped), and each decision in the trace carries ``twin_step``,
the bridge's step when it arrived (the robots count their own). ``robot_profiles_json`` (robot -> a
``coteam_ros.twin_robots`` profile, default ``generic``) says which real robot each plays: its grippers (a grasp with
every gripper full, or a door with every gripper full on a robot that needs a free one, fails at once as its arm driver
says), and its top speed (kept as a speed limit is; ``meta.robots`` in the results). As Nav2, it ends a canceled
navigation goal once the base has stopped (:data:`BRAKING_S` later), and its arm refuses a goal while the base still
moves (``the base is moving``, counted as ``manipulations while driving``). ``faults_json``
(``coteam_ros.faults.TwinFault``) makes it play a real robot's faults: Nav2 refusing or aborting a goal, a robot that
never moves, an arm that never answers, odometry or detections falling silent. With ``cameras`` (a team file with
``perception:``) a twin offers camera images instead of detections: every ``1 / camera_hz`` s (default 1) each robot's
head looks round once, its views published as above (RGB-D, camera info, the mount on TF; a world file's map draws walls
high and the furniture inside rooms table-high), and the robots' own perception nodes detect the items; a
``detections_stop`` fault stops its images.

With ``robots_block`` a twin's robots are obstacles to each other (``coteam_ros.twin_robots.robot_in_the_way``; a
held robot routes round the other where the map leaves room, ``detour``; held :data:`HELD_ABORT_S`, its Nav2 goal
aborts with 105).

Messages: a ``MESSAGE`` tick spends the robot's step sending; the simulator times delivery by the benchmark's
rules and the receivers' status lists the delivered messages (sender, step) without their text, which robots
get only from ``/team/messages``. Decisions (``decision``) are collected for the results.

At the end of the episode (goal reached or horizon) it publishes a last status with ``episode_done``, writes
``results_path`` (``coteam_harness.results.write_results``) and ``trace_path`` (a ``coteam-trace/1`` JSON) when set,
and exits 0. Stopped mid-episode (SIGINT / SIGTERM) it writes both for the steps done, the results marked
incomplete; killed outright, it leaves the trace's journal (``<trace>.partial.jsonl``, flushed every step).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from coteam_interfaces.action import Manipulate
from coteam_interfaces.msg import Decision, RobotStatus, StepTick
from geometry_msgs.msg import Point, Pose, PoseStamped, PoseWithCovariance, Quaternion
from nav_msgs.msg import MapMetaData, OccupancyGrid, Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header
from vision_msgs.msg import Detection3DArray

from coteam.agent.skills import Manipulation, ManipulationKind, NavGoal, NavResult
from coteam.domain.observation import Message, Observation, observation_to_dict
from coteam.domain.world import AGENT_NAMES, Benchmark, Scene
from coteam.registry import method_config, observes_world
from coteam.senses.perception import Detection, detection_from_view
from coteam.senses.vision import CameraMount
from coteam_harness.meter import RUNTIME_COUNTS, EpisodeMeter
from coteam_harness.results import EpisodeResult, write_results
from coteam_harness.trace import TraceRecorder, journal_path
from coteam_ros.convert import (
    camera_info_to_msg,
    depth_to_msg,
    detections_to_msg,
    pose_to_nav_goal,
    rgb_to_msg,
    yaw_quaternion,
)
from coteam_ros.episode import load_episode
from coteam_ros.faults import TwinFault
from coteam_ros.goals import DeferredGoals, goal_key
from coteam_ros.qos import CAMERA, DECISIONS, LATCHED, STREAM
from coteam_ros.runtime import STARTUP_ERRORS, cannot_start, navigate_to_pose_action, speed_limit_message
from coteam_ros.tf import (
    CAMERA_LINK_TO_OPTICAL,
    RigidTransform,
    TransformPublisher,
    camera_mount_transform,
    stamp_ns,
)
from coteam_ros.twin_robots import (
    CLEARANCE_M,
    TWIN_ROBOTS,
    TwinDetector,
    TwinOdometry,
    TwinRobot,
    detour,
    object_in_front,
    robot_in_the_way,
    twin_robot,
)
from coteam_sim.bridges import ENGINES, Bridge, bridge_for
from coteam_sim.bridges.settings import TdwSettings, UnitySettings
from coteam_sim.camera import VisualObservations
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.navigator import GoalNavigator, manipulation_primitive
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import SUITES, get_suite

NODE_NAME = "sim_bridge"
HANDS = {"": -1, "left": 0, "right": 1}
VIEW_STAMP_NS = 1000  # a step's camera views are stamped this far apart, the first this far after the step's stamp
BRAKING_S = 0.4  # a twin's canceled Nav2 goal ends this long after the cancel: the controller stops the base first
# a twin's robot held by another robot this long fails its goal as Nav2's progress checker fails the controller
# (movement_time_allowance, 10 s by default; the twin plays no recovery behaviours before it aborts)
HELD_ABORT_S = 10.0
NAV2_CODES = {"not reachable": 208, "blocked": 105, "held by a robot": 105}  # planner NO_VALID_PATH, controller
# FAILED_TO_MAKE_PROGRESS (nav2_msgs ComputePathToPose / FollowPath, Kilted): the codes a twin aborts with
POSE_HISTORY = 64  # a twin's robot poses kept (by stamp), to stamp its detections in the past
SERVING_TWIN_S = 365 * 24 * 3600.0  # a serving team's twin: a year, i.e. until it is stopped
RESULTS_GRACE_S = 2.0  # after the last step, time for in-flight decisions to arrive (0.5 s was too short under load)


def hand_index(hand: str) -> int:
    """``Manipulate.hand`` ("left", "right", "" for any) as the simulator's arm index (-1 for any)."""
    if hand not in HANDS:
        raise ValueError(f"unknown hand {hand!r} (left, right or empty)")
    return HANDS[hand]


@dataclass
class ActiveNavigation:
    handle: ServerGoalHandle
    navigator: GoalNavigator
    planned: Primitive | None = None  # this step's primitive
    planned_step: int = -1
    stalled: bool = False  # a twin's fault: accepted, but the robot never moves
    stopped_at: int | None = None  # a twin's canceled goal: the step its base has stopped by (then the goal ends)
    held: Primitive | None = None  # a twin's: the move another robot kept it from making (tried again next step)
    held_since: int | None = None  # a twin's: the step since which other robots have kept it from moving
    moving: Primitive | None = None  # the last move planned: a slow twin robot is still on it (the navigator waits)


@dataclass
class PendingManipulation:
    handle: ServerGoalHandle
    primitive: Primitive
    silent: bool = False  # a twin's fault: the arm never answers (until the goal is canceled)
    handled: int = -1  # the object the arm handles (a twin's truth)


@dataclass
class CameraPublishers:
    image: Any
    depth: Any
    info: Any


@dataclass
class RobotSlot:
    name: str
    namespace: str
    status: Any
    odom: Any
    detections: Any
    camera: CameraPublishers | None = None
    navigation: ActiveNavigation | None = None
    manipulation: PendingManipulation | None = None
    tick: StepTick | None = None
    waited_since: float = 0.0
    responsive: bool = True
    ever_ticked: bool = False
    counts: Counter[str] = field(default_factory=Counter)  # navigation and manipulation goals, by how they ended
    speed_limit: float = 0.0  # a twin's: m/s from the robot's speed_limit (Nav2's controller keeps to it); 0: none
    still_until: int = 0  # a twin's: under a speed limit, the step before which the robot does not move again
    top_speed: float = 0.0  # a twin's: the fastest it drove (m/s, one move over the steps it took)
    robot: TwinRobot = TWIN_ROBOTS["generic"]  # a twin's: the real robot it plays (coteam_ros.twin_robots)
    odometry: TwinOdometry = field(default_factory=TwinOdometry)  # a twin's: how its odometry drifts
    localised_ns: int = -1  # a twin's whose odometry drifts: the stamp of its last map -> odom
    poses: deque[tuple[int, RigidTransform]] = field(default_factory=lambda: deque(maxlen=POSE_HISTORY))  # by stamp
    poses_unsent: deque[tuple[int, RigidTransform]] = field(default_factory=deque)  # a lagging TF's, not yet sent

    def running_goals(self) -> int:
        """A twin's: its Nav2 and arm goals not ended yet (when the run stops: goals its robot left running)."""
        return int(self.navigation is not None and self.navigation.stopped_at is None) + int(
            self.manipulation is not None
        )

    def drive_speed(self) -> float:
        """A twin's top speed now: its robot's, under the speed limit it was given (0: one move a step)."""
        speeds = [v for v in (self.speed_limit, self.robot.speed_mps or 0.0) if v > 0]
        return min(speeds, default=0.0)


class SimBridgeNode(Node):
    """Hosts one simulated episode for a team of robots (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.suite: str = self.declare_parameter("suite", "").value
        self.seed: int = self.declare_parameter("seed", 0).value
        self.mode: str = self.declare_parameter("mode", "lockstep").value
        self.tick_hz: float = self.declare_parameter("tick_hz", 10.0).value
        robots: list[str] = list(self.declare_parameter("robots", ["alice", "bob"]).value)
        namespaces = list(self.declare_parameter("namespaces", [""]).value)
        self.method: str = self.declare_parameter("method", "pce").value
        params = json.loads(self.declare_parameter("params_json", "{}").value or "{}")
        self.results_path: str = self.declare_parameter("results_path", "").value
        self.trace_path: str = self.declare_parameter("trace_path", "").value
        self.tick_timeout_s: float = self.declare_parameter("tick_timeout_s", 5.0).value
        self.startup_timeout_s: float = self.declare_parameter("startup_timeout_s", 60.0).value
        cameras: bool = self.declare_parameter("cameras", False).value
        self.twin: bool = self.declare_parameter("twin", False).value
        camera_hz: float = self.declare_parameter("camera_hz", 1.0).value
        time_limit_s: float = self.declare_parameter("time_limit_s", 0.0).value
        if self.declare_parameter("serve", False).value:  # the home lives on; people's tasks keep their own time
            time_limit_s = SERVING_TWIN_S
        self.faults = TwinFault.parse(json.loads(self.declare_parameter("faults_json", "[]").value or "[]"))
        # a twin's sensors as real ones behave: TF published late, detections in the camera's frame, stamped earlier
        self.tf_lag_ns = round(self.declare_parameter("tf_lag_s", 0.0).value * 1e9)
        self.robots_block: bool = self.declare_parameter("robots_block", False).value
        self.detections_delay_ns = round(self.declare_parameter("detections_delay_s", 0.0).value * 1e9)
        self.detections_frame: str = self.declare_parameter("detections_frame", "map").value
        # what its detectors get wrong; without ids, its arms take the object of the asked class in front of them
        detector = json.loads(self.declare_parameter("detector_json", "{}").value or "{}")
        self.detections_ids: bool = detector.pop("ids", True)
        self.detector = TwinDetector(**detector)
        self.detector_rngs: dict[str, random.Random] = {}  # robot -> its detector's errors, seeded by the episode's
        odometry = json.loads(self.declare_parameter("odometry_json", "{}").value or "{}")
        self.drift_rngs: dict[str, random.Random] = {}  # robot -> its odometry's errors
        if self.detections_frame not in ("map", "optical"):
            raise ValueError(f"detections_frame must be map or optical, not {self.detections_frame!r}")
        self.camera_mount = camera_mount_transform(CameraMount())  # camera_link -> base_link, a fixed head
        # a twin's robots: robot -> the real robot it plays (coteam_ros.twin_robots; default generic)
        profiles = json.loads(self.declare_parameter("robot_profiles_json", "{}").value or "{}")
        playing = {robot: twin_robot(profile) for robot, profile in profiles.items()}
        self.nav_type = navigate_to_pose_action()
        if self.mode not in ("lockstep", "realtime"):
            raise ValueError(f"mode must be lockstep or realtime, not {self.mode!r}")
        if namespaces == [""]:
            namespaces = ["/" + r for r in robots]
        if len(namespaces) != len(robots):
            raise ValueError(f"{len(namespaces)} namespaces for {len(robots)} robots")

        scene_path: str = self.declare_parameter("scene_path", "").value
        self.scene = load_episode(scene_path, self.seed, robots).scene
        self.episode_name = self.scene.name
        # a robot's frames and topics carry its name; the simulator knows it as one of its agents (alice, bob, ...)
        self.frame_of = {agent: agent for agent in robots}
        if self.twin:
            if self.mode != "realtime":
                raise ValueError("a twin runs in real time (mode realtime)")
            self.scene, self.frame_of = twin_scene(self.scene, robots, time_limit_s * self.tick_hz)
            namespaces = [namespaces[robots.index(name)] for name in self.frame_of.values()]
            robots = list(self.frame_of)
        full_observability = observes_world(self.method, params)
        self.method_params = method_config(self.method, params).recorded()
        self.team_name = self.method
        self.env = CoteamParallelEnv(self.scene.benchmark, len(robots), full_observability=full_observability)
        if self.env.possible_agents != robots:
            raise ValueError(f"robots must be the simulator's agents {self.env.possible_agents}, got {robots}")
        bridge = self._bridge(self.declare_parameter("episode", 0).value, self.declare_parameter("engine", "").value)
        options = {"bridge": bridge} if bridge is not None else {"scene": self.scene, "end_at_goal": not self.twin}
        obs, _ = self.env.reset(seed=self.seed, options=options)
        assert self.env.sim is not None
        self.sim = self.env.sim
        if bridge is not None and replace(self.sim.scene, agent_starts=()) != replace(self.scene, agent_starts=()):
            raise ValueError(f"{self.suite}: the engine's session differs from the robots' scene file {scene_path}")
        self.scene = self.sim.scene  # a bridge's: the engine's session (where it put the robots)
        self.names = {r.id: r.name for r in self.scene.floorplan.rooms} | {
            f.id: f.name for f in (*self.scene.containers, *self.scene.surfaces)
        }
        # the classes a twin's detector without ids may see where there is nothing (one detection of each)
        self.item_classes = tuple(
            Detection(name, -1, category, "", "", (0.0, 0.0), 1.0, 0)
            for name, category in sorted({(i.name, i.category) for i in self.scene.items})
        )
        self.recorder = TraceRecorder(
            self.scene,
            tuple(robots),
            self.team_name,
            self.method_params,
            self.seed,
            full_observability,
            journal=journal_path(self.trace_path) if self.trace_path else None,
        )
        self.meter = EpisodeMeter(self.sim, self.episode_name, self.team_name)
        self.progress_logged = self.sim.world.progress()[0]
        self.created = time.monotonic()
        self.finished = False
        self.goals = DeferredGoals()
        self.cameras = VisualObservations(self.sim.world, "oracle") if cameras else None
        self.camera_every = max(1, round(self.tick_hz / camera_hz))  # a twin's head looks round every this many steps
        self.tf = TransformPublisher(self)

        self.robots: dict[str, RobotSlot] = {}
        for name, ns in zip(robots, namespaces, strict=True):
            slot = RobotSlot(
                name,
                ns,
                None
                if self.twin
                else self.create_publisher(RobotStatus, f"{ns}/{'sim_status' if cameras else 'status'}", LATCHED),
                self.create_publisher(Odometry, f"{ns}/odom", STREAM),
                self.create_publisher(Detection3DArray, f"{ns}/detections", STREAM),
            )
            if cameras:
                slot.camera = CameraPublishers(
                    self.create_publisher(Image, f"{ns}/camera/image_raw", CAMERA),
                    self.create_publisher(Image, f"{ns}/camera/depth/image_raw", CAMERA),
                    self.create_publisher(CameraInfo, f"{ns}/camera/camera_info", CAMERA),
                )
            slot.robot = playing.get(self.frame_of[name], slot.robot)
            slot.odometry = TwinOdometry(**odometry)
            self.robots[name] = slot
            self.create_subscription(StepTick, f"{ns}/step_tick", lambda m, s=slot: self._on_tick(s, m), LATCHED)
            self.create_subscription(Decision, f"{ns}/decision", lambda m, s=slot: self._on_decision(s, m), DECISIONS)
            if self.twin:  # as Nav2's controller does: the newest limit holds (no history kept)
                limit_type = speed_limit_message()
                self.create_subscription(
                    limit_type, f"{ns}/speed_limit", lambda m, s=slot: self._on_limit(s, m), STREAM
                )
            ActionServer(
                self,
                self.nav_type,
                f"{ns}/navigate_to_pose",
                execute_callback=self.goals.execute_callback,
                goal_callback=lambda g, s=slot: self._accept_navigation(s, g),
                handle_accepted_callback=lambda h, s=slot: self._start_navigation(s, h),
                cancel_callback=lambda h, s=slot: self._cancel_navigation(s, h),
            )
            ActionServer(
                self,
                Manipulate,
                f"{ns}/manipulate",
                execute_callback=self.goals.execute_callback,
                goal_callback=lambda g, s=slot: self._accept_manipulation(s, g),
                handle_accepted_callback=lambda h, s=slot: self._start_manipulation(s, h),
                cancel_callback=lambda h, s=slot: self._cancel_manipulation(s, h),
            )
        self.map_publisher = self.create_publisher(OccupancyGrid, "/map", LATCHED)
        self.clock_publisher = self.create_publisher(Clock, "/clock", STREAM)
        self.map_publisher.publish(self._occupancy_grid())
        self.tf.send_static(
            t
            for name in robots
            for t in (
                *(  # a localisation that never has anything to correct (one whose odometry drifts: _localise)
                    []
                    if self.robots[name].odometry.drifts
                    else [RigidTransform.identity().stamped("map", f"{self.frame_of[name]}/odom", self._stamp(0))]
                ),
                CAMERA_LINK_TO_OPTICAL.stamped(
                    f"{self.frame_of[name]}/camera_link", f"{self.frame_of[name]}/camera_optical_frame", self._stamp(0)
                ),
                *(  # a detector in the camera's frame: the camera's fixed mount, as robot_state_publisher sends it
                    [
                        self.camera_mount.stamped(
                            f"{self.frame_of[name]}/base_link", f"{self.frame_of[name]}/camera_link", self._stamp(0)
                        )
                    ]
                    if self.detections_frame == "optical"
                    else []
                ),
            )
        )
        self.first_step: dict[str, Observation] | None = obs  # published once the robots listen (cameras)
        if self.cameras is None:
            self._publish_first_step()
        period = 1.0 / self.tick_hz if self.mode == "realtime" else 0.05
        self.create_timer(period, self._on_timer)
        self.get_logger().info(
            f"{self.episode_name} ({self.scene.benchmark.value}, horizon {self.sim.horizon}) for "
            f"{', '.join(robots)}: {self.mode}, team {self.team_name}"
        )

    def _bridge(self, episode: int, engine: str) -> Bridge | None:
        """A bridge suite's episode (``suite`` is e.g. mapthor): the external engine the world runs on, whose session
        gave the robots' scene file (``coteam launch`` read it once), started as the ``thor_*`` / ``tdw_*``
        parameters say."""
        unity = UnitySettings.of(
            self.declare_parameter("thor_executable", "").value,
            self.declare_parameter("thor_platform", "").value,
            self.declare_parameter("tdw_port", TdwSettings.port).value,
            self.declare_parameter("tdw_launch", TdwSettings.launch_build).value,
        )
        if self.twin or self.suite not in SUITES:
            return None
        spec = get_suite(self.suite).episodes()[episode]
        if not spec.bridge:
            return None
        if engine not in ENGINES:
            raise ValueError(f"{self.suite} runs on an engine: engine must be one of {', '.join(ENGINES)}")
        return bridge_for(spec, engine, unity)

    # --- time and world -------------------------------------------------------------------------------------------
    def _stamp(self, clock: int | None = None) -> Time:
        return _time(round((self.sim.clock if clock is None else clock) * 1e9 / self.tick_hz))

    def _occupancy_grid(self) -> OccupancyGrid:
        fp = self.scene.floorplan
        data = [100 if not fp.is_free(x, y) else 0 for y in range(fp.height) for x in range(fp.width)]
        return OccupancyGrid(
            header=Header(stamp=self._stamp(0), frame_id="map"),
            info=MapMetaData(
                resolution=float(fp.cell_size),
                width=fp.width,
                height=fp.height,
                origin=Pose(position=Point(x=fp.origin[0], y=fp.origin[1]), orientation=Quaternion(w=1.0)),
            ),
            data=data,
        )

    # --- stepping -------------------------------------------------------------------------------------------------
    def _ready(self, name: str) -> bool:
        return bool(self.env.agents) and self.sim.is_ready(name)

    def _publish_step(self, obs: dict[str, Observation]) -> None:
        stamp = self._stamp()
        self.clock_publisher.publish(Clock(clock=stamp))
        done = not self.env.agents
        progress, goal_items = self.sim.world.progress()
        now = time.monotonic()
        for name, slot in self.robots.items():
            slot.tick = None
            slot.waited_since = now
            if slot.navigation is not None and self._ready(name):
                self._plan_navigation(slot)
            o = obs[name]
            header = Header(stamp=stamp, frame_id="map")
            base = RigidTransform.of(o.position[0], o.position[1], yaw_deg=o.heading)
            frame = self.frame_of[name]
            if slot.odometry.drifts and slot.poses:
                driven = math.dist(base.translation[:2], slot.poses[-1][1].translation[:2])
                rng = self.drift_rngs.setdefault(name, random.Random(f"{self.seed}:{name}:odometry"))
                slot.odometry.drove(o.position, driven, rng)
            if slot.odometry.drifts:
                self._localise(slot, frame, stamp)
            slot.poses.append((stamp_ns(stamp), base))
            if not self._silenced(slot, "odom_stop"):
                slot.odom.publish(self._odometry(slot, o, header))
                self._send_pose(slot, frame, stamp)
            camera_stamps: list[Time] = []
            if self.cameras is not None and slot.camera is not None and not self.twin:
                camera_stamps = self._publish_camera(name, slot.camera, base, stamp)
                o = self.cameras.observe(name, o)
            elif self.cameras is not None and slot.camera is not None:  # a twin's camera: its own rate, no oracle
                if self.sim.steps % self.camera_every == 0 and not self._silenced(slot, "detections_stop"):
                    self._publish_camera(name, slot.camera, base, stamp, not self._silenced(slot, "odom_stop"))
            elif not self._silenced(slot, "detections_stop"):
                views = [detection_from_view(v, o.step, self.names) for v in o.visible if not v.held_by]
                if self.twin:  # what a real detector makes of them
                    rng = self.detector_rngs.setdefault(name, random.Random(f"{self.seed}:{name}"))
                    false_classes = () if self.detections_ids else self.item_classes
                    views = self.detector.detect(views, o.position, o.heading, self.sim.steps, rng, false_classes)
                slot.detections.publish(self._detector_output(slot, frame, views, header))
            if slot.status is None:  # a twin: a real robot says nothing of its own about the world
                continue
            public = replace(o, messages=tuple(Message(m.sender, "", m.step) for m in o.messages))
            slot.status.publish(
                RobotStatus(
                    header=header,
                    robot=name,
                    step=self.sim.steps,
                    clock=self.sim.clock,
                    ready=self._ready(name),
                    episode_done=done,
                    success=done and progress == goal_items,
                    transport_rate=progress / goal_items if done else 0.0,
                    last_failure=o.last_failure,
                    observation_json=json.dumps(observation_to_dict(public)),
                    camera_stamps=camera_stamps,
                )
            )

    def _localise(self, slot: RobotSlot, frame: str, stamp: Time) -> None:
        """A twin robot whose odometry drifts: its localisation's ``map -> odom`` at its own rate, stamped ahead."""
        now, odometry = stamp_ns(stamp), slot.odometry
        if slot.localised_ns >= 0 and now - slot.localised_ns < 1e9 / odometry.localisation_hz:
            return
        slot.localised_ns = now
        ahead = _time(now + round(odometry.future_s * 1e9))
        self.tf.send([odometry.map_to_odom.stamped("map", f"{frame}/odom", ahead)])

    def _send_pose(self, slot: RobotSlot, frame: str, stamp: Time) -> None:
        """The robot's pose on ``/tf`` (``odom -> base_link``, its odometry's): at once, or, on a twin whose TF lags,
        each pose ``tf_lag_s`` after its stamp (a localisation running behind)."""
        now = stamp_ns(stamp)
        slot.poses_unsent.append((now, slot.odometry.odom_pose(slot.poses[-1][1])))
        due = []
        while slot.poses_unsent and slot.poses_unsent[0][0] <= now - self.tf_lag_ns:
            due.append(slot.poses_unsent.popleft())
        if due:
            self.tf.send(pose.stamped(f"{frame}/odom", f"{frame}/base_link", _time(t)) for t, pose in due)

    def _detector_output(self, slot: RobotSlot, frame: str, views: list, header: Header) -> Detection3DArray:
        """What a twin's detector publishes: in the map frame at the step's stamp, or, as a camera's detector, in the
        camera's optical frame stamped at its image's time, ``detections_delay_s`` before the step (from the
        robot's pose then)."""
        if not self.detections_ids:
            views = [replace(d, object_id=-1) for d in views]
        if self.detections_frame == "map":
            return detections_to_msg(views, header)
        at = stamp_ns(header.stamp) - self.detections_delay_ns
        pose = next((p for t, p in reversed(slot.poses) if t <= at), slot.poses[0][1])
        map_to_optical = (pose @ self.camera_mount @ CAMERA_LINK_TO_OPTICAL).inverse()
        seen = []
        for d in views:
            x, y, z = map_to_optical.apply((*d.position, d.height_m or 0.0))
            seen.append(replace(d, position=(float(x), float(y)), height_m=float(z)))
        return detections_to_msg(seen, Header(stamp=_time(max(0, at)), frame_id=f"{frame}/camera_optical_frame"))

    def _publish_camera(
        self, name: str, publishers: CameraPublishers, base: RigidTransform, stamp: Time, with_pose: bool = True
    ) -> list[Time]:
        """The head camera's views of this step, each with the robot's pose (unless its odometry is silenced) and
        the mount at its stamp (a lookup at a view's stamp must find both: TF does not extrapolate); their stamps."""
        assert self.cameras is not None
        stamps = []
        base_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        for k, (pan, frame) in enumerate(self.cameras.frames(name)):
            ns = base_ns + (k + 1) * VIEW_STAMP_NS  # never 0, which TF reads as 'the latest'
            at = Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
            mount = camera_mount_transform(self.cameras.camera.mount, pan)
            pose = [base.stamped(f"{self.frame_of[name]}/odom", f"{self.frame_of[name]}/base_link", at)]
            self.tf.send(
                [
                    *(pose if with_pose else []),
                    mount.stamped(f"{self.frame_of[name]}/base_link", f"{self.frame_of[name]}/camera_link", at),
                ]
            )
            header = Header(stamp=at, frame_id=f"{self.frame_of[name]}/camera_optical_frame")
            publishers.info.publish(camera_info_to_msg(frame.intrinsics, header))
            publishers.depth.publish(depth_to_msg(frame.depth, header))
            publishers.image.publish(rgb_to_msg(frame.rgb, header))
            stamps.append(at)
        return stamps

    def _odometry(self, slot: RobotSlot, o: Observation, header: Header) -> Odometry:
        """The robot's odometry: its pose in its ``odom`` frame (the map's, unless its odometry drifts)."""
        frame = self.frame_of[o.agent]
        if not slot.odometry.drifts:
            return Odometry(
                header=header, child_frame_id=f"{frame}/base_link", pose=_pose_with_covariance(o.position, o.heading)
            )
        pose = slot.odometry.odom_pose(slot.poses[-1][1])
        yaw = math.degrees(math.atan2(pose.rotation[1, 0], pose.rotation[0, 0]))
        return Odometry(
            header=Header(stamp=header.stamp, frame_id=f"{frame}/odom"),
            child_frame_id=f"{frame}/base_link",
            pose=_pose_with_covariance((pose.translation[0], pose.translation[1]), yaw),
        )

    def _on_tick(self, slot: RobotSlot, tick: StepTick) -> None:
        self.meter.reported(slot.name, **{key: getattr(tick, key) for key in RUNTIME_COUNTS})  # the counts so far
        if self.finished or tick.step > self.sim.steps:
            return
        if tick.step < self.sim.steps and (self.mode == "lockstep" or tick.kind != StepTick.MESSAGE):
            return  # an answer to an older status (or a latched one from before a restart)
        slot.tick = tick  # realtime: a late message is still sent, in the next step
        if not slot.responsive:
            self.get_logger().info(f"{slot.name} answers again")
        slot.responsive = slot.ever_ticked = True
        if self.mode == "lockstep":
            self._step_if_all_ticked()

    def _publish_first_step(self) -> None:
        assert self.first_step is not None
        obs, self.first_step = self.first_step, None
        self.created = time.monotonic()  # the robots' start-up time counts from here
        self._publish_step(obs)

    def _cameras_heard(self) -> bool:
        """Whether every robot's camera topics and ``/tf`` have a subscriber (its perception node)."""
        publishers = [
            p for s in self.robots.values() if s.camera for p in (s.camera.image, s.camera.depth, s.camera.info)
        ]
        return all(p.get_subscription_count() > 0 for p in publishers) and (self.tf.subscribers() >= len(self.robots))

    def _on_timer(self) -> None:
        if self.finished:
            return
        now = time.monotonic()
        if self.first_step is not None:
            if self._cameras_heard() or now - self.created > self.startup_timeout_s:
                self._publish_first_step()
            return
        if self.mode == "realtime":
            waiting = [s.name for s in self.robots.values() if not s.ever_ticked]
            if self.twin:  # real robots report nothing to a twin: its clock starts once every robot's nodes listen
                waiting = [
                    s.name
                    for s in self.robots.values()
                    if (s.camera is None and s.detections.get_subscription_count() == 0)
                    or s.odom.get_subscription_count() == 0
                ]
            if self.sim.steps == 0 and waiting and now - self.created < self.startup_timeout_s:
                return  # the clock starts when every robot is up (or after startup_timeout_s)
            self._step()
            return
        for name, slot in self.robots.items():
            limit = self.tick_timeout_s if slot.ever_ticked else self.startup_timeout_s
            if slot.tick is None and slot.responsive and now - slot.waited_since > limit:
                slot.responsive = False
                self.get_logger().warning(
                    f"{name} sent no step_tick for step {self.sim.steps} within {limit:.1f} s"
                    f"{': it waits,' if self._ready(name) else ','} "
                    "and the team goes on without waiting for it until it answers again"
                )
        self._step_if_all_ticked()

    def _step_if_all_ticked(self) -> None:
        if all(s.tick is not None or not s.responsive for s in self.robots.values()):
            self._step()

    def _primitive_for(self, name: str, slot: RobotSlot) -> Primitive:
        tick = slot.tick
        if tick is not None and tick.kind == StepTick.MESSAGE:
            return Primitive(
                PrimitiveKind.SEND_MESSAGE, text=tick.text, payload=tick.payload_json, receiver=tick.receiver
            )
        if self.mode == "lockstep" and (tick is None or tick.kind in (StepTick.IDLE, StepTick.OBSERVED)):
            return Primitive(PrimitiveKind.WAIT)
        if slot.manipulation is not None:
            return Primitive(PrimitiveKind.WAIT) if slot.manipulation.silent else slot.manipulation.primitive
        nav = slot.navigation
        if nav is not None and nav.planned is not None and nav.planned_step == self.sim.steps:
            return Primitive(PrimitiveKind.WAIT) if self.sim.steps < slot.still_until else nav.planned
        if tick is not None and tick.kind == StepTick.ACT:
            self.get_logger().warning(f"{name} ticked ACT for step {self.sim.steps} without a goal: it waits")
        return Primitive(PrimitiveKind.WAIT)

    def _step(self) -> None:
        if self.finished or not self.env.agents:
            return
        actions = {name: self._primitive_for(name, slot) for name, slot in self.robots.items() if self._ready(name)}
        clock_before, step_before = self.sim.clock, self.sim.steps
        positions_before = {name: self.sim.world.agents[name].position for name in actions}
        blocking = self.twin and self.robots_block  # the robots' bases are obstacles to each other
        motions = {name: self.sim.motion(name) for name in actions} if blocking else {}
        obs, _, _, _, infos = self.env.step(actions)
        if blocking:
            self._hold_robots_in_the_way(actions, motions, obs)
        failures = {a: infos[a]["failure"] for a in actions}
        self.meter.step(actions, failures)
        self.recorder.step(clock_before, self.sim, actions, failures)
        for name, prim in actions.items():
            slot = self.robots[name]
            reason = failures[name]
            pending = slot.manipulation
            if pending is not None and prim is pending.primitive:
                slot.manipulation = None
                slot.counts["manipulations failed" if reason else "manipulations succeeded"] += 1
                self.goals.finish(
                    pending.handle, self._manipulation_result(pending, reason), "abort" if reason else "succeed"
                )
            nav = slot.navigation
            if nav is not None and prim is nav.planned:
                nav.planned = None
            if self.twin:
                self._drove(slot, math.dist(positions_before[name], self.sim.world.agents[name].position), step_before)
        if not self.env.agents:
            self._end_goals()
        self._log_progress()
        self._publish_step(obs)
        if not self.env.agents:
            self._finish_episode()

    def _hold_robots_in_the_way(self, actions: dict[str, Primitive], motions: dict[str, Any], obs: dict) -> None:
        """A twin's robots are obstacles to each other: a robot whose move this step ran into another robot's base
        (:func:`~coteam_ros.twin_robots.robot_in_the_way`) is put back where it was; next step its navigation heads
        round them where the map leaves a way (:func:`~coteam_ros.twin_robots.detour`, as Nav2's planner routes round
        an obstacle), else tries the same move again, failing once it has been held :data:`HELD_ABORT_S`."""
        bases = {
            name: (self.sim.world.agents[name].position, slot.robot.radius_m) for name, slot in self.robots.items()
        }
        for name in sorted(motions):
            before, after = motions[name][0], bases[name][0]
            nav = self.robots[name].navigation
            if before == after or nav is None:
                continue
            other = robot_in_the_way(name, before, after, bases)
            if other is None:
                nav.held_since = None
                continue
            self.sim.undo_motion(name, motions[name])
            bases[name] = (before, bases[name][1])
            obs[name] = replace(self.sim.observe(name), messages=obs[name].messages)
            if nav.held_since is None:
                nav.held_since = self.sim.steps
                self.robots[name].counts["navigation held by a robot"] += 1
            nav.held = actions[name]
            if self.scene.benchmark == Benchmark.CWAH:  # a walking robot's planner routes round them if it can
                radius = bases[name][1]
                others = [(at, radius + r + CLEARANCE_M) for o, (at, r) in bases.items() if o != name]
                way = detour(self.sim.nav, before, nav.navigator.goal.position, radius, others)
                if way is not None:
                    nav.held = Primitive(PrimitiveKind.WALK_TO, (round(way[0] * 1000), round(way[1] * 1000)))

    def _drove(self, slot: RobotSlot, metres: float, step: int) -> None:
        """A twin robot moved ``metres`` in ``step``: under a speed limit it stands still long enough that the
        move took no less than its distance at that speed."""
        if metres <= 0.0:
            return
        speed = slot.drive_speed()
        steps = max(1, math.ceil(metres * self.tick_hz / speed - 1e-9)) if speed else 1
        slot.still_until = step + steps
        slot.top_speed = max(slot.top_speed, metres * self.tick_hz / steps)

    def _log_progress(self) -> None:
        """Live progress: a line whenever a goal item is put in place, and every 100 steps."""
        done, total = self.sim.world.progress()
        if done != self.progress_logged or self.sim.steps % 100 == 0:
            self.progress_logged = done
            self.get_logger().info(
                f"step {self.sim.steps} (clock {self.sim.clock}/{self.sim.horizon}): {done}/{total} goal items in "
                f"place, {self.meter.messages} messages"
            )

    # --- navigate_to_pose -----------------------------------------------------------------------------------------
    def _silenced(self, slot: RobotSlot, kind: str) -> bool:
        """Whether a twin's fault has silenced this sensor of the robot by now."""
        robot, elapsed = self.frame_of[slot.name], self.sim.steps / self.tick_hz
        return any(f.robot == robot and f.kind == kind and elapsed >= f.after_s for f in self.faults)

    def _fault(self, slot: RobotSlot, kinds: tuple[str, ...], goal: int) -> TwinFault | None:
        """The twin's fault of this kind for the robot's ``goal``-th goal, if one is set."""
        robot = self.frame_of[slot.name]
        return next((f for f in self.faults if f.robot == robot and f.kind in kinds and f.goal == goal), None)

    def _on_limit(self, slot: RobotSlot, limit: Any) -> None:
        """A speed limit for the robot (``nav2_msgs/SpeedLimit``): m/s, or a percentage of its top speed (one
        move a step); 0 lifts it."""
        top = self.sim.config.stride_m(self.scene.benchmark) * self.tick_hz
        speed = limit.speed_limit * top / 100.0 if limit.percentage else limit.speed_limit
        if speed != slot.speed_limit:
            self.get_logger().info(f"{self.frame_of[slot.name]}: speed limit {speed:g} m/s" if speed else "no limit")
        slot.speed_limit = max(0.0, speed)

    def _accept_navigation(self, slot: RobotSlot, goal: Any) -> GoalResponse:
        if not self.env.agents:
            return GoalResponse.REJECT
        if self._fault(slot, ("nav_reject",), slot.counts["navigation goals"] + slot.counts["navigation rejected"] + 1):
            slot.counts["navigation rejected"] += 1
            return GoalResponse.REJECT
        if goal.pose.header.frame_id not in ("", "map"):
            self.get_logger().warning(f"{slot.name}: goal in frame {goal.pose.header.frame_id!r} (only map)")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _start_navigation(self, slot: RobotSlot, handle: ServerGoalHandle) -> None:
        slot.counts["navigation goals"] += 1
        if slot.navigation is not None:  # a newer goal preempts, as in Nav2
            slot.counts["navigation preempted"] += 1
            self._end_navigation(slot, NavResult(False, "preempted"))
        goal: NavGoal = pose_to_nav_goal(handle.request.pose.pose)
        state = self.sim.world.agents[slot.name]
        slot.navigation = ActiveNavigation(
            handle, GoalNavigator(self.scene.benchmark, self.sim.nav, self.sim.config, goal, state.position)
        )
        number = slot.counts["navigation goals"] + slot.counts["navigation rejected"]
        fault = self._fault(slot, ("nav_abort", "nav_stall"), number)
        if fault is not None and fault.kind == "nav_abort":
            self._end_navigation(slot, NavResult(False, "aborted by the twin's fault"), fault.code)
            return
        slot.navigation.stalled = fault is not None
        slot.counts["navigation stalled"] += fault is not None
        if self._ready(slot.name):
            self._plan_navigation(slot)

    def _plan_navigation(self, slot: RobotSlot) -> None:
        nav = slot.navigation
        assert nav is not None
        if nav.stopped_at is not None and self.sim.steps >= nav.stopped_at:  # canceled, and the base has stopped
            slot.navigation = None
            self.goals.finish(nav.handle, self.nav_type.Result(error_msg="canceled"), "canceled")
            return
        state = self.sim.world.agents[slot.name]
        held = nav.held
        nav.held = None
        if (
            held is not None
            and nav.held_since is not None
            and self.sim.steps - nav.held_since >= HELD_ABORT_S * self.tick_hz
        ):
            slot.counts["navigation aborted: held by a robot"] += 1
            self._end_navigation(slot, NavResult(False, "held by a robot"))
            return
        if nav.stalled or nav.stopped_at is not None:
            planned: Primitive | NavResult = Primitive(PrimitiveKind.WAIT)
        elif held is not None:  # the same move again: the robot in the way may have gone
            planned = held
        elif self.sim.steps < slot.still_until and nav.moving is not None:  # a slow robot still on its last move
            planned = nav.moving
        else:
            planned = nav.navigator.plan(state.position, state.heading, self.sim.last_failure[slot.name])
        if isinstance(planned, NavResult):
            self._end_navigation(slot, planned)
            return
        nav.planned, nav.planned_step = planned, self.sim.steps
        nav.moving = planned if planned.kind != PrimitiveKind.WAIT else nav.moving
        goal = nav.navigator.goal.position
        feedback = self.nav_type.Feedback(
            current_pose=PoseStamped(
                header=Header(stamp=self._stamp(), frame_id="map"),
                pose=Pose(
                    position=Point(x=state.position[0], y=state.position[1]), orientation=yaw_quaternion(state.heading)
                ),
            ),
            distance_remaining=float(math.dist(state.position, goal)),
        )
        nav.handle.publish_feedback(feedback)

    def _end_navigation(self, slot: RobotSlot, result: NavResult, code: int | None = None) -> None:
        nav = slot.navigation
        assert nav is not None
        slot.navigation = None
        if result.reason != "preempted":
            slot.counts["navigation succeeded" if result.success else "navigation failed"] += 1
        if code is None:
            code = (
                self.nav_type.Result.NONE
                if result.success
                else NAV2_CODES.get(result.reason, self.nav_type.Result.UNKNOWN)
            )
        state = "succeed" if result.success else "abort"
        self.goals.finish(nav.handle, self.nav_type.Result(error_code=code, error_msg=result.reason), state)

    def _cancel_navigation(self, slot: RobotSlot, handle: ServerGoalHandle) -> CancelResponse:
        nav = slot.navigation
        if nav is None or goal_key(nav.handle) != goal_key(handle) or nav.stopped_at is not None:
            return CancelResponse.REJECT
        slot.counts["navigation canceled"] += 1
        if self.twin:  # as Nav2 does: the goal ends once the controller has brought the base to a stop
            nav.stopped_at = self.sim.steps + math.ceil(BRAKING_S * self.tick_hz)
            return CancelResponse.ACCEPT
        slot.navigation = None
        self.executor.create_task(self.goals.finish, handle, self.nav_type.Result(error_msg="canceled"), "canceled")
        return CancelResponse.ACCEPT

    # --- manipulate -----------------------------------------------------------------------------------------------
    def _accept_manipulation(self, slot: RobotSlot, goal: Manipulate.Goal) -> GoalResponse:
        try:
            self._manipulation_primitive(goal)
        except ValueError as exc:
            self.get_logger().warning(f"{slot.name}: rejected manipulation: {exc}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT if self.env.agents else GoalResponse.REJECT

    def _manipulation_primitive(self, goal: Manipulate.Goal, robot: str = "") -> tuple[Primitive, int]:
        """The simulator's primitive for ``goal`` and the object it handles: on a twin whose detector gives no ids,
        the object of the goal's class in front of ``robot``'s arm (:func:`~coteam_ros.twin_robots.object_in_front`),
        else the object named."""
        request = Manipulation(ManipulationKind(goal.operation), goal.object_id, goal.target_id, hand_index(goal.hand))
        if robot and self.twin and not self.detections_ids:
            near = goal.object_position
            place = (near.point.x, near.point.y) if near.header.frame_id else None
            physics = self.sim.config
            reach = physics.cwah_reach_m if self.scene.benchmark == Benchmark.CWAH else physics.tdw_reach_m
            handled = object_in_front(self.sim.world, robot, request, goal.object_class, place, reach)
            request = replace(request, object_id=handled)
        return manipulation_primitive(self.scene.benchmark, request), request.object_id

    def _start_manipulation(self, slot: RobotSlot, handle: ServerGoalHandle) -> None:
        if slot.manipulation is not None:
            old = slot.manipulation
            self.goals.finish(old.handle, Manipulate.Result(success=False, failure_reason="preempted"), "abort")
        slot.counts["manipulation goals"] += 1
        request = handle.request
        slot.counts["manipulation goals without the object's class or place"] += not (
            request.object_class and request.object_position.header.frame_id
        )
        refusal = self._arm_refusal(slot, ManipulationKind(handle.request.operation))
        opening = handle.request.operation == ManipulationKind.OPEN
        slot.counts["doors opened that were open"] += opening and self.sim.world.is_open.get(request.object_id, False)
        if slot.navigation is not None and self.twin:  # the base still drives (or brakes): the arm will not move
            slot.counts["manipulations while driving"] += 1
            refusal = "the base is moving"
        if refusal:  # the robot's own arm cannot: its driver says so at once
            slot.counts["manipulations refused"] += 1
            operation = ManipulationKind(request.operation).name.lower()
            self.get_logger().warning(f"{slot.name}'s arm refuses {operation} of ({request.object_id}): {refusal}")
            self.goals.finish(handle, Manipulate.Result(success=False, failure_reason=refusal), "abort")
            return
        silent = self._fault(slot, ("arm_silent",), slot.counts["manipulation goals"]) is not None
        slot.counts["manipulations unanswered"] += silent
        primitive, handled = self._manipulation_primitive(handle.request, slot.name)
        slot.counts["manipulations of another object of the class"] += handled != handle.request.object_id
        slot.manipulation = PendingManipulation(handle, primitive, silent, handled)

    def _manipulation_result(self, pending: PendingManipulation, reason: str) -> Manipulate.Result:
        """What a twin's arm driver answers: success or why not and, having handled an object, its class and where
        it is now (a driver whose detector gives no ids knows no id either)."""
        result = Manipulate.Result(success=not reason, failure_reason=reason)
        world, handled = self.sim.world, pending.handled
        if not self.twin or reason or not (world.is_item(handled) or world.is_fixture(handled)):
            return result
        result.object_id = handled if self.detections_ids else -1
        result.object_class = (world.item(handled) if world.is_item(handled) else world.fixture(handled)).name
        result.object_position.header = Header(stamp=self.get_clock().now().to_msg(), frame_id="map")
        result.object_position.point.x, result.object_position.point.y = map(float, world.position_of(handled))
        return result

    def _arm_refusal(self, slot: RobotSlot, operation: ManipulationKind) -> str:
        """What the twin's robot's arm answers to ``operation`` with what it holds ('' when it can try)."""
        held = sum(h is not None for h in self.sim.world.agents[slot.name].hands)
        if operation == ManipulationKind.GRASP:
            return slot.robot.grasp_refusal(held)
        if operation in (ManipulationKind.OPEN, ManipulationKind.CLOSE):
            return slot.robot.open_refusal(held)
        return ""

    def _cancel_manipulation(self, slot: RobotSlot, handle: ServerGoalHandle) -> CancelResponse:
        pending = slot.manipulation
        if pending is None or goal_key(pending.handle) != goal_key(handle):
            return CancelResponse.REJECT
        slot.manipulation = None
        slot.counts["manipulations canceled"] += 1
        self.executor.create_task(self.goals.finish, handle, Manipulate.Result(failure_reason="canceled"), "canceled")
        return CancelResponse.ACCEPT

    # --- results --------------------------------------------------------------------------------------------------
    def _on_decision(self, slot: RobotSlot, message: Decision) -> None:
        try:
            record = json.loads(message.trace_json)
        except json.JSONDecodeError:
            self.get_logger().warning(f"{slot.name}: decision with malformed trace_json ignored")
            return
        if self.twin:  # the robots' steps are their own: when the decision reached the twin, on its clock
            record["twin_step"] = self.sim.steps
        self.meter.decision(record)
        self.recorder.add_decision(record)

    def _end_goals(self) -> None:
        for slot in self.robots.values():
            if slot.navigation is not None:
                self._end_navigation(slot, NavResult(False, "episode over"))
            if slot.manipulation is not None:
                self.goals.finish(slot.manipulation.handle, Manipulate.Result(failure_reason="episode over"), "abort")
                slot.manipulation = None

    def _finish_episode(self) -> None:
        self.finished = True
        self.meter.stop()
        done, total = self.sim.world.progress()
        self.get_logger().info(
            f"episode over at step {self.sim.steps} (clock {self.sim.clock}): "
            f"{'success' if done == total else 'not finished'}, transport rate {done / total:.2f}"
        )

    def write_outputs(self, stopped: str | None = None) -> None:
        """The results and trace files, when asked for (``stopped``: why the episode ended early, which marks the
        results incomplete)."""
        result = self.result()
        if self.results_path:
            meta = {
                "suite": self.suite,
                "team": self.team_name,
                "params": self.method_params,
                "seed": self.seed,
                "mode": self.mode,
            }
            if self.twin:  # what the robots asked of their navigation and arms, and how it went; how fast they drove
                meta["goals"] = {
                    self.frame_of[n]: dict(sorted({**slot.counts, "still running": slot.running_goals()}.items()))
                    for n, slot in self.robots.items()
                }
                meta["robots"] = {self.frame_of[n]: slot.robot.name for n, slot in self.robots.items()}
                meta["speeds"] = {
                    self.frame_of[n]: {"top_mps": round(slot.top_speed, 3), "limit_mps": slot.speed_limit}
                    for n, slot in self.robots.items()
                }
            write_results([result], self.results_path, meta, stopped=stopped)
        if self.trace_path:
            self.recorder.finish(self.sim, asdict(result))
            self.recorder.write(self.trace_path)

    def result(self) -> EpisodeResult:
        return self.meter.result(self.trace_path or None)


def twin_scene(scene: Scene, robots: list[str], horizon: float) -> tuple[Scene, dict[str, str]]:
    """The scene as the twin's simulator runs it: its robots (by the names of their start poses, in the scene's
    order) become the simulator's agents, and the horizon is the task's time limit (``horizon`` clock units; 0: the
    task's own). Also the simulator's agent -> the robot's name."""
    unknown = sorted(set(robots) - {a.name for a in scene.agent_starts})
    if unknown:
        raise ValueError(f"the task has no start pose for {', '.join(unknown)}")
    named = [start for start in scene.agent_starts if start.name in robots]
    frame_of = {AGENT_NAMES[i]: start.name for i, start in enumerate(named)}
    renamed = {start.name: replace(start, name=agent) for agent, start in zip(frame_of, named, strict=True)}
    others = [start for start in scene.agent_starts if start.name not in renamed and start.name not in frame_of]
    task = replace(scene.task, horizon=math.ceil(horizon)) if horizon > 0 else scene.task
    return replace(scene, agent_starts=(*renamed.values(), *others), task=task), frame_of


def _time(ns: int) -> Time:
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _pose_with_covariance(position: tuple[float, float], heading: float) -> PoseWithCovariance:
    return PoseWithCovariance(
        pose=Pose(position=Point(x=float(position[0]), y=float(position[1])), orientation=yaw_quaternion(heading))
    )


def main(argv: list[str] | None = None) -> None:
    rclpy.init(args=argv)
    node = None
    try:
        try:
            node = SimBridgeNode()
        except STARTUP_ERRORS as exc:
            raise cannot_start("SimBridgeNode", exc) from None
        while rclpy.ok() and not node.finished:
            rclpy.spin_once(node, timeout_sec=0.1)
        # The last decisions (published just before their robot's tick) and goal results are still in flight.
        end = time.monotonic() + RESULTS_GRACE_S
        while rclpy.ok() and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        node.write_outputs()
    except (KeyboardInterrupt, ExternalShutdownException):
        if node is not None and not node.finished:  # stopped mid-episode: the partial results
            # a twin has no end of its own but the time limit: stopped when the team is done, it is complete
            node.write_outputs(stopped=None if node.twin else "shutdown")
    finally:
        if node is not None:
            node.env.close()  # a bridge's engine session (Unity) ends with the node
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
