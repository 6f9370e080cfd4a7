"""Each paper's ablations beside ours, and the methods compared, on the test suites and on fresh episodes.

    python bench/ablations.py --out docs/benchmarks.md   # also run by make bench

Two agents, symbolic backend, run seed 0. For each paper, its ablation table (the variants of its own table, the
paper's figure beside each) is played on four sets: cwah-test (10 episodes), tdwmat-test (24), and fresh episodes of
the generator seed 2026 that nothing was tuned on (30 C-WAH, 24 TDW-MAT). EvoCF's variants play the same episodes
with the strict suites' handling limits, where what it learns from failures can act. Each cell is the variant's mean
and its paired difference from the full method over the same episodes, with the difference's standard error; a
difference within two standard errors is noise. Then every method on the fresh episodes against the oracle
(time per decision: bench/timing.py). Re-running replaces the section of the same title.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import episodes  # bench/ is on sys.path when this file runs as a script
import evocf as evocf_bench
import mindmap as mindmap_bench
import reveca as reveca_bench
from coteam.domain.world import Benchmark
from coteam_harness.results import EpisodeResult, compared, paired_difference, score, versus
from coteam_sim.suites import EpisodeSpec, fresh_episode, get_suite

TITLE = "## The papers' mechanisms: ablations and the methods compared"
HELD_OUT_SEED = 2026
FRESH = {Benchmark.CWAH: 30, Benchmark.TDWMAT: 24}
SETS = ("cwah-test", "fresh cwah", "tdwmat-test", "fresh tdwmat")
BASELINE = {Benchmark.CWAH: "mhp", Benchmark.TDWMAT: "rhp"}  # the papers' planner baselines on each benchmark
METHODS = ("pce", "cobel", "reveca", "mindmap", "evocf", "coela", "random")  # then the baseline; the oracle apart


@dataclass(frozen=True)
class Variant:
    label: str
    switches: dict[str, Any]
    paper: str  # the paper's figure for it ("" when the paper has none)


@dataclass(frozen=True)
class PaperTable:
    method: str
    source: str  # the paper's table and its metric
    higher_is_better: bool  # the paper's metric
    variants: tuple[Variant, ...]  # the full method first
    strict: bool = False  # played with the strict suites' handling limits


def _variants(rows: Sequence[tuple[str, dict, str]], full: str) -> tuple[Variant, ...]:
    """A paper bench's (label, switches, figure) rows as variants, the full method (``full``) first."""
    variants = [Variant(label, dict(switches), paper) for label, switches, paper in rows]
    return tuple(sorted(variants, key=lambda v: v.label != full))


PAPERS = (
    PaperTable(
        "pce",
        "PCE, Tables 3 and 8 (C-WAH steps, GPT-4o mini)",
        False,
        (
            Variant("pce", {}, "42.76"),
            Variant("no_planner", {"ablation": "no_planner"}, "56.46"),
            Variant("no_composer", {"ablation": "no_composer"}, "46.82"),
            Variant("no_evaluator", {"ablation": "no_evaluator"}, "47.34"),
            Variant("physical_only", {"ablation": "physical_only"}, "45.38"),
            Variant("communication_only", {"ablation": "communication_only"}, "46.69"),
        ),
    ),
    PaperTable(
        "cobel",
        "CoBel-World, Table 3 (C-WAH steps, GPT-4o)",
        False,
        (
            Variant("cobel", {}, "51"),
            Variant("no_sbr", {"ablation": "no_sbr"}, "55"),
            Variant("no_bbc", {"ablation": "no_bbc"}, "68"),
        ),
    ),
    PaperTable(
        "reveca",
        "REVECA, Table 5 (C-WAH steps, GPT-4o-mini)",
        False,
        _variants([row[:3] for row in reveca_bench.ABLATIONS], "full (K=3, R=4)"),
    ),
    PaperTable(
        "mindmap",
        "Mind-Map, Table 3 (C-WAH steps, GPT-4o-mini)",
        False,
        _variants([row[:3] for row in mindmap_bench.ABLATIONS], "all three (the method)"),
    ),
    PaperTable(
        "evocf",
        "EvoCF, Table 5 (MAP-THOR success rate)",
        True,
        _variants(evocf_bench.VARIANTS, "evocf"),
        strict=True,
    ),
)


def _sets(strict: bool) -> dict[str, list[EpisodeSpec]]:
    """The four sets of episodes (with the strict suites' handling limits, when ``strict``)."""
    sets = {
        "cwah-test": get_suite("cwah-test").episodes(),
        "fresh cwah": [fresh_episode(Benchmark.CWAH, HELD_OUT_SEED, i) for i in range(FRESH[Benchmark.CWAH])],
        "tdwmat-test": get_suite("tdwmat-test").episodes(),
        "fresh tdwmat": [fresh_episode(Benchmark.TDWMAT, HELD_OUT_SEED, i) for i in range(FRESH[Benchmark.TDWMAT])],
    }
    if strict:
        return {name: [dataclasses.replace(s, strict=True) for s in specs] for name, specs in sets.items()}
    return sets


def _mean(results: list[EpisodeResult]) -> str:
    value = statistics.fmean(score(r) for r in results)
    return f"{value:.1f}" if results[0].benchmark == "cwah" else f"{value:.3f}"


def _same(a: list[EpisodeResult], b: list[EpisodeResult]) -> int:
    """Episodes the two play to the same end (steps, transport and messages alike)."""

    def end(r: EpisodeResult) -> tuple:
        return r.steps, r.transport_rate, r.messages

    return sum(end(x) == end(y) for x, y in zip(a, b, strict=True))


