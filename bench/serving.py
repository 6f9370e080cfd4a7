"""A serving team's memory between tasks: a task whose things the robots saw during an earlier task, against a
fresh team given the same task first.

    python bench/serving.py --out docs/benchmarks.md

The twin team of config/team_twin.yaml (two robots, pce, symbolic) in the example flat, served with
`coteam launch --serve`: the served run is given "put the plates on the bed" and then the goal line
``in(cupcake, fridge): 1`` (the cupcake lies on the bed); the fresh run is given the cupcake task alone. For the
cupcake task each run's task record (``tasks.jsonl``) gives the seconds until a robot started to grab the cupcake,
the searches (explore, check) started before that grab, and the task's seconds. ``--repeats`` runs of each.
Re-running replaces the section of the same title.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "config"
TITLE = "## A serving team's memory between tasks"
PLATES, CUPCAKE = "put the plates on the bed", "in(cupcake, fridge): 1"
SEARCHES = ("[goexplore]", "[gocheck]")
TIMEOUT_S = 600.0


def serve(requests: list[str], domain: int) -> list[dict]:
    """A twin team launched with ``--serve`` and no task of its own, given ``requests`` one after another (each
    followed to its end with ``coteam task``); the task records."""
    with tempfile.TemporaryDirectory(prefix="coteam-serving-") as tmp:
        folder = Path(tmp)
        for name in ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
            shutil.copy(CONFIG / name, folder / name)
        team = folder / "team_twin.yaml"
        team.write_text(team.read_text() + "\nserve:\n  first_task: false\n")
        env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        log = folder / "launch.log"
        coteam = [sys.executable, "-m", "coteam.cli"]
        with log.open("w") as sink:
            launcher = subprocess.Popen(
                [*coteam, "launch", str(team), "--out", str(folder / "run"), "--serve"],
                stdout=sink, stderr=subprocess.STDOUT, cwd=folder, env=env,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + TIMEOUT_S
                while "task desk for" not in log.read_text():
                    if launcher.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the serving team did not start:\n" + log.read_text()[-3000:])
                    time.sleep(0.5)
                for request in requests:
                    given = ["--goal", request] if "(" in request else [request]
                    subprocess.run([*coteam, "task", *given], cwd=folder, env=env, check=True, timeout=TIMEOUT_S)
            finally:
                launcher.send_signal(signal.SIGINT)
                launcher.wait(timeout=120)
        return [json.loads(line) for line in (folder / "run" / "tasks.jsonl").read_text().splitlines()]


def cupcake_figures(record: dict) -> tuple[float, int, float]:
    """(seconds to the first grab of the cupcake, searches started before it, the task's seconds)."""
    started = sorted((t, action) for robot in record["work"].values() for t, action in robot["actions"])
    grab = next((t for t, action in started if action.startswith("[gograb] <cupcake>")), float("nan"))
    searches = sum(1 for t, action in started if t < grab and action.startswith(SEARCHES))
    return grab, searches, record["seconds"]


def section(command: str, repeats: int = 3) -> str:
    domain = 80 + os.getpid() % 50
    rows = {"served second (after the plates)": [], "fresh team, first task": []}
    for _ in range(repeats):
        served = serve([PLATES, CUPCAKE], domain)
        fresh = serve([CUPCAKE], domain)
        assert served[-1]["outcome"] == fresh[-1]["outcome"] == "done", (served, fresh)
        rows["served second (after the plates)"].append(cupcake_figures(served[-1]))
        rows["fresh team, first task"].append(cupcake_figures(fresh[-1]))
        print(rows, flush=True)
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`: the twin team of config/team_twin.yaml (2 robots, pce, symbolic) in the example "
        f"flat, served (`coteam launch --serve`); the cupcake task `{CUPCAKE}`, {repeats} runs of each. The cupcake "
        "lies on the bed; neither robot starts in the bedroom, and between tasks each walks to the room it rests in "
        "(the world file's `rest`: robot1 the kitchen, robot2 the living room) until the next task comes.",
        "",
        "| cupcake task | s to the first grab of the cupcake | searches before it | task s |",
        "|---|---|---|---|",
    ]
    means = {}
    for label, figures in rows.items():
        grab, searches, seconds = (statistics.fmean(f[k] for f in figures) for k in range(3))
        means[label] = (grab, seconds)
        lines.append(f"| {label} | {grab:.1f} | {searches:.1f} | {seconds:.1f} |")
    (served_grab, served_s), (fresh_grab, fresh_s) = means.values()
    lines += [
        "",
        f"Served second, a robot goes for the cupcake after {served_grab:.1f} s against {fresh_grab:.1f} s for a "
        f"fresh team, and the task takes {served_s / fresh_s:.0%} of the fresh team's time: the robots kept what they "
        "saw while putting the plates on the bed.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import emit_section  # bench/ is on sys.path when this file runs as a script

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    command = "python bench/serving.py" + (f" --out {args.out}" if args.out else "")
    emit_section(args.out, section(command, args.repeats), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
