"""coteam_ros.launcher (``coteam launch``): process management with tiny fake node scripts, independent of the
real nodes. Children that exit on SIGINT, that ignore SIGINT (SIGTERM), that ignore both (SIGKILL), a bridge
whose exit ends the run and sets the exit code, a crashing teammate that must not stop the team (but sets the exit
code), a node that cannot start (the run stops with 2), timeouts, SIGINT / SIGTERM to the launcher itself
(130 / 143), and ``coteam launch`` end to end with fake nodes standing in for the real ones."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "ros2_ws" / "src" / "coteam_ros"
if importlib.util.find_spec("coteam_ros") is None:  # not pip-installed yet: use the source tree
    sys.path.insert(0, str(PKG))

from coteam.home.signing import PUBLIC_KEYS, init_keystore  # noqa: E402
from coteam_ros import launcher  # noqa: E402
from coteam_ros.launcher import DDS_PROFILE, Child, child_env, plan, run  # noqa: E402
from coteam_ros.node_graph import node_list  # noqa: E402
from coteam_ros.team_config import load_config  # noqa: E402

WAIT_S = 15.0  # upper bound of every explicit wait (generous: tests run under `pytest -n 2`)

FAKE = r"""
import os, signal, sys, time

mode = sys.argv[1]

def ready():
    print(f"ready pid={os.getpid()}", flush=True)

def idle():
    while True:
        time.sleep(0.05)

if mode == "polite":        # a well-behaved node: exit 0 on SIGINT
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    ready(); idle()
elif mode == "stubborn":    # ignores SIGINT; SIGTERM's default action ends it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ready(); idle()
elif mode == "mule":        # ignores SIGINT and SIGTERM: only SIGKILL ends it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready(); idle()
elif mode == "bridge":      # bridge CODE SECONDS: ends the episode with CODE after SECONDS
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    ready()
    time.sleep(float(sys.argv[3]))
    print("bridge done", flush=True)
    sys.exit(int(sys.argv[2]))
elif mode == "crash":
    print("about to crash", flush=True)
    sys.exit(1)
