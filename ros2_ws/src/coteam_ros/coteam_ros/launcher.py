"""``coteam launch``: the process launcher for pip installs (there is no ``ros2 launch`` without apt ROS 2).

Every node of :func:`coteam_ros.node_graph.node_list` runs as its own OS process
(``python -m coteam_ros.nodes.<executable> --ros-args ...``) in its own process group; each output line is printed
with a ``[name@namespace]`` prefix. A composed robot's nodes (``composed:`` in the team file) run together in one
process (``python -m coteam_ros.composed``), whose lines are prefixed ``[robot@<namespace>]``; what is said below of
a node is then said of the robot's process. The run ends when the ``sim_bridge`` exits (the episode is over; its
exit code is the launcher's), when every real robot's planner has ended its task (``coteam_ros.task_end``; then
:func:`write_team_results` makes ``results.json`` of their end reports), on ``--timeout``, on SIGINT/SIGTERM, or
when a node cannot start (it exits with :data:`~coteam_ros.CANNOT_START` after one line saying why: a bad parameter
or file, a missing module such as ``nav2_msgs``); then every remaining child gets SIGINT, then SIGTERM after a grace
period, then SIGKILL, always to its whole process group. A child other than the bridge that dies later is reported
(``planner@/bob exited with code 1``) and the rest keep running: a dead teammate does not stop the team, but the
run's exit code says it died. A robot's node that crashes in native code (:data:`CRASH_SIGNALS`: a segmentation
fault in a middleware library, say) is started again after :data:`RESTART_DELAY_S`, at most :data:`CRASH_RESTARTS`
times a run, as ``ros2 launch``'s ``respawn`` would (a planner recalls its memory from its journal); a Python error
(exit 1), a kill, or a crash past the limit is a death: what fails the same way again is not retried.

Exit codes of :func:`run`: 2 when a node cannot start; the bridge's exit code when it ends the run (128 + N when
it died of signal N); 128 + N when stopped by signal N (130 for Ctrl-C); 124 when the run reaches its timeout (the
task did not end); 0 when every robot's planner has ended its task, and when it is stopped by its caller; without a
bridge, when every child has exited: 0 if all exited with 0, else 1. A run that would end with 0 ends with 1 when a
node died during it. :func:`launch` of robots (no ``world:``) turns a 0 into :data:`TASK_UNFINISHED` (3) when no
robot's map showed the goal met (the task's time limit): only a task done exits 0.

This module does not import rclpy or the node modules: process management works with any command line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coteam_harness.results import RESULTS_JSON, EpisodeResult, p95, write_results
from coteam_ros import CANNOT_START
from coteam_ros.keystore import prepare_keystore
from coteam_ros.node_graph import (
    NodeSpec,
    composed_arguments,
    model_groups,
    node_list,
    processes,
    ros_args,
    write_task_scene,
)
from coteam_ros.task_end import END_REPORT, EndReport
from coteam_ros.team_config import ServeSection, TeamConfig, load_config

TIMEOUT_EXIT = 124
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE})
CRASH_RESTARTS = 3  # a robot's node that crashed is started again at most this often a run
RESTART_DELAY_S = 1.0  # after this long (its DDS participant's departure is seen first)
TASK_UNFINISHED = 3  # robots: every planner ended its task, but no map showed the goal met (the time limit)
TWIN_RESULTS = "twin.json"  # the twin's own results: what really happened in the simulated home
TASKS_JSONL = "tasks.jsonl"  # a serving team's tasks: one record per task people gave (coteam.tasks.desk)
MEMORY_JOURNAL = "{robot}.memory.jsonl"  # a planner's memory (coteam_ros.memory_journal), in the run's output folder
TIME_LIMIT_GRACE_S = 90.0  # past a task's time limit (counted by each robot from its first status: start-up comes
# first, up to the twin's 60 s), the launch stops whatever still runs
POLL_S = 0.05
SELF = "coteam launch"
# coteam's Fast DDS settings (quick recovery of lost samples on Wi-Fi), unless FASTDDS_DEFAULT_PROFILES_FILE is set
DDS_PROFILE = Path(__file__).parent / "dds" / "fastdds_team.xml"


COMPOSED = "robot"  # a composed robot's process: labelled robot@<namespace>


@dataclass
class Child:
    """One process to run. ``specs`` are the nodes it runs: one, a composed robot's, or none (a helper such as the
    recorder)."""

    label: str
    argv: list[str]
    specs: tuple[NodeSpec, ...] = ()
    bridge: bool = False  # the run ends when this child exits
    ends_task: bool = False  # a real robot's planner: the run ends once every such child has exited

    @property
    def spec(self) -> NodeSpec | None:
        """The node of a one-node process (None for a helper and for a composed robot's process)."""
        return self.specs[0] if len(self.specs) == 1 else None

    @staticmethod
    def of(specs: Sequence[NodeSpec], argv: list[str]) -> Child:
        """The process of ``specs`` (one node, or a composed robot's nodes), run by ``argv``: its label, and whether
        the run ends with it (the simulator bridge) or once it has ended its task (a real robot's planner)."""
        label = specs[0].label if len(specs) == 1 else f"{COMPOSED}@{specs[0].namespace}"
        return Child(label, argv, tuple(specs), any(map(ends_run, specs)), any(map(ends_task, specs)))


@dataclass
class _Running:
    child: Child
    proc: subprocess.Popen[bytes]
    reader: threading.Thread
    returncode: int | None = None


def node_command(spec: NodeSpec) -> list[str]:
    """The interpreter command of a node (its arguments come from :func:`coteam_ros.node_graph.ros_args`)."""
    return [sys.executable, "-m", f"coteam_ros.nodes.{spec.executable}"]


def composed_command() -> list[str]:
    """The interpreter command of a composed robot's process (its arguments come from
    :func:`coteam_ros.node_graph.composed_arguments`)."""
    return [sys.executable, "-m", "coteam_ros.composed"]


def plan(
    cfg: TeamConfig,
    params_dir: str | os.PathLike[str],
    *,
    record: str | os.PathLike[str] | None = None,
    results_path: str | os.PathLike[str] | None = None,
    endpoints: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Child]:
    """The children of a team run: the recorder first (when ``record``), then ``node_list(cfg)`` in order. The
    team's keystore is made first where :func:`~coteam_ros.keystore.prepare_keystore` may.

    The task's scene file (:func:`~coteam_ros.node_graph.write_task_scene`) and per-node params files go to
    ``params_dir``; the bridge also gets ``results_path`` and ``trace_path`` (``trace.json`` in the same directory).
    A composed robot's nodes are one child (:func:`~coteam_ros.node_graph.processes`).
    """
    prepare_keystore(cfg)
    children: list[Child] = []
    if record is not None:
        children.append(Child("recording@/", [sys.executable, "-m", "coteam_ros.recording", "--out", str(record)]))

    def extra(spec: NodeSpec) -> dict[str, str]:
        return run_outputs(spec, Path(results_path)) if results_path is not None else {}

    specs = node_list(cfg, write_task_scene(cfg, params_dir), endpoints)
    for group in processes(cfg, specs):
        if len(group) == 1:
            (spec,) = group
            argv = [*node_command(spec), *ros_args(spec, params_dir, extra(spec))]
        else:
            argv = [*composed_command(), *composed_arguments(group, params_dir, extra)]
        children.append(Child.of(group, argv))
    return children


def ends_run(spec: NodeSpec) -> bool:
    """Whether the run ends when this node exits: the simulator bridge (its episode is over), not a twin."""
    return spec.executable == "sim_bridge"


def ends_task(spec: NodeSpec) -> bool:
    """Whether this node ends its robot's task (a real robot's planner, or its relay when a centralised team's
    coordinator tells it to): the run ends once every such one exited."""
    return spec.executable in ("planner", "relay") and spec.parameters.get("ends_task") is True


def run_outputs(spec: NodeSpec, results: Path) -> dict[str, str]:
    """Where a node writes what the run leaves next to its ``results`` file: the bridge the results and its trace, a
    twin what really happened, a real robot's planner its end report, every planner its memory journal."""
    out = results.parent
    extra: dict[str, str] = {}
    if ends_run(spec):  # the episode's trace goes next to the results
        extra = {"results_path": str(results), "trace_path": str(out / "trace.json")}
    elif spec.executable == "twin":  # what really happened in the simulated home
        extra = {"results_path": str(out / TWIN_RESULTS), "trace_path": str(out / "twin_trace.json")}
    elif ends_task(spec):
        extra = {"end_report": str(out / END_REPORT.format(robot=spec.parameters["robot"]))}
    elif spec.executable == "task_desk":  # one record per task people gave
        extra = {"results_path": str(out / TASKS_JSONL)}
    if spec.executable == "planner":  # started again in this run, it recalls what it had seen and heard
        extra["memory_journal"] = str(out / MEMORY_JOURNAL.format(robot=spec.parameters["robot"]))
    return extra


@dataclass
class RunEnding:
    """When a team run ends, as its nodes exit -- the same for ``coteam launch`` and ``ros2 launch``: a node that
    cannot start stops it (:data:`~coteam_ros.CANNOT_START`), the simulator bridge's exit ends it (with its code),
    and so does the last real robot's planner to end its task (0, or 1 when a node died meanwhile); a run of neither
    ends when every node has exited."""

    nodes: frozenset[str]
    bridges: frozenset[str]
    planners: frozenset[str]
    codes: dict[str, int] = field(default_factory=dict)
    died: list[str] = field(default_factory=list)  # nodes that died during the run (not the bridge)
    restarts: dict[str, int] = field(default_factory=dict)  # robots' nodes started again after a crash

    def restart_after_crash(self, label: str, code: int) -> str | None:
        """``label`` exited with ``code``: if it is a robot's node (in a robot's namespace: not the simulator, the
        twin or a coordinator, whose state would be lost) that crashed (:data:`CRASH_SIGNALS`) fewer than
        :data:`CRASH_RESTARTS` times, the line saying it is started again (then it has not exited); else None."""
        if label.endswith("@/") or -code not in CRASH_SIGNALS:
            return None
        done = self.restarts.get(label, 0)
        if done >= CRASH_RESTARTS:
            return None
        self.restarts[label] = done + 1
        name = signal.Signals(-code).name
        return f"{label} crashed ({name}): started again in {RESTART_DELAY_S:g} s ({done + 1} of {CRASH_RESTARTS})"

    @staticmethod
    def of(children: Sequence[Child]) -> RunEnding:
        labels = frozenset(c.label for c in children)
        return RunEnding(
            labels,
            frozenset(c.label for c in children if c.bridge),
            frozenset(c.label for c in children if c.ends_task),
        )

    def exited(self, label: str, code: int) -> tuple[list[str], int | None]:
        """``label`` exited with ``code``: what to say, and the run's exit code if the run ends now (None: go on)."""
        self.codes[label] = code
        if code == CANNOT_START:
            return [f"{label} cannot start: the run stops"], CANNOT_START
        if label in self.bridges:
            said = [f"{label} exited with code {code}: the run ends"]
            if code != 0:
                return said, _exit_code(code)
        else:
            ended = label in self.planners and code == 0
            said = [f"{label} ended its task" if ended else f"{label} exited with code {code}"]
            if code != 0:
                self.died.append(label)
            if self.planners and self.planners <= self.codes.keys():
                said.append("every robot ended its task: the run ends")
            elif self.bridges or self.planners or not self.nodes <= self.codes.keys():
                return said, None
        if self.died:
            said.append(f"{', '.join(self.died)} died during the run")
        return said, 1 if self.died else 0


def child_env(domain_id: int | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The children's environment: discovery on this machine only and coteam's Fast DDS profile
    (:data:`DDS_PROFILE`), unless the caller chose otherwise."""
    env = dict(os.environ if base is None else base)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(DDS_PROFILE))
    env["PYTHONUNBUFFERED"] = "1"  # prefixed lines appear as they are written
    if domain_id is not None:
        if not 0 <= domain_id <= 232:
            raise ValueError(f"--domain-id must be between 0 and 232, got {domain_id}")
        env["ROS_DOMAIN_ID"] = str(domain_id)
    return env


class _Printer:
    """Writes whole lines from several threads without interleaving them."""

    def __init__(self, write: Callable[[str], None] | None):
        self._write = write
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            if self._write is not None:
                self._write(line)
            else:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()


def _pump(proc: subprocess.Popen[bytes], label: str, out: _Printer) -> None:
    assert proc.stdout is not None
    for raw in iter(proc.stdout.readline, b""):
        out(f"[{label}] {raw.decode(errors='replace').rstrip()}")
    proc.stdout.close()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # start_new_session: the child leads its own process group


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run(
    children: Sequence[Child],
    *,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    sigint_grace: float = 5.0,
    sigterm_grace: float = 3.0,
    stop: threading.Event | None = None,
    write: Callable[[str], None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    codes: dict[str, int | None] | None = None,
) -> int:
    """Run ``children`` until the bridge exits, ``timeout`` elapses, ``stop`` is set or SIGINT/SIGTERM arrives
    (handled only when called from the main thread); stop the rest and return the exit code (module docstring).

    ``write`` receives every output line (default: print); ``codes``, if given, receives each child's final
    return code by label (negative: killed by that signal; None: could not be stopped).
    """
    out = _Printer(write)
    stop = stop or threading.Event()
    hurry = threading.Event()  # a second signal: skip the grace periods
    signalled: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        if stop.is_set():
            hurry.set()
        signalled.append(signum)
        stop.set()

    previous: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)

    running: list[_Running] = []
    result: int | None = None
    ending = RunEnding.of(children)
    try:
        for child in children:
            running.append(_start(child, env, cwd, out))
        deadline = None if timeout is None else time.monotonic() + timeout
        while result is None:
            for i, r in enumerate(running):
                if r.returncode is None and (code := r.proc.poll()) is not None:
                    r.returncode = code
                    r.reader.join(timeout=0.5)  # its last lines first (unless a grandchild holds the pipe)
                    if restart := ending.restart_after_crash(r.child.label, code):
                        out(f"[{SELF}] {restart}")
                        if stop.wait(RESTART_DELAY_S):
                            break
                        running[i] = _start(r.child, env, cwd, out)
                        continue
                    said, result = ending.exited(r.child.label, code)
                    for line in said:
                        out(f"[{SELF}] {line}")
                    if result is not None:
                        break
            if result is not None:
                break
            if stop.is_set():
                names = ", ".join(signal.Signals(s).name for s in signalled) or "request"
                out(f"[{SELF}] stopping ({names})")
                result = 128 + signalled[0] if signalled else 0
            elif deadline is not None and time.monotonic() >= deadline:
                out(f"[{SELF}] timeout after {timeout:g} s")
                result = TIMEOUT_EXIT
            else:
                stop.wait(POLL_S)
    finally:
        _shutdown(running, out, sigint_grace, sigterm_grace, hurry)
        if codes is not None:
            codes.update({r.child.label: r.returncode for r in running})
        for sig, handler in previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
    return result if result is not None else 1


def _start(child: Child, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None, out: _Printer) -> _Running:
    proc = subprocess.Popen(
        child.argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(env) if env is not None else child_env(),
        cwd=cwd,
        start_new_session=True,
    )
    reader = threading.Thread(target=_pump, args=(proc, child.label, out), daemon=True)
    reader.start()
    return _Running(child, proc, reader)


def _shutdown(
    running: list[_Running], out: _Printer, sigint_grace: float, sigterm_grace: float, hurry: threading.Event
) -> None:
    """SIGINT, then SIGTERM, then SIGKILL to every child's process group still running."""
    stages = ((signal.SIGINT, sigint_grace), (signal.SIGTERM, sigterm_grace), (signal.SIGKILL, 5.0))
    for sig, grace in stages:
        alive = [r for r in running if r.proc.poll() is None]
        if not alive:
            break
        if sig != signal.SIGINT:
            out(f"[{SELF}] sending {sig.name} to {', '.join(r.child.label for r in alive)}")
        for r in alive:
            _signal_group(r.proc, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(r.proc.poll() is None for r in alive):
            if hurry.is_set() and sig != signal.SIGKILL:
                break
            time.sleep(POLL_S)
    for r in running:
        if r.returncode is None:
            try:
                r.returncode = r.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:  # pragma: no cover - only if SIGKILL failed
                out(f"[{SELF}] {r.child.label} did not exit (pid {r.proc.pid})")
                continue
            if not r.child.bridge and r.returncode != 0:
                out(f"[{SELF}] {r.child.label} exited with code {r.returncode} while stopping")
        r.reader.join(timeout=2.0)


def launch(
    config: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    *,
    out_dir: str | os.PathLike[str] | None = None,
    record: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    domain_id: int | None = None,
    sigint_grace: float = 5.0,
    serve: bool = False,
) -> tuple[int, Path | None]:
    """Load ``config``, start its nodes and wait (see :func:`run`); params files go to ``workdir``. ``serve``: the
    team keeps running and takes tasks (as the team file's ``serve:`` says), until it is stopped.

    Returns the exit code and the results JSON the bridge was asked to write (in ``out_dir``, default
    ``workdir``; None without a world). The file exists only if the bridge wrote it.
    """
    cfg = load_config(config)
    env = child_env(domain_id)
    results_dir = Path(out_dir if out_dir is not None else workdir).resolve()
    results_dir.mkdir(parents=True, exist_ok=True)
    results = fresh_results(results_dir)
    if cfg.world is None and cfg.twin is None and env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST":
        print(
            f"[{SELF}] DDS discovery stays on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST): "
            "export ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET to reach robots on the network",
            flush=True,
        )
    if serve and cfg.serve is None:
        cfg = cfg.model_copy(update={"serve": ServeSection()})
    if timeout is None and cfg.time_limit_s is not None and cfg.serve is None:  # a hung node does not stop
        timeout = cfg.time_limit_s + TIME_LIMIT_GRACE_S
    with local_models(cfg) as endpoints:
        children = plan(cfg, workdir, record=record, results_path=results, endpoints=endpoints)
        code = run(children, timeout=timeout, env=env, sigint_grace=sigint_grace)
    if cfg.world is None:
        code, said = finish_team_run(cfg, results_dir, code)
        if said:
            print(f"[{SELF}] {said}", flush=True)
    return code, results


def fresh_results(directory: Path) -> Path:
    """``directory``'s results file, with what a previous run left there removed (its results, the twin's, end
    reports, memory journals): never show a previous run's table, nor recall its memories."""
    results = directory / RESULTS_JSON
    for old in (
        results,
        directory / TWIN_RESULTS,
        directory / TASKS_JSONL,
        *directory.glob(END_REPORT.format(robot="*")),
        *directory.glob(MEMORY_JOURNAL.format(robot="*")),
    ):
        old.unlink(missing_ok=True)
    return results


def finish_team_run(cfg: TeamConfig, directory: Path, code: int) -> tuple[int, str]:
    """A run on robots has ended with ``code``: its ``results.json`` from the end reports (a run stopped by a person,
    Ctrl-C or SIGTERM, is not incomplete: the end reports say how far the robots got), and the run's exit code, which
    says when the task ended without the goal met; with a line saying so."""
    stopped_by_signal = code - 128 in (signal.SIGINT, signal.SIGTERM)
    done = write_team_results(cfg, directory, stopped=None if code == 0 or stopped_by_signal else f"exit {code}")
    if cfg.serve is not None:  # a serving team ends when it is stopped; its tasks' outcomes are in tasks.jsonl
        return (0 if stopped_by_signal else code), f"the tasks' outcomes: {directory / TASKS_JSONL}"
    if code == 0 and not done:
        return TASK_UNFINISHED, f"the task ended without the goal met (exit {TASK_UNFINISHED})"
    return code, ""


def team_result(reports: list[EndReport], episode: str, task: str, benchmark: str, team: str) -> EpisodeResult:
    """The run's episode result from the robots' end reports: a success when a robot's map showed the goal met;
    steps are the most statuses a robot had; the transport rate is the best map's."""
    decision_ms = [ms for r in reports for ms in r.decision_ms]
    failures: dict[str, int] = {}
    for r in reports:
        for reason, count in r.failures.items():
            failures[reason] = failures.get(reason, 0) + count
    wanted = max((r.goal_items[1] for r in reports), default=0)
    done = max((r.goal_items[0] for r in reports), default=0)
    success = any(r.goal_met for r in reports)
    return EpisodeResult(
        episode=episode,
        scene=episode,
        task=task,
        benchmark=benchmark,
        agents=len(reports),
        team=team,
        success=success,
        steps=max((r.statuses for r in reports), default=0),
        transport_rate=1.0 if success else (done / wanted if wanted else 0.0),
        food_rate=None,
        stuff_rate=None,
        messages=sum(r.messages for r in reports),
        message_chars=sum(r.message_chars for r in reports),
        comm_tokens=0,
        tokens=0,
        llm_calls=0,
        llm_fallbacks=0,
        decisions=sum(r.decisions for r in reports),
        decision_ms_mean=statistics.fmean(decision_ms) if decision_ms else 0.0,
        decision_ms_median=statistics.median(decision_ms) if decision_ms else 0.0,
        decision_ms_p95=p95(decision_ms),
        wall_s=max((r.wall_s for r in reports), default=0.0),
        messages_dropped=sum(r.messages_dropped for r in reports),
        teammates_lost=sum(r.teammates_lost for r in reports),
        teammates_returned=sum(r.teammates_returned for r in reports),
        items_out_of_reach=sum(r.items_out_of_reach for r in reports),
        safety_refusals=sum(r.safety_refusals for r in reports),
        retries_blocked=sum(r.retries_blocked for r in reports),
        passage_meetings=sum(r.passage_meetings for r in reports),
        travel_m={r.robot: r.travel_m for r in reports},
        failures=failures,
    )


def write_team_results(cfg: TeamConfig, directory: Path, stopped: str | None) -> bool:
    """A run on robots (or their twins): ``results.json`` from the planners' end reports (``coteam_ros.task_end``);
    a robot without one (stopped, or died) makes the results incomplete. Whether a robot's map showed the goal met."""
    reports = []
    for robot in cfg.robot_names:
        path = directory / END_REPORT.format(robot=robot)
        if path.is_file():
            reports.append(EndReport.read(path))
        else:
            stopped = stopped or f"no end report from {robot}"
    if any(r.ended == "stopped" for r in reports):
        stopped = stopped or "stopped before the task ended"
    ref = cfg.episode_ref
    scene = ref.world.scene if ref.world is not None else None
    episode = scene.name if scene is not None else f"{ref.suite}/{ref.episode}"
    task = scene.task.name if scene is not None else ""
    benchmark = scene.benchmark.value if scene is not None else ""
    result = team_result(reports, episode, task, benchmark, cfg.team.method)
    meta = {"suite": ref.world_file or ref.suite, "team": cfg.team.method, "robots": cfg.robot_names}
    meta["ended"] = {r.robot: r.ended for r in reports}
    write_results([result], directory / RESULTS_JSON, meta, stopped=stopped)
    return result.success


@contextlib.contextmanager
def local_models(cfg: TeamConfig) -> Iterator[dict[str, dict[str, str]]]:
    """The local model servers of ``team.llm`` (none without it), started before the nodes and stopped after
    them: one per robot, or one shared by the team. Yields each robot's ``{"base_url", "model"}``."""
    groups = model_groups(cfg)
    if not groups:
        yield {}
        return
    from coteam.llm.local import LocalLLMServer, LocalServerSettings

    assert cfg.team.local_llm is not None
    settings = LocalServerSettings(model=cfg.team.local_llm.model)
    servers: list[LocalLLMServer] = []
    try:
        endpoints: dict[str, dict[str, str]] = {}
        for robots in groups:
            server = LocalLLMServer(settings).start()
            servers.append(server)
            print(f"[{SELF}] local model {server.model_name} at {server.base_url} for {', '.join(robots)}", flush=True)
            endpoints.update({r: {"base_url": server.base_url, "model": server.model_name} for r in robots})
        yield endpoints
    finally:
        for server in servers:
            server.stop()
