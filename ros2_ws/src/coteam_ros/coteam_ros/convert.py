"""Conversions between coteam core types and ROS messages (coteam_interfaces, geometry_msgs, sensor_msgs,
vision_msgs).

Small pure functions, no node state. Messages carry 3-D points in the map frame; the core is planar
(``coteam.domain.world.Vec2``), so ``z`` is dropped on the way in and set to 0 on the way out. Images are converted here
and not with ``cv_bridge``, which has no PyPI wheel: ``rgb8`` / ``bgr8`` colour and ``32FC1`` (metres) or
``16UC1`` (millimetres, as most RGB-D drivers publish) depth, row-major, either endianness.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from coteam_interfaces import msg as ci
from geometry_msgs.msg import Point, Pose, PoseWithCovariance, Quaternion
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header
from vision_msgs.msg import (
    BoundingBox3D,
    Detection3D,
    Detection3DArray,
    ObjectHypothesis,
    ObjectHypothesisWithPose,
)

from coteam.agent.memory import AgentMemory
from coteam.agent.skills import NavGoal
from coteam.domain.actions import HighLevelAction
from coteam.domain.geometry import bearing
from coteam.domain.observation import ObjectView, view_from_dict, view_to_dict
from coteam.domain.world import Vec2
from coteam.senses.perception import Detection, SemanticObject
from coteam.senses.vision import CameraIntrinsics


# --- geometry ------------------------------------------------------------------------------------------------
def point_to_msg(xy: Vec2, z: float = 0.0) -> Point:
    return Point(x=float(xy[0]), y=float(xy[1]), z=float(z))


def point_from_msg(point: Point) -> Vec2:
    return (point.x, point.y)


def yaw_quaternion(heading_deg: float) -> Quaternion:
    """A rotation about +z by ``heading_deg`` degrees (counter-clockwise from +x, the core's heading)."""
    half = math.radians(heading_deg) / 2
    return Quaternion(z=math.sin(half), w=math.cos(half))


def heading_from_quaternion(q: Quaternion) -> float:
    """The yaw of ``q`` in degrees in [0, 360), rounded to 1e-6 degree (the skills' heading precision)."""
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return round(math.degrees(yaw) % 360, 6) % 360


def nav_goal_to_pose(goal: NavGoal, robot_position: Vec2) -> Pose:
    """A navigation goal as a Nav2 goal pose. A goal without a heading faces the way from the robot to it
    (Nav2 needs an orientation; coteam's navigator ignores it for travel goals)."""
    heading = goal.heading if goal.heading is not None else bearing(robot_position, goal.position)
    return Pose(position=point_to_msg(goal.position), orientation=yaw_quaternion(heading))


def pose_to_nav_goal(pose: Pose) -> NavGoal:
    return NavGoal(point_from_msg(pose.position), heading_from_quaternion(pose.orientation))


# --- detections (vision_msgs) --------------------------------------------------------------------------------
MADE_DETECTIONS = 4096  # detection messages a publisher keeps to send again (then it starts afresh)


def detections_to_msg(
    detections: Iterable[Detection], header: Header, made: dict[tuple, Detection3D] | None = None
) -> Detection3DArray:
    """Detections as every ROS 2 detector publishes them: one ``Detection3D`` each, its hypothesis the class name
    (``class_id``) with the confidence (``score``) at the object's position in ``header``'s frame (z: its height
    above the floor, 0 when unknown), ``id`` the object's id in the task ("" for a class-only detection), and a box
    of unknown size at the same place. Held objects are not detected (nothing sees into a gripper). ``made``: the
    messages of earlier detections, by what they say, to send again with this ``header`` (a publisher whose
    detections repeat step after step keeps it: each message is made once)."""
    out = []
    for d in detections:
        key = (d.name, d.object_id, d.position, d.height_m, d.confidence)
        message = made.get(key) if made is not None else None
        if message is None:
            message = _detection_msg(d)
            if made is not None:
                if len(made) >= MADE_DETECTIONS:
                    made.clear()
                made[key] = message
        message.header = header
        out.append(message)
    return Detection3DArray(header=header, detections=out)


def _detection_msg(d: Detection) -> Detection3D:
    pose = Pose(position=point_to_msg(d.position, d.height_m or 0.0), orientation=Quaternion(w=1.0))
    return Detection3D(
        results=[
            ObjectHypothesisWithPose(
                hypothesis=ObjectHypothesis(class_id=d.name, score=float(d.confidence)),
                pose=PoseWithCovariance(pose=pose),
            )
        ],
        bbox=BoundingBox3D(center=pose),
        id=str(d.object_id) if d.object_id >= 0 else "",
    )


def detections_from_msg(message: Detection3DArray, step: int) -> list[tuple[str, Detection]]:
    """Each detection's frame (its own header's, else the array's) and the core detection of its best hypothesis,
    its position in that frame; the receiver puts it in the map and in its room. ``id``: the task's object id when it
    is a number, else the detection is of its class only (-1). A detection without a hypothesis is left out."""
    out = []
    for det in message.detections:
        if not det.results:
            continue
        best = max(det.results, key=lambda r: r.hypothesis.score)
        point = best.pose.pose.position
        object_id = int(det.id) if det.id.isdigit() else -1
        detection = Detection(
            name=best.hypothesis.class_id,
            object_id=object_id,
            category="",
            room="",
            container="",
            position=(point.x, point.y),
            confidence=float(best.hypothesis.score),
            step=step,
            height_m=point.z or None,
        )
        out.append((det.header.frame_id or message.header.frame_id, detection))
    return out


# --- semantic map --------------------------------------------------------------------------------------------
def semantic_object_to_msg(obj: SemanticObject, last_seen: Time | None = None) -> ci.SemanticObject:
    """``last_seen`` is the ROS time of the last sighting (the core only knows its step); zero when unknown."""
    return ci.SemanticObject(
        name=obj.name,
        object_id=obj.object_id,
        category=obj.category,
        room=obj.room,
        container=obj.container,
        position=point_to_msg(obj.position),
        last_seen=last_seen if last_seen is not None else Time(),
        last_seen_step=obj.last_seen_step,
        holder=obj.holder,
    )


def semantic_map_to_msg(
    robot: str,
    objects: Iterable[SemanticObject],
    explored_rooms: Iterable[str],
    header: Header,
    last_seen: Mapping[int, Time] | None = None,
    object_msg: Callable[[SemanticObject, Time | None], ci.SemanticObject] = semantic_object_to_msg,
) -> ci.SemanticMap:
    """``object_msg`` converts one object (a node that keeps the messages of objects that did not change passes its
    own)."""
    times = last_seen or {}
    return ci.SemanticMap(
        header=header,
        robot=robot,
        objects=[object_msg(obj, times.get(obj.object_id)) for obj in objects],
        explored_rooms=list(explored_rooms),
    )


# --- decisions ------------------------------------------------------------------------------------------------
def decision_to_msg(
    header: Header, method: str, backend: str, step: int, record: Mapping[str, Any], message: str = ""
) -> ci.Decision:
    """A robot's decision at status ``step`` as its ``decision`` topic carries it: the trace record
    (``AgentBrain.record``) as JSON, with its robot, action and message text for a reader that does not parse it."""
    return ci.Decision(
        header=header,
        robot=record["agent"],
        method=method,
        backend=backend,
        step=step,
        action=record["action"],
        message=message,
        trace_json=json.dumps(record, default=str),
    )


# --- images --------------------------------------------------------------------------------------------------
def rgb_to_msg(rgb: np.ndarray, header: Header) -> Image:
    """An ``H x W x 3`` ``uint8`` RGB image as ``rgb8``."""
    h, w, _ = rgb.shape
    return Image(header=header, height=h, width=w, encoding="rgb8", is_bigendian=0, step=w * 3, data=rgb.tobytes())


def depth_to_msg(depth: np.ndarray, header: Header) -> Image:
    """An ``H x W`` depth image in metres as ``32FC1`` (little-endian)."""
    h, w = depth.shape
    data = depth.astype("<f4").tobytes()
    return Image(header=header, height=h, width=w, encoding="32FC1", is_bigendian=0, step=w * 4, data=data)


def _rows(message: Image, channels: int, dtype: np.dtype) -> np.ndarray:
    need = message.width * channels * dtype.itemsize
    if message.step < need or len(message.data) < message.step * message.height:
        raise ValueError(
            f"{message.encoding} image of {message.width} x {message.height} with step {message.step} and "
            f"{len(message.data)} bytes is truncated"
        )
    raw = np.frombuffer(bytes(message.data), np.uint8, count=message.step * message.height)
    rows = raw.reshape(message.height, message.step)[:, :need]
    return np.ascontiguousarray(rows).view(dtype).reshape(message.height, message.width, channels)


def rgb_from_msg(message: Image) -> np.ndarray:
    """``rgb8`` or ``bgr8`` as ``H x W x 3`` RGB (``ValueError`` for other encodings or a truncated image)."""
    if message.encoding not in ("rgb8", "bgr8"):
        raise ValueError(f"colour image encoding {message.encoding!r} is not supported (rgb8, bgr8)")
    rgb = _rows(message, 3, np.dtype(np.uint8))
    return rgb[..., ::-1].copy() if message.encoding == "bgr8" else rgb


def depth_from_msg(message: Image) -> np.ndarray:
    """``32FC1`` (metres) or ``16UC1`` (millimetres) as ``H x W`` ``float32`` metres, 0 where nothing was measured
    (NaN and infinity included)."""
    order = ">" if message.is_bigendian else "<"
    if message.encoding == "32FC1":
        depth = _rows(message, 1, np.dtype(order + "f4"))[..., 0].astype(np.float32)
    elif message.encoding == "16UC1":
        depth = _rows(message, 1, np.dtype(order + "u2"))[..., 0].astype(np.float32) / 1000.0
    else:
        raise ValueError(f"depth image encoding {message.encoding!r} is not supported (32FC1, 16UC1)")
    depth[~np.isfinite(depth)] = 0.0
    return depth


def camera_info_to_msg(intrinsics: CameraIntrinsics, header: Header) -> CameraInfo:
    """A pinhole camera without distortion."""
    k = intrinsics
    return CameraInfo(
        header=header,
        height=k.height,
        width=k.width,
        distortion_model="plumb_bob",
        d=[0.0] * 5,
        k=[k.fx, 0.0, k.cx, 0.0, k.fy, k.cy, 0.0, 0.0, 1.0],
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=[k.fx, 0.0, k.cx, 0.0, 0.0, k.fy, k.cy, 0.0, 0.0, 0.0, 1.0, 0.0],
    )


def intrinsics_from_msg(message: CameraInfo) -> CameraIntrinsics:
    """The pinhole part of a ``CameraInfo`` (its K matrix); ``ValueError`` for an uncalibrated camera (K all 0)."""
    k = list(message.k)
    if message.width <= 0 or message.height <= 0 or k[0] <= 0 or k[4] <= 0:
        raise ValueError(f"camera_info of frame {message.header.frame_id!r} has no calibration (K or size is 0)")
    return CameraIntrinsics(message.width, message.height, k[0], k[4], k[2], k[5])


# --- the target of a skill -----------------------------------------------------------------------------------
def target_view_json(memory: AgentMemory, action: HighLevelAction) -> str:
    """``ExecuteSkill.target_view``: the memory's view of the action's target and when it was last seen, or, for a
    container whose state the memory learnt later (a teammate's word), when it learnt that ("" when the action has
    no target the memory holds)."""
    view = memory.objects.get(action.target.id) if action.target is not None else None
    if view is None:
        return ""
    seen = max(memory.last_seen.get(view.id, -1), memory.door_known_at.get(view.id, -1))
    return json.dumps({"view": view_to_dict(view), "seen": seen})


def target_view_from_json(text: str) -> tuple[ObjectView, int] | None:
    """Inverse of :func:`target_view_json` (None for ""); raises ``ValueError`` naming the problem on bad input."""
    if not text:
        return None
    try:
        data = json.loads(text)
        return view_from_dict(data["view"]), int(data["seen"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed target_view: {exc!r}") from None