elif mode == "segfault":    # segfault COUNTER N: crashes in native code at its first N starts, then is polite
    counter = sys.argv[2]
    starts = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    open(counter, "w").write(str(starts))
    if starts <= int(sys.argv[3]):
        print(f"start {starts}: segfault", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    ready(); idle()
elif mode == "cannot":      # a node whose parameters are bad: one line, exit 2 (coteam_ros.CANNOT_START)
    print("PlannerNode: cannot start: pce: unknown switch 'lamda'", file=sys.stderr, flush=True)
    sys.exit(2)
elif mode == "node":        # stands in for coteam_ros.nodes.*: reads its --ros-args like a node would
    import json, yaml
    argv = sys.argv
    name = next(a.split(":=")[1] for a in argv if a.startswith("__node:="))
    params = {}
    if "--params-file" in argv:
        doc = yaml.safe_load(open(argv[argv.index("--params-file") + 1]))
        (params,) = [v["ros__parameters"] for v in doc.values()]
    print(f"{name} robot={params.get('robot')} ready", flush=True)
    if name == "sim_bridge":
        time.sleep(0.5)
        with open(params["results_path"], "w") as f:
            f.write(os.environ["FAKE_RESULTS"])
        sys.exit(0)
    if name == "planner" and params.get("end_report"):  # a robot's planner: ends its task as FAKE_GOAL_MET says
        met = os.environ["FAKE_GOAL_MET"] == "1"
        report = {"robot": params["robot"], "ended": "goal met on my map" if met else "time limit",
                  "goal_met": met, "goal_items": [3 if met else 1, 3], "wall_s": 1.0, "statuses": 2, "decisions": 1}
        with open(params["end_report"], "w") as f:
            json.dump(report, f)
        sys.exit(0)
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    idle()
"""


@pytest.fixture
def fake(tmp_path: Path) -> Callable[..., list[str]]:
    script = tmp_path / "fake_node.py"
    script.write_text(FAKE)

    def command(mode: str, *args: object) -> list[str]:
        return [sys.executable, str(script), mode, *map(str, args)]

    return command


class Output:
    """Collects the launcher's lines and waits for them (explicitly, with a timeout)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, line: str) -> None:
        with self._cond:
            self.lines.append(line)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[list[str]], bool], timeout: float = WAIT_S) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: predicate(self.lines), timeout), "\n".join(self.lines)

    def count(self, text: str) -> int:
        return sum(text in line for line in self.lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class Background:
    """run() in a thread, so the test can watch the output and stop it."""

    def __init__(self, children: list[Child], **kwargs: object) -> None:
        self.out = Output()
        self.stop = threading.Event()
        self.codes: dict[str, int | None] = {}
        self.result: int | None = None
        self.started = time.monotonic()
        self.elapsed = 0.0

        def target() -> None:
            self.result = run(children, stop=self.stop, write=self.out, codes=self.codes, **kwargs)  # type: ignore[arg-type]
            self.elapsed = time.monotonic() - self.started

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def join(self, timeout: float = WAIT_S) -> int:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "launcher did not return:\n" + self.out.text
        assert self.result is not None
        return self.result


def _ready(n: int) -> Callable[[list[str]], bool]:
    return lambda lines: sum(" ready" in line for line in lines) >= n


def test_children_stopped_with_sigint(fake: Callable[..., list[str]]) -> None:
    children = [Child("a@/x", fake("polite")), Child("b@/y", fake("polite"))]
    bg = Background(children, sigint_grace=10.0)
    bg.out.wait_for(_ready(2))
    bg.stop.set()
    assert bg.join() == 0
    assert bg.codes == {"a@/x": 0, "b@/y": 0}
    assert bg.elapsed < 8.0  # well inside the SIGINT grace: nobody needed SIGTERM
    assert "SIGTERM" not in bg.out.text
    assert bg.out.count("[a@/x] ready pid=") == 1 and bg.out.count("[b@/y] ready pid=") == 1


def test_sigint_ignored_then_sigterm_then_sigkill(fake: Callable[..., list[str]]) -> None:
    children = [
        Child("polite@/p", fake("polite")),
        Child("stubborn@/s", fake("stubborn")),
        Child("mule@/m", fake("mule")),
    ]
    bg = Background(children, sigint_grace=0.5, sigterm_grace=0.5)
    bg.out.wait_for(_ready(3))
    bg.stop.set()
    assert bg.join() == 0
    assert bg.codes == {"polite@/p": 0, "stubborn@/s": -signal.SIGTERM, "mule@/m": -signal.SIGKILL}
    assert "sending SIGTERM to stubborn@/s, mule@/m" in bg.out.text
    assert "sending SIGKILL to mule@/m" in bg.out.text
    assert bg.elapsed < 10.0


def test_bridge_exit_code_ends_the_run(fake: Callable[..., list[str]]) -> None:
    children = [
        Child("sim_bridge@/", fake("bridge", 3, 1.0), bridge=True),
        Child("planner@/alice", fake("polite")),
        Child("planner@/bob", fake("stubborn")),
    ]
    bg = Background(children, sigint_grace=0.5, sigterm_grace=2.0)
    assert bg.join() == 3
    assert "[sim_bridge@/] bridge done" in bg.out.text
    assert "sim_bridge@/ exited with code 3: the run ends" in bg.out.text
    assert bg.codes["planner@/alice"] in (0, 1)  # 1 only if SIGINT beat its handler on a very slow machine
    assert bg.codes["planner@/bob"] is not None and bg.codes["planner@/bob"] != 0
    assert 1.0 <= bg.elapsed < 10.0


def test_dead_teammate_does_not_stop_the_team(fake: Callable[..., list[str]]) -> None:
    children = [
        Child("sim_bridge@/", fake("bridge", 0, 1.5), bridge=True),
        Child("planner@/bob", fake("crash")),
        Child("planner@/alice", fake("polite")),
    ]
    bg = Background(children, sigint_grace=5.0)
    bg.out.wait_for(lambda lines: any("planner@/bob exited with code 1" in line for line in lines))
    assert bg.thread.is_alive() or "bridge done" in bg.out.text  # the run went on after the crash
    assert bg.join() == 1, "the episode ended, but a node died: the run says so"
    assert "[planner@/bob] about to crash" in bg.out.text
    assert "[sim_bridge@/] bridge done" in bg.out.text  # the episode ran to its end
    assert "planner@/bob died during the run" in bg.out.text
    assert bg.codes == {"sim_bridge@/": 0, "planner@/bob": 1, "planner@/alice": 0}


def test_a_robot_node_that_crashes_in_native_code_is_started_again_a_few_times(
    tmp_path: Path, fake: Callable[..., list[str]]
) -> None:
    """A segmentation fault (a middleware library's) is started again, as ros2 launch's respawn would: the run
    goes on as if nothing happened; one that crashes at every start is a death after CRASH_RESTARTS restarts."""
    from coteam_ros.launcher import CRASH_RESTARTS

    once = [
        Child("sim_bridge@/", fake("bridge", 0, 4.0), bridge=True),
        Child("planner@/bob", fake("segfault", tmp_path / "bob", 1)),
    ]
    bg = Background(once, sigint_grace=5.0)
    assert bg.join() == 0, bg.out.text
    assert "planner@/bob crashed (SIGSEGV): started again in 1 s (1 of 3)" in bg.out.text
    assert bg.out.count("[planner@/bob] ready") == 1 and "died" not in bg.out.text

    always = [
        Child("sim_bridge@/", fake("bridge", 0, 8.0), bridge=True),
        Child("planner@/bob", fake("segfault", tmp_path / "bob-always", 99)),
    ]
    bg = Background(always, sigint_grace=5.0)
    assert bg.join() == 1, bg.out.text
    assert bg.out.count("[planner@/bob] start ") == CRASH_RESTARTS + 1
    assert f"planner@/bob exited with code -{int(signal.SIGSEGV)}" in bg.out.text
    assert "planner@/bob died during the run" in bg.out.text


def test_a_node_that_cannot_start_stops_the_run_with_its_one_line(fake: Callable[..., list[str]]) -> None:
    children = [
        Child("sim_bridge@/", fake("bridge", 0, 60), bridge=True),
        Child("executor@/bob", fake("cannot")),
        Child("planner@/alice", fake("polite")),
    ]
    bg = Background(children, sigint_grace=5.0)
    assert bg.join() == 2
    assert "[executor@/bob] PlannerNode: cannot start: pce: unknown switch 'lamda'" in bg.out.text
    assert "executor@/bob cannot start: the run stops" in bg.out.text
    assert "bridge done" not in bg.out.text and bg.elapsed < 20.0, "stopped before the episode"


def test_timeout(fake: Callable[..., list[str]]) -> None:
    with_bridge = Background([Child("sim_bridge@/", fake("bridge", 0, 60), bridge=True)], timeout=1.0, sigint_grace=2.0)
    hardware = Background([Child("planner@/r1", fake("polite"))], timeout=1.0, sigint_grace=2.0)
    assert with_bridge.join() == launcher.TIMEOUT_EXIT  # the episode did not finish
    assert hardware.join() == launcher.TIMEOUT_EXIT  # robots too: a task that did not end is no success
    assert "timeout after 1 s" in with_bridge.out.text and "timeout after 1 s" in hardware.out.text
    assert with_bridge.elapsed < 10.0 and hardware.elapsed < 10.0


def test_all_children_gone_without_bridge(fake: Callable[..., list[str]]) -> None:
    bg = Background([Child("a@/x", fake("crash")), Child("b@/y", fake("crash"))])
    assert bg.join() == 1
    assert bg.out.count("exited with code 1") == 2


DRIVER = r"""
import sys
from coteam_ros.launcher import Child, run
fake = sys.argv[1]
children = [
    Child("polite@/p", [sys.executable, fake, "polite"]),
    Child("stubborn@/s", [sys.executable, fake, "stubborn"]),
]
sys.exit(run(children, sigint_grace=0.5, sigterm_grace=2.0))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_the_launcher_stops_children(tmp_path: Path, fake: Callable[..., list[str]], sig: int) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PKG), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, str(driver), fake("polite")[1]],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: list[str] = []
    pids: list[int] = []
    try:
        deadline = time.monotonic() + WAIT_S
        assert proc.stdout is not None
        while len(pids) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if " ready pid=" in line:
                pids.append(int(line.rsplit("=", 1)[1]))
        assert len(pids) == 2, "".join(lines)
        os.kill(proc.pid, sig)
        rest, _ = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    output = "".join(lines) + rest
    assert proc.returncode == 128 + sig, output  # 130 for Ctrl-C, 143 for SIGTERM
    assert f"stopping ({signal.Signals(sig).name})" in output
    for pid in pids:  # the children are gone (reaped by the launcher)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_child_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROS_AUTOMATIC_DISCOVERY_RANGE", raising=False)
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE", raising=False)
    env = child_env()
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST" and "ROS_DOMAIN_ID" not in env
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"] == str(DDS_PROFILE) and DDS_PROFILE.is_file()
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET")
    monkeypatch.setenv("FASTDDS_DEFAULT_PROFILES_FILE", "/etc/my_dds.xml")
    env = child_env(42)
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET" and env["ROS_DOMAIN_ID"] == "42"
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"] == "/etc/my_dds.xml"
    with pytest.raises(ValueError, match="domain-id"):
        child_env(300)


def test_plan_record_and_results(tmp_path: Path) -> None:
    cfg = load_config(shutil.copy(ROOT / "config" / "team_sim.yaml", tmp_path))  # its keystore is made in tmp_path
    results = tmp_path / "out" / "results.json"
    children = plan(cfg, tmp_path, record=tmp_path / "run.mcap", results_path=results)
    recorder, *nodes = children
    assert recorder.argv == [sys.executable, "-m", "coteam_ros.recording", "--out", str(tmp_path / "run.mcap")]
    assert recorder.spec is None and not recorder.bridge
    assert [c.spec for c in nodes] == node_list(cfg, tmp_path / "scene.json")  # the task, written for the nodes
    assert [c.bridge for c in nodes] == [True] + [False] * 6
    params_file = Path(nodes[0].argv[nodes[0].argv.index("--params-file") + 1])
    doc = yaml.safe_load(params_file.read_text())
    assert doc["/sim_bridge"]["ros__parameters"]["results_path"] == str(results)
    other = Path(nodes[1].argv[nodes[1].argv.index("--params-file") + 1])
    assert "results_path" not in yaml.safe_load(other.read_text())["/alice/perception"]["ros__parameters"]
    assert sorted(p.name for p in (tmp_path / "keys").iterdir()) == [
        "alice.key",
        "bob.key",
        "operator.key",
        PUBLIC_KEYS,
    ]
    for home in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / home, tmp_path)
    hardware_cfg = load_config(tmp_path / "team_hardware.yaml")
    init_keystore(tmp_path / "keys", hardware_cfg.robot_names)  # on hardware the keys are made before launch
    hardware = plan(hardware_cfg, tmp_path, results_path=results)
    assert not any(c.bridge for c in hardware)
    planners = [c for c in hardware if c.ends_task]  # the run ends once every robot's planner has ended its task
    assert [c.label for c in planners] == ["planner@/robot1", "planner@/robot2"]
    for planner in planners:
        params_file = Path(planner.argv[planner.argv.index("--params-file") + 1])
        (node,) = yaml.safe_load(params_file.read_text()).values()
        robot = planner.label.split("/")[-1]
        assert node["ros__parameters"]["end_report"] == str(results.parent / f"{robot}.end.json")


def test_a_composed_robot_is_one_child_whose_command_runs_all_its_nodes(tmp_path: Path) -> None:
    """``composed: true``: each robot's nodes are one child, ``python -m coteam_ros.composed`` with every node's own
    --ros-args (its params file with what it writes to the run's outputs); a robot's ``composed: false`` keeps its
    nodes apart. coteam_ros.composed reads the nodes back as they were given."""
    from coteam_ros.composed import node_arguments
    from coteam_ros.node_graph import ros_args

    config = Path(shutil.copy(ROOT / "config" / "team_sim.yaml", tmp_path))  # its keystore is made in tmp_path
    config.write_text(
        config.read_text().replace("  - name: bob", "  - {name: bob, composed: false}") + "composed: true\n"
    )
    cfg = load_config(config)
    results = tmp_path / "out" / "results.json"
    children = plan(cfg, tmp_path, results_path=results)
    assert [c.label for c in children] == [
        "sim_bridge@/",
        "robot@/alice",
        "perception@/bob",
        "planner@/bob",
        "executor@/bob",
    ]
    specs = node_list(cfg, tmp_path / "scene.json")
    assert [s for c in children for s in c.specs] == specs  # every node, once, in start order
    alice = children[1]
    assert alice.spec is None and [s.label for s in alice.specs] == [
        "perception@/alice",
        "planner@/alice",
        "executor@/alice",
    ]
    assert not alice.bridge and not alice.ends_task
    assert alice.argv[:3] == [sys.executable, "-m", "coteam_ros.composed"]
    nodes, rest = node_arguments(alice.argv[3:])
    assert rest == []
    assert nodes == [
        (s.executable, ros_args(s, tmp_path, launcher.run_outputs(s, results))) for s in alice.specs
    ]  # the planner's memory journal too
    assert children[3].argv[:3] == [sys.executable, "-m", "coteam_ros.nodes.planner"] and children[3].spec == specs[5]

    for home in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / home, tmp_path)
    hardware = tmp_path / "team_hardware.yaml"
    hardware.write_text(hardware.read_text() + "\ncomposed: true\n")
    init_keystore(tmp_path / "keys", ["robot1", "robot2"])
    robots = plan(load_config(hardware), tmp_path, results_path=results)
    assert [(c.label, c.ends_task) for c in robots] == [("robot@/robot1", True), ("robot@/robot2", True)]
    assert [s.executable for s in robots[0].specs] == ["robot_state", "perception", "planner", "executor"]
    (planner_args,) = [args for exe, args in node_arguments(robots[0].argv[3:])[0] if exe == "planner"]
    (node,) = yaml.safe_load(Path(planner_args[planner_args.index("--params-file") + 1]).read_text()).values()
    assert node["ros__parameters"]["end_report"] == str(results.parent / "robot1.end.json")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        ([], "no node"),
        (["planner"], "planner: expected its own --ros-args ... --"),
        (["planner", "--ros-args", "-r", "__node:=planner"], "planner: expected its own --ros-args ... --"),
        (["sim_bridge", "--ros-args", "--"], "'sim_bridge' is not a robot's node"),
    ],
)
def test_a_composed_process_reads_each_nodes_own_arguments(argv: list[str], problem: str) -> None:
    from coteam_ros.composed import node_arguments

    nodes, rest = node_arguments(
        ["planner", "--ros-args", "-r", "x:=y", "--", "executor", "--ros-args", "--", "--ros-args"]
    )
    assert nodes == [("planner", ["--ros-args", "-r", "x:=y"]), ("executor", ["--ros-args"])]
    assert rest == ["--ros-args"]  # the process's own (ros2 launch adds them)
    with pytest.raises(ValueError, match=re.escape(problem)):
        node_arguments(argv)


def _fake_results() -> str:
    from coteam_harness.results import EpisodeResult, summarize

    r = EpisodeResult(
        episode="cwah-test/0",
        scene="cwah-test/0",
        task="setup_table",
        benchmark="cwah",
        agents=2,
        team="pce",
        success=True,
        steps=42,
        transport_rate=1.0,
        food_rate=None,
        stuff_rate=None,
        messages=3,
        message_chars=120,
        comm_tokens=30,
        tokens=0,
        llm_calls=0,
        llm_fallbacks=0,
        decisions=20,
        decision_ms_mean=1.5,
        decision_ms_median=1.2,
        decision_ms_p95=3.0,
        wall_s=2.0,
    )
    return json.dumps(
        {"meta": {"suite": "cwah-test", "team": "pce"}, "summary": summarize([r]), "episodes": [asdict(r)]}
    )


def test_coteam_launch_end_to_end_with_fake_nodes(
    tmp_path: Path, fake: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`coteam launch config/team_sim.yaml`: every node starts with its parameters, the bridge's exit ends the
    run, and its results JSON is printed as the `coteam run` table."""
    from coteam.cli import main

    monkeypatch.setattr(launcher, "node_command", lambda spec: fake("node"))
    monkeypatch.setenv("FAKE_RESULTS", _fake_results())
    out = tmp_path / "out"
    config = shutil.copy(ROOT / "config" / "team_sim.yaml", tmp_path)  # its keystore is made in tmp_path
    code = main(["launch", config, "--out", str(out), "--grace", "5", "--domain-id", "7"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "[sim_bridge@/] sim_bridge robot=None ready" in printed
    for robot in ("alice", "bob"):
        for node in ("perception", "planner", "executor"):
            assert f"[{node}@/{robot}] {node} robot={robot} ready" in printed
    assert "sim_bridge@/ exited with code 0" in printed
    assert "setup_table" in printed and "cwah-test · pce (ROS)" in printed  # the results table
    assert (out / "results.json").is_file()


@pytest.mark.parametrize(("goal_met", "code"), [(True, 0), (False, launcher.TASK_UNFINISHED)])
def test_a_robot_team_exits_0_only_when_the_task_ended_with_the_goal_met(
    tmp_path: Path, fake: Callable[..., list[str]], monkeypatch: pytest.MonkeyPatch, capsys, goal_met: bool, code: int
) -> None:
    """`coteam launch config/team_hardware.yaml` with fake nodes whose planners end the task: every planner ended
    its task, but only a goal met exits 0; a time limit without it is 3. Discovery on this machine only is said."""
    from coteam.cli import main

    monkeypatch.setattr(launcher, "node_command", lambda spec: fake("node"))
    monkeypatch.setenv("FAKE_GOAL_MET", "1" if goal_met else "0")
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    for name in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / name, tmp_path)
    init_keystore(tmp_path / "keys", ["robot1", "robot2"])
    assert main(["launch", str(tmp_path / "team_hardware.yaml"), "--out", str(tmp_path / "out")]) == code
    printed = capsys.readouterr().out
    assert "DDS discovery stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST)" in printed
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["episodes"][0]["success"] is goal_met


def test_print_results_is_tolerant(tmp_path: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from coteam_ros.cli import print_results

    buf = StringIO()
    console = Console(file=buf, width=200)
    print_results(tmp_path / "results.json", console)
    (tmp_path / "bad.json").write_text("{not json")
    print_results(tmp_path / "bad.json", console)
    (tmp_path / "odd.json").write_text(json.dumps({"success": True}))
    print_results(tmp_path / "odd.json", console)
    text = buf.getvalue()
    assert "wrote no results.json" in text and "unreadable" in text and '"success": true' in text


def test_launch_subcommand_registered() -> None:
    from coteam.cli import build_parser

    args = build_parser().parse_args(["launch", "config/team_sim.yaml", "--record", "x.mcap", "--timeout", "3"])
    assert (args.config, args.record, args.timeout, args.domain_id) == ("config/team_sim.yaml", "x.mcap", 3.0, None)


def test_a_run_ends_as_its_nodes_exit_whichever_launcher_runs_it() -> None:
    """coteam_ros.launcher.RunEnding, for `coteam launch` and `ros2 launch` alike."""
    from coteam_ros import CANNOT_START
    from coteam_ros.launcher import CRASH_RESTARTS, RunEnding

    nodes = frozenset({"twin@/", "planner@/r1", "planner@/r2", "executor@/r1"})
    robots = RunEnding(nodes, frozenset(), frozenset({"planner@/r1", "planner@/r2"}))
    assert robots.exited("planner@/r1", 0) == (["planner@/r1 ended its task"], None)
    assert robots.exited("executor@/r1", 1) == (["executor@/r1 exited with code 1"], None)
    said, code = robots.exited("planner@/r2", 0)
    assert code == 1 and said[-2:] == ["every robot ended its task: the run ends", "executor@/r1 died during the run"]

    sim = RunEnding(frozenset({"sim_bridge@/", "planner@/a"}), frozenset({"sim_bridge@/"}), frozenset())
    assert sim.exited("planner@/a", 0) == (["planner@/a exited with code 0"], None)
    assert sim.exited("sim_bridge@/", -9) == (["sim_bridge@/ exited with code -9: the run ends"], 137)
    fresh = RunEnding(sim.nodes, sim.bridges, sim.planners)
    assert fresh.exited("planner@/a", CANNOT_START) == (["planner@/a cannot start: the run stops"], CANNOT_START)
    # started again: a robot's node after a native crash, up to CRASH_RESTARTS times; never the bridge, the twin
    # or the coordinator, nor a
    # Python error (exit 1) or a kill, which would fail the same way again
    assert fresh.restart_after_crash("sim_bridge@/", -signal.SIGSEGV) is None
    assert fresh.restart_after_crash("coordinator@/", -signal.SIGSEGV) is None
    assert fresh.restart_after_crash("planner@/a", 1) is None and fresh.restart_after_crash("planner@/a", -9) is None
    restarts = [fresh.restart_after_crash("planner@/a", -signal.SIGSEGV) for _ in range(CRASH_RESTARTS + 1)]
    assert restarts[0] == f"planner@/a crashed (SIGSEGV): started again in 1 s (1 of {CRASH_RESTARTS})"
    assert all(restarts[:-1]) and restarts[-1] is None


def test_ros2_launch_starts_the_nodes_coteam_launch_starts_and_writes_the_same_results(tmp_path: Path) -> None:
    """What `ros2 launch coteam_ros team_hardware.launch.py` starts (coteam_ros.launch_description.launch_plan,
    without launch_ros): the nodes of the team file, each told where it writes its part of the run (end reports,
    memory journals), and a run that ends when the last planner has ended its task, its results.json written from
    the end reports, the goal met or not as `coteam launch` would say."""
    from coteam_ros import CANNOT_START
    from coteam_ros.launch_description import launch_plan
    from coteam_ros.task_end import EndReport

    for name in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / name, tmp_path)
    cfg = load_config(tmp_path / "team_hardware.yaml")
    out = tmp_path / "out"
    out.mkdir()
    (out / "robot1.end.json").write_text("{}")  # a previous run's: cleared
    run = launch_plan(cfg, out, str(tmp_path / "scene.json"))
    assert not (out / "robot1.end.json").exists()
    assert [n.spec for n in run.nodes] == node_list(cfg, str(tmp_path / "scene.json"))
    planner = next(n for n in run.nodes if n.spec.label == "planner@/robot1")
    assert planner.parameters["end_report"] == str(out / "robot1.end.json")
    assert planner.parameters["memory_journal"] == str(out / "robot1.memory.jsonl")
    for robot in ("robot1", "robot2"):
        EndReport(robot, "goal met on my map", True, (3, 3), 10.0, 20, 5).write(out / f"{robot}.end.json")
    assert run.exited("planner@/robot1", 0) == (["planner@/robot1 ended its task"], False)
    said, ends = run.exited("planner@/robot2", 0)
    assert ends and "every robot ended its task: the run ends" in said and "(exit 0" in said[-1]
    assert json.loads((out / "results.json").read_text())["episodes"][0]["success"] is True
    stopped = launch_plan(cfg, out, str(tmp_path / "scene.json"))
    said, ends = stopped.exited("robot_state@/robot2", CANNOT_START)
    assert ends and said[0] == "robot_state@/robot2 cannot start: the run stops"


def test_ros2_launch_runs_a_composed_robot_as_coteam_launch_does(tmp_path: Path) -> None:
    """launch_plan of a composed team: one process per robot with coteam launch's label and every node's own
    arguments (their params files in the launch's folder), and the run ends as coteam launch's would."""
    from coteam_ros.composed import node_arguments
    from coteam_ros.launch_description import launch_plan
    from coteam_ros.node_graph import ros_args

    for name in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / name, tmp_path)
    config = tmp_path / "team_hardware.yaml"
    config.write_text(config.read_text() + "\ncomposed: true\n")
    cfg = load_config(config)
    out, folder = tmp_path / "out", tmp_path / "launch"
    folder.mkdir()
    run = launch_plan(cfg, out, str(folder / "scene.json"), params_dir=folder)
    assert [p.label for p in run.processes] == ["robot@/robot1", "robot@/robot2"]
    assert [n.spec for n in run.nodes] == node_list(cfg, str(folder / "scene.json"))
    robot1 = run.processes[0]
    results = out.resolve() / "results.json"
    assert node_arguments(list(robot1.arguments)) == (
        [(n.spec.executable, ros_args(n.spec, folder, launcher.run_outputs(n.spec, results))) for n in robot1.nodes],
        [],
    )
    assert run.ending.planners == {"robot@/robot1", "robot@/robot2"}
    assert run.exited("robot@/robot1", 0) == (["robot@/robot1 ended its task"], False)
    assert "crashed (SIGSEGV)" in (run.ending.restart_after_crash("robot@/robot2", -signal.SIGSEGV) or "")


def test_ros2_launch_serve_true_starts_a_serving_team(tmp_path: Path) -> None:
    """`ros2 launch coteam_ros team_hardware.launch.py serve:=true`: the task node joins, told where its task records
    go, and the planners serve; no planner's end ends the run (a serving team runs until it is stopped)."""
    from coteam_ros.launch_description import launch_plan
    from coteam_ros.launcher import TASKS_JSONL

    for name in ("team_hardware.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / name, tmp_path)
    cfg = load_config(tmp_path / "team_hardware.yaml")
    run = launch_plan(cfg, tmp_path / "out", str(tmp_path / "scene.json"), serve=True)
    desk = next(n for n in run.nodes if n.spec.label == "task_desk@/")
    assert desk.parameters["results_path"] == str((tmp_path / "out" / TASKS_JSONL).resolve())
    assert all(n.parameters["serve"] for n in run.nodes if n.spec.executable == "planner")
    assert "task_desk@/" not in {n.spec.label for n in launch_plan(cfg, tmp_path / "o2", "s.json").nodes}
