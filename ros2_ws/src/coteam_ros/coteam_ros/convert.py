"""Conversions between coteam core types and ROS messages (coteam_interfaces, geometry_msgs).

Small pure functions, no node state. Messages carry 3-D points in the map frame; the core is planar
(``coteam.world.Vec2``), so ``z`` is dropped on the way in and set to 0 on the way out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from builtin_interfaces.msg import Time
from coteam_interfaces import msg as ci
from geometry_msgs.msg import Point, Pose, Quaternion
from std_msgs.msg import Header

from coteam.memory import bearing
from coteam.perception import Detection, SemanticObject
from coteam.skills import NavGoal
from coteam.world import Vec2


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


# --- detections ------------------------------------------------------------------------------------------------
_OPEN_STATE = {None: ci.DetectedObject.OPEN_UNKNOWN, True: ci.DetectedObject.OPEN, False: ci.DetectedObject.CLOSED}


def detection_to_msg(detection: Detection) -> ci.DetectedObject:
    """The step is the observation's (``ObjectDetections.step``), not the object's: it is dropped here."""
    return ci.DetectedObject(
        name=detection.name,
        object_id=detection.object_id,
        category=detection.category,
        room=detection.room,
        container=detection.container,
        position=point_to_msg(detection.position),
        confidence=float(detection.confidence),
        holder=detection.holder,
        open_state=_OPEN_STATE[detection.is_open],
    )


def detection_from_msg(obj: ci.DetectedObject, step: int) -> Detection:
    """The core detection of ``obj`` observed at ``step``."""
    return Detection(
        name=obj.name,
        object_id=obj.object_id,
        category=obj.category,
        room=obj.room,
        container=obj.container,
        position=point_from_msg(obj.position),
        confidence=float(obj.confidence),
        step=step,
        holder=obj.holder,
        is_open={ci.DetectedObject.OPEN: True, ci.DetectedObject.CLOSED: False}.get(obj.open_state),
    )


def detections_to_msg(
    robot: str,
    detections: Iterable[Detection],
    header: Header,
    *,
    step: int = -1,
    room: str = "",
    explored_rooms: Iterable[str] = (),
) -> ci.ObjectDetections:
    return ci.ObjectDetections(
        header=header,
        robot=robot,
        objects=[detection_to_msg(d) for d in detections],
        step=step,
        room=room,
        explored_rooms=list(explored_rooms),
    )


def detections_from_msg(message: ci.ObjectDetections, step: int) -> list[Detection]:
    return [detection_from_msg(obj, step) for obj in message.objects]


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
) -> ci.SemanticMap:
    times = last_seen or {}
    return ci.SemanticMap(
        header=header,
        robot=robot,
        objects=[semantic_object_to_msg(obj, times.get(obj.object_id)) for obj in objects],
        explored_rooms=list(explored_rooms),
    )
