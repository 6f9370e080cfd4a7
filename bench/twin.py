"""The hardware configuration of the robots' nodes against the twin: the "Real robots: the twin run" section of
docs/benchmarks.md.

    python bench/twin.py --out docs/benchmarks.md   # about 6 minutes

Runs ``config/team_twin.yaml`` (the example flat, two robots, pce on the symbolic backend; the twin at 5 steps a
second) as ``coteam launch`` does (``coteam_ros.launcher.plan``), :data:`RUNS` times as it is and :data:`RUNS` times
with the robots detecting in the twin's camera images (:data:`SEEING`), on a private ROS domain, and
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

import yaml

from coteam_ros.launcher import TWIN_RESULTS, child_env, plan, write_team_results
from coteam_ros.task_end import END_REPORT
from coteam_ros.team_config import load_config
from ros_team import _reap, _stop, ros_isolation
from sections import section_main

TITLE = "## Real robots: the twin run"
ROOT = Path(__file__).resolve().parents[1]
FILES = ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm")
RUNS = 3
# what the robots see through: the twin's detector (detections), or their cameras (the twin's RGB-D images, each
# robot's own perception node detecting the printed markers)
SEEING = {"detections": None, "camera images": {"perception": {"detector": "aruco"}}}
DOMAIN = 61
TIMEOUT_S = 240.0


# The hardware path's faults, played by the twin in one run (tests/ros/test_ros_twin.py plays the same)
FAULTS = [
    {"robot": "robot1", "kind": "nav_abort", "goal": 1, "code": 9003},
    {"robot": "robot2", "kind": "nav_reject", "goal": 1},
    {"robot": "robot1", "kind": "nav_stall", "goal": 2},
    {"robot": "robot2", "kind": "arm_silent", "goal": 1},
]
FAULT_TIMEOUTS = {"no_progress_s": 3.0, "arm_timeout_s": 3.0}
PLAYED = {
    "nav_abort": "Nav2 aborts the robot's goal {goal} with error {code}",
    "nav_reject": "Nav2 refuses the robot's goal {goal}",
    "nav_stall": "Nav2 accepts goal {goal}, the robot never moves",
    "arm_silent": "the arm accepts goal {goal} and never answers",
}


def _json_or(path: Path, missing: dict) -> dict:
    return json.loads(path.read_text()) if path.exists() else missing


def twin_run(work: Path, edit: dict | None = None, timeout_s: float = TIMEOUT_S, files: tuple[str, ...] = ()) -> dict:
    """One run of config/team_twin.yaml in ``work`` (with ``edit``'s keys replaced; ``files``: more of config/ it
    names): the team's results, the twin's, the planners' end reports, the twin's trace, CPU seconds per node, and
    the nodes' logs (by label)."""
    for name in (*FILES, *files):
        shutil.copy(ROOT / "config" / name, work / name)
    if edit:
        team = yaml.safe_load((work / "team_twin.yaml").read_text())
        (work / "team_twin.yaml").write_text(yaml.safe_dump({**team, **edit}))
    cfg = load_config(work / "team_twin.yaml")
    out = work / "out"
    out.mkdir()
    children = plan(cfg, work, results_path=out / "results.json")
    env = child_env(DOMAIN)
    procs = {}
    logs = {child.label: work / f"{child.label.replace('@/', '-').replace('/', '-')}.log" for child in children}
    for child in children:
        log = logs[child.label].open("wb")
        procs[child.label] = (child, subprocess.Popen(child.argv, env=env, stdout=log, stderr=subprocess.STDOUT))
    cpu: dict[str, float] = {}
    deadline = time.monotonic() + timeout_s
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
    # a run whose nodes were stopped before they wrote their accounts still makes a row: what is missing says so
    silent_twin = {"episodes": [{"success": False, "transport_rate": 0.0}], "meta": {"goals": {}}, "silent": True}
    no_report = {"ended": "no end report", "wall_s": 0.0, "goal_items": [0, 0], "failures": {}}
    reports = [_json_or(out / END_REPORT.format(robot=r), {"robot": r, **no_report}) for r in cfg.robot_names]
    return {
        "results": json.loads((out / "results.json").read_text()),
        "twin": _json_or(out / TWIN_RESULTS, silent_twin),
        "reports": reports,
        "trace": _json_or(out / "twin_trace.json", {}),
        "cpu": cpu,
        "logs": {label: path.read_text(errors="replace") for label, path in logs.items()},
    }


