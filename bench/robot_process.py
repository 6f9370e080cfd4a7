"""A robot in one process: each robot's nodes composed in one process (``composed: true`` in the team file) against
one process per node -- the "A robot in one process" section of docs/benchmarks.md.

    python bench/robot_process.py --out docs/benchmarks.md   # run, then splice the section into the file
    python bench/robot_process.py                            # run and print the section

On a lockstep episode of cwah-test episode 0 (symbolic pce, seed 0) with 2 and 8 robots, composed and separate, as
``coteam launch`` starts it (``plan()`` + ``child_env()``; the bridge first, the robots once this process hears its
``/clock``), per robot: its processes; its resident memory (the sum over its processes of ``VmRSS`` in
``/proc/<pid>/status``, and of ``Pss`` in ``/proc/<pid>/smaps_rollup``, which shares a page among the processes that
map it) when the team takes its first simulator step and at the last step; the CPU time its processes took until
then; its start-up (spawning the robots' processes to the stamp of its planner's first decision, at step 0) and the
team's (to the first simulator step). Then the wall time of what ``make demo`` runs (``coteam launch
config/team_sim.yaml`` and ``coteam render``), composed and not.

Its own ROS domain (``ROS_DOMAIN_ID`` if set, else :data:`DEFAULT_DOMAIN`), localhost discovery, ``ROS_HOME`` and
``ROS_LOG_DIR`` in a temp dir. ``run_benchmarks.py`` calls :func:`section` unless given ``--skip-ros``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields
from pathlib import Path

from ros_team import ROBOTS, _proc_sample, _stop, ros_isolation, ros_version
from sections import machine, section_main

ROOT = Path(__file__).resolve().parent.parent
TITLE = "## A robot in one process"
SUITE, EPISODE = "cwah-test", 0
REPEATS = {2: 5, 8: 2}  # runs per robot count and mode (medians); eight robots take about a minute a run
DEMO_REPEATS = 3
ATTEMPTS = 3  # a team run that fails (a node's native crash) is run again, and the section says so
DEFAULT_DOMAIN = 79
EPISODE_TIMEOUT_S = 240.0
POLL_S = 0.02


@dataclass
class RobotRun:
    """One lockstep run; per robot figures are the mean over its robots."""

    robots: int
    composed: bool
    processes: float  # a robot's processes
    rss_mb: float  # a robot's resident memory at the team's first step
    pss_mb: float
    rss_end_mb: float  # at the last step
    cpu_s: float  # a robot's CPU seconds (user + system, all its processes) until the team's first step
    ready_s: float  # the robots' spawn -> the stamp of a robot's first decision (at step 0)
    startup_s: float  # the robots' spawn -> the team's first simulator step
    steps: int
    success: bool


def _usage(pid: int) -> tuple[float, float, float] | None:
    """(VmRSS MB, Pss MB, CPU s) of a running process; None once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        sample = _proc_sample(pid)
    except OSError:
        return None

    def kb(text: str, key: str) -> int:
        return next(int(line.split()[1]) for line in text.splitlines() if line.startswith(key))

    return (kb(status, "VmRSS:") / 1024, kb(rollup, "Pss:") / 1024, sample[0]) if sample else None


def _robot_usage(pids: dict[str, list[int]]) -> dict[str, tuple[float, ...]] | None:
    """Each robot's (RSS, PSS, CPU s) summed over its processes; None if one of them has exited."""
    usage = {}
    for robot, mine in pids.items():
        samples = [_usage(pid) for pid in mine]
        if any(s is None for s in samples):
            return None
        usage[robot] = tuple(map(sum, zip(*(s for s in samples if s), strict=True)))
    return usage


def _seconds(message: object) -> float:
    """A message's stamp in seconds (the robots' nodes stamp with the system clock in a simulated world)."""
    stamp = message.header.stamp  # type: ignore[attr-defined]
    return stamp.sec + stamp.nanosec / 1e9


