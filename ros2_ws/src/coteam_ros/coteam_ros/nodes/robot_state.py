"""The robot_state node (real robots): the robot's ``status`` from its pose on the map (TF), its object detector and
its arm.

In simulation the sim bridge publishes each robot's status; on a real robot this node does, at ``rate_hz``:

* looks the robot's pose up through TF (``coteam_ros.tf``: ``map_frame -> base_frame``, the latest transform; the
  robot's localisation publishes ``map -> odom``, its odometry ``odom -> base_link``);
* subscribes ``detections`` (``vision_msgs/Detection3DArray``, best effort, from the robot's detector or coteam's
  perception node): per detection the class name (``class_id``), score and position in any frame TF can take to the
  map (at the message's stamp), and ``id`` the task's object id when the detector knows the instance (ArUco
  markers), else empty: a class-only detection is fused and stands for one of the task's objects of its class
  (``coteam.senses.perception.CameraPerception``). An item detected within reach of a fixture is in or on it. An array
  whose transform is not there yet waits up to ``tf_wait_s`` for it; drops are counted by cause, each cause said
  once (``coteam_ros.observations.DetectionsAwaitingTf``);
* subscribes ``arm_state`` (``coteam_interfaces/ArmState``, latched; the executor's): what the grippers hold, the
  containers the robot opened or closed, and where it put objects down;
* publishes ``status`` (``coteam_interfaces/RobotStatus``, latched): step = number of statuses so far, clock = the
  same, always ready, the observation as JSON (``coteam.senses.perception.ObservationAssembler.observation``) --
  position and heading from the pose, room from the task's floor plan, the fixtures of that room as the task describes
  them, the items detected since the previous status (none when none came: the planner remembers older sightings as
  seen then), once each the objects the arm put down since (in or on the fixture it put them, as a camera may not
  see into what the robot works at), the holdings from the arm. No fixture is shown completely: what the detector
  does not report is not taken for gone (a grasp that finds nothing is, ``coteam.agent.memory.NOT_WHERE_REMEMBERED``).
  Teammates are not observed (they report over ``/team/messages``); messages are delivered by the planner on
  arrival.

Stale sensors: once ``odom`` (``nav_msgs/Odometry``) has been heard, no odometry for ``odom_timeout_s`` (2 s) holds
the status (the planner waits; said once, and once when it is back); no detections for ``detections_timeout_s``
(5 s) is said once too (the statuses show no items until the detector speaks again).

Parameters: ``robot``, ``robots``, ``scene_path`` / ``seed`` (the task, see ``coteam_ros.episode``), ``rate_hz``
(default 2.0), ``hands`` (default 2), ``map_frame`` (default ``map``), ``base_frame`` (default
``<robot>/base_link``), ``wiring_timeout_s`` (no publisher of ``detections`` this long after start stops the node, and
the launch, with one line naming the resolved topic; 0: no check).
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from coteam_interfaces.msg import ArmState, RobotStatus
from nav_msgs.msg import Odometry
from rclpy.node import Node
from std_msgs.msg import Header
from vision_msgs.msg import Detection3DArray

from coteam.domain.observation import observation_to_dict
from coteam.senses.perception import CameraPerception, ObservationAssembler
from coteam_ros.episode import load_episode
from coteam_ros.observations import TF_RETRY_S, TF_WAIT_S, DetectionsAwaitingTf, detector_output_on_map
from coteam_ros.qos import LATCHED, SENSOR, own_publisher
from coteam_ros.runtime import Wire, require_wiring, spin_node, wall_timer
from coteam_ros.tf import TransformUnavailable, transform_lookup

NODE_NAME = "robot_state"


class RobotStateNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.robot: str = self.declare_parameter("robot", "robot1").value
        robots = list(self.declare_parameter("robots", [self.robot]).value)
        scene_path = self.declare_parameter("scene_path", "").value
        seed = self.declare_parameter("seed", 0).value
        rate_hz: float = self.declare_parameter("rate_hz", 2.0).value
        hands: int = self.declare_parameter("hands", 2).value
        self.map_frame: str = self.declare_parameter("map_frame", "map").value
        self.base_frame: str = self.declare_parameter("base_frame", f"{self.robot}/base_link").value
        setup = load_episode(scene_path, seed, robots)
        self.assembler = ObservationAssembler(self.robot, setup.scene, hands)
        self.arm = ArmState(holding=[-1] * hands)
        self.camera = CameraPerception(self.assembler)  # class-only detections: fused, bound to the task's objects
        self.confirmed: list[int] = []  # map objects of class-only detections confirmed since the last status
        self.transforms = transform_lookup(self)
        self.detections: list = []  # received since the last status
        self.reported_placed: dict[int, tuple[int, bool]] = {}  # the arm's placements the statuses have shown
        self.reported_open: dict[int, bool] = {}  # the containers the arm left open or closed, as statuses showed
        self.ever_detected = False
        self.step = 0
        self.room = ""  # the robot's room at its last status (where class-only detections are seen)
        self.publisher = self.create_publisher(RobotStatus, "status", LATCHED, event_callbacks=own_publisher())
        self.create_subscription(Detection3DArray, "detections", self._on_detections, SENSOR)
        self.create_subscription(ArmState, "arm_state", self._on_arm_state, LATCHED)
        # stale sensors: a detector that went quiet, odometry that stopped (watched once it has been heard)
        self.detections_timeout_s: float = self.declare_parameter("detections_timeout_s", 5.0).value
        self.odom_timeout_s: float = self.declare_parameter("odom_timeout_s", 2.0).value
        self.heard_detections = time.monotonic()
        self.heard_odom: float | None = None
        self.stale: set[str] = set()  # what is stale now (each is said once when it goes stale, once when back)
        self.create_subscription(Odometry, "odom", self._on_odom, SENSOR)
        wall_timer(self, 1.0 / rate_hz, self._publish)
        # detection arrays wait (a bounded time) for TF to place them at their own stamp
        self.awaiting_tf = DetectionsAwaitingTf(self.declare_parameter("tf_wait_s", TF_WAIT_S).value)
        self.arrays_placed = 0
        wall_timer(self, TF_RETRY_S, self._place_detections)
        detections = self.resolve_topic_name("detections")
        require_wiring(
            self,
            self.declare_parameter("wiring_timeout_s", 0.0).value,
            [Wire("detections", "detector publishing", lambda: self.count_publishers(detections) > 0)],
        )
        self.get_logger().info(
            f"robot_state for {self.robot}: status at {rate_hz} Hz, pose {self.map_frame} -> {self.base_frame}"
        )

    def _on_odom(self, _: Odometry) -> None:
        self.heard_odom = time.monotonic()
        self._fresh("odometry")

    def _fresh(self, what: str) -> None:
        if what in self.stale:
            self.stale.discard(what)
            self.get_logger().info(f"{what} is back")

    def _went_stale(self, what: str, consequence: str) -> None:
        if what not in self.stale:
            self.stale.add(what)
            self.get_logger().error(f"no {what} for a while: {consequence}")

    def _on_detections(self, message: Detection3DArray) -> None:
        self.heard_detections = time.monotonic()
        self.ever_detected = True
        self._fresh("detections")
        self.awaiting_tf.add(message, time.monotonic())
        self._place_detections()

    def _place_detections(self) -> None:
        """Put on the map every waiting detection array TF can place now (at its own stamp); say each new cause of a
        dropped array once (tf2's message filter would drop them quietly)."""
        arrays, causes = self.awaiting_tf.place(
            lambda m: detector_output_on_map(m, self.step, self.assembler, self.transforms, self.map_frame),
            time.monotonic(),
        )
        for cause in causes:
            self.get_logger().warning(f"detections dropped: {cause}; each drop is counted")
        self.arrays_placed += len(arrays)
        for _, detections in arrays:
            self.detections.extend(d for d in detections if d.object_id >= 0)
            class_only = [d for d in detections if d.object_id < 0]
            self.confirmed += self.camera.frame(class_only, self.room).confirmed

    def destroy_node(self) -> None:
        """Says, as the node stops, how many detection arrays were placed on the map and how many were dropped, by
        cause (each cause was said once when first seen)."""
        drops = self.awaiting_tf.drops
        if self.arrays_placed or drops:
            why = "; ".join(f"{cause}: {n}" for cause, n in drops.most_common())
            self.get_logger().info(
                f"detection arrays: {self.arrays_placed} placed, {sum(drops.values())} dropped"
                + (f" ({why})" if why else "")
            )
        super().destroy_node()

    def _on_arm_state(self, message: ArmState) -> None:
        if message.robot == self.robot:
            self.arm = message

    def _publish(self) -> None:
        now_s = time.monotonic()
        if now_s - self.heard_detections > self.detections_timeout_s and self.ever_detected:
            self._went_stale("detections", "the status shows no items until the detector speaks again")
        if self.heard_odom is not None and now_s - self.heard_odom > self.odom_timeout_s:
            self._went_stale("odometry", "the robot's status is held (its planner waits) until it comes back")
            return
        try:
            pose = self.transforms.lookup(self.map_frame, self.base_frame)
        except TransformUnavailable as exc:
            self.get_logger().info(f"waiting for the robot's pose: {exc}", throttle_duration_sec=10.0)
            return
        position = (float(pose.translation[0]), float(pose.translation[1]))
        room = self.assembler.floorplan.room_at(position)
        self.room = room.name if room else ""
        heading = math.degrees(math.atan2(pose.rotation[1, 0], pose.rotation[0, 0])) % 360
        arm = self.arm
        known_open = {
            container: is_open
            for container, is_open in zip(arm.containers, arm.container_open, strict=False)
            if self.reported_open.get(container) != is_open
        }
        placed = {
            item: (on, into)
            for item, on, into in zip(arm.placed, arm.placed_on, arm.placed_in, strict=False)
            if self.reported_placed.get(item) != (on, into)
        }
        # only what the detector said since the last status (an older sighting may be out of date: the planner
        # remembers it as seen then), and once each placement the arm reports
        obs = self.assembler.observation(
            self.step, position, heading, self.detections, list(arm.holding), known_open, placed
        )
        self.reported_placed.update(placed)
        self.reported_open.update(known_open)
        obs = self.camera.merged(obs, self.confirmed)
        self.detections, self.confirmed = [], []
        now = self.get_clock().now().to_msg()
        self.publisher.publish(
            RobotStatus(
                header=Header(stamp=now, frame_id="map"),
                robot=self.robot,
                step=self.step,
                clock=self.step,
                ready=True,
                episode_done=False,
                last_failure="",
                observation_json=json.dumps(observation_to_dict(obs)),
            )
        )
        self.step += 1


def main(argv: list[str] | None = None) -> None:
    spin_node(RobotStateNode, argv)


if __name__ == "__main__":
    main()
