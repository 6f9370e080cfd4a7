"""ROS 2 team-stack benchmarks: the "ROS 2 team stack" section of docs/benchmarks.md.

    python bench/ros_team.py --out docs/benchmarks.md   # run, then splice the section into the file
    python bench/ros_team.py                            # run and print the section

Measures, over real DDS on loopback (own ROS domain, localhost discovery, ROS_HOME / ROS_LOG_DIR in a temp dir):

1. team-message latency: one publisher and one subscriber process exchanging ``TeamMessage`` on
   ``/team/messages`` with the planner's QoS (reliable, transient-local, depth 100); latency = receive time -
   ``header.stamp`` (the same machine clock); unsigned, and signed as the planners sign (the publisher signs after
   stamping, the subscriber verifies before taking the receive time);
2. CPU seconds and peak RSS of every node process of a lockstep episode (bridge, and per robot perception,
   planner, executor), from ``os.wait4`` of the children this process started, split at the first step with
   ``/proc/<pid>/stat`` and ``/proc/<pid>/status`` samples;
3. wall time of the lockstep episode against the in-process runner (``coteam_harness.runner.run_episode``, in its own
   process) on the same episodes, with 2, 4 and 8 robots (pce) and 2 and 4 (the oracle), *before* and *after*: the
   nodes of commit :data:`BEFORE` (its files by ``git archive``, run with ``PYTHONPATH`` pointing there, launched as
   its own ``plan()`` says) and this checkout's, interleaved row by row;
4. where a step's wall time goes, before and after: one run each of :data:`TRACED` with every node traced
   (``bench/steptrace``), its steps' critical paths split by ``bench/lockstep_trace.py``.

Re-running replaces the section of the same title (everything up to the next ``## `` heading), leaving the rest of
the file as it is. ``run_benchmarks.py`` calls :func:`ros_section` unless given ``--skip-ros``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockstep_trace import PARTS, Breakdown, breakdown
from sections import emit_section, machine

TITLE = "## ROS 2 team stack"
DEFAULT_DOMAIN = 77
EPISODES = (("cwah-test", 0), ("tdwmat-test", 0))
# (robots, method) per episode: symbolic PCE (a planner per robot), and the oracle (centralised: one coordinator)
TEAMS = ((2, "pce"), (4, "pce"), (8, "pce"), (2, "oracle"), (4, "oracle"))
TARGET = 3.0  # issue 53: a lockstep episode over ROS within this many times the in-process one, with 2 and 4 robots
BEFORE = "002d111"  # the commit before the lockstep work: "before" runs its nodes (the same plan, its own code)
# before: that commit's nodes; after: this checkout's, a process per node; composed: this checkout's, one per robot
VARIANTS = ("before", "after", "composed")
TRACED = ("tdwmat-test", 0, 2)  # the episode and team size whose steps are traced, before and after, pce and oracle
ROBOTS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
LATENCY_COUNT = 1000
LATENCY_WARMUP = 50  # sent first at the same rate, not measured
LATENCY_HZ = 100.0
LATENCY_SIZES = (200, 500)
EPISODE_TIMEOUT_S = 180.0  # a run of 2 or 4 robots; 8 robots get three times as long (25 processes on the machine)
REPO = Path(__file__).resolve().parents[1]
CODE_PARTS = ("src", "sim", "harness", "ros2_ws/src/coteam_ros", "testkit")  # what a checkout's PYTHONPATH names
TRACER = Path(__file__).resolve().parent / "steptrace"  # its sitecustomize records a node's callbacks
POLL_S = 0.02
CLK_TCK = os.sysconf("SC_CLK_TCK")
NODE_ORDER = ("sim_bridge", "coordinator", "perception", "planner", "relay", "executor")  # a node kind unknown: last


# ------------------------------------------------------------------------------------------------------------------
# Processes: start, watch, reap with rusage


@dataclass
class Reaped:
    code: int
    cpu_s: float
    at: float  # time.monotonic() when reaped


def _reap(proc: subprocess.Popen, block_s: float | None = None) -> Reaped | None:
    """``os.wait4`` the child (never Popen.wait/poll, which would drop its rusage); None while it runs."""
    deadline = None if block_s is None else time.monotonic() + block_s
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (Popen.send_signal polls first): its CPU time is lost
            return Reaped(proc.returncode if proc.returncode is not None else 0, 0.0, time.monotonic())
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return Reaped(proc.returncode, usage.ru_utime + usage.ru_stime, time.monotonic())
        if deadline is None or time.monotonic() >= deadline:
            return None
        time.sleep(POLL_S)


def _stop(proc: subprocess.Popen) -> Reaped:
    """SIGINT, then SIGTERM, then SIGKILL (to this child only), reaping it with its rusage."""
    for sig, grace in ((signal.SIGINT, 10.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        if (reaped := _reap(proc, grace)) is not None:
            return reaped
    raise RuntimeError(f"pid {proc.pid} did not exit")


def _proc_sample(pid: int) -> tuple[float, float] | None:
    """(CPU seconds, peak RSS MB) of a running child from /proc; None once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3, utime 14, stime 15
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
    hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return cpu, hwm / 1024


