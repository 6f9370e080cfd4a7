"""Where the symbolic planner stands against the MCTS baseline and the oracle: the figures of the symbolic-planner
issue, on the test sets and on fresh episodes of a seed that is never used for tuning.

    python bench/symbolic_planner.py --out docs/benchmarks.md   # (make bench runs it too)

Tuning happens on the generators' seeds 101-110 (`coteam run --suite cwah --seed 101 ...`); the held-out fresh
episodes use seed 2026, and the test sets cwah-test / tdwmat-test are only measured. Re-running replaces the
section of the same title in the markdown file.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from coteam.registry import make_team
from coteam.world import Benchmark
from coteam_harness.results import EpisodeResult, summarize
from coteam_harness.runner import run_episode
from coteam_sim.suites import EpisodeSpec, fresh_episode, get_suite

TITLE = "## Symbolic planner against the MCTS baseline and the oracle"
HELD_OUT_SEED = 2026  # fresh episodes never used for tuning
TUNING_SEEDS = "101-110"
TUNING_REPORTED = (101, 102, 103, 104)  # tuning seeds whose episodes are reported too (not a test of generalisation)
TUNED = "101-104"
ABLATIONS = ("none", "no_planner", "no_composer", "no_evaluator", "physical_only", "communication_only")


READING = [
    "How to read the tables. The value model (docs/architecture.md) is level with or ahead of mhp on the "
    "episodes it was tuned on but not reliably on the test sets: one C-WAH episode's steps vary by tens between "
    "near-identical planners (a missed container costs a walk back), so ten episodes do not separate planners a "
    "few percent apart, and the 1.25 x oracle target is not met anywhere (partial observability costs search the "
    "oracle never pays, and two decentralised robots still duplicate work when one decides while the other is on "
    "its way). The ablations: in symbolic mode the Planner's candidate does not steer the symbolic Composer, so "
    "no_planner equals the full method; the Composer's leaves are the value model's best actions per scenario and "
    "yield to the unconditional best within TIE_MARGIN, so no_composer (the best 2^D actions scored side by side "
    "on the whole belief) is within noise of it; no_evaluator (the most likely leaf, unscored) is clearly worse, "
    "as in the paper's Table 3. physical_only and communication_only match the full method because a message is "
    "sent only when announcing my next action changes a teammate's choice, which happens about once in ten C-WAH "
    "episodes; the paper's gap comes from status messages, and on the tuning seeds sending the status whenever "
    "there was news did not shorten episodes (80.6 steps without, 81.3 with, 200 episodes, paired standard error "
    "0.8)."
    " Where the gap is (tuning seeds 101-105, 100 episodes, two agents): the median episode is at 1.26 x the "
    "oracle, and the mean is pulled up by a tail of episodes where the priors point to the wrong container (a walk "
    "across the house and back costs 50-150 steps); sharing every observation between the robots (an experiment, "
    "not a mode) left the mean unchanged (+1.4 steps, paired standard error 2.5), and so did deciding by the "
    "Planner alone or by the best actions side by side (no_composer): what is left to attack is searching under "
    "partial observability with priors, not talking or the tree.",
]


def _run(specs: list[EpisodeSpec], method: str, agents: int, params: dict | None = None) -> list[EpisodeResult]:
    team = make_team(method, params)
    return [run_episode(s.build(), team, n_agents=agents, episode_name=s.name) for s in specs]


def _steps(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.steps for r in rs)


def _rate(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.transport_rate for r in rs)


def _compare(
    specs: list[EpisodeSpec], agents: int, metric: Callable[[list[EpisodeResult]], float]
) -> tuple[tuple[float, float, float], float]:
    """``metric`` of pce, mhp and the oracle on ``specs``, and pce's messages per episode."""
    runs = {m: _run(specs, m, agents) for m in ("pce", "mhp", "oracle")}
    return (metric(runs["pce"]), metric(runs["mhp"]), metric(runs["oracle"])), summarize(runs["pce"])["messages"]


