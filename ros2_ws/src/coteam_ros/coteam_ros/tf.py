"""Transforms between coordinate frames (TF), as coteam's nodes publish and look them up.

Frames (REP 105), per robot ``r``: ``map -> r/odom -> r/base_link -> r/camera_link -> r/camera_optical_frame``.
The sim bridge publishes ``map -> r/odom`` (identity: simulated odometry does not drift) and
``r/camera_link -> r/camera_optical_frame`` (REP 103's fixed rotation) on ``/tf_static``; ``r/odom -> r/base_link``
(the robot's pose) every step and ``r/base_link -> r/camera_link`` (the camera's mount, turned by the simulated
head's pan) every camera frame on ``/tf``. On a real robot its own drivers, localisation and
``robot_state_publisher`` publish the same chain.

Looking transforms up: on an installed ROS 2 (apt) :func:`transform_lookup` uses ``tf2_ros``'s buffer and
listener. ROS 2 from PyPI has no ``tf2_ros`` wheel, so there :class:`TransformBuffer` and
:class:`TransformListener` do the part coteam needs: a tree of frames from ``/tf`` and ``/tf_static``, a bounded
history per dynamic edge, and ``lookup`` at a time (on each moving edge the newest transform not after it, and none
when the edge has nothing that recent yet: no interpolation, no extrapolation) or at time zero (the latest).
``tf2_msgs/TFMessage`` is the real package's on both installs (ros2_ws/pip/tf2_msgs builds the same definition on
pip installs).
"""

from __future__ import annotations

import bisect
import contextlib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Quaternion, Transform, TransformStamped, Vector3
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage
from transforms3d.euler import euler2mat
from transforms3d.quaternions import mat2quat, quat2mat

from coteam.senses.vision import LINK_TO_OPTICAL, CameraMount, CameraPose

# The QoS of tf2_ros's broadcasters and listeners.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
TF_STATIC_QOS = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)
HISTORY_S = 10.0  # how long a dynamic edge's past transforms are kept


class TransformUnavailable(LookupError):
    """No transform between the frames at that time (not connected, not yet received, or too old). ``late``: it may
    still come (a frame not heard of yet, frames not linked yet, nothing that recent yet), so waiting for it makes
    sense; only a time older than the history kept will never be answered."""

    def __init__(self, message: str, late: bool = False) -> None:
        super().__init__(message)
        self.late = late


@dataclass(frozen=True)
class RigidTransform:
    """``child -> parent``: ``parent_point = rotation @ child_point + translation``."""

    rotation: np.ndarray  # 3 x 3
    translation: np.ndarray  # 3

    @staticmethod
    def identity() -> RigidTransform:
        return RigidTransform(np.eye(3), np.zeros(3))

    @staticmethod
    def of(x: float = 0.0, y: float = 0.0, z: float = 0.0, yaw_deg: float = 0.0) -> RigidTransform:
        """A translation and a rotation by yaw about z (a robot's pose on the floor)."""
        return RigidTransform(euler2mat(0.0, 0.0, math.radians(yaw_deg), "sxyz"), np.array([x, y, z], float))

    def __matmul__(self, other: RigidTransform) -> RigidTransform:
        """``self`` after ``other``: (a <- b) @ (b <- c) = (a <- c)."""
        return RigidTransform(self.rotation @ other.rotation, self.rotation @ other.translation + self.translation)

    def inverse(self) -> RigidTransform:
        return RigidTransform(self.rotation.T, -self.rotation.T @ self.translation)

    def apply(self, point: Iterable[float]) -> np.ndarray:
        return self.rotation @ np.asarray(point, float) + self.translation

    def to_msg(self) -> Transform:
        w, x, y, z = mat2quat(self.rotation)
        tx, ty, tz = (float(v) for v in self.translation)
        return Transform(
            translation=Vector3(x=tx, y=ty, z=tz), rotation=Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))
        )

    @staticmethod
    def from_msg(message: Transform) -> RigidTransform:
        q, t = message.rotation, message.translation
        norm = math.sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z)
        if not math.isfinite(norm) or norm < 1e-9:
            raise ValueError("transform with an invalid rotation quaternion")
        rotation = quat2mat([q.w / norm, q.x / norm, q.y / norm, q.z / norm])
        return RigidTransform(rotation, np.array([t.x, t.y, t.z], float))

    def stamped(self, parent: str, child: str, stamp: Time) -> TransformStamped:
        header = Header(stamp=stamp, frame_id=parent)
        return TransformStamped(header=header, child_frame_id=child, transform=self.to_msg())

    def camera_pose(self) -> CameraPose:
        """This transform as a camera's pose, when it is ``optical frame -> map``."""
        return CameraPose(self.rotation, self.translation)


CAMERA_LINK_TO_OPTICAL = RigidTransform(LINK_TO_OPTICAL, np.zeros(3))  # camera_optical_frame -> camera_link


