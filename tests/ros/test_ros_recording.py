"""coteam_ros.recording: a recorder process subscribes to live topics over real DDS and writes an MCAP file
that decodes with mcap_ros2 (the same ros2msg + cdr encoding Foxglove Studio reads).

Skipped only when rclpy itself is missing; when rclpy is there, mcap and mcap-ros2-support must be too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from ros_isolation import isolate_ros

rclpy = pytest.importorskip("rclpy")

ROS_PKG_DIR = Path(__file__).resolve().parents[2] / "ros2_ws" / "src" / "coteam_ros"
sys.path.insert(0, str(ROS_PKG_DIR))

from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion  # noqa: E402
from mcap.reader import make_reader  # noqa: E402
from nav_msgs.msg import MapMetaData, OccupancyGrid, Odometry  # noqa: E402
from rclpy.duration import Duration  # noqa: E402
from rclpy.qos import (  # noqa: E402
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from rclpy.signals import SignalHandlerOptions  # noqa: E402
from std_msgs.msg import Float32, String  # noqa: E402

with warnings.catch_warnings():  # mcap_ros2.reader warns on import (a stale deprecation notice)
    warnings.simplefilter("ignore", DeprecationWarning)
    from mcap_ros2._dynamic import generate_dynamic
    from mcap_ros2.reader import read_ros2_messages

from coteam_ros.recording import _idl_type_to_msg, message_definition  # noqa: E402

TIMEOUT_S = 20.0

# Fast DDS acknowledges reliable samples only in answer to the writer's periodic heartbeat (3 s by default), so
# `wait_for_all_acked` would take up to 3 s. This default writer profile makes it ~50 ms for the publishers of
# this test process. Speed only: when Fast DDS was already initialised in this process (another test ran
# first), the file is not read again and the test just waits the longer heartbeat.
FAST_HEARTBEAT_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <data_writer profile_name="recording_test_writer" is_default_profile="true">
      <times><heartbeat_period><sec>0</sec><nanosec>50000000</nanosec></heartbeat_period></times>
    </data_writer>
  </profiles>
</dds>
"""

# Loading a type support imports rosidl_generator_py, which imports lark-parser; that warns about sre_* modules.
pytestmark = pytest.mark.filterwarnings("ignore:module 'sre_(parse|constants)' is deprecated:DeprecationWarning")


def test_message_definition_is_complete_ros2msg():
    text = message_definition("nav_msgs/msg/Odometry")
    assert text.startswith("# This represents an estimate of a position and velocity")
    sep = "=" * 80
    deps = [line.removeprefix("MSG: ") for line in text.splitlines() if line.startswith("MSG: ")]
    assert text.count(sep + "\n" + "MSG: ") == len(deps)
    assert set(deps) == {
        "std_msgs/Header",
        "builtin_interfaces/Time",
        "geometry_msgs/PoseWithCovariance",
        "geometry_msgs/Pose",
        "geometry_msgs/Point",
        "geometry_msgs/Quaternion",
        "geometry_msgs/TwistWithCovariance",
        "geometry_msgs/Twist",
        "geometry_msgs/Vector3",
    }
    assert len(deps) == len(set(deps))
    # Every field type resolves: mcap_ros2 builds a decoder for the type and each dependency.
    decoders = generate_dynamic("nav_msgs/msg/Odometry", text)
    assert {"nav_msgs/msg/Odometry", "geometry_msgs/Pose", "std_msgs/Header"} <= decoders.keys()
    # Bare same-package names (e.g. `Marker[] markers`) and bounded strings resolve too.
    marker_deps = [line for line in message_definition("visualization_msgs/MarkerArray").splitlines() if "MSG:" in line]
    assert "MSG: visualization_msgs/Marker" in marker_deps and "MSG: visualization_msgs/MeshFile" in marker_deps
    assert _idl_type_to_msg("sequence<string<5>, 3>") == "string<=5[<=3]"
    assert _idl_type_to_msg("double[36]") == "float64[36]"
    # No .msg file for service/action parts: rebuilt from the Python class, dependencies still resolved.
    request = message_definition("action_msgs/srv/CancelGoal_Request")
    assert request.startswith("action_msgs/GoalInfo goal_info\n") and "MSG: unique_identifier_msgs/UUID" in request
    assert "action_msgs/GoalInfo" in generate_dynamic("action_msgs/srv/CancelGoal_Request", request)
    with pytest.raises(LookupError):
        message_definition("no_such_pkg/msg/Nothing")


def _wait_for(predicate, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"recorder exited early ({proc.returncode}) while waiting for {what}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {TIMEOUT_S} s waiting for {what}; recorder log:\n{log.read_text()}")
        time.sleep(0.02)


def _odom(i: int) -> Odometry:
    msg = Odometry()
    msg.header.frame_id = "map"
    msg.header.stamp.sec = 100 + i
    msg.child_frame_id = "alice/base_link"
    msg.pose.pose.position.x = 0.5 + i
    msg.pose.pose.position.y = -1.0
    msg.pose.pose.orientation.w = 1.0
    msg.twist.twist.linear.x = 0.25 * i
    return msg


