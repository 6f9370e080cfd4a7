"""The perception node: a robot's camera images or detections fused into its semantic map
(``coteam.senses.perception``).

With a ``detector`` (``aruco``, ``color`` or ``onnx``), it detects in the robot's RGB-D camera:

* subscribes ``camera/image_raw`` (``rgb8`` or ``bgr8``), ``camera/depth/image_raw`` (``32FC1`` metres or ``16UC1``
  millimetres) and ``camera/camera_info`` (``sensor_msgs``), pairing colour and depth by stamp;
* looks the camera's pose up through TF (``frame_id -> <image frame>`` at the image's stamp, ``coteam_ros.tf``;
  a frame whose transform has not arrived waits up to ``frame_wait_s``);
* runs the detector (``coteam.senses.vision.ArucoDetector``: the markers of ``markers``, a YAML of marker id -> class
  name, or by default the task's objects with marker id = object id as the simulator prints them;
  ``marker_size_m`` and ``object_depth_m``, when set, place a detection at the centre of the object behind its
  marker; ``coteam.senses.vision.ColorDetector``: untagged objects by class colour, the YAML ``colours`` of class name
  -> RGB, or by default the colours the simulator paints the task's classes in; ``coteam.senses.vision.OnnxDetector``:
  the YOLO-format ``model`` with its ``classes``), puts the detections on the map, in their rooms, and on the fixture
  within ``fixture_reach_m`` (``coteam.senses.vision.detections_on_map``). ``color`` and ``onnx`` know classes, not
  instances: the map associates their detections by class and distance, and each such object stands for one of the
  task's objects of its class (``coteam.senses.perception.CameraPerception``);
* publishes them as ``detections`` (``vision_msgs/Detection3DArray`` in the map frame, reliable: one message per
  frame, stamped as the frame, also when empty; ``id`` = the task's object id, empty for a class-only detection) and
  fuses them;
* in simulation (``status_from_cameras``) it stands between the sim bridge and the robot's planner and executor:
  it subscribes the bridge's ``sim_status`` (what the robot's hand camera sees, and the stamps of the step's camera
  frames, ``camera_stamps``), adds the items of its semantic map those frames confirmed, as the map has them
  (``coteam.senses.perception.CameraPerception``, ``coteam_ros.observations.CameraSightings``: the planner reads the
  fused map, as in the in-process visual suites)
  and publishes the result as the robot's ``status``, once every frame is detected in (or after ``frame_wait_s``
  with what came). On a real robot the robot_state node builds the status from ``detections``.

Without a detector it fuses the ``detections`` another node publishes (the sim bridge's oracle, or a robot's own
detector). Either way, topics relative to the robot's namespace:

* subscribes ``detections`` (``vision_msgs/Detection3DArray``, best effort) when it has no detector: positions in
  any frame TF takes to the map, put in their rooms and on the fixture within ``fixture_reach_m``
  (``coteam_ros.observations.detector_output_on_map``);
* publishes ``semantic_map`` (``coteam_interfaces/SemanticMap``) after a detections message that changed it (a
  sighting's step and time are a change), and ``semantic_markers`` (``visualization_msgs/MarkerArray``) for
  RViz/Foxglove when what they draw changed: per object a cube (containers, surfaces) or sphere coloured by category in
  namespace ``objects`` and a text label in ``labels``, both with marker id = object id so displays update in place.
  Objects not re-seen in their room are drawn translucent. Both are transient-local with depth 1: a late subscriber
  gets the current map.

Parameters: ``robot``, ``robots``, ``scene_path`` / ``seed`` (the task: its floor plan, fixtures and objects, see
``coteam_ros.episode``), ``min_confidence``
(detections below it are ignored), ``frame_id`` of the published map (default "map"), ``forget_after_steps``
(drop objects not seen for more than that many observations; -1, the default, keeps them); with a detector also
``detector``, ``markers``, ``marker_size_m``, ``object_depth_m``, ``colours``, ``model``, ``classes``,
``frame_wait_s``, ``status_from_cameras`` (above); ``fixture_reach_m`` either way.

The node numbers the detection messages it receives 0, 1, ... (the map's steps); the rooms in which it accepted
detections count as explored.

Run: ``python -m coteam_ros.nodes.perception --ros-args -r __ns:=/alice -p robot:=alice [-p detector:=aruco]``.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from builtin_interfaces.msg import Time
from coteam_interfaces.msg import RobotStatus, SemanticMap
from coteam_interfaces.msg import SemanticObject as SemanticObjectMsg
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import ColorRGBA, Header
from vision_msgs.msg import Detection3DArray
from visualization_msgs.msg import Marker, MarkerArray

from coteam.domain.observation import observation_from_dict, observation_to_dict
from coteam.domain.world import Scene
from coteam.senses.perception import (
    CameraPerception,
    Detection,
    FusedFrame,
    ObservationAssembler,
    SemanticMapFusion,
    SemanticObject,
)
from coteam.senses.vision import (
    DETECTORS,
    CameraIntrinsics,
    Detector,
    RGBDFrame,
    detections_on_map,
    make_detector,
    places_seen_empty,
)
from coteam_ros.convert import (
    depth_from_msg,
    detections_to_msg,
    intrinsics_from_msg,
    rgb_from_msg,
    semantic_map_to_msg,
    semantic_object_to_msg,
)
from coteam_ros.episode import load_episode
from coteam_ros.observations import (
    FIXTURE_REACH_M,
    TF_RETRY_S,
    TF_WAIT_S,
    CameraSightings,
    DetectionsAwaitingTf,
    detector_output_on_map,
)
from coteam_ros.qos import CAMERA, CAMERA_DRIVER, LATCHED, SENSOR, STREAM, own_publisher, own_subscription
from coteam_ros.runtime import spin_node, wall_timer
from coteam_ros.tf import TransformUnavailable, stamp_ns, transform_lookup

NODE_NAME = "perception"

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
MAX_PENDING_FRAMES = 32  # frames waiting for their other half or their transform; older ones are dropped


@dataclass
class PendingFrame:
    """Colour and depth of one stamp, as they arrive."""

    received: float
    rgb: Image | None = None
    depth: Image | None = None


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
        self._map_said: tuple | None = None  # what the map sent last showed (it is not sent again unchanged)
        self._markers_said: list | None = None  # and the markers
        self._object_msgs: dict[int, tuple[tuple, SemanticObjectMsg]] = {}  # id -> (what it showed, its message)
        self.map_publisher = self.create_publisher(SemanticMap, "semantic_map", LATCHED)
        self.marker_publisher = self.create_publisher(MarkerArray, "semantic_markers", LATCHED)
        detector = self.declare_parameter("detector", "").value
        robots = list(self.declare_parameter("robots", [self.robot or "alice"]).value)
        scene_path = self.declare_parameter("scene_path", "").value
        self.scene = load_episode(scene_path, self.declare_parameter("seed", 0).value, robots).scene
        # a camera frame waiting for its transform is detected in as soon as the transform comes in
        self.transforms = transform_lookup(self, on_update=self._on_transforms)
        self.fixture_reach_m = float(self.declare_parameter("fixture_reach_m", FIXTURE_REACH_M).value)
        if detector:
            self._start_camera(detector)
        else:
            self.assembler = ObservationAssembler(self.robot, self.scene)
            self.awaiting_tf = DetectionsAwaitingTf(self.declare_parameter("tf_wait_s", TF_WAIT_S).value)
            self._placed_before: dict = {}  # detections in the map frame as placed once (they repeat every step)
            self.create_subscription(Detection3DArray, "detections", self._on_detections, SENSOR)
            wall_timer(self, TF_RETRY_S, self._place_detections)
        self.get_logger().info(
            f"perception for {self.robot or '(any robot)'}: "
            f"{f'{detector} on camera images' if detector else 'detections'}, "
            f"min_confidence={self.fusion.min_confidence}, frame {self.frame_id}"
        )

    # --- detecting in camera images ---------------------------------------------------------------------------
    def _start_camera(self, detector: str) -> None:
        scene = self.scene
        self.detector = self._detector(detector, scene)
        self.floorplan = scene.floorplan
        self.camera = CameraPerception(
            ObservationAssembler(self.robot, scene),
            self.fusion,
            self.fixture_reach_m,
        )
        self.categories = {i.name: i.category for i in scene.items}
        self.frame_wait_s = float(self.declare_parameter("frame_wait_s", 30.0).value)
        self.intrinsics: dict[str, CameraIntrinsics] = {}
        self.pending: dict[int, PendingFrame] = {}
        self.frames_dropped = 0
        self.detections_publisher = self.create_publisher(Detection3DArray, "detections", STREAM)
        # with the simulator (which waits for my status) every frame of a step; from a camera driver, what it sends
        from_simulator = self.declare_parameter("status_from_cameras", False).value
        qos = CAMERA if from_simulator else CAMERA_DRIVER
        self.create_subscription(CameraInfo, "camera/camera_info", self._on_camera_info, qos)
        self.create_subscription(Image, "camera/image_raw", lambda m: self._on_image(m, "rgb"), qos)
        self.create_subscription(Image, "camera/depth/image_raw", lambda m: self._on_image(m, "depth"), qos)
        self.sightings: CameraSightings | None = None
        self.sim_status: tuple[RobotStatus, float] | None = None  # a status waiting for its frames, since when
        if from_simulator:
            self.sightings = CameraSightings(self.camera)
            self.status_publisher = self.create_publisher(
                RobotStatus, "status", LATCHED, event_callbacks=own_publisher()
            )
            self.create_subscription(
                RobotStatus, "sim_status", self._on_sim_status, LATCHED, event_callbacks=own_subscription()
            )
        wall_timer(self, 0.05, self._process_pending)

    def _detector(self, kind: str, scene: Scene) -> Detector:
        """The detector ``kind`` (``coteam.senses.vision.DETECTORS``) as its parameters set it (by default the
        simulator's markers and colours)."""
        if kind not in DETECTORS:
            raise ValueError(f"detector must be one of {', '.join(DETECTORS)} (or empty), not {kind!r}")
        unset = {str: "", float: 0.0, list: Parameter.Type.STRING_ARRAY}
        settings = {key: self.declare_parameter(key, unset[t]).value for key, t in DETECTORS[kind].settings.items()}
        return make_detector(kind, settings, {i.id: i.name for i in scene.items})

    def _on_camera_info(self, message: CameraInfo) -> None:
        try:
            self.intrinsics[message.header.frame_id] = intrinsics_from_msg(message)
        except ValueError as exc:
            self.get_logger().warning(str(exc), throttle_duration_sec=10.0)
            return
        self._on_transforms()  # what waited for it

    def _on_transforms(self) -> None:
        """Transforms (or a camera's intrinsics) came in: the frames and detection arrays that waited for them are
        taken now, not at the next tick of the timer (in lockstep with cameras the step waits for them)."""
        if getattr(self, "pending", None):
            self._process_pending()
        awaiting = getattr(self, "awaiting_tf", None)
        if awaiting is not None and awaiting.waiting:
            self._place_detections()

    def _on_image(self, message: Image, kind: str) -> None:
        frame = self.pending.setdefault(stamp_ns(message.header.stamp), PendingFrame(time.monotonic()))
        setattr(frame, kind, message)
        while len(self.pending) > MAX_PENDING_FRAMES:
            self._drop(min(self.pending), "too many frames waiting")
        self._process_pending()

    def _drop(self, stamp: int, why: str) -> None:
        del self.pending[stamp]
        self.frames_dropped += 1
        self.get_logger().warning(
            f"camera frame at {stamp / 1e9:.6f} s dropped: {why} ({self.frames_dropped} so far)",
            throttle_duration_sec=5.0,
        )
        if self.sightings is not None:
            self.sightings.add(stamp, FusedFrame([], [], []))  # nothing seen in it: the status need not wait for it

    def _on_sim_status(self, status: RobotStatus) -> None:
        if status.robot != self.robot:
            return
        if self.sim_status is not None:
            if status.step <= self.sim_status[0].step:
                return
            self._relay(give_up=True)  # a newer step: the older one goes out with what was detected
        assert self.sightings is not None
        self.sightings.expect(stamp_ns(t) for t in status.camera_stamps)
        self.sim_status = (status, time.monotonic())
        self._relay()

    def _relay(self, give_up: bool = False) -> None:
        """The waiting ``sim_status`` as the robot's ``status``, with the items detected in its frames, once every
        frame has been detected in (or dropped), or now with ``give_up``."""
        assert self.sightings is not None
        if self.sim_status is None:
            return
        missing = self.sightings.missing()
        if missing and not give_up:
            return
        status = self.sim_status[0]
        if missing:
            self.get_logger().warning(
                f"step {status.step}: {len(missing)} camera frames never came within {self.frame_wait_s:g} s; "
                "the status goes out with what was detected"
            )
        self.sim_status = None
        try:
            obs = observation_from_dict(json.loads(status.observation_json))
        except ValueError as exc:
            self.get_logger().error(f"sim_status for step {status.step} ignored: {exc}")
            return
        merged = self.sightings.merged(obs)
        status.observation_json = json.dumps(observation_to_dict(merged))
        self.status_publisher.publish(status)

    def _process_pending(self) -> None:
        """Detect in every complete frame whose transform is known, oldest first; relay a status whose frames are
        all in, or that waited ``frame_wait_s``."""
        self._detect_pending()
        if self.sim_status is not None:
            self._relay(give_up=time.monotonic() - self.sim_status[1] > self.frame_wait_s)

    def _detect_pending(self) -> None:
        for stamp in sorted(self.pending):
            frame = self.pending[stamp]
            if frame.rgb is None or frame.depth is None:
                if time.monotonic() - frame.received > self.frame_wait_s:
                    self._drop(stamp, "its colour or depth image never came")
                continue
            try:
                self._detect(frame.rgb, frame.depth)
            except TransformUnavailable as exc:
                if time.monotonic() - frame.received > self.frame_wait_s:
                    self._drop(stamp, f"no transform ({exc})")
                continue
            except ValueError as exc:
                self._drop(stamp, str(exc))
                continue
            del self.pending[stamp]

    def _detect(self, rgb_msg: Image, depth_msg: Image) -> None:
        frame_id = rgb_msg.header.frame_id
        intrinsics = self.intrinsics.get(frame_id)
        if intrinsics is None:  # waited for like a transform: camera_info may come after the first images
            raise TransformUnavailable(f"no camera_info for frame {frame_id!r} yet")
        pose = self.transforms.lookup(self.frame_id, frame_id, rgb_msg.header.stamp).camera_pose()
        rgb, depth = rgb_from_msg(rgb_msg), depth_from_msg(depth_msg)
        if rgb.shape[:2] != depth.shape or depth.shape != (intrinsics.height, intrinsics.width):
            raise ValueError(
                f"colour {rgb.shape[1]} x {rgb.shape[0]}, depth {depth.shape[1]} x {depth.shape[0]} and "
                f"camera_info {intrinsics.width} x {intrinsics.height} disagree"
            )
        found = self.detector.detect(RGBDFrame(rgb, depth, intrinsics, None))
        at = self.floorplan.room_at((float(pose.origin[0]), float(pose.origin[1])))
        room = at.name if at else ""
        fused = self.camera.frame(
            detections_on_map(found, pose, self.floorplan, self.camera.frames, self.categories),
            room,
            partial(places_seen_empty, pose=pose, intrinsics=intrinsics, depth=depth),
        )
        header = Header(stamp=rgb_msg.header.stamp, frame_id=self.frame_id)
        self.detections_publisher.publish(detections_to_msg(fused.detections, header))
        if self.sightings is not None:
            self.sightings.add(stamp_ns(rgb_msg.header.stamp), fused)
        self._published(fused.confirmed, rgb_msg.header.stamp)

    def _on_detections(self, message: Detection3DArray) -> None:
        self.awaiting_tf.add(message, time.monotonic())
        self._place_detections()

    def _place_detections(self) -> None:
        """Fuse every waiting detection array TF can place now, at its own stamp (robot_state does the same)."""
        arrays, causes = self.awaiting_tf.place(
            lambda m: detector_output_on_map(
                m,
                self._observations,
                self.assembler,
                self.transforms,
                self.frame_id,
                self.fixture_reach_m,
                self._placed_before,
            ),
            time.monotonic(),
        )
        for cause in causes:
            self.get_logger().warning(f"detections dropped: {cause}; each drop is counted")
        for message, detections in arrays:
            self._fuse(detections, self._observations, "", [], message.header.stamp)

    def _fuse(self, detections: list[Detection], step: int, room: str, explored: list[str], stamp: Time) -> None:
        """One observation into the map, then the map and its markers out."""
        self._observations += 1
        rooms = explored or self.fusion.rooms_seen(detections)
        self._published(self.fusion.update(detections, step, robot_room=room, explored_rooms=rooms), stamp)

    def _published(self, changed: list[int], stamp: Time) -> None:
        """The map and its markers out after an update that added or confirmed ``changed``, seen at ``stamp``."""
        now = self.get_clock().now().to_msg()
        seen_at = stamp if (stamp.sec, stamp.nanosec) != (0, 0) else now
        for object_id in changed:
            self._last_seen[object_id] = seen_at
        self.publish(Header(stamp=now, frame_id=self.frame_id))

    def publish(self, header: Header) -> None:
        """The map and its markers out, each only when it differs from the one sent last (both are latched: a
        subscriber that joins later gets the current one); an object's message is made again only when it
        changed."""
        objects = self.fusion.objects()
        ids = {obj.object_id for obj in objects}
        removed = sorted(self._drawn - ids)
        self._last_seen = {oid: t for oid, t in self._last_seen.items() if oid in ids}
        self._drawn = ids
        explored = list(self.fusion.explored_rooms)
        said = (objects, explored, {oid: (t.sec, t.nanosec) for oid, t in self._last_seen.items()})
        if said != self._map_said:
            self._map_said = said
            self._object_msgs = {oid: kept for oid, kept in self._object_msgs.items() if oid in ids}
            self.map_publisher.publish(
                semantic_map_to_msg(self.robot, objects, explored, header, self._last_seen, self._object_msg)
            )
        drawn = [(o.object_id, o.category, o.position, o.unconfirmed_since >= 0, object_label(o)) for o in objects]
        if removed or drawn != self._markers_said:
            self._markers_said = drawn
            self.marker_publisher.publish(semantic_markers(objects, header, removed))

    def _object_msg(self, obj: SemanticObject, last_seen: Time | None) -> SemanticObjectMsg:
        """``obj``'s message in the map: the one made before, with the new sighting's step and time if only they
        changed (an object seen again where it was)."""
        what = (obj.name, obj.category, obj.room, obj.container, obj.position, obj.holder)
        kept = self._object_msgs.get(obj.object_id)
        if kept is None or kept[0] != what:
            kept = self._object_msgs[obj.object_id] = (what, semantic_object_to_msg(obj, last_seen))
            return kept[1]
        message = kept[1]
        message.last_seen = last_seen if last_seen is not None else Time()
        message.last_seen_step = obj.last_seen_step
        return message


def main(argv: list[str] | None = None) -> None:
    spin_node(PerceptionNode, argv)


if __name__ == "__main__":
    main()
