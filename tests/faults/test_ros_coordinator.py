"""A centralised team over ROS 2: one ``coordinator`` node decides for every robot, each robot runs a ``relay``.

* in lockstep the run is step for step the in-process run: the oracle seeing the world, and a centralised team that
  sees only what its robots see (each robot's memory, and its executor's, take in what its teammates see);
* in real time the team finishes its task;
* a relay takes only its own robot's new commands for the step it is at (a repeated or misaddressed one changes
  nothing; a restarted coordinator's count anew) and answers a garbled action as failed, with one line, so the
  coordinator's turn goes on;
* a robot whose nodes are all killed mid-episode (or only its executor) is dropped from the joint plan, and the other
  robot finishes the task, taking over the item the dead robot had set out to fetch;
* EvoCF (``evocf``) runs through the coordinator too: it drops a killed robot the same way, and its memory file
  outlives the launch (a second launch reads what the first learnt).
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, node_complaints, rclpy_session, task_scene
from ros_team_run import RUN_TIMEOUT_S, StatusSteps, comparable, shut_down, start_bridge_first

rclpy = pytest.importorskip("rclpy")

from coteam.domain.actions import Verb, parse_action  # noqa: E402
from coteam.domain.world import Benchmark  # noqa: E402
from coteam_harness.runner import run_episode  # noqa: E402
from coteam_harness.trace import load_trace  # noqa: E402
from coteam_ros.launcher import child_env, launch, plan  # noqa: E402
from coteam_ros.node_graph import node_list  # noqa: E402
from coteam_ros.team_config import load_config  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart


def _oracle_config(path: Path, world: str, params: str = "{}", method: str = "oracle") -> Path:
    backend = ", backend: symbolic" if method == "oracle" else ""
    path.write_text(
        f"world: {{{world}}}\nteam: {{method: {method}{backend}, params: {params}}}\nnavigation: sim\n"
        "robots: [{name: alice}, {name: bob}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("suite", "params"),
    [("cwah-test", "{}"), ("tdwmat-test", "{full_observability: false}")],
    ids=["oracle-seeing-all", "oracle-searching"],
)
def test_a_centralised_team_over_ros_plays_the_in_process_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: str, params: str
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    spec = get_suite(suite).episodes()[0]
    switches = {"full_observability": False} if "false" in params else {}
    expected = run_episode(
        spec.build(), "oracle", params=switches, seed=0, trace_path=tmp_path / "in_process.json", episode_name=spec.name
    )
    config = _oracle_config(tmp_path / "team.yaml", f"suite: {suite}, episode: 0, seed: 0, mode: lockstep", params)
    assert [s.name for s in node_list(load_config(config), "scene.json")].count("coordinator") == 1
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    got = json.loads(results.read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate"):
        assert got[key] == getattr(expected, key), key
    ours = comparable(load_trace(tmp_path / "ros" / "trace.json"))
    theirs = comparable(load_trace(tmp_path / "in_process.json"))
    assert len(ours["steps"]) == len(theirs["steps"]) > 10
    assert ours["steps"] == theirs["steps"], "every step's actions, failures and world state"
    # and every decision record reaches the bridge's trace (one of tdwmat-test/0 went missing in about one run in
    # three in November; not seen since in 12 runs, 6 of them beside two busy cores)
    assert ours["decisions"] == theirs["decisions"], node_complaints(tmp_path)


def test_a_centralised_team_in_real_time_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without lockstep the coordinator plays each report as it comes (real robots work this way)."""
    isolate_ros(tmp_path, monkeypatch)
    world = "suite: cwah-test, episode: 0, seed: 0, mode: realtime, tick_hz: 10.0"
    config = _oracle_config(tmp_path / "team.yaml", world)
    coordinator = next(s for s in node_list(load_config(config), "scene.json") if s.name == "coordinator")
    assert coordinator.parameters["lockstep"] is False
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    got = json.loads(results.read_text())["episodes"][0]
    assert got["success"] and got["decisions"] > 2


def test_a_relay_refuses_garbled_repeated_and_misaddressed_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_interfaces.msg import RobotStatus, StepTick, TurnCommand, TurnReport
    from rclpy.parameter import Parameter

    from coteam_ros.nodes.planner import PlannerNode
    from coteam_ros.nodes.relay import RelayNode

    isolate_ros(tmp_path, monkeypatch)
    scene = Parameter("scene_path", value=task_scene(tmp_path))
    robot = Parameter("robot", value="bob")
    with rclpy_session() as nodes:
        with pytest.raises(ValueError, match="oracle plans for the whole team in the coordinator"):
            PlannerNode(namespace="/bob", parameter_overrides=[robot, Parameter("method", value="oracle"), scene])
        planner = RelayNode(namespace="/bob", parameter_overrides=[robot, scene])
        nodes.append(planner)
        assert not hasattr(planner, "brain"), "the coordinator holds the team"
        ticks: list[int] = []
        planner._tick = lambda kind, *rest: ticks.append(kind)  # type: ignore[method-assign]
        planner._on_status(RobotStatus(robot="bob", step=3, ready=True, observation_json="{}"))
        sent: list[str] = []
        planner._send_skill = lambda skill, text: sent.append(text)  # type: ignore[method-assign]

        reports: list = []
        planner.report_publisher.publish = reports.append  # type: ignore[method-assign]
        planner._on_command(TurnCommand(robot="bob", step=3, seq=1, kind=TurnCommand.START, action="[fly] <moon> (1)"))
        assert planner.skill is None and not sent, "a garbled action starts nothing"
        assert [(r.command_seq, r.action_state, r.action_success) for r in reports] == [(1, TurnReport.ENDED, False)]
        assert reports[0].failure_reason.startswith("not an action"), "the coordinator's turn goes on at once"
        planner._on_command(TurnCommand(robot="alice", step=3, seq=2, kind=TurnCommand.END, tick=StepTick.ACT))
        planner._on_command(TurnCommand(robot="bob", step=2, seq=3, kind=TurnCommand.END, tick=StepTick.ACT))
        planner._on_command(TurnCommand(robot="bob", step=3, seq=1, kind=TurnCommand.END, tick=StepTick.ACT))
        assert ticks == [], "another robot's, another step's and an old command are ignored"
        planner._on_command(TurnCommand(robot="bob", step=3, seq=4, kind=TurnCommand.END, tick=StepTick.IDLE))
        assert ticks == [StepTick.IDLE]
        restarted = TurnCommand(robot="bob", step=3, epoch=7, seq=1, kind=TurnCommand.END, tick=StepTick.ACT)
        planner._on_command(restarted)
        assert ticks == [StepTick.IDLE, StepTick.ACT], "a restarted coordinator counts its commands anew"


