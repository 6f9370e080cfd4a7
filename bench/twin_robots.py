"""The twin's robot profiles, each finishing the task by itself: the "Real robots: the twin's robot profiles"
section of docs/benchmarks.md.

    python bench/twin_robots.py --out docs/benchmarks.md   # about 40 minutes

Runs ``config/team_twin.yaml`` (the example flat, two robots, pce on the symbolic backend, the twin at 5 steps a
second) :data:`RUNS` times per team of :data:`TEAMS`: both robots of one profile of ``coteam_ros.twin_robots``, and
a mixed team. The team file gives each robot the body its profile documents (``robots[].capabilities``), and the
twin's sensors behave as real ones do (:data:`SENSORS`: TF 0.2 s late; detections in the camera's optical frame
stamped 80 ms in the past, with 5 cm of position error, one object in ten missed a frame, a 4 m range and a 90
degree panning camera; odometry drifting 2 cm and 1 degree a metre, corrected by a localisation at 2 Hz stamped 0.5
s ahead). Then the faults of :data:`FAULTS`, one run each, a wire nobody serves and a planner whose exit hangs. Per
run: whether the team ended the task by itself with the goal met and the twin confirms it, the task time (a
planner's first status to its end), the Nav2 goals by how they ended (the twin counts them as Nav2's server would),
the arm's goals, blocked retries (``coteam.agent.retries``), meetings in passages (``coteam.home.passage``), robots held
by another robot (the twin's count), and the detection arrays ``robot_state`` dropped and why. Real time, so figures
vary from run to run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from coteam_ros.twin_robots import TWIN_ROBOTS
from ros_team import ros_isolation
from sections import section_main
from twin import DOMAIN, FILES, ROOT, twin_run

TITLE = "## Real robots: the twin's robot profiles"
RUNS = 3
TIMEOUT_S = 420.0  # the world file's time limit is 300 s; slow robots start up as fast ones do
SENSORS = {
    "tf_lag_s": 0.2,
    "detections_frame": "optical",
    "detections_delay_s": 0.08,
    "detector": {"noise_m": 0.05, "miss": 0.1, "range_m": 4.0, "fov_deg": 90.0},
    "odometry": {"drift_m_per_m": 0.02, "drift_deg_per_m": 1.0, "localisation_hz": 2.0, "future_s": 0.5},
}
CLASS_ONLY = {**SENSORS, "detector": {**SENSORS["detector"], "ids": False, "false_rate": 0.05}}
TEAMS: dict[str, dict[str, str]] = {
    **{name: {"robot1": name, "robot2": name} for name in TWIN_ROBOTS},
    "mixed": {"robot1": "tiago", "robot2": "stretch3"},  # a fast one-armed robot and a slow one
}
DROPS = re.compile(r"detection arrays: (\d+) placed, (\d+) dropped(?: \((.*)\))?")


def team_edit(team: dict[str, str]) -> dict:
    """The team file's changes for a team of these profiles: the twin plays them, the nodes know their bodies."""
    robots = [{"name": name, "capabilities": TWIN_ROBOTS[profile].capabilities()} for name, profile in team.items()]
    return {"twin": {"tick_hz": 5.0, "robots": team, "robots_block": True, **SENSORS}, "robots": robots}


CAUSE = re.compile(r"(.*): (\d+)$")
FRAME = re.compile(r" from \S+")  # the camera frame of one robot: causes are counted over both robots


def drops(logs: dict[str, str]) -> tuple[int, int, Counter[str]]:
    """Detection arrays placed and dropped over the robots' ``robot_state`` nodes, and the drops by cause (the
    camera frame left out)."""
    placed = dropped = 0
    causes: Counter[str] = Counter()
    for label, text in logs.items():
        if not label.startswith("robot_state"):
            continue
        for found in DROPS.finditer(text):
            placed, dropped = placed + int(found[1]), dropped + int(found[2])
            for cause in filter(None, (found[3] or "").split("; ")):
                if counted := CAUSE.match(cause):
                    causes[FRAME.sub("", counted[1])] += int(counted[2])
    return placed, dropped, causes