def camera_mount_transform(mount: CameraMount, pan_deg: float = 0.0) -> RigidTransform:
    """``camera_link -> base_link`` for a camera on ``mount``, turned by ``pan_deg`` about the base's vertical axis
    (a pan head; 0 for a fixed camera): the core's own composition (:meth:`coteam.senses.vision.CameraPose.of_robot` for
    a robot at the origin facing ``pan_deg``), without the optical rotation."""
    optical = CameraPose.of_robot((0.0, 0.0), pan_deg, mount)
    return RigidTransform(optical.rotation, optical.origin) @ CAMERA_LINK_TO_OPTICAL.inverse()


def stamp_ns(stamp: Time) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class TransformBuffer:
    """A tree of frames fed with ``TransformStamped`` s (what ``tf2_ros.Buffer`` is, for the part coteam uses; see the
    module docstring). Each frame has one parent; a frame published under a new parent moves there."""

    def __init__(self, history_s: float = HISTORY_S) -> None:
        self.history_ns = int(history_s * 1e9)
        self._parent: dict[str, str] = {}
        self._static: dict[str, RigidTransform] = {}
        self._times: dict[str, list[int]] = {}  # per dynamic child: stamps, ascending
        self._values: dict[str, list[RigidTransform]] = {}

    def set_transform(self, message: TransformStamped, static: bool = False) -> None:
        """Adds one transform (``ValueError`` for a malformed one: empty frames, a frame its own parent, a bad
        quaternion)."""
        parent, child = message.header.frame_id.lstrip("/"), message.child_frame_id.lstrip("/")
        if not parent or not child or parent == child:
            raise ValueError(f"transform {parent!r} -> {child!r} needs two different, non-empty frames")
        value = RigidTransform.from_msg(message.transform)
        if self._parent.get(child, parent) != parent:
            self._static.pop(child, None)
            self._times.pop(child, None)
            self._values.pop(child, None)
        self._parent[child] = parent
        if static:
            self._static[child] = value
            return
        self._static.pop(child, None)
        times, values = self._times.setdefault(child, []), self._values.setdefault(child, [])
        t = stamp_ns(message.header.stamp)
        i = bisect.bisect_right(times, t)
        if i > 0 and times[i - 1] == t:
            values[i - 1] = value
        else:
            times.insert(i, t)
            values.insert(i, value)
        cut = bisect.bisect_left(times, times[-1] - self.history_ns)
        del times[:cut], values[:cut]

    def frames(self) -> set[str]:
        return set(self._parent) | set(self._parent.values())

    def _edge(self, child: str, t: int | None) -> RigidTransform:
        if child in self._static:
            return self._static[child]
        times, values = self._times[child], self._values[child]
        if t is None:
            return values[-1]
        if t > times[-1]:
            raise TransformUnavailable(
                f"{self._parent[child]} -> {child}: nothing at {t / 1e9:.6f} s yet (the newest is at "
                f"{times[-1] / 1e9:.6f} s)",
                late=True,
            )
        i = bisect.bisect_right(times, t)
        if i == 0:
            raise TransformUnavailable(
                f"{self._parent[child]} -> {child}: nothing at or before {t / 1e9:.6f} s "
                f"(the oldest is at {times[0] / 1e9:.6f} s)"
            )
        return values[i - 1]

    def _to_root(self, frame: str, t: int | None) -> tuple[list[str], RigidTransform]:
        """The frames from ``frame`` up to its root, and ``frame -> root``."""
        path, total = [frame], RigidTransform.identity()
        while path[-1] in self._parent:
            child = path[-1]
            total = self._edge(child, t) @ total
            path.append(self._parent[child])
            if len(path) > len(self._parent) + 1:
                raise TransformUnavailable(f"the frames above {frame!r} form a loop")
        return path, total

    def lookup(self, target: str, source: str, stamp: Time | None = None) -> RigidTransform:
        """``source -> target`` (tf2's ``lookup_transform(target, source, time)``): maps points in ``source`` into
        ``target``. ``stamp`` None or zero: the latest transforms."""
        target, source = target.lstrip("/"), source.lstrip("/")
        for frame in (target, source):
            if frame not in self.frames():
                known = ", ".join(sorted(self.frames())) or "none yet"
                raise TransformUnavailable(f"frame {frame!r} is unknown (known: {known})", late=True)
        t = None if stamp is None or stamp_ns(stamp) == 0 else stamp_ns(stamp)
        source_path, source_to_root = self._to_root(source, t)
        target_path, target_to_root = self._to_root(target, t)
        if source_path[-1] != target_path[-1]:
            # a link between them may not have been published yet (a robot's map -> odom comes with localisation)
            raise TransformUnavailable(f"{source!r} and {target!r} are not connected (yet)", late=True)
        return target_to_root.inverse() @ source_to_root