def _quiet(child) -> subprocess.Popen:
    return subprocess.Popen(child.argv, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


@pytest.mark.parametrize(
    ("killed", "method"), [("nodes", "oracle"), ("executor", "oracle"), ("nodes", "evocf")], ids=str
)
def test_a_robot_that_stops_answering_is_dropped_and_the_others_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, killed: str, method: str
) -> None:
    """``nodes``: all of bob's nodes die; ``executor``: only his executor (his relay, waiting for it, reports
    nothing more until its executor timeout says so, 10 s, long after alice has finished here)."""
    isolate_ros(tmp_path, monkeypatch)
    world = "suite: cwah-test, episode: 1, seed: 0, mode: lockstep"
    config = _oracle_config(tmp_path / "team.yaml", world, method=method)
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "plan").mkdir()
    children = plan(load_config(config), tmp_path / "plan", results_path=out / "results.json")
    rclpy.init()
    node = rclpy.create_node("coordinator_kill_test")
    bob = StatusSteps(node, "bob")
    coordinator_log = tmp_path / "coordinator.log"

    def popen(child) -> subprocess.Popen:
        if child.label == "coordinator@/":
            with coordinator_log.open("wb") as log:
                return subprocess.Popen(child.argv, env=child_env(), stdout=log, stderr=subprocess.STDOUT)
        return _quiet(child)

    procs = start_bridge_first(node, children, lambda: bool(bob.seen), popen)
    try:
        killed_at = bob.reach(5)  # bob walks to the first item the joint plan gave him (an apple, until step 36)
        for label, proc in procs.items():
            if label.endswith("@/bob") and (killed == "nodes" or label.startswith("executor")):
                proc.send_signal(signal.SIGKILL)
        assert procs["sim_bridge@/"].wait(timeout=RUN_TIMEOUT_S) == 0, "the episode ends without bob's nodes"
    finally:
        shut_down(node, procs)
    trace = load_trace(out / "trace.json")
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    bobs = [d for d in trace["decisions"] if d["agent"] == "bob"]
    before = [d for d in bobs if d["step"] <= killed_at + 1]
    if method == "oracle":
        fetching = parse_action(before[-1]["action"], Benchmark.CWAH)
        assert fetching.verb == Verb.GRAB and fetching.target is not None, "bob was fetching an item when he died"
        alices = [parse_action(d["action"], Benchmark.CWAH) for d in trace["decisions"] if d["agent"] == "alice"]
        assert any(a.verb == Verb.GRAB and a.target == fetching.target for a in alices), "alice took bob's item over"
    else:  # evocf's rounds after the kill plan for alice alone
        late = [d["rationale"] for d in trace["decisions"] if d["step"] > killed_at + 20]
        assert late and all(r["robots"] == ["alice"] and "bob" not in r["candidates"][0]["plan"] for r in late)
    assert result["success"], "alice finished the task"
    log = coordinator_log.read_text()
    assert "bob does not answer" in log
    if killed == "nodes":
        assert before == bobs, "no decision for bob after his nodes died"


def test_evocf_through_the_coordinator_keeps_its_memory_file_after_the_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strict suite's limits make robots fail; what EvoCF learns from it is in the file when the launch is over,
    and a second launch starts from it."""
    import sqlite3

    isolate_ros(tmp_path, monkeypatch)
    memory = tmp_path / "evocf.sqlite"
    world = "suite: cwah-strict, episode: 0, seed: 0, mode: lockstep"
    config = _oracle_config(tmp_path / "team.yaml", world, f"{{store: {memory}}}", method="evocf")
    code, results = launch(config, tmp_path, out_dir=tmp_path / "first", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    db = sqlite3.connect(memory)
    learnt = db.execute("SELECT count(*) FROM transitions").fetchone()[0]
    rules = db.execute("SELECT count(*) FROM rules").fetchone()[0]
    db.close()
    assert learnt > 10 and rules >= 1
    code, results = launch(config, tmp_path, out_dir=tmp_path / "second", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    first_round = load_trace(tmp_path / "second" / "trace.json")["decisions"][0]["rationale"]
    assert first_round["memory"]["rules"] >= rules, "the second launch starts from the first one's memory"
