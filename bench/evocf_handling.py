"""EvoCF learning a home it was not written for: a handling file of our own making, a second pass, new episodes.

    python bench/evocf_handling.py --out docs/benchmarks.md   # also run by make bench

The handling file bench/handling/soft-grippers.yaml has limits unlike the strict suites' (soft grippers that drop
cakes, a fridge nothing comes out of into a hand while the other holds something, no fork picked up beside a plate)
and one terse reason for all of them ("grasp failed"), so only the facts of the failures tell them apart. Two
agents, symbolic backend, fresh C-WAH episodes of the held-out seed 2026 under that file, as `coteam run --suite
cwah --seed 2026 --team evocf --handling bench/handling/soft-grippers.yaml --set store=FILE` plays them: episodes
0-9, then the same 0-9 again with the memory of the first pass, then new episodes 10-19 with the memory of both.
The variant without rule induction keeps its memory of outcomes the same way but learns no rule. Re-running replaces
the section of the same title.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

from coteam.domain.handling_file import load_handling
from coteam.domain.world import Benchmark
from coteam_harness.cli import run_suite
from coteam_harness.results import EpisodeResult, compared, paired_difference
from coteam_sim.suites import EpisodeSpec, fresh_episode

TITLE = "## EvoCF learning a home of our own making"
SEED = 2026
HANDLING = Path(__file__).parent / "handling" / "soft-grippers.yaml"
FIRST, NEW = range(10), range(10, 20)
VARIANTS = {"evocf": {}, "evocf, no rule induction": {"induction": False}}


def _specs(indices: range) -> list[EpisodeSpec]:
    limits = load_handling(HANDLING)
    return [dataclasses.replace(fresh_episode(Benchmark.CWAH, SEED, i), handling=limits) for i in indices]


def _passes(switches: dict, work: Path) -> dict[str, list[EpisodeResult]]:
    """The three passes of one variant, one memory file through them."""
    store = work / "memory.db"
    params = {**switches, "store": str(store)}
    out = {}
    for name, indices in (("first pass, 0-9", FIRST), ("second pass, 0-9", FIRST), ("new episodes, 10-19", NEW)):
        out[name] = run_suite(_specs(indices), "evocf", 2, params, work / name, SEED, quiet=True, workers=1)
    return out


def _failed(results: list[EpisodeResult]) -> float:
    return statistics.fmean(r.failed_actions for r in results)


def _paired(a: list[EpisodeResult], b: list[EpisodeResult]) -> str:
    mean, se = paired_difference(a, b, "failed_actions")
    return f"{mean:+.1f} (paired SE {se:.1f}{', within noise' if abs(mean) <= 2 * se else ''})"


def section(command: str) -> str:
    lines = [TITLE, "", f"Produced by `{command}`. {' '.join(__doc__.split(chr(10) + chr(10))[2].split())}", ""]
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for label, switches in VARIANTS.items():
            work = Path(folder) / label.replace(" ", "_").replace(",", "")
            runs[label] = _passes(switches, work)
    passes = list(next(iter(runs.values())))
    lines += [
        "| variant | " + " | ".join(f"{p}: failed actions / episode | steps" for p in passes) + " |",
        "|---|" + "---|---|" * len(passes),
    ]
    for label, by_pass in runs.items():
        cells = [f"{_failed(rs):.1f} | {statistics.fmean(r.steps for r in rs):.1f}" for rs in by_pass.values()]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    learner, plain = runs["evocf"], runs["evocf, no rule induction"]
    first, second, new = passes
    second_vs_first = _paired(learner[second], learner[first])
    lines += [
        "",
        f"- evocf's failed actions per episode: {_failed(learner[first]):.1f} on the first pass, "
        f"{_failed(learner[second]):.1f} on the second, {_failed(learner[new]):.1f} on new episodes; without rule "
        f"induction {_failed(plain[first]):.1f}, {_failed(plain[second]):.1f} and {_failed(plain[new]):.1f}.",
        f"- evocf's second pass against its first, failed actions per episode: {second_vs_first}; against no rule "
        f"induction on the second pass: {_paired(learner[second], plain[second])}, on new episodes: "
        f"{_paired(learner[new], plain[new])}.",
        f"- Steps, evocf against no rule induction: second pass {compared(learner[second], plain[second])}; new "
        f"episodes {compared(learner[new], plain[new])}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/evocf_handling.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
