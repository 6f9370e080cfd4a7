"""The visual suites against the symbolic setting: the "Visual suites" section of docs/benchmarks.md.

    python bench/visual.py --out docs/benchmarks.md                 # pce on cwah-test (~15 min on 2 cores)
    python bench/visual.py --methods pce,mhp,rhp --out docs/benchmarks.md

Each method plays every episode of cwah-test twice with two robots, seed 0: as the simulator shows the world
(``cwah-test``) and through the robots' cameras (``cwah-test-visual``: items only where the ArUco detector finds
them, ``coteam_sim.camera.VisualObservations``). Reported: mean steps, successes, and the seconds a visual episode
takes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite

TITLE = "## Visual suites against the symbolic setting"


def section(command: str, methods: list[str]) -> str:
    rows = [
        "| method | symbolic steps | visual steps | × | symbolic successes | visual successes | s per visual episode |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in methods:
        symbolic, visual, seconds = [], [], []
        for base, seen in zip(get_suite("cwah-test").episodes(), get_suite("cwah-test-visual").episodes(), strict=True):
            symbolic.append(run_episode(base.build(), method, episode_name=base.name))
            start = time.perf_counter()
            visual.append(run_episode(seen.build(), method, episode_name=seen.name, perception=seen.perception))
            seconds.append(time.perf_counter() - start)
            print(method, seen.name, symbolic[-1].steps, visual[-1].steps, flush=True)
        s, v = statistics.fmean(r.steps for r in symbolic), statistics.fmean(r.steps for r in visual)
        rows.append(
            f"| {method} | {s:.1f} | {v:.1f} | {v / s:.2f} | {sum(r.success for r in symbolic)}/{len(symbolic)} | "
            f"{sum(r.success for r in visual)}/{len(visual)} | {statistics.median(seconds):.0f} |"
        )
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`: every cwah-test episode, two robots, seed 0, as the simulator shows it and through "
        "the robots' cameras (`cwah-test-visual`; definitions in the script's docstring and docs/simulator.md). "
        "Steps of an episode that fails count as the horizon (250).",
        "",
        *rows,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from ros_team import emit_section  # bench/ is on sys.path when this file runs as a script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="pce", help="comma-separated methods (default: pce)")
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    args = parser.parse_args(argv)
    command = "python bench/visual.py" + (f" --methods {args.methods}" if args.methods != "pce" else "")
    command += f" --out {args.out}" if args.out else ""
    emit_section(args.out, section(command, args.methods.split(",")), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