def _paper_worse(table: PaperTable, variant: Variant) -> bool | None:
    """Whether the paper found ``variant`` worse than its full method (None: no figure)."""
    full, mine = table.variants[0].paper, variant.paper
    if not full or not mine:
        return None
    return (float(mine) < float(full)) if table.higher_is_better else (float(mine) > float(full))


def _ablation_table(table: PaperTable) -> list[str]:
    sets = _sets(table.strict)
    runs = {
        v.label: {name: episodes.play(specs, table.method, v.switches) for name, specs in sets.items()}
        for v in table.variants
    }
    full = runs[table.variants[0].label]
    head = " | ".join(f"{name} | Δ ± SE" for name in SETS)
    lines = [
        f"### {table.source}" + (" — played with the strict handling limits" if table.strict else ""),
        "",
        f"| variant | paper | {head} | same end as the full method |",
        "|---|---|" + "---|---|" * len(SETS) + "---|",
    ]
    for v in table.variants:
        mine = runs[v.label]
        cells = " | ".join(
            f"{_mean(mine[name])} | {'' if v is table.variants[0] else versus(mine[name], full[name])}" for name in SETS
        )
        total = sum(len(full[n]) for n in SETS)
        same = "" if v is table.variants[0] else f"{sum(_same(mine[n], full[n]) for n in SETS)} of {total}"
        lines.append(f"| {v.label} | {v.paper} | {cells} | {same} |")
        print(lines[-1], flush=True)
    lines += ["", *_ablation_reading(table, runs)]
    return lines


def _ablation_reading(table: PaperTable, runs: dict[str, dict[str, list[EpisodeResult]]]) -> list[str]:
    """Per variant, in words computed from the table: against the full method on each set, and whether that is the
    paper's direction; a variant that changed no episode's end is named as such."""
    full = runs[table.variants[0].label]
    lines = []
    for v in table.variants[1:]:
        mine = runs[v.label]
        verdicts = {name: compared(mine[name], full[name]).split(" (")[0] for name in SETS}
        worse = [n for n in SETS if verdicts[n] == "worse"]
        better = [n for n in SETS if verdicts[n] == "better"]
        paper = _paper_worse(table, v)
        said = f"- {v.label}: worse on {', '.join(worse) or 'no set'}; better on {', '.join(better) or 'no set'}"
        unchanged = sum(_same(mine[n], full[n]) for n in SETS)
        total = sum(len(full[n]) for n in SETS)
        if unchanged == total:
            said += "; it changed no episode's end here (the switch takes out nothing these episodes used)"
        if paper is not None:
            hurt = bool(worse) and not better
            said += "; the paper has it " + ("worse" if paper else "no worse") + " than the full method"
            said += " — the same direction here" if hurt == paper else " — not so here"
        lines.append(said + ".")
    return lines


def _comparison() -> list[str]:
    """Every method on the fresh episodes against the oracle."""
    lines = [
        "### Every method on fresh episodes of seed 2026, against the oracle",
        "",
        "| method | fresh cwah steps | Δ from oracle ± SE | fresh tdwmat transport | Δ from oracle ± SE |",
        "|---|---|---|---|---|",
    ]
    sets = _sets(False)
    oracle = {name: episodes.play(sets[name], "oracle") for name in ("fresh cwah", "fresh tdwmat")}
    played: dict[str, dict[str, list[EpisodeResult]]] = {}
    for method in (*METHODS, "baseline"):
        row = {}
        for name, benchmark in (("fresh cwah", Benchmark.CWAH), ("fresh tdwmat", Benchmark.TDWMAT)):
            row[name] = episodes.play(sets[name], BASELINE[benchmark] if method == "baseline" else method)
        played[method] = row
        label = "mhp / rhp" if method == "baseline" else method
        cells = " | ".join(f"{_mean(row[n])} | {versus(row[n], oracle[n])}" for n in row)
        lines.append(f"| {label} | {cells} |")
        print(lines[-1], flush=True)
    lines.append(f"| oracle | {_mean(oracle['fresh cwah'])} | | {_mean(oracle['fresh tdwmat'])} | |")
    lines.append("")
    for name in ("fresh cwah", "fresh tdwmat"):
        cwah = name == "fresh cwah"
        ranked = sorted(played, key=lambda m: statistics.fmean(score(r) for r in played[m][name]), reverse=not cwah)
        best, second = ranked[0], ranked[1]
        label = {"baseline": "mhp / rhp"}
        lines.append(
            f"- {name}: best {label.get(best, best)}, then {label.get(second, second)} "
            f"({compared(played[best][name], played[second][name])}); "
            f"the best is {abs(paired_difference(played[best][name], oracle[name])[0]):.{1 if cwah else 3}f} "
            f"from the oracle."
        )
    return lines


def section(command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. Two agents, symbolic backend, run seed 0. Each paper's ablation table on "
        "cwah-test, fresh C-WAH episodes of seed 2026 (30), tdwmat-test and fresh TDW-MAT episodes of seed 2026 "
        "(24); EvoCF's with the strict suites' handling limits. Why a switch moves a result or not, decision by "
        "decision: the section of bench/ablation_decisions.py.",
        "",
    ]
    lines += [
        "How to read it. Each cell: the variant's mean over the set (C-WAH steps, fewer is better; TDW-MAT "
        "transport rate, higher is better), then its paired difference from the full method over the same episodes "
        '± the difference\'s standard error. "Same end" counts the episodes a variant plays to exactly the full '
        "method's end: a switch that changes no episode's end takes out nothing these episodes used. The lines under "
        "each table are computed from it: worse or better when the difference passes two standard errors.",
        "",
    ]
    for table in PAPERS:
        lines += [*_ablation_table(table), ""]
    lines += [*_comparison(), "", "Every method's time per decision: the section of bench/timing.py."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/ablations.py", __doc__ or "", section, TITLE, pooled=True)


if __name__ == "__main__":
    sys.exit(main())