def team_run(robots: int, composed: bool, tmp: Path, context: object) -> RobotRun:
    """The lockstep episode with ``robots`` robots, composed or not, watched from this process."""
    from coteam_interfaces.msg import Decision
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rosgraph_msgs.msg import Clock

    from coteam_ros.launcher import child_env, plan
    from coteam_ros.qos import DECISIONS
    from coteam_ros.team_config import load_config

    work = Path(tempfile.mkdtemp(prefix=f"{robots}-{'composed' if composed else 'separate'}-", dir=tmp))
    team = {
        "world": {"suite": SUITE, "episode": EPISODE, "seed": 0, "mode": "lockstep"},
        "team": {"method": "pce", "backend": "symbolic"},
        "robots": [{"name": robot} for robot in ROBOTS[:robots]],
        "composed": composed,
    }
    (work / "team.yaml").write_text(json.dumps(team))  # YAML reads JSON
    results = work / "out" / "results.json"
    children = plan(load_config(work / "team.yaml"), work, results_path=results)
    node = Node("robot_process_bench", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    first_step: list[float] = []
    decided: dict[str, float] = {}  # a robot's first decision (at step 0): its stamp

    def on_clock(msg: Clock) -> None:
        if (msg.clock.sec or msg.clock.nanosec) and not first_step:  # step 0's clock comes before anyone acted
            first_step.append(time.monotonic())

    clock = node.create_subscription(
        Clock, "/clock", on_clock, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    )
    for robot in ROBOTS[:robots]:  # kept for a late subscriber: a short episode can be over before it is matched
        node.create_subscription(
            Decision, f"/{robot}/decision", lambda m, r=robot: m.step or decided.setdefault(r, _seconds(m)), DECISIONS
        )
    procs: dict[str, subprocess.Popen] = {}
    pids: dict[str, list[int]] = {r: [] for r in ROBOTS[:robots]}
    logs = []
    try:
        # the bridge first: /clock is volatile, so this node must have found it before the robots start the episode
        ordered = sorted(children, key=lambda c: not c.bridge)
        bridge = ordered[0]
        for child in ordered:
            log = (work / f"{child.label.replace('@/', '-').strip('-')}.log").open("wb")
            logs.append(log)
            procs[child.label] = subprocess.Popen(
                child.argv, env=child_env(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            deadline = time.monotonic() + EPISODE_TIMEOUT_S
            while child is bridge and clock.get_publisher_count() == 0 and procs[child.label].poll() is None:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the bridge did not come up; logs in {work}")
                executor.spin_once(timeout_sec=POLL_S)
            if child is bridge:
                spawned, spawned_at = time.monotonic(), time.time()  # the robots' processes from here
            else:
                pids[child.specs[0].namespace.strip("/")].append(procs[child.label].pid)
        at_first = at_end = None
        deadline = time.monotonic() + EPISODE_TIMEOUT_S
        while procs[bridge.label].poll() is None:
            executor.spin_once(timeout_sec=POLL_S)
            if first_step:
                sample = _robot_usage(pids)
                at_end = sample or at_end
                at_first = at_first or sample
            if time.monotonic() > deadline:
                raise RuntimeError(f"{robots} robots: no end after {EPISODE_TIMEOUT_S:g} s; logs in {work}")
        deadline = time.monotonic() + 5.0  # the robots' first decisions, if this node found them late
        while len(decided) < robots and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=POLL_S)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                _stop(proc)
        for log in logs:
            log.close()
        executor.remove_node(node)
        node.destroy_node()
        executor.shutdown()
    failed = {
        f"the bridge exited with {procs[bridge.label].returncode}": procs[bridge.label].returncode != 0,
        "a robot's process exited before the first step": at_first is None,
        "died: " + ", ".join(f"{label} ({p.returncode})" for label, p in procs.items() if p.returncode): any(
            p.returncode for label, p in procs.items() if label != bridge.label
        ),
        f"no first decision of {', '.join(sorted(set(pids) - decided.keys()))}": len(decided) < robots,
    }
    if any(failed.values()):
        kept = Path(tempfile.mkdtemp(prefix="robot-process-failed-"))
        shutil.copytree(work, kept, dirs_exist_ok=True)
        said = "; ".join(why for why, true in failed.items() if true)
        raise RuntimeError(f"{robots} robots, composed {composed}: {said}; logs in {kept}")
    assert at_first is not None and at_end is not None
    result = json.loads(results.read_text())["episodes"][0]
    shutil.rmtree(work)
    return RobotRun(
        robots,
        composed,
        processes=statistics.fmean(len(p) for p in pids.values()),
        rss_mb=statistics.fmean(m[0] for m in at_first.values()),
        pss_mb=statistics.fmean(m[1] for m in at_first.values()),
        rss_end_mb=statistics.fmean(m[0] for m in at_end.values()),
        cpu_s=statistics.fmean(m[2] for m in at_first.values()),
        ready_s=statistics.fmean(t - spawned_at for t in decided.values()),
        startup_s=first_step[0] - spawned,
        steps=result["steps"],
        success=result["success"],
    )


def _run_again_if_it_fails(robots: int, composed: bool, tmp: Path, context: object, failures: list[str]) -> RobotRun:
    """:func:`team_run`, run again (at most :data:`ATTEMPTS` times) when it fails -- a node that crashed in native
    code, which ``coteam launch`` would start again; each failure is added to ``failures``."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return team_run(robots, composed, tmp, context)
        except RuntimeError as exc:
            failures.append(str(exc))
            print(exc, flush=True)
            if attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _median(runs: list[RobotRun]) -> RobotRun:
    """The runs' medians of what is measured; the episode's steps are the first run's, a success one of every run."""
    measured = {
        f.name: statistics.median(getattr(r, f.name) for r in runs) for f in fields(RobotRun) if f.type == "float"
    }
    first = runs[0]
    return RobotRun(first.robots, first.composed, steps=first.steps, success=all(r.success for r in runs), **measured)


def demo_wall(composed: bool, tmp: Path) -> tuple[float, float, int]:
    """What ``make demo`` runs, on a copy of config/team_sim.yaml (composed or not): the launch's wall time, the
    render's, and the episode's steps."""
    folder = Path(tempfile.mkdtemp(prefix=f"demo-{'composed' if composed else 'separate'}-", dir=tmp))
    config = Path(shutil.copy(ROOT / "config" / "team_sim.yaml", folder))
    config.write_text(config.read_text() + f"composed: {'true' if composed else 'false'}\n")
    coteam = [sys.executable, "-m", "coteam.cli"]
    times = []
    for command in (
        [*coteam, "launch", str(config), "--out", str(folder / "demo"), "--timeout", "600"],
        [*coteam, "render", str(folder / "demo" / "trace.json")],
    ):
        start = time.monotonic()
        done = subprocess.run(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        times.append(time.monotonic() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stdout.decode()[-3000:]}")
    steps = json.loads((folder / "demo" / "results.json").read_text())["episodes"][0]["steps"]
    shutil.rmtree(folder)
    return times[0], times[1], steps


def section(command: str) -> str:
    """Run the comparison and return its markdown section (starting with :data:`TITLE`)."""
    import rclpy

    domain = int(os.environ.get("ROS_DOMAIN_ID", DEFAULT_DOMAIN))
    load_before = os.getloadavg()[0]
    runs: dict[tuple[int, bool], list[RobotRun]] = {}
    demos: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="robot-process-bench-") as tmp_name, ros_isolation(domain, Path(tmp_name)):
        tmp = Path(tmp_name)
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            for robots, repeats in REPEATS.items():
                for _ in range(repeats):
                    for composed in (False, True):  # alternated: a machine's load drifts
                        run = _run_again_if_it_fails(robots, composed, tmp, context, failures)
                        runs.setdefault((robots, composed), []).append(run)
                        print(run, flush=True)
        finally:
            rclpy.try_shutdown(context=context)
        for _ in range(DEMO_REPEATS):
            for composed in (False, True):
                demos[composed].append(demo_wall(composed, tmp))
                print("demo", "composed" if composed else "separate", demos[composed][-1], flush=True)
    table = {key: _median(found) for key, found in runs.items()}

    def spread(key: tuple[int, bool], name: str) -> str:
        values = [getattr(r, name) for r in runs[key]]
        return f"{getattr(table[key], name):.1f}" + (
            f" ({min(values):.1f}–{max(values):.1f})" if len(values) > 1 else ""
        )

    lines = [
        TITLE,
        "",
        f"Produced by `{command}` on {machine()}, {ros_version()}, ROS domain {domain} with "
        f"`ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`; 1-minute load average {load_before:.1f} before the run and "
        f"{os.getloadavg()[0]:.1f} after, on a machine shared with other work: compare the rows of a robot count, not "
        "absolute figures.",
        "",
        f"A lockstep episode of {SUITE}/{EPISODE} (symbolic pce, seed 0), started as `coteam launch` starts it, each "
        "robot's nodes in one process (`composed: true`, docs/ros2.md) or one process each. Per robot, the mean over "
        "its robots: *RSS MB* the sum of `VmRSS` over the robot's processes (`/proc/<pid>/status`) when the team "
        "takes its first simulator step and at its last; *PSS MB* the sum of `Pss` (`/proc/<pid>/smaps_rollup`: a "
        "page shared by N processes counts 1/N in each) at the first step; *start-up CPU s* the CPU time of its "
        "processes until then (`/proc/<pid>/stat`); *robot start-up s* from spawning the robots' processes (the "
        "bridge already up) to the stamp of the robot's first decision (at step 0, on its `decision` topic); *team "
        "start-up s* to the first "
        "simulator step. Medians (min–max) of "
        + ", ".join(f"{n} run{'s' if n > 1 else ''} with {robots} robots" for robots, n in REPEATS.items())
        + " in each mode, the modes alternated.",
        "",
        "| robots | nodes | processes per robot | RSS MB per robot, first step | RSS MB per robot, last step | PSS MB "
        "per robot | start-up CPU s per robot | robot start-up s | team start-up s | steps | success |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (robots, composed), run in table.items():
        lines.append(
            f"| {robots} | {'composed' if composed else 'separate'} | {run.processes:g} | {run.rss_mb:.0f} | "
            f"{run.rss_end_mb:.0f} | {run.pss_mb:.0f} | {run.cpu_s:.1f} | {spread((robots, composed), 'ready_s')} | "
            f"{spread((robots, composed), 'startup_s')} | {run.steps} | {'yes' if run.success else 'no'} |"
        )
    lines.append("")
    for robots in REPEATS:
        separate, composed = table[robots, False], table[robots, True]
        same = all((r.steps, r.success) == (separate.steps, separate.success) for r in runs[robots, True])
        lines.append(
            f"With {robots} robots a composed robot is {composed.processes:g} process instead of "
            f"{separate.processes:g}, holds {composed.rss_mb:.0f} MB resident instead of {separate.rss_mb:.0f} MB "
            f"({composed.rss_mb / separate.rss_mb:.0%}; PSS {composed.pss_mb / separate.pss_mb:.0%}), spends "
            f"{composed.cpu_s:.1f} CPU s to start instead of {separate.cpu_s:.1f} s, and the team's first step comes "
            f"{composed.startup_s:.1f} s after spawning instead of {separate.startup_s:.1f} s (medians); "
            f"{'the same' if same else '**not the same**'} steps and success in every run."
        )
    if failures:
        lines.append(
            f"Run again after failing ({len(failures)}): " + "; ".join(f.split("; logs in")[0] for f in failures) + "."
        )
    (steps,) = {d[2] for found in demos.values() for d in found}
    wall = {c: statistics.median(d[0] + d[1] for d in found) for c, found in demos.items()}
    launch = {c: statistics.median(d[0] for d in found) for c, found in demos.items()}
    lines += [
        "",
        "`make demo` runs `coteam launch config/team_sim.yaml --out runs/demo --timeout 600`, then `coteam render "
        "runs/demo/trace.json`; both timed here on a copy of the team file with `composed: false` and `true` "
        f"(median of {DEMO_REPEATS} each, from starting the command to its exit):",
        "",
        "| demo | coteam launch s | launch + render s | steps |",
        "|---|---|---|---|",
        *[f"| {'composed' if c else 'separate'} | {launch[c]:.1f} | {wall[c]:.1f} | {steps} |" for c in (False, True)],
        "",
        f"The two-robot demo takes {wall[True]:.1f} s composed against {wall[False]:.1f} s separate "
        f"({wall[True] - wall[False]:+.1f} s).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return section_main(argv, "bench/robot_process.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
