"""The sim_bridge node: the embedded simulator as the robots' world, over ROS 2 (real robots' stand-in is the twin,
``coteam_ros.nodes.twin``; what both share is :class:`coteam_ros.stand_in.StandInRobots`).

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
  ``tick_timeout_s`` (``startup_timeout_s`` until its first action: a robot that talks or idles first may still be
  discovering the action servers) idles that step if it is ready and is not waited for again until it ticks: a dead
  teammate never hangs the team.
* ``realtime``: a step every ``1 / tick_hz`` s with whatever the robots have ready (a navigation goal drives
  on by itself); a robot without anything waits. The clock starts once every robot has answered step 0 (or after
  ``startup_timeout_s``).

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
from dataclasses import replace
from typing import Any

from coteam_interfaces.msg import RobotStatus
from std_msgs.msg import Header

from coteam.domain.observation import Message, ObjectView, Observation, observation_to_dict
from coteam.senses.perception import Detection, detection_from_view
from coteam_ros.convert import MADE_DETECTIONS, detections_to_msg
from coteam_ros.qos import LATCHED, own_publisher
from coteam_ros.stand_in import RobotSlot, StandInRobots, run_stand_in
from coteam_ros.tf import RigidTransform, stamp_ns
from coteam_sim.bridges import ENGINES, Bridge, bridge_for
from coteam_sim.bridges.settings import TdwSettings, UnitySettings
from coteam_sim.suites import SUITES, get_suite

NODE_NAME = "sim_bridge"


class SimBridgeNode(StandInRobots):
    """Hosts one simulated episode for a team of robots (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        # the oracle's detections and their messages, made once (a robot sees the same things step after step)
        self.view_detections: dict[ObjectView, Detection] = {}
        self.detection_msgs: dict = {}
        super().__init__(NODE_NAME, **kwargs)
        session, theirs = replace(self.scene, agent_starts=()), replace(self.robots_scene, agent_starts=())
        if self.bridge is not None and session != theirs:
            raise ValueError(
                f"{self.suite}: the engine's session differs from the robots' scene file {self.scene_path}"
            )

    def _world(self, robots: list[str], namespaces: list[str]) -> tuple[list[str], list[str], dict[str, Any]]:
        """The robots' scene, or a bridge suite's episode on its engine; the episode ends at the goal."""
        self.robots_scene = self.scene
        episode, engine = self.declare_parameter("episode", 0).value, self.declare_parameter("engine", "").value
        self.bridge = self._bridge(episode, engine)
        options = {"bridge": self.bridge} if self.bridge is not None else {"scene": self.scene, "end_at_goal": True}
        return robots, namespaces, options

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
        if self.suite not in SUITES:
            return None
        spec = get_suite(self.suite).episodes()[episode]
        if not spec.bridge:
            return None
        if engine not in ENGINES:
            raise ValueError(f"{self.suite} runs on an engine: engine must be one of {', '.join(ENGINES)}")
        return bridge_for(spec, engine, unity)

    def _status_publisher(self, namespace: str, cameras: bool) -> Any:
        """The robot's status: its observation, or with cameras what its hand camera sees (its perception node adds
        what it detects in the head camera's images and publishes the status)."""
        topic = f"{namespace}/{'sim_status' if cameras else 'status'}"
        return self.create_publisher(RobotStatus, topic, LATCHED, event_callbacks=own_publisher())

    def _waiting_robots(self) -> list[str]:
        return [s.name for s in self.robots.values() if not s.ever_ticked]

    def _on_camera(self, slot: RobotSlot) -> bool:
        return self.cameras is not None and slot.camera is not None

    def _status(self, slot: RobotSlot, obs: Observation, header: Header) -> RobotStatus | None:
        """Without cameras the robot's status goes out before anything else of the step (its planner and executor
        wait for it); with them, after the images (:meth:`_publish_senses`)."""
        return None if self._on_camera(slot) else self._status_message(slot.name, obs, header, [])

    def _publish_pose(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        slot.poses.append((stamp_ns(header.stamp), base))
        slot.odom.publish(self._odometry(slot, obs, header))
        self._send_pose(slot, self.frame_of[slot.name], header.stamp)

    def _publish_senses(self, slot: RobotSlot, obs: Observation, header: Header, base: RigidTransform) -> None:
        """What the robot sees: an oracle detector, or its head camera's images and then its status."""
        if self._on_camera(slot):
            assert slot.camera is not None and self.cameras is not None
            camera_stamps = self._publish_camera(slot.name, slot.camera, base, header.stamp)
            slot.status.publish(
                self._status_message(slot.name, self.cameras.observe(slot.name, obs), header, camera_stamps)
            )
        else:
            seen = [self._detection(v, obs.step) for v in obs.visible if not v.held_by]
            slot.detections.publish(detections_to_msg(seen, header, self.detection_msgs))

    def _detection(self, view: ObjectView, step: int) -> Detection:
        """What the oracle detector makes of ``view``, once per view (its step is the first sighting's, which the
        message does not carry)."""
        detection = self.view_detections.get(view)
        if detection is None:
            if len(self.view_detections) >= MADE_DETECTIONS:
                self.view_detections.clear()
            detection = self.view_detections[view] = detection_from_view(view, step, self.names)
        return detection

    def _status_message(self, name: str, obs: Observation, header: Header, camera_stamps: list) -> RobotStatus:
        done = not self.env.agents
        progress, goal_items = self.progress_now
        public = replace(obs, messages=tuple(Message(m.sender, "", m.step) for m in obs.messages))
        return RobotStatus(
            header=header,
            robot=name,
            step=self.sim.steps,
            clock=self.sim.clock,
            ready=self._ready(name),
            episode_done=done,
            success=done and progress == goal_items,
            transport_rate=progress / goal_items if done else 0.0,
            last_failure=obs.last_failure,
            observation_json=json.dumps(observation_to_dict(public)),
            camera_stamps=camera_stamps,
        )


def main(argv: list[str] | None = None) -> None:
    run_stand_in(SimBridgeNode, argv)


if __name__ == "__main__":
    main()