def decision_latency(suite: str) -> dict[str, float]:
    """Symbolic PCE's seconds per decision over a whole test suite (two agents, one process), after a warm-up
    episode (imports are not decisions): the median, the 95th percentile over every decision, and the worst
    episode's own 95th percentile."""
    specs = get_suite(suite).episodes()
    team = make_team("pce")
    run_episode(specs[0].build(), team, n_agents=2)
    seconds: list[float] = []
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            trace = Path(tmp) / "trace.json"
            r = run_episode(spec.build(), team, n_agents=2, episode_name=spec.name, trace_path=trace)
            seconds += [d["seconds"] for d in json.loads(trace.read_text())["decisions"]]
            worst = max(worst, r.decision_ms_p95)
    seconds.sort()
    return {
        "decisions": len(seconds),
        "median_ms": 1000 * statistics.median(seconds),
        "p95_ms": 1000 * seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))],
        "worst_episode_p95_ms": worst,
    }


def section(command: str) -> str:
    cwah_test = get_suite("cwah-test").episodes()
    tdw_test = get_suite("tdwmat-test").episodes()
    cwah_fresh = [fresh_episode(Benchmark.CWAH, HELD_OUT_SEED, i) for i in range(20)]
    tdw_fresh = [fresh_episode(Benchmark.TDWMAT, HELD_OUT_SEED, i) for i in range(24)]
    cwah_tuning = [fresh_episode(Benchmark.CWAH, seed, i) for seed in TUNING_REPORTED for i in range(20)]
    tdw_tuning = [fresh_episode(Benchmark.TDWMAT, seed, i) for seed in TUNING_REPORTED for i in range(12)]
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Targets: on C-WAH pce's mean steps at most 1.25 × the oracle's and below mhp's "
        "at every team size; on TDW-MAT a transport rate at least mhp's and at least 0.85; at most 4 messages per "
        f"C-WAH episode. Tuning seeds: {TUNING_SEEDS} of the `cwah` / `tdwmat` generators; held-out fresh episodes: "
        f"seed {HELD_OUT_SEED}.",
        "",
        "| episodes | agents | pce | mhp | oracle | pce / oracle | pce < mhp | pce msgs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, specs, counts in (
        ("cwah-test", cwah_test, (1, 2, 3, 4)),
        (f"cwah seed {HELD_OUT_SEED}", cwah_fresh, (2,)),
        (f"cwah seeds {TUNED} (tuned on)", cwah_tuning, (2,)),
    ):
        for n in counts:
            (pce, mhp, oracle), msgs = _compare(specs, n, _steps)
            lines.append(
                f"| {name} ({len(specs)}) | {n} | {pce:.1f} | {mhp:.1f} | {oracle:.1f} | {pce / oracle:.2f} | "
                f"{'yes' if pce < mhp else 'no'} | {msgs:.1f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "| episodes | agents | pce rate | mhp rate | oracle rate | pce ≥ mhp | pce msgs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, specs in (
        ("tdwmat-test", tdw_test),
        (f"tdwmat seed {HELD_OUT_SEED}", tdw_fresh),
        (f"tdwmat seeds {TUNED} (tuned on)", tdw_tuning),
    ):
        (pce, mhp, oracle), msgs = _compare(specs, 2, _rate)
        lines.append(
            f"| {name} ({len(specs)}) | 2 | {pce:.3f} | {mhp:.3f} | {oracle:.3f} | {'yes' if pce >= mhp else 'no'} | "
            f"{msgs:.1f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "PCE's ablations on cwah-test (2 agents; the paper's Table 3 orders them: full PCE best, then without the "
        "Composer, without the Evaluator, without the Planner; physical-only and communication-only worse than both):",
        "",
        "| ablation | steps | messages |",
        "|---|---|---|",
    ]
    for ablation in ABLATIONS:
        rs = _run(cwah_test, "pce", 2, {"ablation": ablation})
        lines.append(f"| {ablation} | {_steps(rs):.1f} | {summarize(rs)['messages']:.1f} |")
        print(lines[-1], flush=True)
    lines += [
        "",
        "Symbolic PCE's time per decision (2 agents, the whole test suite in one process on this 2-core machine, "
        "after a warm-up episode; target: p95 under 50 ms):",
        "",
        "| suite | decisions | median ms | p95 ms | worst episode's p95 ms |",
        "|---|---|---|---|---|",
    ]
    for suite in ("cwah-test", "tdwmat-test"):
        lat = decision_latency(suite)
        lines.append(
            f"| {suite} | {lat['decisions']:.0f} | {lat['median_ms']:.1f} | {lat['p95_ms']:.1f} | "
            f"{lat['worst_episode_p95_ms']:.1f} |"
        )
        print(lines[-1], flush=True)
    lines += ["", *READING]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from ros_team import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/symbolic_planner.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