class TransformListener:
    """Feeds a :class:`TransformBuffer` from ``/tf`` and ``/tf_static`` (malformed transforms are logged and
    skipped) and looks transforms up in it; ``on_update`` is called after each message is in."""

    def __init__(
        self, node: Node, buffer: TransformBuffer | None = None, on_update: Callable[[], None] | None = None
    ) -> None:
        self.node, self.buffer, self.on_update = node, buffer or TransformBuffer(), on_update
        node.create_subscription(TFMessage, "/tf", lambda m: self._take(m, False), TF_QOS)
        node.create_subscription(TFMessage, "/tf_static", lambda m: self._take(m, True), TF_STATIC_QOS)

    def _take(self, message: TFMessage, static: bool) -> None:
        for transform in message.transforms:
            try:
                self.buffer.set_transform(transform, static)
            except ValueError as exc:
                self.node.get_logger().warning(f"transform ignored: {exc}", throttle_duration_sec=10.0)
        if self.on_update is not None:
            self.on_update()

    def lookup(self, target: str, source: str, stamp: Time | None = None) -> RigidTransform:
        return self.buffer.lookup(target, source, stamp)


class TransformLookup(Protocol):
    def lookup(self, target: str, source: str, stamp: Time | None = None) -> RigidTransform: ...


class _Tf2RosLookup:
    """``tf2_ros``'s buffer and listener (installed ROS 2), answering as :class:`TransformBuffer` does."""

    def __init__(self, node: Node, tf2_ros: Any) -> None:
        from rclpy.time import Time as RclpyTime

        self._time = RclpyTime
        self.buffer = tf2_ros.Buffer()
        self.listener = tf2_ros.TransformListener(self.buffer, node)
        self._errors = (tf2_ros.LookupException, tf2_ros.ConnectivityException, tf2_ros.ExtrapolationException)
        self._may_come = (tf2_ros.LookupException, tf2_ros.ConnectivityException)  # not heard of, not linked yet
        self._extrapolation = tf2_ros.ExtrapolationException

    def lookup(self, target: str, source: str, stamp: Time | None = None) -> RigidTransform:
        at = self._time() if stamp is None else self._time.from_msg(stamp)
        try:
            found = self.buffer.lookup_transform(target, source, at)
        except self._errors as exc:
            # tf2 says "extrapolation into the future" when the stamp is newer than what it has yet
            late = isinstance(exc, self._may_come) or (
                isinstance(exc, self._extrapolation) and "into the future" in str(exc)
            )
            raise TransformUnavailable(str(exc), late=late) from exc
        return RigidTransform.from_msg(found.transform)


def transform_lookup(node: Node, on_update: Callable[[], None] | None = None) -> TransformLookup:
    """Transforms for ``node``: ``tf2_ros`` where it is installed, else a :class:`TransformListener`.
    ``on_update``: called once transforms have come in (what waits for one need not poll)."""
    try:
        import tf2_ros
    except ImportError:
        return TransformListener(node, on_update=on_update)
    lookup = _Tf2RosLookup(node, tf2_ros)
    if on_update is not None:  # after tf2_ros's own subscriptions: in a wait, the executor takes them first
        node.create_subscription(TFMessage, "/tf", lambda _: on_update(), TF_QOS)
        node.create_subscription(TFMessage, "/tf_static", lambda _: on_update(), TF_STATIC_QOS)
    return lookup


class TransformPublisher:
    """Publishes on ``/tf`` and ``/tf_static``; static transforms accumulate into one latched message, as
    ``tf2_ros.StaticTransformBroadcaster`` sends them. Within :meth:`batched` the transforms sent go out together,
    one ``/tf`` message (every listener wakes once, not once a robot)."""

    def __init__(self, node: Node) -> None:
        self._dynamic = node.create_publisher(TFMessage, "/tf", TF_QOS)
        self._static_publisher = node.create_publisher(TFMessage, "/tf_static", TF_STATIC_QOS)
        self._static: dict[str, TransformStamped] = {}
        self._held: list[TransformStamped] | None = None  # sent within batched(), not published yet

    def subscribers(self) -> int:
        """How many subscribers ``/tf`` has."""
        return self._dynamic.get_subscription_count()

    def send(self, transforms: Iterable[TransformStamped]) -> None:
        if self._held is not None:
            self._held.extend(transforms)
            return
        self._dynamic.publish(TFMessage(transforms=list(transforms)))

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """Hold what is sent meanwhile and publish it as one message at the end (or at :meth:`flush`)."""
        self._held = []
        try:
            yield
        finally:
            self.flush()
            self._held = None

    def flush(self) -> None:
        """Publish what :meth:`batched` holds now (what must be there before something else is sent)."""
        if self._held:
            held, self._held = self._held, []
            self._dynamic.publish(TFMessage(transforms=held))

    def send_static(self, transforms: Iterable[TransformStamped]) -> None:
        for t in transforms:
            self._static[t.child_frame_id] = t
        self._static_publisher.publish(TFMessage(transforms=list(self._static.values())))
