"""Time per decision of symbolic methods, on one core, measured one way for every section that reports it.

    python bench/timing.py --out docs/benchmarks.md                  # every method (make bench runs it too)
    python bench/timing.py --before 002d111 --out docs/benchmarks.md # and a commit's, measured beside it

A method plays a whole test suite with two agents in a process of its own pinned to one core (``--core``), as
``coteam run`` builds it (:func:`coteam_harness.jobs.team_for`), after a warm-up episode (imports and one-time set-up
are not decisions). Reported: the median, the 95th percentile and the maximum over every decision of the suite.
With ``--before REV``, the same measurement runs on a checkout of REV (a temporary git worktree) right before each
of the working tree's, method by method, so both share the machine's state of the moment: compare them within a
table, not across days. Then every method plays the same fresh episodes with both codes (outcomes must not change
beyond noise when only speed was meant to).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sections import emit_section, machine

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("cwah-test", "tdwmat-test")
BUDGET_MS = 50.0  # the 95th percentile a robot's computer can afford per decision
MAX_BUDGET_MS = 150.0  # and the slowest decision
TITLE = "## Time per decision, every method"
METHODS = ("pce", "cobel", "reveca", "mindmap", "evocf", "coela", "mhp", "rhp", "random", "oracle")
SOURCE_DIRS = ("src", "sim", "harness")
FRESH_SEED = 4407  # outcomes before and after: a generator seed of neither test set, tuned on by no one
FRESH_EPISODES = 12


def decision_latency(suite: str, method: str, params: dict[str, Any] | None = None) -> dict[str, float]:
    """``method``'s milliseconds per decision over ``suite``, in this process (module docstring)."""
    from coteam_harness.jobs import RunSettings, team_for
    from coteam_harness.runner import run_episode
    from coteam_sim.suites import get_suite

    specs = get_suite(suite).episodes()
    team = team_for({}, RunSettings(team=method, params=params or {}))
    run_episode(specs[0].build(), team, n_agents=2)
    seconds: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            trace = Path(tmp) / "trace.json"
            run_episode(spec.build(), team, n_agents=2, episode_name=spec.name, trace_path=trace)
            seconds += [d["seconds"] for d in json.loads(trace.read_text())["decisions"]]
    seconds.sort()
    return {
        "decisions": len(seconds),
        "median_ms": 1000 * statistics.median(seconds),
        "p95_ms": 1000 * seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))],
        "max_ms": 1000 * seconds[-1],
    }


def fresh_outcomes(benchmark: str, method: str) -> list[tuple[float, str]]:
    """``method``'s score on each of :data:`FRESH_EPISODES` fresh episodes of generator seed :data:`FRESH_SEED`
    (``benchmark``: cwah or tdwmat), with a digest of every action it took there."""
    from coteam.domain.world import Benchmark
    from coteam_harness.jobs import RunSettings, team_for
    from coteam_harness.results import score
    from coteam_harness.runner import run_episode
    from coteam_sim.suites import fresh_episode

    team = team_for({}, RunSettings(team=method))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(FRESH_EPISODES):
            trace = Path(tmp) / "trace.json"
            result = run_episode(fresh_episode(Benchmark(benchmark), FRESH_SEED, index).build(), team, trace_path=trace)
            actions = [d["action"] for d in json.loads(trace.read_text())["decisions"]]
            out.append((score(result), hashlib.sha256(json.dumps(actions).encode()).hexdigest()))
    return out


def measured_apart(tree: Path, core: int, *request: str) -> Any:
    """A child process's answer (:func:`decision_latency` for ``--measure SUITE METHOD``, :func:`fresh_outcomes`
    for ``--outcomes BENCHMARK METHOD``), pinned to ``core``, on the code of the checkout ``tree``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(tree / d) for d in SOURCE_DIRS)}
    command = [sys.executable, __file__, *request, "--core", str(core)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(request)} in {tree}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """A temporary worktree of ``rev``, removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(path), rev], cwd=ROOT, check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False)


def _row(suite: str, method: str, label: str, lat: dict[str, float]) -> str:
    return (
        f"| {suite} | {method} | {label} | {lat['decisions']:.0f} | {lat['median_ms']:.1f} | {lat['p95_ms']:.1f} | "
        f"{lat['max_ms']:.1f} |"
    )


def latency_table(methods: tuple[str, ...]) -> list[str]:
    """A markdown table of each method's time per decision on both test sets, in this process, then whether the
    first method's p95 is within the budget (for sections that report one method's time beside their figures)."""
    lines = ["| suite | method | code | decisions | median ms | p95 ms | max ms |", "|---|---|---|---|---|---|---|"]
    p95s = {}
    for suite in SUITES:
        for method in methods:
            lat = decision_latency(suite, method)
            p95s[suite, method] = lat["p95_ms"]
            lines.append(_row(suite, method, "this", lat))
    worst = max(p95s[suite, methods[0]] for suite in SUITES)
    within = "within" if worst < BUDGET_MS else "over"
    return [*lines, "", f"{methods[0]}'s slowest p95 is {worst:.1f} ms: {within} the {BUDGET_MS:.0f} ms budget."]


