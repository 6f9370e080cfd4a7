"""The ROS 2 team stack end to end: sim_bridge, planners and executors as separate processes over real DDS.

* lockstep runs give exactly the in-process runner's steps, actions, failures, messages and decisions; so do robots
  whose nodes are composed in one process each (``composed: true``);
* an unreachable target: the navigator's failure reaches the planner through the executor, which decides anew;
* cancelling an ExecuteSkill goal mid-navigation stops the robot;
* ``coteam launch --record`` writes team messages, decisions and odometry to an MCAP file.

Killed nodes and attacks on the team's messages are in ``tests/faults/test_ros_faults.py``.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from ros_isolation import isolate_ros
from ros_team_run import RUN_TIMEOUT_S, assert_never_a_third_identical_failure, comparable, write_config
from talking import first_talking_episode

rclpy = pytest.importorskip("rclpy")

from coteam.domain.scene_io import save_scene, scene_from_dict, scene_to_dict  # noqa: E402
from coteam.domain.world import Scene  # noqa: E402
from coteam_harness.runner import run_episode  # noqa: E402
from coteam_harness.trace import load_trace  # noqa: E402
from coteam_ros.launcher import child_env, launch, plan  # noqa: E402
from coteam_ros.team_config import load_config  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart


@pytest.mark.parametrize("method", ["pce", "cobel", "reveca", "mindmap"])
@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_lockstep_run_equals_the_in_process_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: str, method: str
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    _lockstep_run_equals_the_in_process_run(tmp_path, suite, method)


def _lockstep_run_equals_the_in_process_run(tmp_path: Path, suite: str, method: str, team_file: str = "") -> None:
    """The first episode of ``suite`` in which ``method`` talks, launched in lockstep (the team file plus
    ``team_file``), has the in-process run's result and trace."""
    episode, expected = first_talking_episode(suite, trace_path=tmp_path / "in_process.json", method=method)
    world = f"suite: {suite}, episode: {episode}, seed: 0, mode: lockstep"
    config = write_config(tmp_path / "team.yaml", world, method=method)
    config.write_text(config.read_text() + team_file)
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0
    assert results is not None
    got = json.loads(results.read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate", "messages", "message_chars", "decisions"):
        assert got[key] == getattr(expected, key), key
    ours, theirs = (
        comparable(load_trace(tmp_path / "ros" / "trace.json")),
        comparable(load_trace(tmp_path / "in_process.json")),
    )
    assert len(ours["steps"]) == len(theirs["steps"]) > 10
    assert ours == theirs
    assert theirs["messages"], "the episode exercises team messages"


def test_a_question_addressed_to_one_of_two_teammates_crosses_ros_as_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three robots running reveca in lockstep over ROS: a validation question goes to one teammate only (the team
    topic carries the addressee, the third robot ignores it) and the run equals the in-process one."""
    isolate_ros(tmp_path, monkeypatch)
    robots = ("alice", "bob", "carol")
    index, expected = first_talking_episode(
        "cwah-test", trace_path=tmp_path / "in_process.json", method="reveca", agents=3, addressed=True
    )
    theirs = load_trace(tmp_path / "in_process.json")
    world = f"suite: cwah-test, episode: {index}, seed: 0, mode: lockstep"
    config = write_config(tmp_path / "team.yaml", world, robots=robots, method="reveca")
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0
    assert results is not None
    got = json.loads(results.read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate", "messages", "decisions"):
        assert got[key] == getattr(expected, key), key
    ours = load_trace(tmp_path / "ros" / "trace.json")
    assert comparable(ours) == comparable(theirs)
    addressed = [m for m in ours["messages"] if m.get("to")]
    assert addressed and all(m["to"] in robots and m["to"] != m["sender"] for m in addressed)


def test_robots_composed_in_one_process_each_play_the_in_process_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``composed: true``: each robot's perception, planner and executor in one process on one executor play the
    lockstep episode exactly as the in-process runner (and so as separate processes) do, messages included; each
    process stops with status 0 at the end."""
    isolate_ros(tmp_path, monkeypatch)
    _lockstep_run_equals_the_in_process_run(tmp_path, "cwah-test", "pce", "composed: true\n")
    printed = capsys.readouterr().out
    for robot in ("alice", "bob"):  # one process per robot, its nodes named in their log lines
        assert f"[robot@/{robot}] " in printed and f"[{robot}.planner]" in printed
        assert f"[planner@/{robot}]" not in printed
    assert "while stopping" not in printed, "every process exited with status 0 when stopped"


def sealed_room_scene(scene: Scene, agents: int = 2) -> tuple[Scene, str]:
    """``scene`` with the room of a goal target walled off: the robots must try and fail to get there."""
    fp = scene.floorplan
    starts = {fp.room_at(a.position).id for a in scene.agent_starts[:agents]}
    fixtures = {f.id: f for f in (*scene.containers, *scene.surfaces)}
    goal_rooms = [fixtures[p.target].room for p in scene.task.predicates if p.target in fixtures]
    room = fp.room(next(r for r in goal_rooms if r not in starts))
    rows = [list(row) for row in fp.rows]
    inside = {(x, y) for y in range(room.y0, room.y1) for x in range(room.x0, room.x1)}
    for x, y in sorted(inside):
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if (nx, ny) not in inside and fp.is_free(nx, ny) and fp.is_free(x, y):
                rows[y][x] = "#"  # the room's cell at an opening becomes wall
    data = scene_to_dict(scene)
    data["floorplan"]["rows"] = ["".join(row) for row in rows]
    data["name"] = f"{scene.name}-sealed-{room.name}"
    return scene_from_dict(data), room.name


def test_eight_robots_over_ros_are_the_in_process_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight robots in lockstep over ROS (25 processes on this machine: the bridge, and perception, planner and
    executor per robot) play cwah-test episode 0 exactly as the in-process runner does."""
    isolate_ros(tmp_path, monkeypatch)
    robots = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
    expected = run_episode(
        get_suite("cwah-test").episodes()[0].build(), "pce", n_agents=8, seed=0, trace_path=tmp_path / "in_process.json"
    )
    config = write_config(tmp_path / "team.yaml", "suite: cwah-test, episode: 0, seed: 0, mode: lockstep", robots)
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=2 * RUN_TIMEOUT_S)
    assert code == 0
    assert results is not None
    got = json.loads(results.read_text())["episodes"][0]
    assert got["agents"] == 8
    for key in ("success", "steps", "transport_rate", "messages", "decisions"):
        assert got[key] == getattr(expected, key), key
    ours, theirs = (
        comparable(load_trace(tmp_path / "ros" / "trace.json")),
        comparable(load_trace(tmp_path / "in_process.json")),
    )
    assert ours == theirs


def test_unreachable_target_fails_in_the_executor_and_the_planner_decides_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    scene, sealed = sealed_room_scene(get_suite("cwah-test").episodes()[0].build())
    save_scene(scene, tmp_path / "sealed.json")
    config = write_config(tmp_path / "team.yaml", "suite: cwah-test, scene: sealed.json, mode: lockstep")
    code, _ = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0
    decisions = load_trace(tmp_path / "ros" / "trace.json")["decisions"]
    replans = [d for d in decisions if d.get("previous") and d["previous"][1] == "failed: not reachable"]
    assert replans, f"no decision after a failed walk to the sealed {sealed}"
    assert_never_a_third_identical_failure(decisions)


def test_cancel_mid_navigation_stops_the_robot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ExecuteSkill goal cancelled while the robot walks: result CANCELED, the navigation goal is cancelled
    and the robot stands still afterwards (real-time bridge, alice's executor, this test as the planner)."""
    isolate_ros(tmp_path, monkeypatch)
    from action_msgs.msg import GoalStatus
    from coteam_interfaces.action import ExecuteSkill
    from coteam_interfaces.msg import RobotStatus
    from rclpy.action import ActionClient
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    config = write_config(tmp_path / "team.yaml", "suite: cwah-test, episode: 0, mode: realtime, tick_hz: 20.0")
    specs = [c for c in plan(load_config(config), tmp_path) if c.label in ("sim_bridge@/", "executor@/alice")]
    for c in specs:
        if c.bridge:
            c.argv += ["-p", "startup_timeout_s:=0.0"]
    procs = [subprocess.Popen(c.argv, env=child_env(), stdout=subprocess.DEVNULL) for c in specs]
    rclpy.init()
    node = rclpy.create_node("cancel_test")
    try:
        latest: list[RobotStatus] = []
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(RobotStatus, "/alice/status", latest.append, qos)
        client = ActionClient(node, ExecuteSkill, "/alice/execute_skill")
        deadline = time.monotonic() + 60
        while not (latest and client.server_is_ready()) and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        assert latest and client.server_is_ready()

        def position() -> tuple[float, float]:
            return tuple(json.loads(latest[-1].observation_json)["position"])

        scene = get_suite("cwah-test").episodes()[0].build()
        far = max(scene.floorplan.rooms, key=lambda r: math.dist(scene.floorplan.room_center(r.id), position()))
        feedback: list[tuple[int, str, float]] = []
        future = client.send_goal_async(
            ExecuteSkill.Goal(action=f"[goexplore] <{far.name}> ({far.id})", step=latest[-1].step),
            feedback_callback=lambda f: feedback.append((f.feedback.step, f.feedback.phase, f.feedback.progress)),
        )
        rclpy.spin_until_future_complete(node, future, timeout_sec=10)
        handle = future.result()
        assert handle.accepted
        start = position()
        while len(feedback) < 5 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        assert len(feedback) >= 5 and math.dist(start, position()) > 0.5, "the robot walks"
        assert {phase for _, phase, _ in feedback} == {"navigating"}
        progress = [p for _, _, p in feedback]
        assert 0.0 <= progress[0] < progress[-1] <= 1.0, progress
        cancel = handle.cancel_goal_async()
        rclpy.spin_until_future_complete(node, cancel, timeout_sec=10)
        result = handle.get_result_async()
        rclpy.spin_until_future_complete(node, result, timeout_sec=10)
        assert result.result().status == GoalStatus.STATUS_CANCELED
        assert result.result().result.failure_reason == "canceled"
        stopped, stop_step = position(), latest[-1].step
        while latest[-1].step < stop_step + 10 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        assert latest[-1].step >= stop_step + 10
        assert position() == stopped, "after the cancel the robot stands still"
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def test_record_writes_team_messages_decisions_and_odometry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_ros(tmp_path, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from mcap_ros2.reader import read_ros2_messages
    config = write_config(tmp_path / "team.yaml", "suite: tdwmat-test, episode: 0, mode: lockstep")
    run = tmp_path / "run.mcap"
    run_result = subprocess.run(
        [
            sys.executable,
            "-m",
            "coteam.cli",
            "launch",
            str(config),
            "--record",
            str(run),
            "--out",
            str(tmp_path / "o"),
            "--timeout",
            str(RUN_TIMEOUT_S),
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S + 30,
    )
    assert run_result.returncode == 0, run_result.stdout[-2000:] + run_result.stderr[-2000:]
    counts: dict[str, int] = {}
    texts: list[str] = []
    for m in read_ros2_messages(str(run)):
        counts[m.channel.topic] = counts.get(m.channel.topic, 0) + 1
        if m.channel.topic == "/team/messages":
            texts.append(m.ros_msg.text)
    trace = load_trace(tmp_path / "o" / "trace.json")
    assert sorted(texts) == sorted(t["text"] for t in trace["messages"])
    assert counts.get("/alice/decision", 0) + counts.get("/bob/decision", 0) >= len(trace["decisions"]) // 2
    assert counts.get("/alice/odom", 0) > 100 and counts.get("/bob/odom", 0) > 100
