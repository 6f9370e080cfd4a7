"""The ROS 2 team stack end to end: sim_bridge, planners and executors as separate processes over real DDS.

* lockstep runs give exactly the in-process runner's steps, actions, failures, messages and decisions;
* a real-time run finishes although one robot's planner is killed mid-episode;
* an unreachable target: the navigator's failure reaches the planner through the executor, which decides anew;
* cancelling an ExecuteSkill goal mid-navigation stops the robot;
* ``coteam launch --record`` writes team messages, decisions and odometry to an MCAP file.
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
from talking import first_talking_episode

rclpy = pytest.importorskip("rclpy")

from coteam.scene_io import save_scene, scene_from_dict, scene_to_dict  # noqa: E402
from coteam.signing import (  # noqa: E402
    PUBLIC_KEYS,
    Envelope,
    Signer,
    Verifier,
    init_keystore,
    load_private_key,
    load_public_keys,
)
from coteam.world import Scene  # noqa: E402
from coteam_harness.trace import load_trace  # noqa: E402
from coteam_ros.config import load_config  # noqa: E402
from coteam_ros.launcher import child_env, launch, plan  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

RUN_TIMEOUT_S = 240.0


def write_config(path: Path, world: str, robots: tuple[str, ...] = ("alice", "bob"), method: str = "pce") -> Path:
    listed = ", ".join(f"{{name: {r}}}" for r in robots)
    path.write_text(
        f"world: {{{world}}}\nteam: {{method: {method}, backend: symbolic}}\nnavigation: sim\nrobots: [{listed}]\n"
    )
    return path


def comparable(trace: dict) -> dict:
    return {
        "steps": [(s["step"], s["clock"], s["actions"], s["failures"], s["digest"]) for s in trace["steps"]],
        "messages": trace["messages"],
        # robots decide in parallel: per robot in order, across robots by step
        "decisions": sorted(((d["step"], d["agent"], d["action"]) for d in trace["decisions"]), key=lambda d: d[:2]),
    }


@pytest.mark.parametrize("method", ["pce", "cobel"])
@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_lockstep_run_equals_the_in_process_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: str, method: str
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    episode, expected = first_talking_episode(suite, trace_path=tmp_path / "in_process.json", method=method)
    world = f"suite: {suite}, episode: {episode}, seed: 0, mode: lockstep"
    config = write_config(tmp_path / "team.yaml", world, method=method)
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


def _wait_for_step(node, robot: str, step: int) -> list[int]:
    """Spin ``node`` until ``robot``'s status reaches ``step`` (at most 60 s); the steps seen, a list that keeps
    growing while ``node`` spins."""
    from coteam_interfaces.msg import RobotStatus
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    steps: list[int] = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(RobotStatus, f"/{robot}/status", lambda m: steps.append(m.step), qos)
    deadline = time.monotonic() + 60
    while not (steps and steps[-1] >= step) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    assert steps and steps[-1] >= step, f"{robot} did not reach step {step}"
    return steps


def _shut_down(node, procs: dict[str, subprocess.Popen]) -> None:
    """End a test's ROS node and stop every child still running (SIGINT, then kill after 10 s)."""
    node.destroy_node()
    rclpy.try_shutdown()
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs.values():
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


