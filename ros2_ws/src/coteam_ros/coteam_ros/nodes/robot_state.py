"""The robot_state node (real robots): the robot's ``status`` from its odometry and its object detector.

In simulation the sim bridge publishes each robot's status; on a real robot this node does, at ``rate_hz``:

* subscribes ``odom`` (``nav_msgs/Odometry``, pose in the shared ``map`` frame) and ``detections``
  (``coteam_interfaces/ObjectDetections``; object ids of the task's object catalogue, ``container`` = name of
  the fixture holding the object, ``holder`` = this robot's name for what is in its gripper, ``open_state`` for
  containers);
* publishes ``status`` (``coteam_interfaces/RobotStatus``, latched): step = number of statuses so far, clock = the
  same, always ready, the observation as JSON -- position and heading from the odometry, room from the task's
  floor plan, visible objects from the detections received since the previous status (the previous batch again
  when none came), holdings from the objects this robot holds (in hand order of their ids: the detector does not
  say which gripper). Teammates are not observed (they report over ``/team/messages``); messages are delivered by
  the planner on arrival.

Parameters: ``robot``, ``robots``, ``suite`` / ``episode`` / ``seed`` / ``scene_path`` (the task, see
``coteam_ros.episode``), ``rate_hz`` (default 2.0), ``hands`` (default 2).
"""

from __future__ import annotations

import json
import math
from typing import Any

from coteam_interfaces.msg import ObjectDetections, RobotStatus
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header

from coteam.observation import ObjectView, Observation, observation_to_dict
from coteam.world import Container, ObjectKind, Relation, Scene
from coteam_ros.convert import detections_from_msg, heading_from_quaternion
from coteam_ros.episode import load_episode
from coteam_ros.nodes import spin_node

NODE_NAME = "robot_state"
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STREAM = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


class ObservationAssembler:
    """Builds a robot's :class:`Observation` from its pose and its detections, with the task's catalogue for the
    object kinds and the fixtures' names. ROS-free, so it is tested without DDS."""

    def __init__(self, robot: str, scene: Scene, hands: int = 2) -> None:
        self.robot = robot
        self.floorplan = scene.floorplan
        self.hands = hands
        self.fixtures = {f.id: f for f in (*scene.containers, *scene.surfaces)}
        self.fixtures_named: dict[str, list[int]] = {}
        for f in self.fixtures.values():
            self.fixtures_named.setdefault(f.name, []).append(f.id)
        self.items = {i.id: i for i in scene.items}
        self.room_ids = {r.name: r.id for r in self.floorplan.rooms}

    def view(self, det: Any) -> ObjectView | None:
        """The observation's view of one detection; None for ids outside the catalogue."""
        room = self.room_ids.get(det.room, -1)
        if room < 0 and (at := self.floorplan.room_at(det.position)) is not None:
            room = at.id
        if det.object_id in self.fixtures:
            fixture = self.fixtures[det.object_id]
            if isinstance(fixture, Container):
                return ObjectView(
                    fixture.id, fixture.name, ObjectKind.CONTAINER, room, det.position, is_open=det.is_open
                )
            return ObjectView(fixture.id, fixture.name, ObjectKind.SURFACE, room, det.position)
        item = self.items.get(det.object_id)
        if item is None:
            return None
        holder = self.fixture_named(det.container, det.position)
        if det.holder:
            location = Relation.HELD
        elif holder >= 0:
            location = Relation.IN if isinstance(self.fixtures[holder], Container) else Relation.ON
        else:
            location = Relation.FLOOR
        return ObjectView(
            item.id,
            item.name,
            ObjectKind.ITEM,
            room,
            det.position,
            item.category,
            location=location,
            holder=holder if location in (Relation.IN, Relation.ON) else -1,
            held_by=det.holder,
            capacity=item.capacity,
        )

    def fixture_named(self, name: str, near: tuple[float, float]) -> int:
        """The id of the fixture called ``name`` (the nearest to ``near`` when several are); -1 for none."""
        ids = self.fixtures_named.get(name, [])
        if not ids:
            return -1
        return min(ids, key=lambda i: math.dist(self.fixtures[i].position, near))

    def observation(self, step: int, position: tuple[float, float], heading: float, detections: list) -> Observation:
        views: dict[int, ObjectView] = {}
        for det in detections:  # the latest sighting of each object wins
            view = self.view(det)
            if view is not None:
                views[view.id] = view
        held = sorted(v.id for v in views.values() if v.held_by == self.robot)[: self.hands]
        holding = tuple(held) + (None,) * (self.hands - len(held))
        room = self.floorplan.room_at(position)
        return Observation(
            agent=self.robot,
            step=step,
            frames=step,
            position=position,
            heading=round(heading) % 360,
            room=room.id if room else -1,
            holding=holding,
            visible=tuple(views[k] for k in sorted(views)),
            view_headings=(round(heading) % 360,),
        )


class RobotStateNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.robot: str = self.declare_parameter("robot", "robot1").value
        robots = list(self.declare_parameter("robots", [self.robot]).value)
        suite = self.declare_parameter("suite", "cwah-test").value
        episode = self.declare_parameter("episode", 0).value
        seed = self.declare_parameter("seed", 0).value
        scene_path = self.declare_parameter("scene_path", "").value
        rate_hz: float = self.declare_parameter("rate_hz", 2.0).value
        hands: int = self.declare_parameter("hands", 2).value
        setup = load_episode(suite, episode, seed, robots, scene_path)
        self.assembler = ObservationAssembler(self.robot, setup.scene, hands)
        self.pose: tuple[tuple[float, float], float] | None = None
        self.detections: list = []  # received since the last status
        self.latest: list = []  # the last non-empty batch
        self.step = 0
        self.publisher = self.create_publisher(RobotStatus, "status", LATCHED)
        self.create_subscription(Odometry, "odom", self._on_odom, STREAM)
        self.create_subscription(ObjectDetections, "detections", self._on_detections, STREAM)
        self.create_timer(1.0 / rate_hz, self._publish)
        self.get_logger().info(f"robot_state for {self.robot}: status at {rate_hz} Hz")

    def _on_odom(self, message: Odometry) -> None:
        pose = message.pose.pose
        self.pose = ((pose.position.x, pose.position.y), heading_from_quaternion(pose.orientation))

    def _on_detections(self, message: ObjectDetections) -> None:
        if message.robot and message.robot != self.robot:
            return
        self.detections.extend(detections_from_msg(message, self.step))

    def _publish(self) -> None:
        if self.pose is None:
            self.get_logger().info("waiting for odom", throttle_duration_sec=10.0)
            return
        position, heading = self.pose
        if self.detections:
            self.latest = self.detections
        obs = self.assembler.observation(self.step, position, heading, self.latest)  # no news: the last batch
        self.detections = []
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