def row(label: str, k: int, run: dict) -> str:
    (team,) = run["results"]["episodes"]
    (truth,) = run["twin"]["episodes"]
    goals = run["twin"]["meta"]["goals"].values()
    total = {key: sum(g.get(key, 0) for g in goals) for key in {k for g in goals for k in g}}
    by_itself = team["success"] and all(r["ended"] not in ("stopped", "no end report") for r in run["reports"])
    nav = "/".join(str(total.get(k, 0)) for k in ("navigation succeeded", "navigation canceled", "navigation failed"))
    arm = total.get("manipulations succeeded", 0) + total.get("manipulations failed", 0)
    placed, dropped, causes = drops(run["logs"])
    why = f" ({'; '.join(f'{cause}: {n}' for cause, n in causes.most_common())})" if causes else ""
    return (
        f"| {label} | {k} | {'yes' if by_itself else 'no'} | {max(r['wall_s'] for r in run['reports']):.1f} | {nav} | "
        f"{arm} ({total.get('manipulations failed', 0)}) | {team['retries_blocked']} | {team['passage_meetings']} | "
        f"{total.get('navigation held by a robot', 0)} | {dropped} of {placed + dropped}{why} | "
        f"{'no account' if run['twin'].get('silent') else format(truth['transport_rate'], '.2f')} |"
    )


# Faults of real robots, one run each: (what happens, the team file's changes, more files of config/ it names)
FAULTS: list[tuple[str, dict, tuple[str, ...]]] = [
    (
        "the arm refuses the same way again (TIAGo arms, one gripper each; the team file says nothing of it)",
        {"twin": {"tick_hz": 5.0, "robots": {"robot1": "tiago", "robot2": "tiago"}}},
        (),
    ),
    (
        "two robots face to face in a 1 m hallway (config/hallway.world.yaml)",
        {"task": {"world_file": "hallway.world.yaml"}, "twin": {"tick_hz": 5.0, "robots_block": True}},
        ("hallway.world.yaml",),
    ),
    (
        "TF 0.2 s late, detections in the camera's frame stamped 80 ms back, odometry drifting (the sensors above)",
        {"twin": {"tick_hz": 5.0, **SENSORS}},
        (),
    ),
    (
        "detections of classes without ids (two apples alike, seen by both robots; a false one in 20 frames), arms "
        "taking the class in front of them",
        {"twin": {"tick_hz": 5.0, **CLASS_ONLY}},
        (),
    ),
]
UNSERVED = {  # robot1's detections remapped to a topic nobody publishes
    "robots": [{"name": "robot1", "remap": {"detections": "/robot1/detector/objects"}}, {"name": "robot2"}],
    "execution": {"wiring_timeout_s": 5.0},
}


def fault_row(what: str, run: dict) -> str:
    """What the user sees of a fault: how the task ended, the failures the end reports count, and the counters."""
    (team,) = run["results"]["episodes"]
    failures: dict[str, int] = {}
    for report in run["reports"]:
        for reason, n in report["failures"].items():
            failures[reason] = failures.get(reason, 0) + n
    said = "; ".join(f"{reason} (x{n})" for reason, n in sorted(failures.items(), key=lambda f: -f[1])[:3]) or "none"
    placed, dropped, _ = drops(run["logs"])
    (truth,) = run["twin"]["episodes"]
    goals = run["twin"]["meta"]["goals"].values()
    counted = (
        f"{team['retries_blocked']} retries blocked, {team['passage_meetings']} passage meetings, "
        f"{sum(g.get('navigation held by a robot', 0) for g in goals)} held by a robot, "
        f"{dropped} of {placed + dropped} detection arrays dropped"
    )
    said_met = max(r["goal_items"][0] for r in run["reports"])
    wanted = run["reports"][0]["goal_items"][1]
    ended = "; ".join(f"{r['robot']}: {r['ended']}" for r in run["reports"])
    claimed = (
        f"{'yes' if team['success'] else 'no'} ({said_met}/{wanted} on a map, {truth['transport_rate']:.2f} in truth)"
    )
    return f"| {what} | {ended} | {claimed} | {said} | {counted} |"