def test_recorder_process_writes_decodable_mcap(tmp_path, monkeypatch):
    domain_id = isolate_ros(tmp_path, monkeypatch)
    profile = tmp_path / "fastdds_test_profile.xml"
    profile.write_text(FAST_HEARTBEAT_PROFILE)
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", str(profile))  # this process only, see above
    out = tmp_path / "rec" / "run.mcap"
    log = tmp_path / "recorder.log"

    context = rclpy.context.Context()
    rclpy.init(context=context, domain_id=domain_id, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("recording_test_publisher", context=context)
    proc = None
    try:
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        latched = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=1,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        pub_text = node.create_publisher(String, "/team/messages", reliable)
        pub_odom = node.create_publisher(Odometry, "/alice/odom", reliable)
        pub_goal = node.create_publisher(PoseStamped, "/alice/goal", reliable)
        pub_map = node.create_publisher(OccupancyGrid, "/map", latched)
        pub_battery = node.create_publisher(Float32, "/alice/battery", qos_profile_sensor_data)  # best effort

        # A latched map published before the recorder exists must still be recorded (transient-local match).
        grid = OccupancyGrid(info=MapMetaData(resolution=0.05, width=3, height=2))
        grid.header.frame_id = "map"
        grid.data = [0, 100, -1, 0, 0, 100]
        pub_map.publish(grid)

        started_ns = time.time_ns()
        env = dict(os.environ)
        env.pop("FASTDDS_DEFAULT_PROFILES_FILE")  # the recorder runs with stock Fast DDS settings
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROS_PKG_DIR), env.get("PYTHONPATH")) if p)
        with open(log, "wb") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "coteam_ros.recording", "--out", str(out), "--discovery-period", "0.2"],
                env=env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

        # Matched subscriptions (QoS-compatible), not just graph entries: proves the adaptive QoS worked.
        publishers = [pub_text, pub_odom, pub_goal, pub_map, pub_battery]
        _wait_for(
            lambda: all(p.get_subscription_count() >= 1 for p in publishers),
            "the recorder to subscribe to all five topics",
            proc,
            log,
        )

        battery = [0.9, 0.8, 0.7, 0.6, 0.5]
        for level in battery:
            pub_battery.publish(Float32(data=level))
        texts = [f"hello {i}" for i in range(3)]
        for i, text in enumerate(texts):
            pub_text.publish(String(data=text))
            pub_odom.publish(_odom(i))
        goal = PoseStamped(pose=Pose(position=Point(x=4.0, y=2.5), orientation=Quaternion(z=0.6, w=0.8)))
        goal.header.frame_id = "map"
        pub_goal.publish(goal)
        for p in (pub_text, pub_odom, pub_goal, pub_map):  # the recorder's reader has every sample
            assert p.wait_for_all_acked(Duration(seconds=TIMEOUT_S)), f"{p.topic_name} not acknowledged"

        proc.send_signal(signal.SIGINT)
        try:
            returncode = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(f"recorder did not exit on SIGINT:\n{log.read_text()}")
        assert returncode == 0, log.read_text()
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        node.destroy_node()
        rclpy.try_shutdown(context=context)

    # The file is finished: a summary with statistics exists (readers can index it).
    with open(out, "rb") as f:
        summary = make_reader(f).get_summary()
    assert summary is not None and summary.statistics is not None
    assert all(s.encoding == "ros2msg" for s in summary.schemas.values())
    assert all(c.message_encoding == "cdr" for c in summary.channels.values())

    by_topic: dict[str, list] = {}
    for m in read_ros2_messages(str(out)):
        by_topic.setdefault(m.channel.topic, []).append(m)
    assert summary.statistics.message_count == sum(len(v) for v in by_topic.values())
    assert {"/team/messages", "/alice/odom", "/alice/goal", "/map", "/alice/battery"} <= by_topic.keys()

    assert [m.ros_msg.data for m in by_topic["/team/messages"]] == texts
    assert by_topic["/team/messages"][0].schema.name == "std_msgs/msg/String"

    odom = by_topic["/alice/odom"]
    assert [m.ros_msg.pose.pose.position.x for m in odom] == [0.5, 1.5, 2.5]
    assert [m.ros_msg.twist.twist.linear.x for m in odom] == [0.0, 0.25, 0.5]
    assert odom[2].ros_msg.child_frame_id == "alice/base_link"
    assert odom[2].ros_msg.header.frame_id == "map" and odom[2].ros_msg.header.stamp.sec == 102
    assert odom[0].schema.name == "nav_msgs/msg/Odometry"
    assert "MSG: geometry_msgs/PoseWithCovariance" in odom[0].schema.data.decode()
    for m in odom:  # receive time and DDS source (publish) time, both wall clock on this machine
        assert started_ns < m.publish_time_ns <= m.log_time_ns < time.time_ns()

    [goal_msg] = by_topic["/alice/goal"]
    assert goal_msg.ros_msg.pose.position.x == 4.0 and goal_msg.ros_msg.pose.position.y == 2.5
    assert goal_msg.ros_msg.pose.orientation.w == pytest.approx(0.8)

    [map_msg] = by_topic["/map"]
    assert map_msg.ros_msg.info.width == 3 and map_msg.ros_msg.info.height == 2
    assert list(map_msg.ros_msg.data) == [0, 100, -1, 0, 0, 100]
    # Published before the recorder started: its publish time says so, its log time is the receive time.
    assert map_msg.publish_time_ns < started_ns < map_msg.log_time_ns

    # Best effort: no delivery guarantee, but whatever arrived is intact and in order.
    levels = [m.ros_msg.data for m in by_topic["/alice/battery"]]
    assert 1 <= len(levels) <= len(battery)
    assert levels == sorted(levels, reverse=True)
    assert all(any(abs(level - b) < 1e-6 for b in battery) for level in levels)
