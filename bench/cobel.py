"""CoBel-World (``cobel``) against the communication-heavy coela and against pce: the figures of the CoBel issue.

    nice -n 19 python bench/cobel.py --out docs/benchmarks.md   # (make bench runs it too; about 40 minutes)

Both test sets with two agents on the symbolic backend (the runs ``coteam bench --suite SUITE --methods
coela,pce,cobel`` makes), the ablations as switches (``--set ablation=no_sbr`` / ``no_bbc``), and the same on fresh
episodes of the held-out seed 2026 (more episodes, so that the ablations' differences can be told from noise); then
cobel against pce on the generators' seeds cobel was tuned on. Every method's time per decision: bench/timing.py.
Nothing here was tuned on: cobel's tuned constants (``plan_length``, the rollout-choice margin, which prediction of a
teammate ranked before me its plan is made around) were chosen on the generators' seeds (:data:`TUNING`).
Re-running replaces the section of the same title in the markdown file.
"""

from __future__ import annotations

import statistics
import sys

import episodes  # bench/ is on sys.path when this file runs as a script
from coteam.domain.world import Benchmark
from coteam_harness.results import EpisodeResult, paired_difference, summarize
from coteam_sim.suites import EpisodeSpec, fresh_episode, get_suite

TITLE = "## CoBel-World: belief-gated communication"
HELD_OUT_SEED = 2026
FRESH = {Benchmark.CWAH: 30, Benchmark.TDWMAT: 24}  # held-out episodes per benchmark
# The generators' seeds cobel is tuned on, and the episodes drawn from each (as bench/symbolic_planner.py draws them).
TUNING = {Benchmark.CWAH: (range(101, 111), 20), Benchmark.TDWMAT: (range(101, 131), 12)}
VARIANTS: tuple[tuple[str, str, dict], ...] = (
    ("coela", "coela", {}),
    ("pce", "pce", {}),
    ("cobel", "cobel", {}),
    ("cobel no_sbr", "cobel", {"ablation": "no_sbr"}),
    ("cobel no_bbc", "cobel", {"ablation": "no_bbc"}),
)


READING = [
    "How to read it. The paper (C-WAH, GPT-4o) reports 377 comm tokens for CoBel-World against 938 for CoELA, and "
    "51 / 55 / 68 steps for the full method / no SBR / no BBC. Ten C-WAH test episodes do not separate planners a "
    "few percent apart (one episode's steps vary by tens when a container is missed), nor do 24 TDW-MAT ones (one "
    "episode's rate moves by 0.1 to 0.4 between near-identical planners): read the paired standard errors, the "
    "held-out episodes and the tuning seeds' table (a few hundred episodes). no_bbc (a message whenever a teammate "
    "lacks something I could tell it) always sends more, several times more on C-WAH, where each message costs its "
    "sender a step and the episodes get longer, as in the paper (within the paired standard errors here); on TDW-"
    "MAT a message costs one frame and no_bbc is within noise of the full method. Our symbolic no_sbr still "
    "predicts teammates with the value model, from my own beliefs, and still messages on plan conflicts: what it "
    "loses is only the messages that correct a teammate's missing beliefs, which a teammate mostly makes up for on "
    "its own soon after; the paper's no_sbr loses structure in what an LLM writes, which a symbolic backend never "
    "had to begin with.",
    "",
    "cobel against pce (issue 33, item 8: at least pce's transport rate, and every method's symbolic decision p95 "
    'under 50 ms on both test sets). The time target: "Time per decision, every method" below (bench/timing.py). '
    "The rate target is not "
    "met: on tdwmat-test cobel trails pce (the table at the top); on the tuning seeds (the table before it) it is "
    "level with pce on TDW-MAT, about 0.006 behind on seeds 131-160 (paired standard error 0.005, "
    "docs/experiments.md), and ahead on C-WAH. What was tried and what it did, with figures: docs/experiments.md.",
]


def _run(specs: list[EpisodeSpec], method: str, params: dict) -> list[EpisodeResult]:
    return episodes.play(specs, method, params)


def _table(benchmark: Benchmark, runs: dict[str, list[EpisodeResult]]) -> list[str]:
    cwah = benchmark == Benchmark.CWAH
    coela = summarize(runs["coela"])
    head = "steps" if cwah else "transport rate"
    lines = [
        f"| variant | {head} | messages / episode | comm tokens / episode | comm tokens vs coela |",
        "|---|---|---|---|---|",
    ]
    for label, rs in runs.items():
        s = summarize(rs)
        score = f"{s['steps']:.1f}" if cwah else f"{s['transport_rate']:.3f}"
        share = s["comm_tokens"] / coela["comm_tokens"] if coela["comm_tokens"] else float("nan")
        lines.append(f"| {label} | {score} | {s['messages']:.2f} | {s['comm_tokens']:.0f} | {share:.0%} |")
    return lines


