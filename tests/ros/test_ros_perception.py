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

from ros_isolation import isolate_ros, task_scene

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ROS_PKG = ROOT / "ros2_ws" / "src" / "coteam_ros"
TIMEOUT_S = 20.0

pytestmark = pytest.mark.filterwarnings("ignore:module 'sre_(parse|constants)' is deprecated:DeprecationWarning")


def _tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def test_perception_node_publishes_map_and_markers(tmp_path: Path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROS_PKG))
    from coteam_interfaces.msg import SemanticMap
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from vision_msgs.msg import Detection3DArray
    from visualization_msgs.msg import Marker, MarkerArray

    from coteam.domain.scene_io import load_scene
    from coteam.domain.world import Container
    from coteam.senses.perception import Detection
    from coteam_ros.convert import detections_to_msg
    from coteam_ros.qos import SENSOR

    domain = isolate_ros(tmp_path, monkeypatch)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROS_PKG), os.environ.get("PYTHONPATH", "")) if p),
        "PYTHONUNBUFFERED": "1",
    }
    out_path, err_path = tmp_path / "node.out", tmp_path / "node.err"
    cmd = [sys.executable, "-m", "coteam_ros.nodes.perception", "--ros-args", "-r", "__ns:=/alice"]
    scene_path = task_scene(tmp_path)
    cmd += ["-p", "robot:=alice", "-p", "min_confidence:=0.5", "-p", f"scene_path:={scene_path}"]
    scene = load_scene(scene_path)
    names = scene.names()
    fridge = next(c for c in scene.containers if isinstance(c, Container))
    table = next(s for s in scene.surfaces if s.room != fridge.room)
    item = scene.items[0]
    kitchen, livingroom = names[fridge.room], names[table.room]

    context = Context()
    rclpy.init(context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO)
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=tmp_path, start_new_session=True)
    maps: list = []
    markers: list = []
    try:
        node = rclpy.create_node("perception_test", context=context)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        publisher = node.create_publisher(Detection3DArray, "/alice/detections", SENSOR)
        map_sub = node.create_subscription(SemanticMap, "/alice/semantic_map", maps.append, qos)
        marker_sub = node.create_subscription(MarkerArray, "/alice/semantic_markers", markers.append, qos)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)

        def spin_until(condition, what: str, again=None) -> None:
            """Spin until ``condition``; ``again`` is sent every half second meanwhile (detections are best effort:
            the first messages after discovery may be lost)."""
            deadline = time.monotonic() + TIMEOUT_S
            last = time.monotonic()
            while not condition():
                if again is not None and time.monotonic() - last > 0.5:
                    send(again)
                    last = time.monotonic()
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

        def send(detections: list[Detection]) -> None:
            publisher.publish(detections_to_msg(detections, Header(stamp=seen_at, frame_id="map")))

        def seen(name: str, object_id: int, at: tuple[float, float], confidence: float = 0.9) -> Detection:
            return Detection(name, object_id, "", "", "", at, confidence, 0)

        a, f = item.id, fridge.id
        first_batch = [seen(item.name, a, fridge.position), seen(fridge.name, f, fridge.position, 1.0)]
        first_batch.append(seen("plate", 7, (0, 0), 0.3))  # below min_confidence
        spin_until(
            lambda: maps and {o.object_id for o in maps[-1].objects} == {a, f}, "first semantic map", first_batch
        )

        first = maps[-1]
        assert first.robot == "alice" and first.header.frame_id == "map"
        assert first.header.stamp.sec > 0  # stamped with the node clock
        assert list(first.explored_rooms) == [kitchen]
        got = {o.object_id: o for o in first.objects}
        assert [o.object_id for o in first.objects] == sorted([a, f])
        # the room and the holding fixture come from the task's map; the category from its catalogue
        assert (got[a].name, got[a].room, got[a].container) == (item.name, kitchen, fridge.name)
        assert (got[a].position.x, got[a].position.y) == fridge.position
        assert got[a].last_seen == seen_at and got[a].holder == ""

        # the item moves to a table in another room
        moved = [seen(item.name, a, table.position)]
        send(moved)
        spin_until(
            lambda: maps and {o.object_id: o for o in maps[-1].objects}[a].room == livingroom, "updated map", moved
        )
        second = maps[-1]
        got = {o.object_id: o for o in second.objects}
        assert sorted(got) == sorted([a, f])  # the fridge is kept although not re-detected
        assert (got[a].container, got[a].position.x, got[a].position.y) == (table.name, *table.position)
        assert got[a].last_seen_step > got[f].last_seen_step  # the node numbers the batches it receives
        assert list(second.explored_rooms) == sorted([kitchen, livingroom])

        def latest_markers() -> dict:
            return {(m.ns, m.id): m for m in markers[-1].markers} if markers else {}

        spin_until(
            lambda: (m := latest_markers().get(("objects", a))) is not None and m.pose.position.x == table.position[0],
            "updated markers",
        )
        drawn = latest_markers()
        assert set(drawn) == {("objects", a), ("objects", f), ("labels", a), ("labels", f)}
        assert drawn["objects", a].type == Marker.SPHERE and drawn["objects", f].type == Marker.CUBE
        assert all(m.action == Marker.ADD and m.header.frame_id == "map" for m in drawn.values())
        assert drawn["labels", a].type == Marker.TEXT_VIEW_FACING
        assert drawn["labels", a].text == f"{item.name} ({a})" and drawn["labels", f].text == f"{fridge.name} ({f})"
        assert drawn["labels", a].pose.position.z > drawn["objects", a].pose.position.z

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

    from coteam.senses.perception import SemanticObject
    from coteam_ros.nodes.perception import LABELS_NS, OBJECTS_NS, semantic_markers

    plate = SemanticObject("plate", 7, "stuff", "kitchen", "", (1.0, 2.0), 3, "bob", 1.0)
    wine = SemanticObject("wine", 9, "food", "kitchen", "", (0.0, 1.0), 3, "", 1.0, unconfirmed_since=5)
    array = semantic_markers([plate, wine], Header(frame_id="map"), removed=[21])
    by_key = {(m.ns, m.id): m for m in array.markers}
    assert by_key[LABELS_NS, 7].text == "plate (7)\nheld by bob"
    assert by_key[OBJECTS_NS, 7].color.a == 1.0 and by_key[OBJECTS_NS, 9].color.a < 1.0
    assert by_key[OBJECTS_NS, 21].action == Marker.DELETE and by_key[LABELS_NS, 21].action == Marker.DELETE
    assert len(array.markers) == 6