@contextlib.contextmanager
def ros_isolation(domain: int, tmp: Path) -> Iterator[None]:
    """This process and its children on a private domain, localhost discovery, logs under ``tmp``."""
    keys = {
        "ROS_DOMAIN_ID": str(domain),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_HOME": str(tmp / "ros_home"),
        "ROS_LOG_DIR": str(tmp / "ros_log"),
    }
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ------------------------------------------------------------------------------------------------------------------
# 1. Team-message latency


def _latency_publisher(count: int, size: int, hz: float, keystore: str | None) -> None:
    import rclpy
    from builtin_interfaces.msg import Time
    from coteam_interfaces.msg import TeamMessage
    from std_msgs.msg import Empty, Header

    from coteam_ros.qos import LATCHED, TEAM_MESSAGES

    signer = None
    if keystore:
        from coteam.home.signing import Signer, load_private_key

        signer = Signer("alice", load_private_key(Path(keystore) / "alice.key"))
    rclpy.init()
    node = rclpy.create_node("latency_pub")
    pub = node.create_publisher(TeamMessage, "/team/messages", TEAM_MESSAGES)
    ready = []  # the subscriber says so once it has matched this writer (discovery is not symmetric)
    node.create_subscription(Empty, "/latency/ready", ready.append, LATCHED)
    deadline = time.monotonic() + 60
    while not (ready and pub.get_subscription_count() >= 1) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.01)
    text = ("x" * size)[:size]
    period = 1.0 / hz
    start = time.monotonic()
    for i in range(-LATENCY_WARMUP, count):
        next_at = start + (i + LATENCY_WARMUP) * period
        time.sleep(max(0.0, next_at - time.monotonic()))
        ns = time.time_ns()
        header = Header(stamp=Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000))
        message = TeamMessage(header=header, sender="alice", receiver="", text=text, step=i)
        if signer is not None:
            envelope = signer.sign("", i, text, "")
            message.seq, message.signature = envelope.seq, envelope.signature
        pub.publish(message)
    with contextlib.suppress(KeyboardInterrupt):  # stay up (reliable delivery) until the benchmark stops us
        time.sleep(60)
    node.destroy_node()
    rclpy.try_shutdown()


def _latency_subscriber(count: int, keystore: str | None) -> None:
    import rclpy
    from coteam_interfaces.msg import TeamMessage
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Empty

    from coteam_ros.qos import LATCHED, TEAM_MESSAGES

    verifier = None
    if keystore:
        from coteam.home.signing import Envelope, Verifier, load_public_keys

        verifier = Verifier(load_public_keys(Path(keystore) / "team.pub.json"))
    rclpy.init()
    node = rclpy.create_node("latency_sub")
    latencies: dict[int, float] = {}
    received = [0]

    def on_message(msg: TeamMessage) -> None:
        if verifier is not None:
            envelope = Envelope(msg.seq, msg.signature)
            if verifier.check(msg.sender, msg.receiver, msg.step, msg.text, msg.payload_json, envelope) is not None:
                return
        now = time.time_ns()
        received[0] += 1
        if msg.step >= 0:
            sent = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            latencies[msg.step] = (now - sent) / 1e6

    subscription = node.create_subscription(TeamMessage, "/team/messages", on_message, TEAM_MESSAGES)
    ready = node.create_publisher(Empty, "/latency/ready", LATCHED)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    while subscription.get_publisher_count() < 1:
        executor.spin_once(timeout_sec=0.01)
    ready.publish(Empty())
    deadline = time.monotonic() + 60 + count / LATENCY_HZ
    while len(latencies) < count and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    print(json.dumps({"received": received[0], "latencies_ms": [latencies[k] for k in sorted(latencies)]}))
    node.destroy_node()
    rclpy.try_shutdown()


def message_latency(
    size: int,
    keystore: Path | None,
    count: int = LATENCY_COUNT,
    hz: float = LATENCY_HZ,
    lan: Any = None,
    env: dict[str, str] | None = None,
) -> dict:
    """Publisher and subscriber processes; percentiles of receive time - header.stamp over the messages that
    arrived of ``count``, signed with the keys of ``keystore`` (None: unsigned). With ``lan`` (a
    :class:`coteam_testkit.netlab.VirtualLan` with hosts ``alice`` and ``bob``) the publisher runs on alice, the
    subscriber on bob; ``env`` is the processes' environment (default: this process's)."""
    me = [sys.executable, str(Path(__file__).resolve())]
    if keystore is not None:
        me += ["--keystore", str(keystore)]
    sub_argv = [*me, "--latency-role", "sub", "--count", str(count)]
    pub_argv = [*me, "--latency-role", "pub", "--count", str(count), "--size", str(size), "--hz", str(hz)]
    if lan is not None:
        sub_argv, pub_argv = lan.command("bob", sub_argv), lan.command("alice", pub_argv)
    sub = subprocess.Popen(sub_argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    pub = subprocess.Popen(pub_argv, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    try:
        out, _ = sub.communicate(timeout=90 + count / hz)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
        _stop(pub)
    data = json.loads(out.decode().strip().splitlines()[-1])
    lat = sorted(data["latencies_ms"])
    if not lat:
        raise RuntimeError(f"none of {count} team messages arrived")
    return {
        "size": size,
        "signed": keystore is not None,
        "count": len(lat),
        "hz": hz,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, round(0.99 * len(lat)) - 1)],
        "max": lat[-1],
        "mean": statistics.fmean(lat),
    }