def _paired(benchmark: Benchmark, a: list[EpisodeResult], b: list[EpisodeResult]) -> str:
    """The mean paired difference a − b of the suite's score, with its standard error."""
    mean, se = paired_difference(a, b)
    unit = "steps" if benchmark == Benchmark.CWAH else "transport rate"
    digits = 1 if benchmark == Benchmark.CWAH else 3
    return f"{mean:+.{digits}f} {unit} (paired standard error {se:.{digits}f})"


def _verdict(benchmark: Benchmark, runs: dict[str, list[EpisodeResult]]) -> str:
    s = {k: summarize(v) for k, v in runs.items()}
    key = "steps" if benchmark == Benchmark.CWAH else "transport_rate"
    share = s["cobel"]["comm_tokens"] / s["coela"]["comm_tokens"]
    vs_pce = s["cobel"][key] / s["pce"][key] - 1
    bound = "at most +5 %" if benchmark == Benchmark.CWAH else "at least pce's rate (issue 33)"
    lines = [
        f"cobel's comm tokens are {share:.0%} of coela's (target at most 40 %). Against coela: "
        f"{_paired(benchmark, runs['cobel'], runs['coela'])}. Against pce: {vs_pce:+.1%} (target {bound}), "
        f"{_paired(benchmark, runs['cobel'], runs['pce'])}.",
    ]
    for ablation in ("no_sbr", "no_bbc"):
        rs = runs[f"cobel {ablation}"]
        ratio = s[f"cobel {ablation}"]["comm_tokens"] / max(1.0, s["cobel"]["comm_tokens"])
        versus = _paired(benchmark, rs, runs["cobel"])
        lines.append(f"{ablation} against the full method: {ratio:.1f}x its comm tokens, {versus}.")
    return " ".join(lines)


def _tuning(command: str) -> list[str]:
    """cobel against pce on the generators' seeds cobel was tuned on, episode by episode."""
    lines = [
        "",
        "### cobel against pce on the tuning seeds",
        "",
        f"Produced by `{command}`: the generators' episodes cobel was tuned on (never the test sets or seed "
        f"{HELD_OUT_SEED}), two agents.",
        "",
        "| benchmark | seeds | episodes | pce | cobel | cobel − pce |",
        "|---|---|---|---|---|---|",
    ]
    for benchmark, (seeds, count) in TUNING.items():
        specs = [fresh_episode(benchmark, seed, i) for seed in seeds for i in range(count)]
        pce, cobel = _run(specs, "pce", {}), _run(specs, "cobel", {})
        key = "steps" if benchmark == Benchmark.CWAH else "transport_rate"
        digits = 1 if benchmark == Benchmark.CWAH else 3
        a, b = summarize(pce)[key], summarize(cobel)[key]
        lines.append(
            f"| {benchmark.value} ({'steps' if key == 'steps' else 'transport rate'}) | {seeds.start}-{seeds.stop - 1} "
            f"| {len(specs)} | {a:.{digits}f} | {b:.{digits}f} | {_paired(benchmark, cobel, pce)} |"
        )
    return lines


def section(command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Two agents, symbolic backend. Comm tokens are the o200k tokens of the message "
        "texts (the papers' measure of talk).",
    ]
    for suite in ("cwah-test", "tdwmat-test"):
        specs = get_suite(suite).episodes()
        benchmark = Benchmark(get_suite(suite).benchmark)
        runs = {label: _run(specs, method, params) for label, method, params in VARIANTS}
        print(suite, {k: round(statistics.fmean(r.steps for r in v), 1) for k, v in runs.items()}, flush=True)
        lines += [
            "",
            f"### {suite} ({len(specs)} episodes)",
            "",
            *_table(benchmark, runs),
            "",
            _verdict(benchmark, runs),
        ]
    for benchmark, count in FRESH.items():
        specs = [fresh_episode(benchmark, HELD_OUT_SEED, i) for i in range(count)]
        runs = {label: _run(specs, method, params) for label, method, params in VARIANTS}
        suite = benchmark.value
        lines += [
            "",
            f"### Fresh `{suite}` episodes of seed {HELD_OUT_SEED} ({count} episodes, never tuned on)",
            "",
            *_table(benchmark, runs),
            "",
            _verdict(benchmark, runs),
        ]
    lines += _tuning(command)
    lines += ["", *READING]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/cobel.py", __doc__ or "", section, TITLE, pooled=True)


if __name__ == "__main__":
    sys.exit(main())
