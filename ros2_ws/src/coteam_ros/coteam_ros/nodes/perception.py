"""The perception node: a robot's detections fused into its semantic map (``coteam.perception``).

Topics, relative to the robot's namespace:

* subscribes ``detections`` (``coteam_interfaces/ObjectDetections``);
* publishes ``semantic_map`` (``coteam_interfaces/SemanticMap``) after every detections message, and
  ``semantic_markers`` (``visualization_msgs/MarkerArray``) for RViz/Foxglove: per object a cube (containers,
  surfaces) or sphere coloured by category in namespace ``objects`` and a text label in ``labels``, both with
  marker id = object id so displays update in place. Objects not re-seen in their room are drawn translucent.
  Both are transient-local with depth 1: a late subscriber gets the current map.

Parameters: ``robot`` (this robot's name; detections from another robot are ignored), ``min_confidence``
(detections below it are ignored), ``frame_id`` of the published map (default "map"), ``forget_after_steps``
(drop objects not seen for more than that many observations; -1, the default, keeps them).

Each ``ObjectDetections`` gives its step (the sim bridge's step; a detector without one leaves -1 and the node
numbers messages 0, 1, ...), the robot's room (objects remembered there but not detected are marked unconfirmed)
and the rooms the robot has explored (added to the map's; without them, the rooms in which it accepted
detections count as explored).

Run: ``python -m coteam_ros.nodes.perception --ros-args -r __ns:=/alice -p robot:=alice``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from builtin_interfaces.msg import Time
from coteam_interfaces.msg import ObjectDetections, SemanticMap
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from coteam.perception import SemanticMapFusion, SemanticObject
from coteam_ros.convert import detections_from_msg, semantic_map_to_msg
from coteam_ros.nodes import spin_node

NODE_NAME = "perception"
DETECTIONS_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
MAP_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

OBJECTS_NS = "objects"
LABELS_NS = "labels"
BOX_CATEGORIES = frozenset({"container", "surface"})  # drawn as cubes, everything else as spheres
CATEGORY_COLORS: dict[str, tuple[float, float, float]] = {
    "food": (0.95, 0.55, 0.10),
    "stuff": (0.20, 0.50, 0.95),
    "container": (0.55, 0.35, 0.15),
    "surface": (0.60, 0.60, 0.60),
}
PALETTE: tuple[tuple[float, float, float], ...] = (  # other categories, chosen by a stable hash of the name
    (0.90, 0.20, 0.20),
    (0.20, 0.75, 0.30),
    (0.60, 0.30, 0.80),
    (0.95, 0.85, 0.20),
    (0.10, 0.75, 0.75),
    (0.90, 0.40, 0.70),
    (0.50, 0.80, 0.10),
    (0.40, 0.40, 0.90),
)
SPHERE_SIZE_M = 0.25
BOX_SIZE_M = 0.5
LABEL_HEIGHT_M = 0.2
UNCONFIRMED_ALPHA = 0.35


def category_color(category: str, alpha: float = 1.0) -> ColorRGBA:
    r, g, b = CATEGORY_COLORS.get(category) or PALETTE[zlib.crc32(category.encode()) % len(PALETTE)]
    return ColorRGBA(r=r, g=g, b=b, a=alpha)


def object_label(obj: SemanticObject) -> str:
    label = f"{obj.name} ({obj.object_id})"
    return f"{label}\nheld by {obj.holder}" if obj.holder else label


def semantic_markers(objects: Iterable[SemanticObject], header: Header, removed: Iterable[int] = ()) -> MarkerArray:
    """One shape and one label per object (marker id = object id); DELETE markers for ``removed`` ids."""
    markers: list[Marker] = []
    for obj in objects:
        box = obj.category in BOX_CATEGORIES
        size = BOX_SIZE_M if box else SPHERE_SIZE_M
        alpha = UNCONFIRMED_ALPHA if obj.unconfirmed_since >= 0 else 1.0
        x, y = obj.position
        markers.append(
            Marker(
                header=header,
                ns=OBJECTS_NS,
                id=obj.object_id,
                type=Marker.CUBE if box else Marker.SPHERE,
                action=Marker.ADD,
                pose=Pose(position=Point(x=float(x), y=float(y), z=size / 2), orientation=Quaternion(w=1.0)),
                scale=Vector3(x=size, y=size, z=size),
                color=category_color(obj.category, alpha),
            )
        )
        markers.append(
            Marker(
                header=header,
                ns=LABELS_NS,
                id=obj.object_id,
                type=Marker.TEXT_VIEW_FACING,
                action=Marker.ADD,
                pose=Pose(
                    position=Point(x=float(x), y=float(y), z=size + LABEL_HEIGHT_M), orientation=Quaternion(w=1.0)
                ),
                scale=Vector3(z=LABEL_HEIGHT_M),
                color=ColorRGBA(r=1.0, g=1.0, b=1.0, a=alpha),
                text=object_label(obj),
            )
        )
    for object_id in removed:
        for ns in (OBJECTS_NS, LABELS_NS):
            markers.append(Marker(header=header, ns=ns, id=object_id, action=Marker.DELETE))
    return MarkerArray(markers=markers)


class PerceptionNode(Node):
    """Fuses ``detections`` into the robot's semantic map and publishes it with its markers."""

    def __init__(self, **kwargs) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.robot: str = self.declare_parameter("robot", "").value
        # dynamic typing: `-p min_confidence:=1` (an integer) is accepted too
        min_confidence = self.declare_parameter("min_confidence", 0.0, ParameterDescriptor(dynamic_typing=True)).value
        self.frame_id: str = self.declare_parameter("frame_id", "map").value
        forget: int = self.declare_parameter("forget_after_steps", -1).value
        self.fusion = SemanticMapFusion(float(min_confidence), forget if forget >= 0 else None)
        self._observations = 0
        self._last_seen: dict[int, Time] = {}
        self._drawn: set[int] = set()
        self.map_publisher = self.create_publisher(SemanticMap, "semantic_map", MAP_QOS)
        self.marker_publisher = self.create_publisher(MarkerArray, "semantic_markers", MAP_QOS)
        self.create_subscription(ObjectDetections, "detections", self._on_detections, DETECTIONS_QOS)
        self.get_logger().info(
            f"perception for {self.robot or '(any robot)'}: min_confidence={self.fusion.min_confidence}, "
            f"frame {self.frame_id}"
        )

    def _on_detections(self, message: ObjectDetections) -> None:
        if self.robot and message.robot and message.robot != self.robot:
            self.get_logger().warning(
                f"ignoring detections of robot {message.robot!r} (this is {self.robot!r})", throttle_duration_sec=10.0
            )
            return
        step = message.step if message.step >= 0 else self._observations
        self._observations += 1
        detections = detections_from_msg(message, step)
        rooms = list(message.explored_rooms) or sorted(
            {d.room for d in detections if d.room and d.confidence >= self.fusion.min_confidence}
        )
        changed = self.fusion.update(detections, step, robot_room=message.room, explored_rooms=rooms)
        now = self.get_clock().now().to_msg()
        stamp = message.header.stamp
        seen_at = stamp if (stamp.sec, stamp.nanosec) != (0, 0) else now
        for object_id in changed:
            self._last_seen[object_id] = seen_at
        self.publish(Header(stamp=now, frame_id=self.frame_id))

    def publish(self, header: Header) -> None:
        objects = self.fusion.objects()
        ids = {obj.object_id for obj in objects}
        removed = sorted(self._drawn - ids)
        self._last_seen = {oid: t for oid, t in self._last_seen.items() if oid in ids}
        self._drawn = ids
        self.map_publisher.publish(
            semantic_map_to_msg(self.robot, objects, self.fusion.explored_rooms, header, self._last_seen)
        )
        self.marker_publisher.publish(semantic_markers(objects, header, removed))


def main(argv: list[str] | None = None) -> None:
    spin_node(PerceptionNode, argv)


if __name__ == "__main__":
    main()