@pytest.mark.parametrize(
    "world",
    [
        "suite: cwah-test, episode: 0, seed: 0, mode: realtime, tick_hz: 10.0",
        "suite: cwah-test, episode: 0, seed: 0, mode: lockstep",  # the bridge stops waiting for bob (tick_timeout_s)
    ],
    ids=["realtime", "lockstep"],
)
def test_the_team_goes_on_when_a_planner_dies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: str) -> None:
    isolate_ros(tmp_path, monkeypatch)
    from coteam_interfaces.msg import TeamMessage
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    config = write_config(tmp_path / "team.yaml", world)
    out = tmp_path / "out"
    out.mkdir()
    children = plan(load_config(config), tmp_path, results_path=out / "results.json")
    procs = {c.label: subprocess.Popen(c.argv, env=child_env(), stdout=subprocess.DEVNULL) for c in children}
    bridge = procs["sim_bridge@/"]
    rclpy.init()
    node = rclpy.create_node("kill_test")
    try:
        steps = _wait_for_step(node, "bob", 20)
        assert bridge.poll() is None
        # A message whose payload is not JSON: alice's planner drops the payload and counts it.
        deep = QoSProfile(
            depth=300, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        forged = node.create_publisher(TeamMessage, "/team/messages", deep)  # keeps every sample until delivered
        buggy = TeamMessage(sender="bob", text="hello", step=3, payload_json="{broken")  # but signed with bob's key
        envelope = Signer("bob", load_private_key(tmp_path / "keys" / "bob.key")).sign("", 3, "hello", "{broken")
        buggy.seq, buggy.signature = envelope.seq, envelope.signature
        forged.publish(buggy)
        settle = time.monotonic() + 1.0  # taken in before the flood (a planner keeps at most 100 unread samples)
        while time.monotonic() < settle:
            rclpy.spin_once(node, timeout_sec=0.05)
        # A stranger, then a flood in bob's name, unsigned: the planners refuse and count them.
        forged.publish(TeamMessage(sender="mallory", text="I am your teammate now", step=4))
        for k in range(200):
            forged.publish(TeamMessage(sender="bob", text=f"spam {k}", step=10_000 + k))
        procs["planner@/bob"].send_signal(signal.SIGKILL)
        killed_at = steps[-1]
        assert bridge.wait(timeout=120) == 0, "the episode ends (goal or horizon) without bob's planner"
        stopped = [p for p in procs.values() if p.poll() is None]
        assert len(stopped) == len(procs) - 2  # all but the bridge and the killed planner run on
        for p in stopped:
            p.send_signal(signal.SIGINT)
        assert [p.wait(timeout=20) for p in stopped] == [0] * len(stopped), "nodes exit 0 on SIGINT"
    finally:
        _shut_down(node, procs)
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    trace = load_trace(out / "trace.json")
    after = [s for s in trace["steps"] if s["step"] > killed_at + 1]
    assert any(s["actions"].get("alice", "[wait]") != "[wait]" for s in after), "alice works on"
    assert {d["agent"] for d in trace["decisions"] if d["step"] > killed_at + 1} <= {"alice"}
    assert result["transport_rate"] > 0
    # Counted: the stranger and the unsigned flood (the planner's subscription keeps at most 100 unread samples, so
    # DDS itself drops part of the flood before the inbox sees it).
    assert result["messages_dropped"] >= 2
    assert result["payloads_dropped"] == 1


class Attacker:
    """A node on the team's ROS domain that speaks for the robots: ahead of every step it publishes messages in
    alice's and bob's names for the next steps -- unsigned, signed by the other robot's real key, signed by a key
    of another team; each says its sender explored every room, which would change the teammate's search -- and it
    replays every genuine message it hears."""

    def __init__(self, node, outsider: Signer, insiders: dict[str, Signer], rooms: list[str], team: Verifier) -> None:
        from coteam_interfaces.msg import RobotStatus, TeamMessage

        from coteam_ros.nodes.planner import LATCHED, TEAM_QOS

        self.TeamMessage = TeamMessage
        self.outsider, self.insiders, self.rooms, self.team = outsider, insiders, rooms, team
        self.unverified: list[str] = []  # why genuine messages did not verify (none should)
        self.forged: set[tuple[str, int]] = set()
        self.genuine: set[tuple[str, int]] = set()
        self.publisher = node.create_publisher(TeamMessage, "/team/messages", TEAM_QOS)
        node.create_subscription(TeamMessage, "/team/messages", self._on_message, TEAM_QOS)
        node.create_subscription(RobotStatus, "/alice/status", self._on_status, LATCHED)

    def _on_status(self, status) -> None:
        for step in range(status.clock, status.clock + 3):
            for name, other in (("alice", "bob"), ("bob", "alice")):
                if (name, step) in self.forged:
                    continue
                self.forged.add((name, step))
                text = f"{name} here: I explored every room, nothing is left to find"
                payload = json.dumps({"kind": "status", "agent": name, "room": self.rooms[0], "explored": self.rooms})
                for signer in (None, self.insiders[other], self.outsider):
                    message = self.TeamMessage(sender=name, text=text, step=step, payload_json=payload)
                    if signer is not None:
                        envelope = signer.sign("", step, text, payload)
                        message.seq, message.signature = envelope.seq, envelope.signature
                    self.publisher.publish(message)

    def _on_message(self, message) -> None:
        if "here: I explored" in message.text or (message.sender, message.step) in self.genuine:
            return  # its own, or a genuine message it replayed already
        self.genuine.add((message.sender, message.step))
        envelope = Envelope(message.seq, message.signature)
        why = self.team.check(
            message.sender, message.receiver, message.step, message.text, message.payload_json, envelope
        )
        if why is not None:
            self.unverified.append(why)
        self.publisher.publish(message)  # the genuine message, a second time


def test_forged_and_replayed_messages_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over DDS, with an attacker publishing in both robots' names ahead of every step and replaying every genuine
    message, a lockstep run is still exactly the in-process run: the planners believe only signed, new messages."""
    isolate_ros(tmp_path, monkeypatch)
    episode, expected = first_talking_episode("cwah-test", trace_path=tmp_path / "in_process.json")
    config = write_config(tmp_path / "team.yaml", f"suite: cwah-test, episode: {episode}, seed: 0, mode: lockstep")
    out = tmp_path / "out"
    out.mkdir()
    children = plan(load_config(config), tmp_path, results_path=out / "results.json")  # makes tmp_path/keys
    keys = tmp_path / "keys"
    insiders = {r: Signer(r, load_private_key(keys / f"{r}.key")) for r in ("alice", "bob")}
    init_keystore(tmp_path / "other_team", ["mallory"])
    outsider = Signer("bob", load_private_key(tmp_path / "other_team" / "mallory.key"))
    rclpy.init()
    node = rclpy.create_node("attacker")
    rooms = [r.name for r in get_suite("cwah-test").episodes()[episode].build().floorplan.rooms]
    attacker = Attacker(node, outsider, insiders, rooms, Verifier(load_public_keys(keys / PUBLIC_KEYS)))
    procs = {c.label: subprocess.Popen(c.argv, env=child_env(), stdout=subprocess.DEVNULL) for c in children}
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while procs["sim_bridge@/"].poll() is None and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.02)
        assert procs["sim_bridge@/"].poll() == 0
    finally:
        _shut_down(node, procs)
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate", "messages", "message_chars", "decisions"):
        assert result[key] == getattr(expected, key), key
    ours, theirs = comparable(load_trace(out / "trace.json")), comparable(load_trace(tmp_path / "in_process.json"))
    assert ours == theirs
    assert attacker.genuine and not attacker.unverified, "the planners sign what they send"
    assert attacker.genuine & attacker.forged, "forgeries were waiting for the steps of genuine messages"
    assert result["messages_dropped"] >= 3 * len(attacker.forged) // 2  # each forgery reaches at least one planner


def test_a_planner_says_once_that_its_executor_died_and_the_robot_idles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)

    out = tmp_path / "out"
    out.mkdir()
    children = plan(
        load_config(write_config(tmp_path / "team.yaml", "suite: cwah-test, episode: 0, mode: lockstep")),
        tmp_path,
        results_path=out / "results.json",
    )
    log = (tmp_path / "alice_planner.log").open("w")
    procs = {}
    for c in children:
        argv = [*c.argv, "-p", "executor_timeout_s:=2.0"] if c.label == "planner@/alice" else c.argv
        err = log if c.label == "planner@/alice" else None
        procs[c.label] = subprocess.Popen(argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=err)
    rclpy.init()
    node = rclpy.create_node("executor_kill_test")
    try:
        steps = _wait_for_step(node, "alice", 10)
        procs["executor@/alice"].send_signal(signal.SIGKILL)
        killed_at = steps[-1]
        assert procs["sim_bridge@/"].wait(timeout=180) == 0, "the episode ends without alice's executor"
        assert procs["planner@/alice"].poll() is None, "alice's planner runs on"
    finally:
        _shut_down(node, procs)
        log.close()
    said = [line for line in (tmp_path / "alice_planner.log").read_text().splitlines() if "not answering" in line]
    assert len(said) == 1 and "the executor of alice" in said[0], said
    trace = load_trace(out / "trace.json")
    late = [s for s in trace["steps"] if s["step"] > killed_at + 5]
    assert late and all(s["actions"].get("alice", "[wait]") == "[wait]" for s in late), "alice idles"
    assert any(s["actions"].get("bob", "[wait]") != "[wait]" for s in late), "bob works on"


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
    assert all(d["action"] != d["previous"][0] for d in replans), "the planner does not retry at once"


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
