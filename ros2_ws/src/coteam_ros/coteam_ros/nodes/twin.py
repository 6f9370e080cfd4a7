"""The twin node: simulated robots that offer exactly what real robots offer, so that the robots' own nodes run as on
hardware (``robot_state``, ``navigation: nav2``) against them; ``coteam launch`` of a hardware team file with
``twin:`` starts it. Its robots stand in on the embedded simulator (:class:`coteam_ros.stand_in.StandInRobots`).

Robots keep their names (``robots``: the task's, e.g. a world file's robot1, robot2; the simulator knows them as its
agents in the order of their start poses), and each is offered what a real robot offers: ``navigate_to_pose``,
``manipulate`` (its result when done), ``detections`` (what the robot sees), ``odom`` and its TF; no status, nor
ticks. It runs in real time (``mode`` realtime); the clock starts once every robot's ``detections`` and ``odom`` have a
subscriber (or after ``startup_timeout_s``). The episode goes on past the goal (the team must see for itself that it
is done) until the node is stopped or the task's ``time_limit_s`` passes (a serving team's twin, ``serve``, runs
until it is stopped: its tasks come and go).

``results_path`` then holds what really happened (complete, with every robot's Nav2 and arm goals by how they ended
under ``meta.goals``, and those still running when it stopped), and each decision in the trace carries
``twin_step``, the twin's step when it arrived (the robots count their own).

What real robots do, it plays:

* ``robot_profiles_json`` (robot -> a ``coteam_ros.twin_robots`` profile, default ``generic``): which real robot each
  plays, its grippers (a grasp with every gripper full, or a door with every gripper full on a robot that needs a
  free one, fails at once as its arm driver says), and its top speed (kept as a speed limit is; ``meta.robots`` in the
  results). A ``speed_limit`` (``nav2_msgs/SpeedLimit``) holds as Nav2's controller keeps it.
* As Nav2, it ends a canceled navigation goal once the base has stopped (:data:`BRAKING_S` later), and its arm refuses
  a goal while the base still moves (``the base is moving``, counted as ``manipulations while driving``).
* ``faults_json`` (``coteam_ros.faults.TwinFault``): Nav2 refusing or aborting a goal, a robot that never moves, an arm
  that never answers, odometry or detections falling silent.
* ``detector_json`` (``coteam_ros.twin_robots.TwinDetector``): what its detectors get wrong; without ids, its arms
  take the object of the asked class in front of them. ``odometry_json``: odometry that drifts, corrected by a
  localisation's ``map -> odom``. ``tf_lag_s``: poses on ``/tf`` late; ``detections_frame`` (``optical``) and
  ``detections_delay_s``: detections in the camera's frame, stamped before they are sent.
* With ``robots_block`` its robots are obstacles to each other (``coteam_ros.twin_robots.robot_in_the_way``; a held
  robot routes round the other where the map leaves room, ``detour``; held :data:`HELD_ABORT_S`, its Nav2 goal
  aborts with 105).
* With ``cameras`` (a team file with ``perception:``) it offers camera images instead of detections: every
  ``1 / camera_hz`` s (default 1) each robot's head looks round once (a world file's map draws walls high and the
  furniture inside rooms table-high), and the robots' own perception nodes detect the items; a ``detections_stop``
  fault stops its images.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from typing import Any

from builtin_interfaces.msg import Time
from std_msgs.msg import Header
from vision_msgs.msg import Detection3DArray

from coteam.domain.observation import Observation
from coteam.domain.world import AGENT_NAMES, Benchmark, Scene
from coteam.senses.perception import detection_from_view
from coteam_ros.convert import detections_to_msg
from coteam_ros.faults import TwinFault
from coteam_ros.qos import STREAM
from coteam_ros.runtime import speed_limit_message
from coteam_ros.stand_in import (
    RobotSlot,
    StandInRobots,
    _time,
    run_stand_in,
)
from coteam_ros.tf import CAMERA_LINK_TO_OPTICAL, RigidTransform, stamp_ns
from coteam_ros.twin_robots import CLEARANCE_M, TwinDetector, TwinOdometry, detour, robot_in_the_way, twin_robot
from coteam_sim.primitives import Primitive, PrimitiveKind

NODE_NAME = "twin"
BRAKING_S = 0.4  # a canceled Nav2 goal ends this long after the cancel: the controller stops the base first
SERVING_TWIN_S = 365 * 24 * 3600.0  # a serving team's twin: a year, i.e. until it is stopped


class TwinNode(StandInRobots):
    """Simulated robots with real robots' interfaces (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)

    def _world(self, robots: list[str], namespaces: list[str]) -> tuple[list[str], list[str], dict[str, Any]]:
        """The task's robots as the simulator's agents; what the real robots do that the twin plays."""
        if self.mode != "realtime":
            raise ValueError("a twin runs in real time (mode realtime)")
        time_limit_s: float = self.declare_parameter("time_limit_s", 0.0).value
        if self.declare_parameter("serve", False).value:  # the home lives on; people's tasks keep their own time
            time_limit_s = SERVING_TWIN_S
        self.faults = TwinFault.parse(json.loads(self.declare_parameter("faults_json", "[]").value or "[]"))
        self.braking_s, self.real_arm = BRAKING_S, True
        # sensors as real ones behave: TF published late, detections in the camera's frame, stamped earlier
        self.tf_lag_ns = round(self.declare_parameter("tf_lag_s", 0.0).value * 1e9)
        self.robots_block = self.declare_parameter("robots_block", False).value
        self.detections_delay_ns = round(self.declare_parameter("detections_delay_s", 0.0).value * 1e9)
        self.detections_frame = self.declare_parameter("detections_frame", "map").value
        if self.detections_frame not in ("map", "optical"):
            raise ValueError(f"detections_frame must be map or optical, not {self.detections_frame!r}")
        # what its detectors get wrong; without ids, its arms take the object of the asked class in front of them
        detector = json.loads(self.declare_parameter("detector_json", "{}").value or "{}")
        self.detections_ids = detector.pop("ids", True)
        self.detector = TwinDetector(**detector)
        self.detector_rngs: dict[str, random.Random] = {}  # robot -> its detector's errors, seeded by the episode's
        self.odometry = json.loads(self.declare_parameter("odometry_json", "{}").value or "{}")
        self.drift_rngs: dict[str, random.Random] = {}  # robot -> its odometry's errors
        # robot -> the real robot it plays (coteam_ros.twin_robots; default generic)
        profiles = json.loads(self.declare_parameter("robot_profiles_json", "{}").value or "{}")
        self.playing = {robot: twin_robot(profile) for robot, profile in profiles.items()}
        self.scene, self.frame_of = twin_scene(self.scene, robots, time_limit_s * self.tick_hz)
        namespaces = [namespaces[robots.index(name)] for name in self.frame_of.values()]
        return list(self.frame_of), namespaces, {"scene": self.scene, "end_at_goal": False}

    def _robot_slot(self, slot: RobotSlot) -> None:
        """The real robot the slot's robot plays, its odometry, and the speed limit its Nav2 keeps to."""
        slot.robot = self.playing.get(self.frame_of[slot.name], slot.robot)
        slot.odometry = TwinOdometry(**self.odometry)
        # as Nav2's controller does: the newest limit holds (no history kept)
        self.create_subscription(
            speed_limit_message(), f"{slot.namespace}/speed_limit", lambda m, s=slot: self._on_limit(s, m), STREAM
        )

    def _waiting_robots(self) -> list[str]:
        """Real robots report nothing to a twin: its clock starts once every robot's nodes listen."""
        return [
            s.name
            for s in self.robots.values()
            if (s.camera is None and s.detections.get_subscription_count() == 0) or s.odom.get_subscription_count() == 0
        ]

    def _stopped(self) -> str | None:
        return None  # a twin has no end of its own but the time limit: stopped when the team is done, it is complete

    def _publish_pose(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        """What a real robot's drivers publish of where it is: odometry (drifting, with its localisation) and its pose
        on TF (late, if it lags)."""
        name, stamp, frame = slot.name, header.stamp, self.frame_of[slot.name]
        if slot.odometry.drifts and slot.poses:
            driven = math.dist(base.translation[:2], slot.poses[-1][1].translation[:2])
            rng = self.drift_rngs.setdefault(name, random.Random(f"{self.seed}:{name}:odometry"))
            slot.odometry.drove(obs.position, driven, rng)
        if slot.odometry.drifts:
            self._localise(slot, frame, stamp)
        slot.poses.append((stamp_ns(stamp), base))
        if not self._silenced(slot, "odom_stop"):
            slot.odom.publish(self._odometry(slot, obs, header))
            self._send_pose(slot, frame, stamp)

    def _publish_senses(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        """What its detector sees (or its camera's images)."""
        name, stamp, frame = slot.name, header.stamp, self.frame_of[slot.name]
        if self.cameras is not None and slot.camera is not None:  # its camera: its own rate, no oracle
            if self.sim.steps % self.camera_every == 0 and not self._silenced(slot, "detections_stop"):
                self._publish_camera(name, slot.camera, base, stamp, not self._silenced(slot, "odom_stop"))
        elif not self._silenced(slot, "detections_stop"):
            views = [detection_from_view(v, obs.step, self.names) for v in obs.visible if not v.held_by]
            rng = self.detector_rngs.setdefault(name, random.Random(f"{self.seed}:{name}"))
            false_classes = () if self.detections_ids else self.item_classes
            views = self.detector.detect(views, obs.position, obs.heading, self.sim.steps, rng, false_classes)
            slot.detections.publish(self._detector_output(slot, frame, views, header))

    def _localise(self, slot: RobotSlot, frame: str, stamp: Time) -> None:
        """A twin robot whose odometry drifts: its localisation's ``map -> odom`` at its own rate, stamped ahead."""
        now, odometry = stamp_ns(stamp), slot.odometry
        if slot.localised_ns >= 0 and now - slot.localised_ns < 1e9 / odometry.localisation_hz:
            return
        slot.localised_ns = now
        ahead = _time(now + round(odometry.future_s * 1e9))
        self.tf.send([odometry.map_to_odom.stamped("map", f"{frame}/odom", ahead)])

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

    def _silenced(self, slot: RobotSlot, kind: str) -> bool:
        """Whether a twin's fault has silenced this sensor of the robot by now."""
        robot, elapsed = self.frame_of[slot.name], self.sim.steps / self.tick_hz
        return any(f.robot == robot and f.kind == kind and elapsed >= f.after_s for f in self.faults)

    def _on_limit(self, slot: RobotSlot, limit: Any) -> None:
        """A speed limit for the robot (``nav2_msgs/SpeedLimit``): m/s, or a percentage of its top speed (one
        move a step); 0 lifts it."""
        top = self.sim.config.stride_m(self.scene.benchmark) * self.tick_hz
        speed = limit.speed_limit * top / 100.0 if limit.percentage else limit.speed_limit
        if speed != slot.speed_limit:
            self.get_logger().info(f"{self.frame_of[slot.name]}: speed limit {speed:g} m/s" if speed else "no limit")
        slot.speed_limit = max(0.0, speed)

    def _motions(self, actions: dict[str, Primitive]) -> dict[str, Any]:
        return {name: self.sim.motion(name) for name in actions} if self.robots_block else {}

    def _after_moves(self, actions: dict[str, Primitive], motions: dict[str, Any], obs: dict) -> None:
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

    def _moved(self, slot: RobotSlot, metres: float, step: int) -> None:
        """A twin robot moved ``metres`` in ``step``: under a speed limit it stands still long enough that the
        move took no less than its distance at that speed."""
        if metres <= 0.0:
            return
        speed = slot.drive_speed()
        steps = max(1, math.ceil(metres * self.tick_hz / speed - 1e-9)) if speed else 1
        slot.still_until = step + steps
        slot.top_speed = max(slot.top_speed, metres * self.tick_hz / steps)

    def _keep_decision(self, record: dict[str, Any]) -> None:
        record["twin_step"] = self.sim.steps  # the robots' steps are their own: when it reached the twin, on its clock
        super()._keep_decision(record)

    def _results_meta(self) -> dict[str, Any]:
        """What the robots asked of their navigation and arms, and how it went; which robot each played; how fast they
        drove."""
        return {
            "goals": {
                self.frame_of[n]: dict(sorted({**slot.counts, "still running": slot.running_goals()}.items()))
                for n, slot in self.robots.items()
            },
            "robots": {self.frame_of[n]: slot.robot.name for n, slot in self.robots.items()},
            "speeds": {
                self.frame_of[n]: {"top_mps": round(slot.top_speed, 3), "limit_mps": slot.speed_limit}
                for n, slot in self.robots.items()
            },
        }


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


def main(argv: list[str] | None = None) -> None:
    run_stand_in(TwinNode, argv)


if __name__ == "__main__":
    main()
