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
   process) on the same episodes;
4. the same episodes with 2 and 4 robots, and C-WAH's with 8.

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

from sections import emit_section, machine

TITLE = "## ROS 2 team stack"
DEFAULT_DOMAIN = 77
EPISODES = (("cwah-test", 0), ("tdwmat-test", 0))
# (robots, method) per episode: symbolic PCE (a planner per robot), and the oracle (centralised: one coordinator)
TEAMS = ((2, "pce"), (4, "pce"), (2, "oracle"))
# eight robots (25 processes) on the short C-WAH episode only: TDW-MAT's thousands of frames would take many minutes
EIGHT = {"cwah-test": ((8, "pce"),)}
ROBOTS = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
LATENCY_COUNT = 1000
LATENCY_WARMUP = 50  # sent first at the same rate, not measured
LATENCY_HZ = 100.0
LATENCY_SIZES = (200, 500)
EPISODE_TIMEOUT_S = 180.0
POLL_S = 0.02
CLK_TCK = os.sysconf("SC_CLK_TCK")
NODE_ORDER = ("sim_bridge", "coordinator", "perception", "planner", "executor")


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


def ros_episode(suite: str, episode: int, robots: int, tmp: Path, context: object, method: str) -> RosRun:
    """Start the lockstep team as ``coteam launch`` does (``plan`` + ``child_env``), watch ``/clock`` from this
    process, reap every node with ``os.wait4``."""
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock

    from coteam_ros.launcher import child_env, plan
    from coteam_ros.team_config import load_config

    work = tmp / f"ros-{suite}-{episode}-{robots}-{method}"
    out = work / "out"
    out.mkdir(parents=True)
    config = work / "team.yaml"
    names = ", ".join(f"{{name: {r}}}" for r in ROBOTS[:robots])
    config.write_text(
        f"world: {{suite: {suite}, episode: {episode}, seed: 0, mode: lockstep}}\n"
        f"team: {{method: {method}, backend: symbolic}}\nnavigation: sim\nrobots: [{names}]\n"
    )
    children = plan(load_config(config), work, results_path=out / "results.json")
    env = child_env(int(os.environ["ROS_DOMAIN_ID"]))

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
            and time.monotonic() < start + EPISODE_TIMEOUT_S
        ):
            executor.spin_once(timeout_sec=POLL_S)
    bridge_label = next(c.label for c in children if c.bridge)
    reaped: dict[str, Reaped] = {}
    startup_cpu: dict[str, float] = {}
    # Peak RSS from /proc VmHWM (the node's own memory after exec); ru_maxrss would also count the memory of this
    # benchmark process, which the child shares between fork and exec.
    peak: dict[str, float] = {}
    try:
        deadline = start + EPISODE_TIMEOUT_S
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
                raise RuntimeError(f"{suite}/{episode} with {robots} robots: no end after {EPISODE_TIMEOUT_S:g} s")
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
        assert child.spec is not None
        r = reaped[child.label]
        robot = child.spec.namespace.strip("/")  # "" for the bridge and a coordinator
        startup = startup_cpu.get(child.label, 0.0)
        episode_cpu = end_cpu.get(child.label, r.cpu_s) - startup
        peak_mb = peak.get(child.label, 0.0)
        run.nodes.append(NodeUsage(child.label, child.spec.executable, robot, r.cpu_s, startup, episode_cpu, peak_mb))
    return run


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

    from coteam_ros.nodes.sim_bridge import RESULTS_GRACE_S

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
        context = rclpy.Context()
        rclpy.init(context=context)
        rmw = rclpy.get_rmw_implementation_identifier()
        runs: dict[tuple[str, int, str], RosRun] = {}
        refs: dict[tuple[str, int, str], dict] = {}
        try:
            for suite, episode in EPISODES:
                for robots, method in (*TEAMS, *EIGHT.get(suite, ())):
                    key = (suite, robots, method)
                    refs[key] = ref = in_process_episode(suite, episode, robots, tmp, method)
                    runs[key] = run = ros_episode(suite, episode, robots, tmp, context, method)
                    say(
                        f"{suite}/{episode} x{robots} {method}: in-process {ref['result']['wall_s']:.2f} s, "
                        f"ROS episode {run.episode_s:.2f} s (bridge {run.result['wall_s']:.2f} s, "
                        f"process {run.process_wall_s:.2f} s), {run.sim_steps} steps, "
                        f"CPU {run.cpu_s:.1f} s vs {ref['cpu_s']:.1f} s"
                    )
        finally:
            rclpy.try_shutdown(context=context)

    lines = [
        TITLE,
        "",
        f"Produced by `{command}` on {machine()}, {ros_version()} with `{rmw}`, every node its own "
        f"process on loopback DDS (ROS domain {domain}, `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`). Symbolic PCE, "
        "lockstep mode, seed 0. Numbers from one run on a noisy shared machine (1-minute load average "
        f"{load_before:.1f} before the run; 13 busy processes with 4 robots, 25 with 8, load it further): compare "
        "ratios, not absolute times. *oracle*: the centralised oracle, whose `coordinator` node decides for both "
        "robots (each robot runs a relay, docs/ros2.md).",
        "",
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
        "### Lockstep episodes against the in-process runner",
        "",
        'In-process: `run_episode(scene, "pce", seed=0, n_agents=N)` in a fresh process (its `wall_s`; the process '
        "adds interpreter start-up and imports). ROS: the processes `coteam launch` starts (`plan()` + "
        "`child_env()`): `sim_bridge`, and perception, planner and executor per robot. *ROS episode s*: first to last "
        "simulator step, timed on `/clock` from the benchmark process (startup excluded). *same result*: steps, "
        "success, transport rate, messages, decisions and the number of simulator steps equal the in-process run's. "
        "*decide s*: the method's own time, summed over every decision of every robot (`decision_ms_mean` × "
        "`decisions`); in ROS the robots decide in parallel processes. *CPU ms/step ROS*: CPU time of all nodes "
        "between the first step and the bridge's exit (`/proc/<pid>/stat`) per simulator step; it includes the "
        f"bridge's last {RESULTS_GRACE_S:g} s (waiting for decisions in flight) and its writing of results and trace, "
        "which weigh on the short C-WAH episodes.",
        "",
        "| episode | method | robots | steps (TDW-MAT: frames) | transport rate | sim steps | same result | "
        "in-process s | ROS episode s | × in-process | ms/step in-process | ms/step ROS | CPU ms/step ROS | decide s "
        "in-process | decide s ROS |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, run in runs.items():
        ref = refs[key]
        wall = ref["result"]["wall_s"]
        lines.append(
            f"| {run.suite}/{run.episode} | {run.method} | {run.robots} | {run.result['steps']} | "
            f"{run.result['transport_rate']:.2f} | "
            f"{run.sim_steps} | {_same(run, ref)} | {wall:.2f} | {run.episode_s:.2f} | {run.episode_s / wall:.1f} | "
            f"{1000 * wall / ref['sim_steps']:.1f} | {1000 * run.episode_s / max(1, run.clock_msgs - 1):.1f} | "
            f"{run.episode_cpu_ms_per_step:.1f} | {_decide_s(ref['result']):.2f} | {_decide_s(run.result):.2f} |"
        )
    pce_pairs = [run for (_, robots, method), run in runs.items() if (robots, method) == (2, "pce")]
    longest = max(pce_pairs, key=lambda r: r.sim_steps)
    by_kind = {
        kind: 1000 * sum(n.episode_cpu_s for n in longest.nodes if n.kind == kind) / longest.sim_steps
        for kind in NODE_ORDER
        if any(n.kind == kind for n in longest.nodes)
    }
    ref = refs[longest.suite, 2, "pce"]
    lines += [
        "",
        f"Where a step's time goes ({longest.suite}/{longest.episode}, 2 robots, {longest.sim_steps} steps): "
        f"{longest.episode_cpu_ms_per_step:.1f} ms CPU per step over all nodes ("
        + ", ".join(f"{kind} {ms:.1f}" for kind, ms in by_kind.items())
        + f"; robot nodes summed over both robots) against {1000 * ref['result']['wall_s'] / ref['sim_steps']:.1f} "
        f"ms for the whole in-process step, for {1000 * longest.episode_s / max(1, longest.clock_msgs - 1):.1f} ms "
        f"of wall time per step on {os.cpu_count()} CPUs.",
    ]
    central = runs.get((longest.suite, 2, "oracle"))
    if central is not None:
        per_step = {r.method: 1000 * r.episode_s / max(1, r.clock_msgs - 1) for r in (longest, central)}
        lines += [
            "",
            f"A centralised team's step over ROS ({longest.suite}/{longest.episode}, oracle: "
            f"{per_step['oracle']:.1f} ms of wall time, pce {per_step['pce']:.1f} ms) waits for every robot's report, "
            "then plays the robots' turns one after the other, each new action a round trip to the robot's planner "
            "and executor and back before the next robot's turn; a decentralised team's robots decide in parallel.",
        ]
    lines += [
        "",
        "Whole runs: *ROS startup s* from spawning the bridge to the first step (the robots' nodes start once this "
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
        "### CPU and memory per node (2 robots)",
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
        for n in sorted(run.nodes, key=lambda n: (n.robot, NODE_ORDER.index(n.kind))):
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
    return "\n".join(lines) + "\n"


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
