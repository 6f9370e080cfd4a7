"""The hardware configuration of the robots' nodes against the twin: the "Real robots: the twin run" section of
docs/benchmarks.md.

    python bench/twin.py --out docs/benchmarks.md   # about 2 minutes

Runs ``config/team_twin.yaml`` (the example flat, two robots, pce on the symbolic backend; the twin at 5 steps a
second) as ``coteam launch`` does (``coteam_ros.launcher.plan``), :data:`RUNS` times on a private ROS domain, and
reports per run: the task's time as the team measured it (first status to its end), whether the team's map and the
twin's truth agree the goal is met, the Nav2 goals the robots sent and how they ended (the twin counts them as
Nav2's server would), the arm's goals, the team messages, and every node's CPU seconds (``os.wait4`` of each node
process: ``ru_utime + ru_stime``, start-up and shut-down included). Real time, so figures vary from run to run.
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
from pathlib import Path

from coteam_ros.launcher import TWIN_RESULTS, child_env, plan, write_team_results
from coteam_ros.task_end import END_REPORT
from coteam_ros.team_config import load_config
from ros_team import _reap, _stop, ros_isolation, section_main

TITLE = "## Real robots: the twin run"
ROOT = Path(__file__).resolve().parents[1]
FILES = ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm")
RUNS = 3
DOMAIN = 61
TIMEOUT_S = 240.0


def twin_run(work: Path) -> dict:
    """One run of config/team_twin.yaml in ``work``: the team's results, the twin's, and CPU seconds per node."""
    for name in FILES:
        shutil.copy(ROOT / "config" / name, work / name)
    cfg = load_config(work / "team_twin.yaml")
    out = work / "out"
    out.mkdir()
    children = plan(cfg, work, results_path=out / "results.json")
    env = child_env(DOMAIN)
    procs = {}
    for child in children:
        log = (work / f"{child.label.replace('@/', '-').replace('/', '-')}.log").open("wb")
        procs[child.label] = (child, subprocess.Popen(child.argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    cpu: dict[str, float] = {}
    deadline = time.monotonic() + TIMEOUT_S
    planners = {label for label, (child, _) in procs.items() if child.ends_task}
    while planners - set(cpu) and time.monotonic() < deadline:
        for label in planners - set(cpu):
            if (reaped := _reap(procs[label][1])) is not None:
                cpu[label] = reaped.cpu_s
        time.sleep(0.1)
    for label, (_, proc) in procs.items():
        if label not in cpu:
            cpu[label] = _stop(proc).cpu_s
    write_team_results(cfg, out, stopped=None)
    reports = [json.loads((out / END_REPORT.format(robot=r)).read_text()) for r in cfg.robot_names]
    return {
        "results": json.loads((out / "results.json").read_text()),
        "twin": json.loads((out / TWIN_RESULTS).read_text()),
        "reports": reports,
        "cpu": cpu,
    }


def section(command: str) -> str:
    runs = []
    with tempfile.TemporaryDirectory(prefix="coteam-twin-bench-") as tmp, ros_isolation(DOMAIN, Path(tmp)):
        for k in range(RUNS):
            work = Path(tmp) / f"run{k}"
            work.mkdir()
            runs.append(twin_run(work))
    lines = [
        TITLE,
        "",
        f"`{command}` ({RUNS} runs of `config/team_twin.yaml`: the example flat of `config/flat.world.yaml`, robot1 "
        "and robot2 on pce (symbolic), the twin at 5 steps a second; "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}).",
        "",
        "| run | task time s | team says | twin says | Nav2 goals sent | canceled | failed | arm goals (failed) | "
        "team messages | how each robot ended |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, run in enumerate(runs, start=1):
        (team,) = run["results"]["episodes"]
        (truth,) = run["twin"]["episodes"]
        goals = run["twin"]["meta"]["goals"].values()
        total = {key: sum(g.get(key, 0) for g in goals) for key in {k for g in goals for k in g}}
        arm = total.get("manipulations succeeded", 0) + total.get("manipulations failed", 0)
        endings = "; ".join(f"{r['robot']}: {r['ended']}" for r in run["reports"])
        lines.append(
            f"| {k} | {max(r['wall_s'] for r in run['reports']):.1f} | "
            f"{'goal met' if team['success'] else 'not met'} | "
            f"{truth['transport_rate']:.2f} of the goal in place | {total.get('navigation goals', 0)} | "
            f"{total.get('navigation canceled', 0)} | {total.get('navigation failed', 0)} | "
            f"{arm} ({total.get('manipulations failed', 0)}) | {team['messages']} | {endings} |"
        )
    labels = sorted(runs[0]["cpu"])
    lines += [
        "",
        "| node | CPU s per run (median of " + str(RUNS) + ") |",
        "|---|---|",
        *(f"| `{label}` | {statistics.median(run['cpu'][label] for run in runs):.2f} |" for label in labels),
        "",
        "How to read it. The task time runs from a robot's first status to its end, as its planner measured it; the "
        "team ends the task itself when a robot's map shows every goal item in place (it tells the team; the other "
        "robot stops on its word), and the twin, which knows where everything really is, confirms it. The twin counts "
        "the Nav2 goals as Nav2's server would: a goal the executor cancels when its skill moves on (reached within "
        "reach, or a new decision) counts as canceled, one Nav2 could not reach as failed. One team message is the "
        "robot's word that the goal is met; claims (`/team/intents`) are not counted. CPU: the twin simulates and "
        "answers for both robots; a robot's own share is its `robot_state`, `perception`, `planner` and `executor`.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return section_main(argv, "bench/twin.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
