"""Wrong wiring is said, never waited on quietly: a robot node whose detector, Nav2 or arm nobody offers on the name it
uses (a remap to a wrong name) stops, once its ``wiring_timeout_s`` has passed, with one line naming the resolved
name and what is missing there, and the status that stops a launch; with the other end present it runs on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from coteam_ros import CANNOT_START  # noqa: E402

WIRING_S = 0.5


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as session:
        yield session


def _spin_until_it_stops(node, seconds: float = 10.0) -> SystemExit | None:
    spin = SingleThreadedExecutor()
    spin.add_node(node)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            spin.spin_once(timeout_sec=0.05)
    except SystemExit as stopped:
        return stopped
    finally:
        spin.remove_node(node)
    return None


def _parameters(tmp_path: Path, **extra) -> list[Parameter]:
    values = {"robot": "robot1", "robots": ["robot1"], "scene_path": task_scene(tmp_path), **extra}
    return [Parameter(k, value=v) for k, v in values.items()]


@pytest.mark.parametrize(
    ("node", "remap", "line"),
    [
        ("executor", "manipulate:=/robot1/arm/manipulate", "no arm action server on /robot1/arm/manipulate"),
        ("executor", "navigate_to_pose:=/nav/goal", "no Nav2 action server on /nav/goal"),
        ("robot_state", "detections:=/robot1/detector/objects", "no detector publishing on /robot1/detector/objects"),
    ],
)
def test_a_wire_nobody_serves_stops_the_node_with_its_resolved_name(
    nodes: list, tmp_path: Path, capsys: pytest.CaptureFixture[str], node: str, remap: str, line: str
) -> None:
    if node == "executor":
        from coteam_ros.nodes.executor import ExecutorNode as Node

        extra = {"navigation": "nav2", "wiring_timeout_s": WIRING_S}
    else:
        from coteam_ros.nodes.robot_state import RobotStateNode as Node

        extra = {"wiring_timeout_s": WIRING_S}
    robot = Node(
        namespace="/robot1", parameter_overrides=_parameters(tmp_path, **extra), cli_args=["--ros-args", "-r", remap]
    )
    nodes.append(robot)
    stopped = _spin_until_it_stops(robot)
    assert stopped is not None and stopped.code == CANNOT_START, "it stops, and so does the launch"
    said = [said for said in capsys.readouterr().err.splitlines() if "cannot start" in said]
    assert len(said) == 1 and line in said[0] and said[0].endswith(f"within {WIRING_S:g} s"), said


def test_a_wired_detector_lets_the_node_run_on(nodes: list, tmp_path: Path) -> None:
    from vision_msgs.msg import Detection3DArray

    from coteam_ros.nodes.robot_state import RobotStateNode

    detector = rclpy.create_node("detector", namespace="/robot1")
    detector.create_publisher(Detection3DArray, "detector/objects", 1)
    robot = RobotStateNode(
        namespace="/robot1",
        parameter_overrides=_parameters(tmp_path, wiring_timeout_s=WIRING_S),
        cli_args=["--ros-args", "-r", "detections:=/robot1/detector/objects"],
    )
    nodes += [robot, detector]
    assert _spin_until_it_stops(robot, 4 * WIRING_S) is None


def test_a_detector_seen_once_then_gone_is_no_wiring_fault(nodes: list, tmp_path: Path) -> None:
    """Wiring is checked until every wire has been live once: a detector that was there at start and went away
    before the deadline is a stale sensor (robot_state says so), not wrong wiring that stops the launch."""
    from vision_msgs.msg import Detection3DArray

    from coteam_ros.nodes.robot_state import RobotStateNode

    detector = rclpy.create_node("detector", namespace="/robot1")
    publisher = detector.create_publisher(Detection3DArray, "detections", 1)
    robot = RobotStateNode(
        namespace="/robot1", parameter_overrides=_parameters(tmp_path, wiring_timeout_s=4 * WIRING_S)
    )
    nodes += [robot, detector]
    assert _spin_until_it_stops(robot, WIRING_S * 2) is None  # seen live
    detector.destroy_publisher(publisher)
    assert _spin_until_it_stops(robot, 4 * WIRING_S) is None