# ------------------------------------------------------------------------------------------------------------------
# 2-4. Lockstep episodes over ROS and in-process


@dataclass
class NodeUsage:
    label: str  # planner@/alice
    kind: str  # planner
    robot: str  # alice ("" for the bridge)
    cpu_s: float  # whole process life (wait4)
    startup_cpu_s: float  # until the team's first step (/proc)
    episode_cpu_s: float  # from the first step to the bridge's exit (/proc; the bridge: wait4 - startup)
    peak_mb: float  # /proc VmHWM, sampled while the node runs


@dataclass
class RosRun:
    suite: str
    episode: int
    robots: int
    method: str
    result: dict  # results.json's episode
    sim_steps: int  # simulator steps (trace); C-WAH: equals result steps
    startup_s: float  # spawn -> first step
    episode_s: float  # first step -> last step (seen on /clock)
    clock_msgs: int
    process_wall_s: float  # spawn -> bridge exit
    nodes: list[NodeUsage] = field(default_factory=list)

    @property
    def cpu_s(self) -> float:
        return sum(n.cpu_s for n in self.nodes)

    @property
    def episode_cpu_ms_per_step(self) -> float:
        return 1000 * sum(n.episode_cpu_s for n in self.nodes) / self.sim_steps

    def robot_usage(self, robot: str) -> tuple[float, float]:
        mine = [n for n in self.nodes if n.robot == robot]
        return sum(n.cpu_s for n in mine), sum(n.peak_mb for n in mine)


_IN_PROCESS = (
    "import json, sys, time\n"
    "from coteam_harness.runner import run_episode\n"
    "from coteam_sim.suites import get_suite\n"
    "suite, index, n, trace, method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]\n"
    "r = run_episode(get_suite(suite).episodes()[index].build(), method, seed=0, n_agents=n, trace_path=trace)\n"
    "steps = len(json.load(open(trace))['steps'])\n"
    "hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
    "print(json.dumps({'result': r.__dict__, 'sim_steps': steps, 'hwm_mb': hwm / 1024}, default=str))\n"
)


def in_process_episode(suite: str, episode: int, robots: int, tmp: Path, method: str) -> dict:
    """``run_episode`` in a fresh process (cold, like the ROS nodes): its result, process wall, CPU and peak RSS."""
    trace = tmp / f"in-process-{suite}-{episode}-{robots}-{method}.json"
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _IN_PROCESS, suite, str(episode), str(robots), str(trace), method],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    reaped = _reap(proc, block_s=EPISODE_TIMEOUT_S)
    if reaped is None or reaped.code != 0:
        raise RuntimeError(f"in-process run of {suite}/{episode} failed")
    data = json.loads(out.decode().strip().splitlines()[-1])
    return {**data, "process_wall_s": reaped.at - start, "cpu_s": reaped.cpu_s, "peak_mb": data["hwm_mb"]}


@dataclass
class PlannedChild:
    """One process of a launch plan, as the checkout that runs it planned it."""

    label: str
    argv: list[str]
    bridge: bool
    namespace: str
    executable: str


_PLAN = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from coteam_ros.launcher import child_env, plan\n"
    "from coteam_ros.team_config import load_config\n"
    "config, work, results, domain = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
    "children = plan(load_config(config), work, results_path=Path(results))\n"
    "print(json.dumps({'env': child_env(domain), 'children': [{'label': c.label, 'argv': c.argv, 'bridge': c.bridge,"
    " 'namespace': c.spec.namespace if c.spec else '', 'executable': c.spec.executable if c.spec else ''}"
    " for c in children]}))\n"
)


def code_path(root: Path) -> str:
    """``PYTHONPATH`` that runs the code of the checkout at ``root`` (the venv's editable installs point elsewhere)."""
    return os.pathsep.join(str(root / part) for part in CODE_PARTS)