def unserved_row(work: Path) -> str:
    """``coteam launch`` of a team whose detections topic nobody publishes: its exit status and the line it says."""
    for name in (*FILES, "team_twin.yaml"):
        shutil.copy(ROOT / "config" / name, work / name)
    team = yaml.safe_load((work / "team_twin.yaml").read_text())
    (work / "team_twin.yaml").write_text(yaml.safe_dump({**team, **UNSERVED}))
    argv = [sys.executable, "-m", "coteam.cli", "launch", str(work / "team_twin.yaml"), "--out", str(work / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=work, timeout=TIMEOUT_S)
    said = next((line for line in (done.stdout + done.stderr).splitlines() if "no detector" in line), "(nothing)")
    what = "a detections topic nobody publishes (robot1's remapped)"
    return f"| {what} | exit {done.returncode} | - | `{said.strip()}` | - |"


HUNG_EXIT = """
import threading
import coteam_ros.runtime as runtime
from rclpy.node import Node


class Planner(Node):  # a node whose middleware teardown never returns (Fast DDS, about 1 exit in 14)
    def __init__(self):
        super().__init__("planner")
        self.create_timer(0.1, lambda: print("spinning", flush=True))

    def destroy_node(self):
        threading.Event().wait()


runtime.spin_node(Planner)
"""


def hung_exit_row(work: Path) -> str:
    """A node whose teardown hangs, stopped as the launch stops it (SIGINT): how long it took to go, its exit status
    and the line it said (``coteam_ros.runtime.spin_node``)."""
    script = work / "hung_exit.py"
    script.write_text(HUNG_EXIT)
    argv = [sys.executable, str(script), "--ros-args", "-r", "__ns:=/robot1"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as node:
        assert node.stdout is not None
        node.stdout.readline()
        node.send_signal(signal.SIGINT)
        started = time.monotonic()
        _, err = node.communicate(timeout=120)
        took = time.monotonic() - started
    said = next((line for line in err.splitlines() if "did not shut down" in line), "(nothing)")
    said = re.sub(r" \(its threads: .*\)", " (its threads: <file>)", said.strip())
    what = "a planner whose teardown hangs in the middleware after its task is over"
    return f"| {what} | exit {node.returncode} after {took:.1f} s | - | `{said}` | - |"


def section(command: str) -> str:
    rows, fault_rows = [], []
    finished = 0
    with tempfile.TemporaryDirectory(prefix="coteam-twin-robots-") as tmp, ros_isolation(DOMAIN, Path(tmp)):
        for label, team in TEAMS.items():
            for k in range(1, RUNS + 1):
                work = Path(tmp) / f"{label}{k}"
                work.mkdir()
                run = twin_run(work, team_edit(team), TIMEOUT_S)
                finished += run["results"]["episodes"][0]["success"] and run["twin"]["episodes"][0]["success"]
                rows.append(row(label if label != "mixed" else "mixed: robot1 tiago, robot2 stretch3", k, run))
        for k, (what, edit, files) in enumerate(FAULTS):
            work = Path(tmp) / f"fault{k}"
            work.mkdir()
            fault_rows.append(fault_row(what, twin_run(work, edit, TIMEOUT_S, files)))
        work = Path(tmp) / "unserved"
        work.mkdir()
        fault_rows.append(unserved_row(work))
        work = Path(tmp) / "hung"
        work.mkdir()
        fault_rows.append(hung_exit_row(work))
    total = len(TEAMS) * RUNS
    return "\n".join(
        [
            TITLE,
            "",
            f"`{command}` ({RUNS} runs per team of `config/team_twin.yaml` in the example flat, pce (symbolic), the "
            f"twin at 5 steps a second with `{SENSORS}`; {os.cpu_count()} CPUs, Python {sys.version.split()[0]}).",
            "",
            "| robots | run | finished by itself | task time s | Nav2 goals succeeded/canceled/aborted | arm goals "
            "(failed) | blocked retries | passage meetings | held by a robot | detection arrays dropped (why) | twin: "
            "goal in place |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Finished by itself with the goal truly met (the team said so and the twin's truth agrees): {finished} of "
            f"{total} runs.",
            "",
            "How to read it. A team is both robots of one profile (`coteam_ros.twin_robots`, docs/hardware.md), or the "
            "mixed pair; the team file tells the nodes each robot's body. Finished by itself: the planners ended the "
            "task on their own maps (no time-out, no stop). Nav2 goals the executor canceled are mostly goals reached "
            "within reach or given up for a new decision; aborted ones failed in Nav2 (no path, held by a robot 10 s). "
            "Held by a robot: the twin's count of goals during which another robot's base stood in the way; passage "
            "meetings: those the executors resolved by giving way. Detection arrays dropped: those `robot_state` could "
            "not place with TF within 0.5 s of their arrival, of all it received.",
            "",
            "Faults of real robots, one run each (the example flat unless named), and what the user sees of them:",
            "",
            "| fault | how each robot ended | goal met | failures the end reports count (top 3) | counted |",
            "|---|---|---|---|---|",
            *fault_rows,
            "",
            "A robot whose arm refuses an action the same way twice has that action blocked for 15 s, doubling at "
            "each repeat, and its method chooses something else (`coteam.agent.retries`): the arms' refusals are "
            "counted, not repeated, but a team file that leaves out its robots' bodies can leave the task undoable (a "
            "one-gripper robot cannot open the fridge with an item in its hand, which its planner, told of two "
            "grippers, never plans for): give each robot its `capabilities`. Robots that meet in a passage "
            "resolve it by name order (`coteam.home.passage`); a detection array waits for TF up to 0.5 s; a wire "
            "nobody serves stops the launch with one line naming the resolved topic (exit 2); a node whose teardown "
            "hangs exits anyway after a grace, saying so once and leaving its threads' stacks in a file. Goal met: the "
            "team's word, with the most goal items a robot's map counted as distinct and what the twin's truth has "
            "in place.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    return section_main(argv, "bench/twin_robots.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
