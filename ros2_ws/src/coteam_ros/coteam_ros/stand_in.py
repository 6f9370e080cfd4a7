"""The embedded simulator standing in for a team's robots, over ROS 2: what the simulator bridge and the twin share
(:class:`StandInRobots`, the base of both nodes).

It hosts one episode of the scene file ``scene_path`` (the one every robot's nodes read, see ``coteam_ros.episode``)
with ``seed``. For every robot (namespace from ``namespaces``, default ``/<robot>``) it serves ``navigate_to_pose``
(the simulator's navigator, one primitive per step, with Nav2's interface: feedback every step, cancel, a newer goal
preempts) and ``manipulate`` (one primitive in the next step), and publishes after every step ``odom``
(``nav_msgs/Odometry``) and, through the subclass, what the robot senses. World topics: ``/map``
(``nav_msgs/OccupancyGrid``, latched), ``/clock`` (simulated time: one benchmark clock unit lasts ``1 / tick_hz`` s)
and the transforms (``coteam_ros.tf``): ``map -> <robot>/odom`` and ``<robot>/camera_link ->
<robot>/camera_optical_frame`` on ``/tf_static``, ``<robot>/odom -> <robot>/base_link`` at every step on ``/tf``.

Its robots' bodies play what a real robot's do when its node asks them to (the twin does; the simulator bridge's
robots do as told): the real robot's grippers (``coteam_ros.twin_robots``), Nav2's braking before a canceled goal
ends (``braking_s``), an arm that will not move while the base drives and that names what it handled
(``real_arm``), faults (``faults``), robots that block each other (``robots_block``), a detector without ids whose
arm takes the object of the asked class in front of it (``detections_ids``), TF that lags and detections in the
camera's frame.

Cameras (parameter ``cameras``): each robot's head camera (``coteam_sim.camera``) is published as
``camera/image_raw`` (``rgb8``), ``camera/depth/image_raw`` (``32FC1``, metres) and ``camera/camera_info``, frame
``<robot>/camera_optical_frame``, one stamp per view with ``<robot>/odom -> <robot>/base_link`` and
``<robot>/base_link -> <robot>/camera_link`` (the mount, turned by the head's pan) on ``/tf`` at that stamp. Camera
topics and ``/tf`` are not latched, so the first step is published once every robot's perception node listens (or
after ``startup_timeout_s``).

Its trace (``trace_path``, a ``coteam-trace/1`` JSON) and results (``results_path``,
``coteam_harness.results.write_results``) are written when it ends; killed outright, it leaves the trace's journal
(``<trace>.partial.jsonl``, flushed every step).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from coteam_interfaces.action import Manipulate
from coteam_interfaces.msg import Decision, StepTick
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion
from nav_msgs.msg import MapMetaData, OccupancyGrid, Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header
from vision_msgs.msg import Detection3DArray

from coteam.agent.skills import Manipulation, ManipulationKind, NavGoal, NavResult
from coteam.domain.observation import Observation
from coteam.domain.world import Benchmark
from coteam.registry import method_config, observes_world
from coteam.senses.perception import Detection
from coteam.senses.vision import CameraMount
from coteam_harness.meter import RUNTIME_COUNTS, EpisodeMeter
from coteam_harness.results import EpisodeResult, write_results
from coteam_harness.trace import TraceRecorder, journal_path
from coteam_ros.convert import (
    camera_info_to_msg,
    depth_to_msg,
    pose_to_nav_goal,
    rgb_to_msg,
    yaw_quaternion,
)
from coteam_ros.episode import load_episode
from coteam_ros.faults import TwinFault
from coteam_ros.goals import DeferredGoals, goal_key
from coteam_ros.qos import CAMERA, DECISIONS, LATCHED, STREAM, own_subscription
from coteam_ros.runtime import STARTUP_ERRORS, cannot_start, navigate_to_pose_action
from coteam_ros.tf import (
    CAMERA_LINK_TO_OPTICAL,
    RigidTransform,
    TransformPublisher,
    camera_mount_transform,
    stamp_ns,
)
from coteam_ros.twin_robots import TWIN_ROBOTS, TwinOdometry, TwinRobot, object_in_front
from coteam_sim.camera import VisualObservations
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.navigator import GoalNavigator, manipulation_primitive
from coteam_sim.primitives import Primitive, PrimitiveKind

HANDS = {"": -1, "left": 0, "right": 1}
VIEW_STAMP_NS = 1000  # a step's camera views are stamped this far apart, the first this far after the step's stamp
# a twin's robot held by another robot this long fails its goal as Nav2's progress checker fails the controller
# (movement_time_allowance, 10 s by default; the twin plays no recovery behaviours before it aborts)
HELD_ABORT_S = 10.0
NAV2_CODES = {"not reachable": 208, "blocked": 105, "held by a robot": 105}  # planner NO_VALID_PATH, controller
# FAILED_TO_MAKE_PROGRESS (nav2_msgs ComputePathToPose / FollowPath, Kilted): the codes a twin aborts with
POSE_HISTORY = 64  # a twin's robot poses kept (by stamp), to stamp its detections in the past
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
    # its first ACT or OBSERVED tick came: an action of its has gone through its executor and this node's action
    # servers, which a robot meets after DDS discovery; before that, a step waits up to startup_timeout_s for it
    ever_acted: bool = False
    counts: Counter[str] = field(default_factory=Counter)  # navigation and manipulation goals, by how they ended
    speed_limit: float = 0.0  # a twin's: m/s from the robot's speed_limit (Nav2's controller keeps to it); 0: none
    still_until: int = 0  # a twin's: under a speed limit, the step before which the robot does not move again
    top_speed: float = 0.0  # a twin's: the fastest it drove (m/s, one move over the steps it took)
    robot: TwinRobot = TWIN_ROBOTS["generic"]  # a twin's: the real robot it plays (coteam_ros.twin_robots)
    odometry: TwinOdometry = field(default_factory=TwinOdometry)  # a twin's: how its odometry drifts
    localised_ns: int = -1  # a twin's whose odometry drifts: the stamp of its last map -> odom
    poses: deque[tuple[int, RigidTransform]] = field(default_factory=lambda: deque(maxlen=POSE_HISTORY))  # by stamp
    poses_unsent: deque[tuple[int, RigidTransform]] = field(default_factory=deque)  # a lagging TF's, not yet sent
    odom_message: Odometry | None = None  # its odometry, sent again with each step's pose

    def running_goals(self) -> int:
        """A twin's: its Nav2 and arm goals not ended yet (when the run stops: goals its robot left running)."""
        return int(self.navigation is not None and self.navigation.stopped_at is None) + int(
            self.manipulation is not None
        )

    def drive_speed(self) -> float:
        """A twin's top speed now: its robot's, under the speed limit it was given (0: one move a step)."""
        speeds = [v for v in (self.speed_limit, self.robot.speed_mps or 0.0) if v > 0]
        return min(speeds, default=0.0)