def checkout(commit: str, into: Path) -> Path:
    """The files of ``commit`` of this repository in ``into`` (``git archive``: no worktree left behind)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def planned(config: Path, work: Path, results: Path, code: Path) -> tuple[list[PlannedChild], dict[str, str]]:
    """What ``coteam launch`` of the checkout at ``code`` starts (``plan`` + ``child_env``), asked of that code."""
    env = {**os.environ, "PYTHONPATH": code_path(code)}
    argv = [sys.executable, "-c", _PLAN, str(config), str(work), str(results), os.environ["ROS_DOMAIN_ID"]]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return [PlannedChild(**c) for c in data["children"]], data["env"]


def ros_episode(
    suite: str,
    episode: int,
    robots: int,
    tmp: Path,
    context: object,
    method: str,
    code: Path | None = None,
    trace: Path | None = None,
    timeout_s: float = EPISODE_TIMEOUT_S,
    composed: bool = False,
) -> RosRun:
    """Start the lockstep team as ``coteam launch`` of the checkout at ``code`` (default: this one) does, watch
    ``/clock`` from this process, reap every node with ``os.wait4``. ``trace``: every node records its callbacks and
    publications there (``bench/steptrace``, read by :mod:`lockstep_trace`). ``composed``: each robot's nodes in one
    process (the team file's ``composed: true``)."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock

    work = Path(tempfile.mkdtemp(prefix=f"ros-{suite}-{episode}-{robots}-{method}-", dir=tmp))
    out = work / "out"
    out.mkdir(parents=True)
    config = work / "team.yaml"
    names = ", ".join(f"{{name: {r}}}" for r in ROBOTS[:robots])
    config.write_text(
        f"world: {{suite: {suite}, episode: {episode}, seed: 0, mode: lockstep}}\n"
        f"team: {{method: {method}, backend: symbolic}}\nnavigation: sim\nrobots: [{names}]\n"
        + ("composed: true\n" if composed else "")
    )
    children, env = planned(config, work, out / "results.json", code or REPO)
    if trace is not None:
        env.update(PYTHONPATH=os.pathsep.join([str(TRACER), env["PYTHONPATH"]]), COTEAM_STEP_TRACE=str(trace))

    node = Node("ros_team_bench", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    clock_times: list[float] = []

    def on_clock(msg: Clock) -> None:
        if msg.clock.sec or msg.clock.nanosec:  # step 0's clock is published before anyone has acted
            clock_times.append(time.monotonic())

    clock = node.create_subscription(
        Clock, "/clock", on_clock, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    )

    procs: dict[str, subprocess.Popen] = {}
    logs = []
    start = time.monotonic()
    # The bridge first: /clock is volatile, so this node must have found it before the robots start the episode (a
    # short episode was half over before discovery, and its time was measured over the last few steps).
    for child in sorted(children, key=lambda c: not c.bridge):
        log = (work / f"{child.label.replace('@/', '-').strip('-')}.log").open("wb")
        logs.append(log)
        procs[child.label] = subprocess.Popen(
            child.argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
        while (
            child.bridge
            and clock.get_publisher_count() == 0
            and procs[child.label].poll() is None
            and time.monotonic() < start + timeout_s
        ):
            executor.spin_once(timeout_sec=POLL_S)
    bridge_label = next(c.label for c in children if c.bridge)
    reaped: dict[str, Reaped] = {}
    startup_cpu: dict[str, float] = {}
    # Peak RSS from /proc VmHWM (the node's own memory after exec); ru_maxrss would also count the memory of this
    # benchmark process, which the child shares between fork and exec.
    peak: dict[str, float] = {}
    try:
        deadline = start + timeout_s
        while bridge_label not in reaped:
            executor.spin_once(timeout_sec=POLL_S)
            if clock_times and not startup_cpu:
                for label, proc in procs.items():
                    sample = _proc_sample(proc.pid)
                    startup_cpu[label] = sample[0] if sample else 0.0
            for label, proc in procs.items():
                if label not in reaped and (sample := _proc_sample(proc.pid)) is not None:
                    peak[label] = max(peak.get(label, 0.0), sample[1])
                if label not in reaped and (r := _reap(proc)) is not None:
                    reaped[label] = r
            if time.monotonic() > deadline:
                raise NoEnd(f"no end within {timeout_s:g} s ({len(clock_times)} steps)")
        end = reaped[bridge_label].at
        end_samples = {label: s for label, proc in procs.items() if (s := _proc_sample(proc.pid)) is not None}
        end_cpu = {label: s[0] for label, s in end_samples.items()}
        for label, (_, hwm) in end_samples.items():
            peak[label] = max(peak.get(label, 0.0), hwm)
        for _ in range(10):  # the last /clock messages in flight
            executor.spin_once(timeout_sec=0.01)
    finally:
        for label, proc in procs.items():
            if label not in reaped:
                reaped[label] = _stop(proc)
        for log in logs:
            log.close()
        executor.remove_node(node)
        node.destroy_node()
        executor.shutdown()
    if reaped[bridge_label].code != 0:
        raise RuntimeError(f"sim_bridge exited with {reaped[bridge_label].code}; logs in {work}")
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    sim_steps = len(json.loads((out / "trace.json").read_text())["steps"])
    if len(clock_times) < sim_steps:
        raise RuntimeError(f"{suite}/{episode}: this benchmark heard {len(clock_times)} of {sim_steps} steps on /clock")
    run = RosRun(
        suite,
        episode,
        robots,
        method,
        result,
        sim_steps,
        startup_s=clock_times[0] - start,
        episode_s=clock_times[-1] - clock_times[0],
        clock_msgs=len(clock_times),
        process_wall_s=end - start,
    )
    for child in children:
        r = reaped[child.label]
        robot = child.namespace.strip("/")  # "" for the bridge and a coordinator
        startup = startup_cpu.get(child.label, 0.0)
        episode_cpu = end_cpu.get(child.label, r.cpu_s) - startup
        peak_mb = peak.get(child.label, 0.0)
        run.nodes.append(NodeUsage(child.label, child.executable, robot, r.cpu_s, startup, episode_cpu, peak_mb))
    return run


class NoEnd(RuntimeError):
    """A lockstep episode that did not end within its time."""


# ------------------------------------------------------------------------------------------------------------------
# The markdown section


def ros_version() -> str:
    """Where ROS 2 comes from: the PyPI wheels' rclpy version, or a sourced installation's distribution."""
    try:
        return f"ROS 2 PyPI wheels (ros-rclpy {importlib.metadata.version('ros-rclpy')})"
    except importlib.metadata.PackageNotFoundError:
        return f"ROS 2 {os.environ.get('ROS_DISTRO', '(unknown distribution)')}"


def _decide_s(result: dict) -> float:
    return result["decision_ms_mean"] * result["decisions"] / 1000


def _same(run: RosRun, ref: dict) -> str:
    keys = ("success", "steps", "transport_rate", "messages", "decisions")
    same = all(run.result[k] == ref["result"][k] for k in keys) and run.sim_steps == ref["sim_steps"]
    return "yes" if same else "**no**"


def ros_section(command: str, domain: int = DEFAULT_DOMAIN, log: bool = True) -> str:
    """Run the ROS 2 team benchmarks and return their markdown section (starting with :data:`TITLE`)."""
    import rclpy

    def say(*parts: object) -> None:
        if log:
            print(*parts, flush=True)

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ros-team-bench-") as tmp_name, ros_isolation(domain, Path(tmp_name)):
        tmp = Path(tmp_name)
        from coteam.home.signing import init_keystore

        init_keystore(tmp / "keys", ["alice"])
        latency = []
        for size in LATENCY_SIZES:
            for keystore in (None, tmp / "keys"):
                latency.append(message_latency(size, keystore))
                say("latency", latency[-1])
        code = {"before": checkout(BEFORE, tmp / "before"), "after": REPO, "composed": REPO}
        context = rclpy.Context()
        rclpy.init(context=context)
        rmw = rclpy.get_rmw_implementation_identifier()
        runs: dict[tuple[str, int, str, str], RosRun | str] = {}  # (suite, robots, method, variant): run, or why none
        refs: dict[tuple[str, int, str], dict] = {}
        traces: dict[tuple[str, str], Breakdown] = {}  # (method, variant)
        try:
            row = 0
            for suite, episode in EPISODES:
                for robots, method in TEAMS:
                    refs[suite, robots, method] = ref = in_process_episode(suite, episode, robots, tmp, method)
                    say(f"{suite}/{episode} x{robots} {method}: in-process {ref['result']['wall_s']:.2f} s")
                    row += 1
                    for variant in VARIANTS[row % 3 :] + VARIANTS[: row % 3]:  # interleaved: each first in turn
                        timeout = EPISODE_TIMEOUT_S * (3 if robots > 4 else 1)
                        try:
                            run = ros_episode(
                                suite,
                                episode,
                                robots,
                                tmp,
                                context,
                                method,
                                code[variant],
                                None,
                                timeout,
                                composed=variant == "composed",
                            )
                        except NoEnd as exc:
                            runs[suite, robots, method, variant] = str(exc)
                            say(f"  {variant}: {exc}")
                            continue
                        runs[suite, robots, method, variant] = run
                        say(f"  {variant}: ROS episode {run.episode_s:.2f} s, {run.sim_steps} steps, {_same(run, ref)}")
            suite, episode, robots = TRACED
            for method in ("pce", "oracle"):
                for variant in ("before", "after"):
                    folder = tmp / f"trace-{method}-{variant}"
                    ros_episode(suite, episode, robots, tmp, context, method, code[variant], folder)
                    traces[method, variant] = breakdown(folder)
                    say(f"traced {method} {variant}: {traces[method, variant]}")
        finally:
            rclpy.try_shutdown(context=context)
    after = {key[:3]: run for key, run in runs.items() if key[3] == "after" and isinstance(run, RosRun)}
    intro = (
        f"Produced by `{command}` on {machine()}, {ros_version()} with `{rmw}`, a process per node (per robot in the "
        f"*composed* runs) on loopback DDS (ROS domain {domain}, `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`). "
        "Symbolic methods, lockstep mode, seed 0. Numbers from one run on a noisy shared machine (1-minute load "
        f"average {load_before:.1f} before the run; 13 busy processes with 4 robots, 25 with 8, load it further): "
        "compare ratios, not absolute times. *oracle*: the centralised oracle, whose `coordinator` node decides for "
        "every robot (each robot runs a relay, docs/ros2.md)."
    )
    lines = [
        TITLE,
        "",
        intro,
        "",
        *_latency_lines(latency),
        *_lockstep_lines(runs, refs),
        *_breakdown_lines(traces, refs),
        *_whole_run_lines(after, refs),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def _latency_lines(latency: list[dict]) -> list[str]:
    return [
        "### Team-message latency",
        "",
        "One publisher and one subscriber process, `TeamMessage` on `/team/messages` with the planner's QoS "
        f"(reliable, transient-local, depth 100), {LATENCY_COUNT} messages at {LATENCY_HZ:g} Hz after {LATENCY_WARMUP} "
        "unmeasured ones; latency = receive time in the subscriber's callback (rclpy `SingleThreadedExecutor`) - "
        "`header.stamp` set just before `publish`, same clock. *signed*: as the planners do it (`coteam.home.signing`, "
        "Ed25519): the publisher signs between the stamp and `publish`, the subscriber verifies (signature and "
        "sequence number) before it takes the receive time, so the figure includes both.",
        "",
        "| text chars | signed | messages | p50 ms | p99 ms | max ms | mean ms |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {x['size']} | {'yes' if x['signed'] else 'no'} | {x['count']} | {x['p50']:.2f} | {x['p99']:.2f} "
            f"| {x['max']:.2f} | {x['mean']:.2f} |"
            for x in latency
        ],
        "",
    ]


def _ratio(run: RosRun | str | None, wall: float) -> float | None:
    return run.episode_s / wall if isinstance(run, RosRun) else None


def _both(before: RosRun | str | None, after: RosRun | str | None) -> bool:
    return isinstance(before, RosRun) and isinstance(after, RosRun)


def _time_cells(run: RosRun | str | None, wall: float) -> str:
    """ROS s and × in-process, or why there is no run."""
    return f"{run.episode_s:.2f} | {run.episode_s / wall:.1f}" if isinstance(run, RosRun) else f"{run or '–'} | –"


def _same_cell(run: RosRun | str | None, ref: dict) -> str:
    return _same(run, ref) if isinstance(run, RosRun) else "–"


def _cpu_cell(run: RosRun | str | None) -> str:
    return f"{run.episode_cpu_ms_per_step:.1f}" if isinstance(run, RosRun) else "–"


def _step_cell(run: RosRun | str | None) -> str:
    return f"{1000 * run.episode_s / max(1, run.clock_msgs - 1):.1f}" if isinstance(run, RosRun) else "–"


def _lockstep_lines(runs: dict, refs: dict) -> list[str]:
    from coteam_ros.stand_in import RESULTS_GRACE_S

    lines = [
        "### Lockstep episodes against the in-process runner, before and after",
        "",
        "In-process: `run_episode(scene, method, seed=0, n_agents=N)` in a fresh process (its `wall_s`). ROS: the "
        "processes `coteam launch` starts (`plan()` + `child_env()`): `sim_bridge`, per robot perception, planner (a "
        "relay in a centralised team) and executor, and a centralised team's coordinator. *before*: the nodes of "
        f"commit {BEFORE} (its files by `git archive`, its own `plan()`, `PYTHONPATH` pointing there), *after*: this "
        "checkout's, a process per node; *composed*: this checkout's with `composed: true`, a process per robot "
        "(docs/ros2.md). Each row's in-process run and its three ROS runs go one after the other (each variant first "
        "in turn), sharing the machine's state. *ROS s*: first to last simulator step, timed on `/clock` from the "
        "benchmark process (startup excluded). *same result*: steps, success, transport rate, messages, decisions and "
        "the number of simulator steps equal the in-process run's. *ms/step*: per simulator step (TDW-MAT's steps are "
        "many frames). *CPU ms/step*: CPU time of all nodes between the first step and the bridge's exit per "
        f"simulator step (it includes the bridge's last {RESULTS_GRACE_S:g} s and its writing of results, which weigh "
        "on the short C-WAH episodes).",
        "",
        "| episode | method | robots | sim steps | in-process s | before: ROS s | × | after: ROS s | × | composed: ROS "
        "s | × | after / before | same result before / after / composed | ms/step in-process | ms/step after | CPU "
        "ms/step before | CPU ms/step after | CPU ms/step composed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (suite, robots, method), ref in refs.items():
        wall = ref["result"]["wall_s"]
        before, after, composed = (runs.get((suite, robots, method, v)) for v in VARIANTS)
        speed = f"{after.episode_s / before.episode_s:.2f}" if _both(before, after) else "–"  # type: ignore[union-attr]
        lines.append(
            f"| {suite}/0 | {method} | {robots} | {ref['sim_steps']} | {wall:.2f} | {_time_cells(before, wall)} "
            f"| {_time_cells(after, wall)} | {_time_cells(composed, wall)} | {speed} | {_same_cell(before, ref)} / "
            f"{_same_cell(after, ref)} / {_same_cell(composed, ref)} | {1000 * wall / ref['sim_steps']:.1f} "
            f"| {_step_cell(after)} | {_cpu_cell(before)} | {_cpu_cell(after)} | {_cpu_cell(composed)} |"
        )
    small = [key for key in refs if key[1] <= 4]

    def within(variant: str) -> list[tuple[str, int, str]]:
        ratios = {k: _ratio(runs.get((*k, variant)), refs[k]["result"]["wall_s"]) for k in small}
        return [k for k, r in ratios.items() if r is not None and r <= TARGET]

    def paired(first: str, second: str) -> list[float]:
        """second's ROS time over first's, over the rows where both ran"""
        both = [(runs.get((*k, first)), runs.get((*k, second))) for k in refs]
        return sorted(b.episode_s / a.episode_s for a, b in both if _both(a, b))  # type: ignore[union-attr]

    lines += [
        "",
        f"Within {TARGET:g}× the in-process time with 2 and 4 robots (of {len(small)} runs): "
        + ", ".join(f"{v} {len(within(v))}" for v in VARIANTS)
        + "; "
        + "; ".join(
            f"not {v}: {', '.join(f'{k[0]} {k[2]} {k[1]}' for k in small if k not in within(v)) or 'none'}"
            for v in VARIANTS[1:]
        )
        + ".",
    ]
    for first, second in (("before", "after"), ("after", "composed")):
        if ratios := paired(first, second):
            lines.append(
                f"{second.capitalize()} / {first} over the {len(ratios)} rows both ran: median "
                f"{statistics.median(ratios):.2f}, from {ratios[0]:.2f} to {ratios[-1]:.2f}."
            )
    for k in refs:
        if k[1] > 4:
            said = [
                f"{v} {r.episode_s:.1f} s ({r.episode_s / refs[k]['result']['wall_s']:.1f}×)"
                if isinstance(r := runs.get((*k, v)), RosRun)
                else f"{v}: {r}"
                for v in VARIANTS
            ]
            lines.append(f"{k[0]} with {k[1]} robots ({k[2]}): {', '.join(said)}.")
    return [*lines, ""]


PART_NAMES = {
    "bridge": "bridge: its step callback until it sent what the path goes on from",
    "nodes": "robots' nodes (and coordinator): in their callbacks until they sent the next hop",
    "delivery": "delivery: publication to the receiving callback (DDS, waking the process, rclpy's wait set)",
    "queued": "queued: the receiver finishing other callbacks first",
    "other": "other: an action's goal answer or result, a timer (not followed)",
}


def _breakdown_lines(traces: dict[tuple[str, str], Breakdown], refs: dict | None = None) -> list[str]:
    suite, episode, robots = TRACED
    cols = [(m, v) for m in ("pce", "oracle") for v in ("before", "after") if (m, v) in traces]
    head = "| " + " | ".join(f"{m} {v}" for m, v in cols) + " |"
    lines = [
        "### Where a lockstep step's time goes, before and after",
        "",
        f"One more run each of {suite}/{episode} with {robots} robots, pce and oracle, before and after, every node "
        "traced from outside its code (`bench/steptrace/sitecustomize.py` patches rclpy: each callback its executor "
        "ran, each publication, on the machine's one monotonic clock; the tracing itself slows the runs). A step runs "
        "from the bridge's callback that steps the simulator to the next one, which the last robot's `step_tick` "
        "started; `bench/lockstep_trace.py` follows that message back, hop by hop, to the step before (the step's "
        "critical path) and splits its time, ms per step:",
        "",
        "| part of a step | " + head[2:],
        "|---|" + "---|" * len(cols),
        "| step (traced run) | " + " | ".join(f"{traces[c].step_ms:.2f}" for c in cols) + " |",
        *[f"| {PART_NAMES[p]} | " + " | ".join(f"{traces[c].parts[p]:.2f}" for c in cols) + " |" for p in PARTS],
        "| messages on the path per step | " + " | ".join(f"{traces[c].hops:.1f}" for c in cols) + " |",
        "",
        "CPU per step of each kind of node (robots' nodes summed), ms: in its callbacks / in rclpy's executor between "
        "them (building the wait set at every wake):",
        "",
        "| node | " + head[2:],
        "|---|" + "---|" * len(cols),
    ]
    for kind in NODE_ORDER:
        if any(kind in traces[c].cpu for c in cols):
            cells = [
                f"{traces[c].cpu[kind][0]:.2f} / {traces[c].cpu[kind][1]:.2f}" if kind in traces[c].cpu else "–"
                for c in cols
            ]
            lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    totals = {c: tuple(sum(v[i] for v in traces[c].cpu.values()) for i in (0, 1)) for c in cols}
    lines += ["| all | " + " | ".join(f"{totals[c][0]:.2f} / {totals[c][1]:.2f}" for c in cols) + " |", ""]
    for method in ("pce", "oracle"):
        if (method, "before") not in traces or (method, "after") not in traces:
            continue
        b, a = traces[method, "before"], traces[method, "after"]
        (cb, eb), (ca, ea) = totals[method, "before"], totals[method, "after"]
        lines.append(
            f"{method}: a traced step {b.step_ms:.1f} → {a.step_ms:.1f} ms ({a.step_ms / b.step_ms:.2f}); the bridge's "
            f"part {b.parts['bridge']:.1f} → {a.parts['bridge']:.1f} ms, {b.hops:.1f} → {a.hops:.1f} messages on the "
            f"path; CPU of all nodes {cb + eb:.1f} → {ca + ea:.1f} ms a step, of it rclpy's executor {eb:.1f} → "
            f"{ea:.1f}."
        )
        ref = (refs or {}).get((suite, robots, method))
        if ref is not None:
            target = TARGET * 1000 * ref["result"]["wall_s"] / ref["sim_steps"]
            moving = a.parts["delivery"] + a.parts["queued"]
            lines[-1] += (
                f" After, the messages alone (delivery and queued) take {moving:.1f} ms of the step, "
                f"{'more' if moving > target else 'less'} than {TARGET:g}× the in-process step ({target:.1f} ms)."
            )
    return [*lines, ""]


def _kind_order(kind: str) -> int:
    return NODE_ORDER.index(kind) if kind in NODE_ORDER else len(NODE_ORDER)


def _whole_run_lines(runs: dict[tuple[str, int, str], RosRun], refs: dict) -> list[str]:
    """The after runs as whole processes: start-up, CPU and memory."""
    lines = [
        "### Whole runs (after)",
        "",
        "*ROS startup s* from spawning the bridge to the first step (the robots' nodes start once this "
        "benchmark hears the bridge's `/clock`; interpreters, imports, loading the episode, DDS discovery); "
        "*bridge s* the bridge's `wall_s` (from its own start, so including the wait for "
        "the other nodes); *process s* from spawning to the exit of the process (ROS: of the bridge, after it wrote "
        "the results); CPU s: user + system time of every process of the run (`os.wait4`), start-up included.",
        "",
        "| episode | method | robots | ROS startup s | bridge s | ROS process s | in-process process s | × | CPU s "
        "ROS | CPU s in-process | × |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, run in runs.items():
        ref = refs[key]
        lines.append(
            f"| {run.suite}/{run.episode} | {run.method} | {run.robots} | {run.startup_s:.1f} | "
            f"{run.result['wall_s']:.2f} | "
            f"{run.process_wall_s:.1f} | {ref['process_wall_s']:.1f} | "
            f"{run.process_wall_s / ref['process_wall_s']:.1f} | {run.cpu_s:.1f} | {ref['cpu_s']:.1f} | "
            f"{run.cpu_s / ref['cpu_s']:.1f} |"
        )
    lines += [
        "",
        "### CPU and memory per node (after, 2 robots)",
        "",
        "CPU seconds over the process's life (`os.wait4`: `ru_utime + ru_stime`); of them, before the team's first "
        "step (*startup*: interpreter, imports, loading the episode, DDS discovery) and from the first step to the "
        "bridge's exit (*episode*, also per simulator step), from `/proc/<pid>/stat`; the rest is shutting down. "
        "Peak RSS: `VmHWM` of `/proc/<pid>/status`, sampled while the node runs. "
        "A robot is its perception, planner and executor (peak RSS summed over the three "
        "processes).",
        "",
        "| episode | method | node | CPU s | startup | episode | episode ms/step | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs.values():
        if run.robots != 2:
            continue
        for n in sorted(run.nodes, key=lambda n: (n.robot, _kind_order(n.kind))):
            if run.method != "pce" and n.kind != "coordinator":
                continue  # the centralised team's other nodes do what pce's do; its coordinator is what it adds
            lines.append(
                f"| {run.suite}/{run.episode} | {run.method} | {n.label} | {n.cpu_s:.2f} | {n.startup_cpu_s:.2f} | "
                f"{n.episode_cpu_s:.2f} | {1000 * n.episode_cpu_s / run.sim_steps:.1f} | {n.peak_mb:.0f} |"
            )
    lines += [
        "",
        "| episode | method | robots | per robot: CPU s | per robot: peak RSS MB | bridge CPU s | bridge MB | "
        "in-process CPU s | in-process MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, run in runs.items():
        ref = refs[key]
        per = [run.robot_usage(r) for r in ROBOTS[: run.robots]]
        bridge = next(n for n in run.nodes if n.kind == "sim_bridge")
        lines.append(
            f"| {run.suite}/{run.episode} | {run.method} | {run.robots} | {' / '.join(f'{c:.2f}' for c, _ in per)} | "
            f"{' / '.join(f'{m:.0f}' for _, m in per)} | {bridge.cpu_s:.2f} | {bridge.peak_mb:.0f} | "
            f"{ref['cpu_s']:.2f} | {ref['peak_mb']:.0f} |"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    parser.add_argument("--domain-id", type=int, default=DEFAULT_DOMAIN)
    parser.add_argument("--latency-role", choices=("pub", "sub"), help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=LATENCY_COUNT, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--hz", type=float, default=LATENCY_HZ, help=argparse.SUPPRESS)
    parser.add_argument("--keystore", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.latency_role == "pub":
        _latency_publisher(args.count, args.size, args.hz, args.keystore)
        return 0
    if args.latency_role == "sub":
        _latency_subscriber(args.count, args.keystore)
        return 0
    command = "python bench/ros_team.py" + (f" --out {args.out}" if args.out else "")
    if args.domain_id != DEFAULT_DOMAIN:
        command += f" --domain-id {args.domain_id}"
    emit_section(args.out, ros_section(command, args.domain_id), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