def test_the_map_and_its_markers_go_out_again_only_when_they_change(tmp_path: Path, monkeypatch) -> None:
    """The markers are drawn again when an object appears, moves, goes, fades or changes hands, not at every sighting;
    the map when it says anything new (a sighting's step and time are news). Both are latched: a late subscriber
    still gets the current ones."""
    monkeypatch.syspath_prepend(str(ROS_PKG))
    from rclpy.parameter import Parameter

    from coteam.domain.scene_io import load_scene
    from coteam.senses.perception import Detection
    from coteam_ros.nodes.perception import PerceptionNode
    from ros_isolation import rclpy_session

    isolate_ros(tmp_path, monkeypatch)
    scene_path = task_scene(tmp_path)
    item = load_scene(scene_path).items[0]
    with rclpy_session() as nodes:
        robot, scene = Parameter("robot", value="alice"), Parameter("scene_path", value=scene_path)
        node = PerceptionNode(namespace="/alice", parameter_overrides=[robot, scene])
        nodes.append(node)
        maps: list = []
        markers: list = []
        # (as published: a map message keeps an unchanged object's message, its sighting updated)
        sent = lambda m: maps.append([(o.object_id, o.last_seen_step, o.last_seen.sec) for o in m.objects])  # noqa: E731
        monkeypatch.setattr(node.map_publisher, "publish", sent)
        monkeypatch.setattr(node.marker_publisher, "publish", markers.append)

        def sighting(step: int, at: tuple[float, float]) -> None:
            seen = [Detection(item.name, item.id, "", "", "", at, 0.9, step)]
            node._fuse(seen, step, "", [], Time(sec=10 + step))

        sighting(0, (1.0, 1.0))
        sighting(1, (1.0, 1.0))  # seen again where it was
        assert (len(maps), len(markers)) == (2, 1)
        assert maps == [[(item.id, 0, 10)], [(item.id, 1, 11)]]
        node._fuse([], 2, "", [], Time(sec=12))  # nothing seen: nothing new
        assert (len(maps), len(markers)) == (2, 1)
        sighting(3, (2.0, 1.0))  # it has moved
        assert (len(maps), len(markers)) == (3, 2)
        assert markers[1].markers[0].pose.position.x == 2.0
