"""Frames and transforms without DDS: the pip installs' TF buffer (lookups along a chain, at a time, static and
moving edges, refusals), the camera mount it publishes against the renderer's camera pose, image and camera-info
conversions, and the camera sightings the perception node adds to a status."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Quaternion
from std_msgs.msg import Header

from coteam.domain.observation import ObjectView, Observation
from coteam.domain.world import Container, ObjectKind, Relation
from coteam.senses.perception import CameraPerception, Detection, ObservationAssembler
from coteam.senses.vision import CameraIntrinsics, CameraMount, CameraPose
from coteam_ros.convert import (
    camera_info_to_msg,
    depth_from_msg,
    depth_to_msg,
    detections_to_msg,
    intrinsics_from_msg,
    rgb_from_msg,
    rgb_to_msg,
)
from coteam_ros.observations import CameraSightings
from coteam_ros.tf import (
    CAMERA_LINK_TO_OPTICAL,
    RigidTransform,
    TransformBuffer,
    TransformUnavailable,
    camera_mount_transform,
)
from coteam_sim.suites import get_suite


def _t(sec: int = 0, nanosec: int = 0) -> Time:
    return Time(sec=sec, nanosec=nanosec)


def _robot_tree() -> TransformBuffer:
    tf = TransformBuffer()
    tf.set_transform(RigidTransform.of(1.0, 2.0).stamped("map", "r/odom", _t()), static=True)
    tf.set_transform(RigidTransform.of(3.0, 0.0, yaw_deg=90).stamped("r/odom", "r/base_link", _t(1)))
    tf.set_transform(RigidTransform.of(5.0, 0.0, yaw_deg=180).stamped("r/odom", "r/base_link", _t(2)))
    tf.set_transform(camera_mount_transform(CameraMount()).stamped("r/base_link", "r/camera_link", _t(1)))
    tf.set_transform(CAMERA_LINK_TO_OPTICAL.stamped("r/camera_link", "r/camera_optical_frame", _t()), static=True)
    return tf


def test_a_lookup_composes_the_chain_at_the_asked_time() -> None:
    tf = _robot_tree()
    at_1 = tf.lookup("map", "r/base_link", _t(1, 500))  # the newest transform not after 1.5 s
    assert np.allclose(at_1.translation, [4.0, 2.0, 0.0])
    assert np.allclose(tf.lookup("map", "r/base_link").translation, [6.0, 2.0, 0.0])  # no time: the latest
    assert np.allclose(tf.lookup("map", "r/base_link", _t(0)).translation, [6.0, 2.0, 0.0])  # zero: the latest
    with pytest.raises(TransformUnavailable, match=r"nothing at 2\.500000 s yet"):
        tf.lookup("map", "r/base_link", _t(2, 500_000_000))  # after the newest: not extrapolated
    point = tf.lookup("map", "r/base_link", _t(1)).apply([1.0, 0.0, 0.0])  # 1 m ahead of a robot facing +y
    assert np.allclose(point, [4.0, 3.0, 0.0])
    back = tf.lookup("r/base_link", "map", _t(1))  # the inverse direction
    assert np.allclose(back.apply(point), [1.0, 0.0, 0.0])
    # the camera, through five frames, is where the renderer puts it
    camera = tf.lookup("map", "r/camera_optical_frame", _t(1)).camera_pose()  # the mount is known at 1 s only
    rendered = CameraPose.of_robot((4.0, 2.0), 90.0, CameraMount())
    assert np.allclose(camera.rotation, rendered.rotation) and np.allclose(camera.origin, rendered.origin)


def test_a_panned_camera_is_the_robot_turned_by_the_pan() -> None:
    mount = CameraMount(x=0.2, y=0.05, z=1.1, pitch_deg=20.0)
    for heading, pan in ((0.0, 0.0), (30.0, 60.0), (300.0, 240.0)):
        optical = RigidTransform.of(2.0, -1.0, yaw_deg=heading) @ camera_mount_transform(mount, pan)
        pose = (optical @ CAMERA_LINK_TO_OPTICAL).camera_pose()
        rendered = CameraPose.of_robot((2.0, -1.0), heading + pan, mount)
        assert np.allclose(pose.rotation, rendered.rotation) and np.allclose(pose.origin, rendered.origin)


def test_transforms_round_trip_through_messages() -> None:
    t = RigidTransform.of(1.5, -2.0, 0.3, yaw_deg=123.0) @ camera_mount_transform(CameraMount(pitch_deg=-7.0), 40.0)
    back = RigidTransform.from_msg(t.stamped("a", "b", _t(4)).transform)
    assert np.allclose(back.rotation, t.rotation) and np.allclose(back.translation, t.translation)
    assert np.allclose((t @ t.inverse()).rotation, np.eye(3))


def test_the_buffer_refuses_what_it_cannot_answer() -> None:
    tf = _robot_tree()
    with pytest.raises(TransformUnavailable, match=r"nothing at or before 0\.500000 s"):
        tf.lookup("map", "r/base_link", _t(0, 500_000_000))
    with pytest.raises(TransformUnavailable, match="frame 'r/gripper' is unknown"):
        tf.lookup("map", "r/gripper")
    tf.set_transform(RigidTransform.identity().stamped("other_map", "s/odom", _t()), static=True)
    with pytest.raises(TransformUnavailable, match="not connected") as unlinked:
        tf.lookup("map", "s/odom")
    assert unlinked.value.late, "a link between the trees may still be published (a localisation starting)"
    bad = RigidTransform.identity().stamped("map", "x", _t())
    bad.transform.rotation = Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)
    with pytest.raises(ValueError, match="invalid rotation"):
        tf.set_transform(bad)
    with pytest.raises(ValueError, match="two different, non-empty frames"):
        tf.set_transform(RigidTransform.identity().stamped("map", "map", _t()))
    assert issubclass(TransformUnavailable, LookupError)


def test_a_moving_edge_keeps_a_bounded_history_and_a_frame_can_move_to_another_parent() -> None:
    tf = TransformBuffer(history_s=2.0)
    tf.set_transform(RigidTransform.identity().stamped("map", "odom", _t()), static=True)
    for sec in range(10):
        tf.set_transform(RigidTransform.of(float(sec)).stamped("odom", "base", _t(sec)))
    assert np.allclose(tf.lookup("map", "base", _t(8, 1)).translation, [8.0, 0.0, 0.0])
    with pytest.raises(TransformUnavailable):
        tf.lookup("map", "base", _t(6))  # older than the history kept
    tf.set_transform(RigidTransform.of(0.0, 7.0).stamped("map", "base", _t(10)), static=True)  # re-parented
    assert np.allclose(tf.lookup("map", "base").translation, [0.0, 7.0, 0.0])


def test_images_and_camera_info_round_trip() -> None:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    depth = rng.random((6, 8)).astype(np.float32)
    header = Header(stamp=_t(3), frame_id="cam")
    assert (rgb_from_msg(rgb_to_msg(rgb, header)) == rgb).all()
    assert (depth_from_msg(depth_to_msg(depth, header)) == depth).all()
    bgr = rgb_to_msg(rgb[..., ::-1].copy(), header)
    bgr.encoding = "bgr8"
    assert (rgb_from_msg(bgr) == rgb).all()
    millimetres = depth_to_msg(depth, header)
    millimetres.encoding, millimetres.step = "16UC1", 16
    millimetres.data = (np.arange(48, dtype="<u2") * 250).tobytes()
    assert depth_from_msg(millimetres)[0, :3].tolist() == [0.0, 0.25, 0.5]
    nan = depth.copy()
    nan[0, 0] = np.nan
    assert depth_from_msg(depth_to_msg(nan, header))[0, 0] == 0.0, "no measurement is 0, as detectors expect"
    truncated = rgb_to_msg(rgb, header)
    truncated.data = truncated.data[:-1]
    with pytest.raises(ValueError, match="truncated"):
        rgb_from_msg(truncated)
    with pytest.raises(ValueError, match="'mono8' is not supported"):
        rgb_from_msg(rgb_to_msg(rgb, header).__class__(encoding="mono8"))
    k = CameraIntrinsics.from_fov(640, 480, 60.0)
    assert intrinsics_from_msg(camera_info_to_msg(k, header)) == k
    with pytest.raises(ValueError, match="no calibration"):
        intrinsics_from_msg(camera_info_to_msg(k, header).__class__())


def test_camera_sightings_add_the_map_items_of_the_announced_frames_only() -> None:
    scene = get_suite("cwah-test").episodes()[0].build()
    container = next(c for c in scene.containers if isinstance(c, Container))
    room = scene.floorplan.room(container.room)
    a, b, c = scene.items[:3]
    camera = CameraPerception(ObservationAssembler("alice", scene))
    sightings = CameraSightings(camera)

    def seen(item, dx: float = 0.0) -> Detection:
        at = (container.position[0] + dx, container.position[1])
        return Detection(item.name, item.id, item.category, room.name, "", at, 1.0, 0)

    shown = ObjectView(c.id, c.name, ObjectKind.ITEM, room.id, container.position, c.category, Relation.ON)
    obs = Observation("alice", 0, 0, (0.0, 0.0), 0, room.id, (None, None), visible=(shown,))
    sightings.add(10, camera.frame([seen(a)], room.name))  # a frame of an earlier step, nobody asked for
    sightings.expect([20, 21])
    assert sightings.missing() == [20, 21]
    sightings.add(20, camera.frame([seen(b, 0.3), seen(c)], room.name))
    sightings.add(21, camera.frame([], room.name))
    assert sightings.missing() == []
    merged = sightings.merged(obs)
    views = {v.id: v for v in merged.visible}
    assert set(views) == {b.id, c.id}, "the announced frames' items; the shown one kept as the status has it"
    assert views[c.id] is shown
    # placed on the fixture within reach, where the map has it
    assert (views[b.id].location, views[b.id].holder, views[b.id].room) == (Relation.IN, container.id, room.id)
    assert camera.fusion.get(b.id).container == container.name
    assert sightings.frames == {} and sightings.merged(obs) == obs, "frames are used once"


def test_detections_wait_a_bounded_time_for_a_late_transform_and_every_drop_is_counted_by_cause() -> None:
    """As tf2's message filter: an array stamped after TF's newest transform waits for it (and is placed at its own
    stamp once it comes), one whose wait runs out is dropped, one older than the history is dropped at once; each
    cause is reported the first time only, with the frame named, and counted every time."""
    from coteam_ros.observations import DetectionsAwaitingTf

    tf = _robot_tree()  # r/base_link known at 1 s and 2 s

    def array(sec: int, nanosec: int = 0) -> Any:
        seen = Detection("apple", 7, "food", "", "", (1.0, 0.0), 1.0, 0)
        return detections_to_msg([seen], Header(stamp=_t(sec, nanosec), frame_id="r/base_link"))

    def to_map(message: Any) -> list:  # what robot_state does with an array, as far as TF is concerned
        return [tf.lookup("map", message.header.frame_id, message.header.stamp).translation[0]]

    waiting = DetectionsAwaitingTf(wait_s=0.5)
    waiting.add(array(2, 300_000_000), now_s=10.0)  # 0.3 s after TF's newest: the transform is late
    assert waiting.place(to_map, now_s=10.1) == ([], []) and len(waiting.waiting) == 1
    tf.set_transform(RigidTransform.of(7.0, 0.0).stamped("r/odom", "r/base_link", _t(2, 400_000_000)))
    placed, causes = waiting.place(to_map, now_s=10.2)
    assert len(placed) == 1 and causes == [] and not waiting.drops  # placed at 2.3 s: the pose of 2 s

    waiting.add(array(9), now_s=11.0)  # far ahead of TF: it never comes
    waiting.add(array(9, 1), now_s=11.0)
    assert waiting.place(to_map, now_s=11.2) == ([], [])
    placed, causes = waiting.place(to_map, now_s=11.6)
    assert placed == [] and len(causes) == 1 and "no transform from r/base_link within 0.5 s" in causes[0]
    waiting.add(array(0, 1), now_s=12.0)  # before the oldest transform kept: it will never be there
    placed, causes = waiting.place(to_map, now_s=12.0)
    assert len(causes) == 1 and "r/base_link at the array's stamp, nor will there be" in causes[0]
    assert sum(waiting.drops.values()) == 3 and len(waiting.drops) == 2
    waiting.add(array(9, 2), now_s=13.0)
    assert waiting.place(to_map, now_s=14.0) == ([], [])  # the same cause again: counted, not said again
    assert sum(waiting.drops.values()) == 4