class StandInRobots(Node):
    """One simulated episode standing in for a team's robots (see the module docstring). A subclass says which world
    it runs (:meth:`_world`), what each robot publishes of a step (:meth:`_status`, :meth:`_publish_pose`,
    :meth:`_publish_senses`) and which robots the clock waits for (:meth:`_waiting_robots`)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
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
        camera_hz: float = self.declare_parameter("camera_hz", 1.0).value
        # what real robots do that the stand-in plays (see the module docstring): none of it unless a subclass says
        self.faults: list[TwinFault] = []
        self.robots_block = False
        self.braking_s = 0.0
        self.real_arm = False
        self.detections_ids = True
        self.tf_lag_ns = 0
        self.detections_frame = "map"
        self.camera_mount = camera_mount_transform(CameraMount())  # camera_link -> base_link, a fixed head
        self.nav_type = navigate_to_pose_action()
        if self.mode not in ("lockstep", "realtime"):
            raise ValueError(f"mode must be lockstep or realtime, not {self.mode!r}")
        if namespaces == [""]:
            namespaces = ["/" + r for r in robots]
        if len(namespaces) != len(robots):
            raise ValueError(f"{len(namespaces)} namespaces for {len(robots)} robots")

        self.scene_path: str = self.declare_parameter("scene_path", "").value
        self.scene = load_episode(self.scene_path, self.seed, robots).scene
        self.episode_name = self.scene.name
        # a robot's frames and topics carry its name; the simulator knows it as one of its agents (alice, bob, ...)
        self.frame_of = {agent: agent for agent in robots}
        robots, namespaces, options = self._world(robots, namespaces)
        full_observability = observes_world(self.method, params)
        self.method_params = method_config(self.method, params).recorded()
        self.team_name = self.method
        self.env = CoteamParallelEnv(self.scene.benchmark, len(robots), full_observability=full_observability)
        if self.env.possible_agents != robots:
            raise ValueError(f"robots must be the simulator's agents {self.env.possible_agents}, got {robots}")
        obs, _ = self.env.reset(seed=self.seed, options=options)
        assert self.env.sim is not None
        self.sim = self.env.sim
        self.scene = self.sim.scene  # a bridge's: the engine's session (where it put the robots)
        self.names = {r.id: r.name for r in self.scene.floorplan.rooms} | {
            f.id: f.name for f in (*self.scene.containers, *self.scene.surfaces)
        }
        # the classes a detector without ids may see where there is nothing (one detection of each)
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
        self.progress_now = self.sim.world.progress()  # at the step published last
        self.progress_logged = self.progress_now[0]
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
                self._status_publisher(ns, cameras),
                self.create_publisher(Odometry, f"{ns}/odom", STREAM),
                self.create_publisher(Detection3DArray, f"{ns}/detections", STREAM),
            )
            if cameras:
                slot.camera = CameraPublishers(
                    self.create_publisher(Image, f"{ns}/camera/image_raw", CAMERA),
                    self.create_publisher(Image, f"{ns}/camera/depth/image_raw", CAMERA),
                    self.create_publisher(CameraInfo, f"{ns}/camera/camera_info", CAMERA),
                )
            self._robot_slot(slot)
            self.robots[name] = slot
            for kind, topic, qos, take in (
                (StepTick, "step_tick", LATCHED, self._on_tick),
                (Decision, "decision", DECISIONS, self._on_decision),
            ):
                listen = partial(take, slot)
                self.create_subscription(kind, f"{ns}/{topic}", listen, qos, event_callbacks=own_subscription())
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
                *(  # a localisation that never has anything to correct (one whose odometry drifts: a twin's)
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

    # --- what a subclass says ------------------------------------------------------------------------------------
    def _world(self, robots: list[str], namespaces: list[str]) -> tuple[list[str], list[str], dict[str, Any]]:
        """The simulator's agents, their namespaces and the options of the episode's reset (``self.scene`` is the
        robots' scene file's)."""
        raise NotImplementedError

    def _status_publisher(self, namespace: str, cameras: bool) -> Any:
        """The publisher of the robot's status (None: its nodes get none, as on a real robot)."""
        return None

    def _robot_slot(self, slot: RobotSlot) -> None:
        """Set up the robot of ``slot`` beyond the stand-in's servers (a subclass's own topics)."""

    def _status(self, slot: RobotSlot, obs: Observation, header: Header) -> Any:
        """The status the robot's nodes wait for to take the step just done in, sent before anything else of the step
        (None: none, as on a real robot, or not yet)."""
        return None

    def _publish_pose(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        """The robot's odometry and pose on TF after the step just done (``obs``, its pose ``base`` on the map)."""
        raise NotImplementedError

    def _publish_senses(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        """What the robot senses of the step just done, after every robot's pose."""
        raise NotImplementedError

    def _waiting_robots(self) -> list[str]:
        """In real time: the robots the clock waits for before its first step."""
        raise NotImplementedError

    def _results_meta(self) -> dict[str, Any]:
        """What the results' meta adds of this node's own."""
        return {}

    def _stopped(self) -> str | None:
        """Why results written on a stop are incomplete (None: they are complete)."""
        return "shutdown"

    def _motions(self, actions: dict[str, Primitive]) -> dict[str, Any]:
        """The robots' moves this step, taken before it to be undone after it (robots that block each other)."""
        return {}

    def _after_moves(self, actions: dict[str, Primitive], motions: dict[str, Any], obs: dict) -> None:
        """The step is done (its observations ``obs``): undo what ``motions`` must not have done."""

    def _moved(self, slot: RobotSlot, metres: float, step: int) -> None:
        """The robot of ``slot`` moved ``metres`` in ``step``."""

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
        """What the robots' nodes wait for goes out first: each navigation goal's step (its feedback) and the
        statuses, so that every robot's nodes start on the step while the rest (the clock, odometry, TF in one
        message, detections or camera images) goes out."""
        stamp = self._stamp()
        self.progress_now = self.sim.world.progress()  # (goal items in place, goal items): once a step
        now = time.monotonic()
        header = Header(stamp=stamp, frame_id="map")
        # made first, then sent right after the navigation feedback: an executor, which needs both, mostly takes
        # them in one wake
        statuses = {name: self._status(slot, obs[name], header) for name, slot in self.robots.items()}
        for name, slot in self.robots.items():
            slot.tick = None
            slot.waited_since = now
            if slot.navigation is not None and self._ready(name):
                self._plan_navigation(slot)
        for name, slot in self.robots.items():
            if statuses[name] is not None:
                slot.status.publish(statuses[name])
        self.clock_publisher.publish(Clock(clock=stamp))
        bases = {n: RigidTransform.of(o.position[0], o.position[1], yaw_deg=o.heading) for n, o in obs.items()}
        with self.tf.batched():  # before what the robots sense: a lookup at the step's stamp finds the poses
            for name, slot in self.robots.items():
                self._publish_pose(slot, obs[name], header, bases[name])
        for name, slot in self.robots.items():
            self._publish_senses(slot, obs[name], header, bases[name])

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
            self.tf.flush()  # before the view's images: a lookup at the view's stamp finds them
            header = Header(stamp=at, frame_id=f"{self.frame_of[name]}/camera_optical_frame")
            publishers.info.publish(camera_info_to_msg(frame.intrinsics, header))
            publishers.depth.publish(depth_to_msg(frame.depth, header))
            publishers.image.publish(rgb_to_msg(frame.rgb, header))
            stamps.append(at)
        return stamps

    def _odometry(self, slot: RobotSlot, o: Observation, header: Header) -> Odometry:
        """The robot's odometry: its pose in its ``odom`` frame (the map's, unless its odometry drifts). One message
        a robot, its stamp and pose set anew each step (made once: its covariances are arrays)."""
        frame = self.frame_of[o.agent]
        message = slot.odom_message
        if message is None:
            message = slot.odom_message = Odometry(child_frame_id=f"{frame}/base_link")
        if not slot.odometry.drifts:
            message.header, position, heading = header, o.position, o.heading
        else:
            pose = slot.odometry.odom_pose(slot.poses[-1][1])
            heading = math.degrees(math.atan2(pose.rotation[1, 0], pose.rotation[0, 0]))
            message.header = Header(stamp=header.stamp, frame_id=f"{frame}/odom")
            position = (pose.translation[0], pose.translation[1])
        at = message.pose.pose
        at.position.x, at.position.y = float(position[0]), float(position[1])
        at.orientation = yaw_quaternion(heading)
        return message

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
        slot.ever_acted = slot.ever_acted or tick.kind in (StepTick.ACT, StepTick.OBSERVED)
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
            waiting = self._waiting_robots()
            if self.sim.steps == 0 and waiting and now - self.created < self.startup_timeout_s:
                return  # the clock starts when every robot is up (or after startup_timeout_s)
            self._step()
            return
        for name, slot in self.robots.items():
            limit = self.tick_timeout_s if slot.ever_acted else self.startup_timeout_s
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
        motions = self._motions(actions)
        obs, _, _, _, infos = self.env.step(actions)
        self._after_moves(actions, motions, obs)
        failures = {a: infos[a]["failure"] for a in actions}
        self.recorder.step(clock_before, self.sim, actions, failures)  # in the journal before a robot sees the step
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
            self._moved(slot, math.dist(positions_before[name], self.sim.world.agents[name].position), step_before)
        if not self.env.agents:
            self._end_goals()
        self._publish_step(obs)
        self.meter.step(actions, failures)  # (the robots work on the step meanwhile)
        self._log_progress()
        if not self.env.agents:
            self._finish_episode()

    def _log_progress(self) -> None:
        """Live progress: a line whenever a goal item is put in place, and every 100 steps."""
        done, total = self.progress_now
        if done != self.progress_logged or self.sim.steps % 100 == 0:
            self.progress_logged = done
            self.get_logger().info(
                f"step {self.sim.steps} (clock {self.sim.clock}/{self.sim.horizon}): {done}/{total} goal items in "
                f"place, {self.meter.messages} messages"
            )

    # --- navigate_to_pose -----------------------------------------------------------------------------------------
    def _fault(self, slot: RobotSlot, kinds: tuple[str, ...], goal: int) -> TwinFault | None:
        """The twin's fault of this kind for the robot's ``goal``-th goal, if one is set."""
        robot = self.frame_of[slot.name]
        return next((f for f in self.faults if f.robot == robot and f.kind in kinds and f.goal == goal), None)

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
        if self.braking_s > 0:  # as Nav2 does: the goal ends once the controller has brought the base to a stop
            nav.stopped_at = self.sim.steps + math.ceil(self.braking_s * self.tick_hz)
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
        if robot and not self.detections_ids:
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
        if slot.navigation is not None and self.real_arm:  # the base still drives (or brakes): the arm will not move
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
        """What the arm answers: success or why not and, a real arm having handled an object, its class and where
        it is now (a driver whose detector gives no ids knows no id either)."""
        result = Manipulate.Result(success=not reason, failure_reason=reason)
        world, handled = self.sim.world, pending.handled
        if not self.real_arm or reason or not (world.is_item(handled) or world.is_fixture(handled)):
            return result
        result.object_id = handled if self.detections_ids else -1
        result.object_class = (world.item(handled) if world.is_item(handled) else world.fixture(handled)).name
        result.object_position.header = Header(stamp=self.get_clock().now().to_msg(), frame_id="map")
        result.object_position.point.x, result.object_position.point.y = map(float, world.position_of(handled))
        return result

    def _arm_refusal(self, slot: RobotSlot, operation: ManipulationKind) -> str:
        """What the robot's arm answers to ``operation`` with what it holds ('' when it can try)."""
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
        self._keep_decision(record)

    def _keep_decision(self, record: dict[str, Any]) -> None:
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
            meta.update(self._results_meta())
            write_results([result], self.results_path, meta, stopped=stopped)
        if self.trace_path:
            self.recorder.finish(self.sim, asdict(result))
            self.recorder.write(self.trace_path)

    def result(self) -> EpisodeResult:
        return self.meter.result(self.trace_path or None)


def _time(ns: int) -> Time:
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def run_stand_in(node_class: type[StandInRobots], argv: list[str] | None = None) -> None:
    """Run a stand-in node until its episode is over (then its outputs, once the last decisions and goal results
    are in) or it is stopped (then its outputs for the steps done)."""
    rclpy.init(args=argv)
    node = None
    try:
        try:
            node = node_class()
        except STARTUP_ERRORS as exc:
            raise cannot_start(node_class.__name__, exc) from None
        # one executor for the node's life: rclpy.spin_once(node) adds and removes the node on every call, and each
        # time the executor wakes once more and builds its wait set again (in Python, every entity of the node)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while rclpy.ok() and not node.finished:
            executor.spin_once(timeout_sec=0.1)
        # The last decisions (published just before their robot's tick) and goal results are still in flight.
        end = time.monotonic() + RESULTS_GRACE_S
        while rclpy.ok() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        node.write_outputs()
    except (KeyboardInterrupt, ExternalShutdownException):
        if node is not None and not node.finished:  # stopped mid-episode: the partial results
            node.write_outputs(stopped=node._stopped())
    finally:
        if node is not None:
            node.env.close()  # a bridge's engine session (Unity) ends with the node
            node.destroy_node()
        rclpy.try_shutdown()