def section(command: str) -> str:
    runs: dict[str, list[dict]] = {how: [] for how in SEEING}
    with tempfile.TemporaryDirectory(prefix="coteam-twin-bench-") as tmp, ros_isolation(DOMAIN, Path(tmp)):
        for how, edit in SEEING.items():
            for k in range(RUNS):
                work = Path(tmp) / f"{how.replace(' ', '-')}{k}"
                work.mkdir()
                runs[how].append(twin_run(work, edit))
        work = Path(tmp) / "faults"
        work.mkdir()
        faulty = twin_run(work, {"twin": {"tick_hz": 5.0, "faults": FAULTS}, "execution": FAULT_TIMEOUTS})
    lines = [
        TITLE,
        "",
        f"`{command}` ({RUNS} runs each of `config/team_twin.yaml`, and of the same with `perception: {{detector: "
        "aruco}`: the example flat of `config/flat.world.yaml`, robot1 and robot2 on pce (symbolic), the twin at 5 "
        f"steps a second; {os.cpu_count()} CPUs, Python {sys.version.split()[0]}).",
        "",
        "| the robots see through | run | task time s | team says | twin says | Nav2 goals sent | canceled | failed | "
        "arm goals (failed) | team messages | how each robot ended |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for how, k, run in ((how, k, run) for how, done in runs.items() for k, run in enumerate(done, start=1)):
        (team,) = run["results"]["episodes"]
        (truth,) = run["twin"]["episodes"]
        goals = run["twin"]["meta"]["goals"].values()
        total = {key: sum(g.get(key, 0) for g in goals) for key in {k for g in goals for k in g}}
        arm = total.get("manipulations succeeded", 0) + total.get("manipulations failed", 0)
        endings = "; ".join(f"{r['robot']}: {r['ended']}" for r in run["reports"])
        lines.append(
            f"| {how} | {k} | {max(r['wall_s'] for r in run['reports']):.1f} | "
            f"{'goal met' if team['success'] else 'not met'} | "
            f"{truth['transport_rate']:.2f} of the goal in place | {total.get('navigation goals', 0)} | "
            f"{total.get('navigation canceled', 0)} | {total.get('navigation failed', 0)} | "
            f"{arm} ({total.get('manipulations failed', 0)}) | {team['messages']} | {endings} |"
        )
    labels = sorted(runs["detections"][0]["cpu"])
    lines += [
        "",
        "| node | " + " | ".join(f"CPU s per run, {how} (median of {RUNS})" for how in runs) + " |",
        "|---|" + "---|" * len(runs),
        *(
            f"| `{label}` | "
            + " | ".join(f"{statistics.median(run['cpu'][label] for run in done):.2f}" for done in runs.values())
            + " |"
            for label in labels
        ),
        "",
        "",
        f"The hardware path's faults, played by the twin in one run (`execution: {FAULT_TIMEOUTS}`):",
        "",
        "| fault | played by the twin | the robot's failure, counted in results.json | decided next |",
        "|---|---|---|---|",
        *fault_rows(faulty),
        "",
        f"The task still ends: the team says {'goal met' if faulty['results']['episodes'][0]['success'] else 'not met'}"
        f", the twin {faulty['twin']['episodes'][0]['transport_rate']:.2f} of the goal in place, after "
        f"{max(r['wall_s'] for r in faulty['reports']):.1f} s.",
        "",
        "How to read it. The task time runs from a robot's first status to its end, as its planner measured it; the "
        "team ends the task itself when a robot's map shows every goal item in place (it tells the team; the other "
        "robot stops on its word), and the twin, which knows where everything really is, confirms it. The twin counts "
        "the Nav2 goals as Nav2's server would: a goal the executor cancels when its skill moves on (reached within "
        "reach, or a new decision) counts as canceled, one Nav2 could not reach as failed. One team message is the "
        "robot's word that the goal is met; claims and the deliveries they carry (`/team/intents`) are not counted. "
        "Through camera images the robots find the items by their markers only where their heads looked, so the task "
        "takes longer than with the twin's detections, which show a robot everything in its room. CPU: the twin "
        "simulates and answers for both robots (and renders their cameras); a robot's own share is its "
        "`robot_state`, `perception` (detecting in the images), `planner` and `executor`.",
        "",
    ]
    return "\n".join(lines)


def fault_rows(run: dict) -> list[str]:
    """Per fault: what the twin did, the robot's failure reason as its end report counts it, and its next decision
    (a different action: no loop of identical goals)."""
    rows = []
    decisions = run["trace"]["decisions"]
    for fault in FAULTS:
        report = next(r for r in run["reports"] if r["robot"] == fault["robot"])
        expected = {
            "nav_abort": "not reachable (Nav2 9003",
            "nav_reject": "not reachable (Nav2 refused",
            "nav_stall": "not reachable (no progress",
            "arm_silent": "manipulation timed out",
        }[fault["kind"]]
        reasons = [reason for reason in report["failures"] if reason.startswith(expected)]
        after = (
            [
                d["action"]
                for d in decisions
                if d["agent"] == fault["robot"] and d["previous"] and d["previous"][1] == f"failed: {reasons[0]}"
            ]
            if reasons
            else []
        )
        played = PLAYED[fault["kind"]].format(**{"code": 9000, **fault})
        rows.append(
            f"| {fault['kind']} ({fault['robot']}) | {played} | "
            + ("; ".join(f"{r} (x{report['failures'][r]})" for r in reasons) or "none")
            + f" | {after[0] if after else '-'} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    return section_main(argv, "bench/twin.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
