"""Time per decision of symbolic methods, measured one way for every section that reports it.

    python bench/timing.py --out docs/benchmarks.md   # every method (make bench runs it too)

A method runs a whole test suite with two agents in one process, after a warm-up episode (imports and one-time
set-up are not decisions). Reported: the median and the 95th percentile over every decision of the suite, and the
worst episode's own 95th percentile. Methods are measured in turn in the same run, so they share the machine's
state of the moment: compare them within a table, not across days.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from coteam.registry import make_team
from coteam_harness.results import p95
from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite

SUITES = ("cwah-test", "tdwmat-test")
BUDGET_MS = 50.0


def decision_latency(suite: str, method: str, params: dict[str, Any] | None = None) -> dict[str, float]:
    """``method``'s milliseconds per decision over ``suite`` (module docstring)."""
    specs = get_suite(suite).episodes()
    team = make_team(method, params)
    run_episode(specs[0].build(), team, n_agents=2)
    seconds: list[float] = []
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            trace = Path(tmp) / "trace.json"
            r = run_episode(spec.build(), team, n_agents=2, episode_name=spec.name, trace_path=trace)
            seconds += [d["seconds"] for d in json.loads(trace.read_text())["decisions"]]
            worst = max(worst, r.decision_ms_p95)
    return {
        "decisions": len(seconds),
        "median_ms": 1000 * statistics.median(seconds),
        "p95_ms": 1000 * p95(seconds),
        "worst_episode_p95_ms": worst,
    }


def _measured(methods: tuple[str, ...]) -> tuple[list[str], dict[tuple[str, str], float]]:
    """A markdown table of each method's time per decision on both test sets, and each one's p95 by suite."""
    lines = [
        "| suite | method | decisions | median ms | p95 ms | worst episode's p95 ms |",
        "|---|---|---|---|---|---|",
    ]
    p95s: dict[tuple[str, str], float] = {}
    for suite in SUITES:
        for method in methods:
            lat = decision_latency(suite, method)
            p95s[suite, method] = lat["p95_ms"]
            lines.append(
                f"| {suite} | {method} | {lat['decisions']:.0f} | {lat['median_ms']:.1f} | {lat['p95_ms']:.1f} | "
                f"{lat['worst_episode_p95_ms']:.1f} |"
            )
            print(lines[-1], flush=True)
    return lines, p95s


def latency_table(methods: tuple[str, ...]) -> list[str]:
    """A markdown table of each method's time per decision on both test sets, then whether the first method's
    p95 is within the budget and, with a second method for reference, the ratio of their p95s."""
    lines, p95s = _measured(methods)
    first = methods[0]
    worst = max(p95s[suite, first] for suite in SUITES)
    verdict = f"{first}'s slowest p95 is {worst:.1f} ms: {'within' if worst < BUDGET_MS else 'over'} the "
    verdict += f"{BUDGET_MS:.0f} ms budget on this machine."
    if len(methods) > 1:
        ratios = ", ".join(f"{p95s[s, first] / p95s[s, methods[1]]:.2f}x on {s}" for s in SUITES)
        verdict += f" Against {methods[1]} measured beside it: {ratios}."
    return [*lines, "", verdict]


TITLE = "## Time per decision, every method"
METHODS = ("pce", "cobel", "reveca", "mindmap", "evocf", "coela", "mhp", "rhp", "random")


def section(command: str) -> str:
    """Every method measured in turn (module docstring), and which stay within the budget on both test sets."""
    lines, p95s = _measured(METHODS)
    slowest = {m: max(p95s[s, m] for s in SUITES) for m in METHODS}
    within = [m for m in METHODS if slowest[m] < BUDGET_MS]
    over = [f"{m} ({slowest[m]:.1f} ms)" for m in METHODS if slowest[m] >= BUDGET_MS]
    verdict = f"Within the {BUDGET_MS:.0f} ms budget at the 95th percentile on both test sets: "
    verdict += f"{', '.join(within) or 'none'}; over it: {', '.join(over) or 'none'}."
    return (
        "\n".join(
            [
                TITLE,
                "",
                f"Produced by `{command}` on a machine doing nothing else: two agents, symbolic backend, each "
                "method over a whole test suite in one process after a warm-up episode; the median and the 95th "
                "percentile over every decision of the suite, and the worst episode's own 95th percentile.",
                "",
                *lines,
                "",
                verdict,
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/timing.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
