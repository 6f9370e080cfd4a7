"""The visual suites against the symbolic setting: the "Visual suites" section of docs/benchmarks.md.

    python bench/visual.py --out docs/benchmarks.md                             # pce on cwah-test (~10 min)
    python bench/visual.py --methods pce,mhp,rhp --suites cwah-test,tdwmat-test:pce --out docs/benchmarks.md

``--suites`` lists ``SUITE`` or ``SUITE:METHOD+METHOD`` (those methods only on that suite; a TDW-MAT visual episode
takes about 30 s, so all 24 with three methods take over half an hour).

Each method plays every episode of each suite twice with two robots, seed 0: as the simulator shows the world
(``cwah-test``, ``tdwmat-test``) and through the robots' cameras (``cwah-test-visual``, ``tdwmat-test-visual``:
items only as each robot's semantic map has them from its ArUco detections,
``coteam_sim.camera.VisualObservations``). Reported: C-WAH mean
steps (a failed episode counts the horizon), TDW-MAT mean transport rate, successes, and the wall time of the visual
runs (median per episode, and the whole suite one episode after the other).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite

TITLE = "## Visual suites against the symbolic setting"
MEASURE = {"cwah-test": ("steps", "steps ↓"), "tdwmat-test": ("transport_rate", "transport rate ↑")}


def section(command: str, runs: list[tuple[str, list[str]]]) -> str:
    rows = [
        "| suite | method | measure | symbolic | visual | visual / symbolic | symbolic successes | visual successes "
        "| s per visual episode | visual suite s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for suite, methods in runs:
        field, label = MEASURE[suite]
        for method in methods:
            symbolic, visual, seconds = [], [], []
            pairs = zip(get_suite(suite).episodes(), get_suite(f"{suite}-visual").episodes(), strict=True)
            for base, seen in pairs:
                symbolic.append(run_episode(base.build(), method, episode_name=base.name))
                start = time.perf_counter()
                visual.append(run_episode(seen.build(), method, episode_name=seen.name, perception=seen.perception))
                seconds.append(time.perf_counter() - start)
                print(method, seen.name, getattr(symbolic[-1], field), getattr(visual[-1], field), flush=True)
            s = statistics.fmean(getattr(r, field) for r in symbolic)
            v = statistics.fmean(getattr(r, field) for r in visual)
            digits = 1 if field == "steps" else 3
            rows.append(
                f"| {suite} | {method} | {label} | {s:.{digits}f} | {v:.{digits}f} | {v / s:.2f} | "
                f"{sum(r.success for r in symbolic)}/{len(symbolic)} | {sum(r.success for r in visual)}/{len(visual)} "
                f"| {statistics.median(seconds):.0f} | {sum(seconds):.0f} |"
            )
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`: every episode, two robots, seed 0, as the simulator shows it and through the "
        "robots' cameras (the `-visual` suites; definitions in the script's docstring and docs/simulator.md). A C-WAH "
        "episode that fails counts the horizon (250 steps). Wall times on this 2-core machine, in process; a visual "
        "run renders only the views in which an item it has to decide about, or a place its map remembers, stands.",
        "",
        *rows,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import emit_section  # bench/ is on sys.path when this file runs as a script

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="pce", help="comma-separated methods (default: pce)")
    parser.add_argument(
        "--suites", default="cwah-test", help="comma-separated cwah-test, tdwmat-test, each optionally :METHOD+METHOD"
    )
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    args = parser.parse_args(argv)
    runs = []
    for item in args.suites.split(","):
        suite, _, only = item.partition(":")
        if suite not in MEASURE:
            parser.error(f"unknown suite {suite!r} (cwah-test, tdwmat-test)")
        runs.append((suite, only.split("+") if only else args.methods.split(",")))
    command = "python bench/visual.py" + (f" --methods {args.methods}" if args.methods != "pce" else "")
    command += f" --suites {args.suites}" if args.suites != "cwah-test" else ""
    command += f" --out {args.out}" if args.out else ""
    emit_section(args.out, section(command, runs), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
