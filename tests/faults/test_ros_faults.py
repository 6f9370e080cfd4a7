"""Faults of the ROS 2 team over real DDS, every node its own process: a planner, an executor or the simulator
bridge killed with -9, and a node that speaks for the robots (forged and replayed team messages). Each ends
without a hang, the other robot keeps working, the fault is counted or said once, and nothing finished is lost."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros
from ros_team_run import (
    BRIDGE,
    RUN_TIMEOUT_S,
    StatusSteps,
    comparable,
    exit_status,
    shut_down,
    start_bridge_first,
    write_config,
)
from talking import first_talking_episode

rclpy = pytest.importorskip("rclpy")

from coteam.home.signing import (  # noqa: E402
    PUBLIC_KEYS,
    Signer,
    Verifier,
    init_keystore,
    load_private_key,
    load_public_keys,
)
from coteam_harness.trace import load_trace  # noqa: E402
from coteam_ros.faults import MessageAttacker  # noqa: E402
from coteam_ros.launcher import child_env, plan  # noqa: E402
from coteam_ros.team_config import load_config  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart


def _quiet(child) -> subprocess.Popen:
    return subprocess.Popen(child.argv, env=child_env(), stdout=subprocess.DEVNULL)


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
    rclpy.init()
    node = rclpy.create_node("kill_test")
    bob = StatusSteps(node, "bob")
    procs = start_bridge_first(node, children, lambda: bool(bob.seen), _quiet)
    bridge = procs[BRIDGE]
    try:
        killed_at = bob.reach(20)
        # killed first: a lockstep team plays tens of steps a second and could finish while the messages settle
        procs["planner@/bob"].send_signal(signal.SIGKILL)
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
        assert bridge.wait(timeout=120) == 0, "the episode ends (goal or horizon) without bob's planner"
        stopped = [p for p in procs.values() if p.poll() is None]
        assert len(stopped) == len(procs) - 2  # all but the bridge and the killed planner run on
        for p in stopped:
            p.send_signal(signal.SIGINT)
        assert [exit_status(p, 30) for p in stopped] == [0] * len(stopped), "nodes exit 0 on SIGINT"
    finally:
        shut_down(node, procs)
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
    team = Verifier(load_public_keys(keys / PUBLIC_KEYS))
    attacker = MessageAttacker(node, ["alice", "bob"], insiders, outsider, rooms, team)
    # Forgeries are made ahead of the steps of the simulator's status: the robots start once the attacker hears it.
    procs = start_bridge_first(node, children, lambda: bool(attacker.forged), _quiet)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while procs[BRIDGE].poll() is None and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.02)
        assert procs[BRIDGE].poll() == 0
    finally:
        shut_down(node, procs)
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate", "messages", "message_chars", "decisions"):
        assert result[key] == getattr(expected, key), key
    ours, theirs = comparable(load_trace(out / "trace.json")), comparable(load_trace(tmp_path / "in_process.json"))
    assert ours == theirs
    assert attacker.genuine and not attacker.unverified, "the planners sign what they send"
    assert attacker.genuine & attacker.forged, "forgeries were waiting for the steps of genuine messages"
    # How many forgeries reach a planner before the episode's last step depends on the load (the attacker is starved
    # on a busy machine and its forgeries come late): that each refusal is counted is test_team_messages_over_dds's.


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
    rclpy.init()
    node = rclpy.create_node("executor_kill_test")
    alice = StatusSteps(node, "alice")
    log = (tmp_path / "alice_planner.log").open("w")

    def popen(c) -> subprocess.Popen:
        argv = [*c.argv, "-p", "executor_timeout_s:=2.0"] if c.label == "planner@/alice" else c.argv
        err = log if c.label == "planner@/alice" else None
        return subprocess.Popen(argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=err)

    procs = start_bridge_first(node, children, lambda: bool(alice.seen), popen)
    try:
        killed_at = alice.reach(10)
        procs["executor@/alice"].send_signal(signal.SIGKILL)
        assert procs[BRIDGE].wait(timeout=180) == 0, "the episode ends without alice's executor"
        assert procs["planner@/alice"].poll() is None, "alice's planner runs on"
    finally:
        shut_down(node, procs)
        log.close()
    said = [line for line in (tmp_path / "alice_planner.log").read_text().splitlines() if "not answering" in line]
    assert len(said) == 1 and "the executor of alice" in said[0], said
    trace = load_trace(out / "trace.json")
    late = [s for s in trace["steps"] if s["step"] > killed_at + 5]
    assert late and all(s["actions"].get("alice", "[wait]") == "[wait]" for s in late), "alice idles"
    assert any(s["actions"].get("bob", "[wait]") != "[wait]" for s in late), "bob works on"


def test_a_killed_bridge_leaves_the_trace_of_the_steps_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kill -9`` of the simulator bridge mid-episode: its journal holds every step done, readable as an incomplete
    trace; the robots' nodes do not crash and stop cleanly on Ctrl-C."""
    isolate_ros(tmp_path, monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    config = write_config(tmp_path / "team.yaml", "suite: cwah-test, episode: 0, mode: lockstep")
    children = plan(load_config(config), tmp_path, results_path=out / "results.json")
    rclpy.init()
    node = rclpy.create_node("bridge_kill_test")
    alice = StatusSteps(node, "alice")
    procs = start_bridge_first(node, children, lambda: bool(alice.seen), _quiet)
    try:
        killed_at = alice.reach(20)
        procs[BRIDGE].send_signal(signal.SIGKILL)
        assert procs[BRIDGE].wait(timeout=10) == -signal.SIGKILL
        time.sleep(3.0)  # the robots go on waiting for a status that never comes
        robots = [p for label, p in procs.items() if label != BRIDGE]
        assert all(p.poll() is None for p in robots), "no robot node crashes without the bridge"
        for p in robots:
            p.send_signal(signal.SIGINT)
        assert [exit_status(p, 30) for p in robots] == [0] * len(robots), "robot nodes exit 0 on SIGINT"
    finally:
        shut_down(node, procs)
    assert not (out / "results.json").exists() and not (out / "trace.json").exists()
    trace = load_trace(out / "trace.partial.jsonl")
    assert trace["incomplete"]
    assert [s["step"] for s in trace["steps"]] == list(range(len(trace["steps"])))
    assert len(trace["steps"]) >= killed_at, "every step the robots saw is in the journal"
    assert trace["decisions"], "with the decisions taken"
