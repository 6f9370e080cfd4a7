"""The perception node over real DDS: `python -m coteam_ros.nodes.perception` runs in its own process under
namespace /alice; this test publishes /alice/detections and checks /alice/semantic_map and
/alice/semantic_markers, then stops the node with SIGINT (exit code 0).

Skipped only when rclpy is missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROS_PKG = ROOT / "ros2_ws" / "src" / "coteam_ros"
TIMEOUT_S = 20.0

pytestmark = pytest.mark.filterwarnings("ignore:module 'sre_(parse|constants)' is deprecated:DeprecationWarning")


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def test_perception_node_publishes_map_and_markers(tmp_path: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROS_PKG))
    from coteam_interfaces.msg import ObjectDetections, SemanticMap
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from visualization_msgs.msg import Marker, MarkerArray

    from coteam.perception import Detection
    from coteam_ros.convert import detections_to_msg

    domain = isolate_ros(tmp_path, monkeypatch)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROS_PKG), os.environ.get("PYTHONPATH", "")) if p),
        "PYTHONUNBUFFERED": "1",
    }
    out_path, err_path = tmp_path / "node.out", tmp_path / "node.err"
    cmd = [sys.executable, "-m", "coteam_ros.nodes.perception", "--ros-args", "-r", "__ns:=/alice"]
    cmd += ["-p", "robot:=alice", "-p", "min_confidence:=0.5"]

    context = Context()
    rclpy.init(context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO)
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tmp_path, start_new_session=True)
    maps: list = []
    markers: list = []
    try:
        node = rclpy.create_node("perception_test", context=context)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        publisher = node.create_publisher(ObjectDetections, "/alice/detections", 10)
        map_sub = node.create_subscription(SemanticMap, "/alice/semantic_map", maps.append, qos)
        marker_sub = node.create_subscription(MarkerArray, "/alice/semantic_markers", markers.append, qos)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)

        def spin_until(condition, what: str) -> None:
            deadline = time.monotonic() + TIMEOUT_S
            while not condition():
                if proc.poll() is not None:
                    pytest.fail(f"node exited ({proc.returncode}) waiting for {what}; stderr: {_tail(err_path)}")
                if time.monotonic() > deadline:
                    pytest.fail(f"no {what} within {TIMEOUT_S} s; node stderr: {_tail(err_path)}")
                executor.spin_once(timeout_sec=0.05)

        spin_until(
            lambda: (
                publisher.get_subscription_count() >= 1
                and map_sub.get_publisher_count() >= 1
                and marker_sub.get_publisher_count() >= 1
            ),
            "discovery of the perception node",
        )

        seen_at = Time(sec=1234, nanosec=500)

        def send(robot: str, detections: list[Detection]) -> None:
            publisher.publish(detections_to_msg(robot, detections, Header(stamp=seen_at, frame_id="map")))

        def apple(step: int, **kw) -> Detection:
            fields = dict(name="apple", object_id=21, category="food", room="kitchen", container="fridge")
            fields |= dict(position=(1.5, -2.25), confidence=0.9, step=step)
            return Detection(**(fields | kw))

        fridge = Detection("fridge", 31, "container", "kitchen", "", (1.0, -3.0), 1.0, 0)
        faint = Detection("plate", 7, "stuff", "kitchen", "", (0.0, 0.0), 0.3, 0)  # below min_confidence
        send("alice", [apple(0), fridge, faint])
        spin_until(lambda: maps and {o.object_id for o in maps[-1].objects} == {21, 31}, "first semantic map")

        first = maps[-1]
        assert first.robot == "alice" and first.header.frame_id == "map"
        assert first.header.stamp.sec > 0  # stamped with the node clock
        assert list(first.explored_rooms) == ["kitchen"]
        got = {o.object_id: o for o in first.objects}
        assert [o.object_id for o in first.objects] == [21, 31]
        assert (got[21].name, got[21].category, got[21].room, got[21].container) == (
            "apple",
            "food",
            "kitchen",
            "fridge",
        )
        assert (got[21].position.x, got[21].position.y, got[21].last_seen_step) == (1.5, -2.25, 0)
        assert got[21].last_seen == seen_at and got[21].holder == ""

        # Another robot's detections are ignored; then the apple moves to the living room.
        send("bob", [Detection("wine", 99, "food", "kitchen", "", (5.0, 5.0), 1.0, 0)])
        send("alice", [apple(1, room="livingroom", container="coffeetable", position=(6.0, 4.0))])
        spin_until(lambda: maps and maps[-1].objects[0].room == "livingroom", "updated semantic map")
        second = maps[-1]
        got = {o.object_id: o for o in second.objects}
        assert sorted(got) == [21, 31]  # the fridge is kept although not re-detected; no wine (99) from bob
        assert (got[21].container, got[21].position.x, got[21].position.y) == ("coffeetable", 6.0, 4.0)
        assert (got[21].last_seen_step, got[31].last_seen_step) == (1, 0)
        assert list(second.explored_rooms) == ["kitchen", "livingroom"]

        def latest_markers() -> dict:
            return {(m.ns, m.id): m for m in markers[-1].markers} if markers else {}

        spin_until(
            lambda: (m := latest_markers().get(("objects", 21))) is not None and m.pose.position.x == 6.0,
            "updated markers",
        )
        drawn = latest_markers()
        assert set(drawn) == {("objects", 21), ("objects", 31), ("labels", 21), ("labels", 31)}
        assert drawn["objects", 21].type == Marker.SPHERE and drawn["objects", 31].type == Marker.CUBE
        assert all(m.action == Marker.ADD and m.header.frame_id == "map" for m in drawn.values())
        shape_colors = {oid: drawn["objects", oid].color for oid in (21, 31)}
        assert (shape_colors[21].r, shape_colors[21].g, shape_colors[21].b) != (
            shape_colors[31].r,
            shape_colors[31].g,
            shape_colors[31].b,
        )
        assert drawn["labels", 21].type == Marker.TEXT_VIEW_FACING
        assert drawn["labels", 21].text == "apple (21)" and drawn["labels", 31].text == "fridge (31)"
        assert drawn["labels", 21].pose.position.z > drawn["objects", 21].pose.position.z

        executor.shutdown()
        node.destroy_node()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        context.try_shutdown()

    assert proc.returncode == 0, _tail(err_path)


def test_semantic_markers_deletes_removed_objects_and_fades_unconfirmed(monkeypatch):
    monkeypatch.syspath_prepend(str(ROS_PKG))
    from visualization_msgs.msg import Marker

    from coteam.perception import SemanticObject
    from coteam_ros.nodes.perception import LABELS_NS, OBJECTS_NS, semantic_markers

    plate = SemanticObject("plate", 7, "stuff", "kitchen", "", (1.0, 2.0), 3, "bob", 1.0)
    wine = SemanticObject("wine", 9, "food", "kitchen", "", (0.0, 1.0), 3, "", 1.0, unconfirmed_since=5)
    array = semantic_markers([plate, wine], Header(frame_id="map"), removed=[21])
    by_key = {(m.ns, m.id): m for m in array.markers}
    assert by_key[LABELS_NS, 7].text == "plate (7)\nheld by bob"
    assert by_key[OBJECTS_NS, 7].color.a == 1.0 and by_key[OBJECTS_NS, 9].color.a < 1.0
    assert by_key[OBJECTS_NS, 21].action == Marker.DELETE and by_key[LABELS_NS, 21].action == Marker.DELETE
    assert len(array.markers) == 6