def verdicts(rows: dict[tuple[str, str, str], dict[str, float]], label: str) -> str:
    """Which methods keep both budgets on both test sets, computed from the table's rows of ``label``."""
    keep, miss = [], []
    for m in METHODS:
        p95 = max(rows[s, m, label]["p95_ms"] for s in SUITES)
        worst = max(rows[s, m, label]["max_ms"] for s in SUITES)
        (keep if p95 < BUDGET_MS and worst < MAX_BUDGET_MS else miss).append(f"{m} ({p95:.1f} / {worst:.1f} ms)")
    return (
        f"- {label}: within p95 < {BUDGET_MS:.0f} ms and max < {MAX_BUDGET_MS:.0f} ms on both test sets: "
        f"{', '.join(keep) or 'none'}; over: {', '.join(miss) or 'none'} (slowest p95 / max)."
    )


def comparison(rows: dict[tuple[str, str, str], dict[str, float]], before: str) -> str:
    """The after/before ratios of the medians, p95s and maxima over every method and suite of the table."""
    ratios = {key: [] for key in ("median_ms", "p95_ms", "max_ms")}
    for s in SUITES:
        for m in METHODS:
            for key, values in ratios.items():
                values.append(rows[s, m, "this"][key] / rows[s, m, before][key])
    said = ", ".join(
        f"{name} {statistics.median(v):.2f}x (from {min(v):.2f}x to {max(v):.2f}x)"
        for name, v in zip(("median", "p95", "max"), ratios.values(), strict=True)
    )
    return f"- this tree against {before}, per method and suite (the median ratio, and its range): {said}."


def section(command: str, before: str | None = None, core: int = 0) -> str:
    """Every method measured in turn (module docstring), beside ``before`` when given, and which keep the budgets."""
    rows: dict[tuple[str, str, str], dict[str, float]] = {}
    load_before = os.getloadavg()[0]
    lines = ["| suite | method | code | decisions | median ms | p95 ms | max ms |", "|---|---|---|---|---|---|---|"]
    trees = [("this", ROOT)]
    with checkout(before) if before else _nothing() as old:
        if old is not None:
            trees.insert(0, (before, old))
        for suite in SUITES:
            for method in METHODS:
                for label, tree in trees:
                    rows[suite, method, label] = lat = measured_apart(tree, core, "--measure", suite, method)
                    lines.append(_row(suite, method, label, lat))
                    print(lines[-1], flush=True)
        outcome_lines = outcomes_table(trees, core) if before else []
    said = [verdicts(rows, label) for label, _ in trees]
    if before:
        said.append(comparison(rows, before))
    head = (
        f"Produced by `{command}` on {machine()}, every method in a process of its own pinned to core {core}, two "
        "agents, symbolic backend, a whole test suite after a warm-up episode, as `coteam run` builds the team. "
        "*code*: this tree, or the commit it was measured beside (interleaved, method by method). 1-minute load "
        f"average {load_before:.1f} before the run and {os.getloadavg()[0]:.1f} after: a busy machine's other "
        "processes share the core, and they show in the maxima first."
    )
    return "\n".join([TITLE, "", head, "", *lines, "", *said, *outcome_lines]) + "\n"


def outcomes_table(trees: list[tuple[str, Path]], core: int) -> list[str]:
    """Every method's outcomes on fresh episodes with the commit's code and this tree's: the mean of each, their
    paired difference, and on how many episodes every action was the same."""
    (before, old), (_, new) = trees
    lines = [
        "",
        f"Outcomes, {FRESH_EPISODES} fresh episodes of generator seed {FRESH_SEED} per benchmark (C-WAH: steps, fewer "
        "is better; TDW-MAT: transport rate), each method with both codes:",
        "",
        f"| benchmark | method | {before} | this | paired difference | episodes with every action the same |",
        "|---|---|---|---|---|---|",
    ]
    changed = []
    for benchmark in ("cwah", "tdwmat"):
        for method in METHODS:
            a = measured_apart(old, core, "--outcomes", benchmark, method)
            b = measured_apart(new, core, "--outcomes", benchmark, method)
            diffs = [y[0] - x[0] for x, y in zip(a, b, strict=True)]
            se = statistics.stdev(diffs) / len(diffs) ** 0.5
            same = sum(x[1] == y[1] for x, y in zip(a, b, strict=True))
            digits = 1 if benchmark == "cwah" else 3
            mean_a, mean_b = statistics.fmean(x[0] for x in a), statistics.fmean(y[0] for y in b)
            lines.append(
                f"| {benchmark} | {method} | {mean_a:.{digits}f} | {mean_b:.{digits}f} | "
                f"{statistics.fmean(diffs):+.{digits}f} ± {se:.{digits}f} | {same} / {len(a)} |"
            )
            print(lines[-1], flush=True)
            if abs(statistics.fmean(diffs)) > 2 * se:
                changed.append(f"{method} on {benchmark}")
    said = f"- outcomes: paired differences beyond two standard errors: {', '.join(changed) or 'none'}."
    return [*lines, "", said]


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", help="splice the section into this markdown file (default: print it)")
    parser.add_argument("--before", metavar="REV", help="also measure this commit, beside each method")
    parser.add_argument("--core", type=int, default=0, help="the core every measuring process is pinned to")
    parser.add_argument("--measure", nargs=2, metavar=("SUITE", "METHOD"), help=argparse.SUPPRESS)
    parser.add_argument("--outcomes", nargs=2, metavar=("BENCHMARK", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure or args.outcomes:  # a measuring child process (measured_apart)
        os.sched_setaffinity(0, {args.core})
        print(json.dumps(decision_latency(*args.measure) if args.measure else fresh_outcomes(*args.outcomes)))
        return 0
    command = "python bench/timing.py" + (f" --before {args.before}" if args.before else "")
    command += f" --core {args.core}" if args.core else ""
    command += f" --out {args.out}" if args.out else ""
    emit_section(args.out, section(command, args.before, args.core), TITLE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
