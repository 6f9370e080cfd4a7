"""Paper-style comparison tables of several methods on one suite: markdown, JSON and a bar chart."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from coteam.domain.world import Benchmark
from coteam_harness.results import EpisodeResult, paired_difference, summarize


def headline(benchmark: Benchmark) -> str:
    """The metric a benchmark's tables lead with: total steps (C-WAH) or the transport rate (TDW-MAT)."""
    return "steps" if benchmark == Benchmark.CWAH else "transport_rate"


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """The mean of ``values`` and its standard error (the sample standard deviation over the root of their number;
    0 for a single value)."""
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def paired(
    results: Sequence[EpisodeResult], reference: Sequence[EpisodeResult], metric: str
) -> tuple[float, float, int] | None:
    """``metric`` of ``results`` minus ``reference``'s over the episodes both ran: the mean difference, its standard
    error and the number of shared episodes (None when they share none). Pairing removes what the episodes
    themselves vary by, so a difference is seen on fewer episodes than two means need."""
    theirs = {r.episode: getattr(r, metric) for r in reference}
    diffs = [getattr(r, metric) - theirs[r.episode] for r in results if r.episode in theirs]
    return (*mean_se(diffs), len(diffs)) if diffs else None


def comparison(
    results: Mapping[str, list[EpisodeResult]], benchmark: Benchmark, reference: str | None = None
) -> list[dict[str, Any]]:
    """One row per method: the papers' metrics, the headline metric's standard error (``se``), the ratio to the
    oracle when it was run, and the headline metric's paired difference to ``reference`` (``vs_reference``: mean,
    standard error, shared episodes)."""
    rows = []
    oracle = summarize(results["oracle"]) if "oracle" in results else None
    metric = headline(benchmark)
    for method, rs in results.items():
        s = summarize(rs)
        row: dict[str, Any] = {
            "method": method,
            "episodes": len(rs),
            "se": mean_se([getattr(r, metric) for r in rs])[1],
            "vs_reference": paired(rs, results[reference], metric) if reference and method != reference else None,
            "comm": s["messages"],
            "chars": s["message_chars"],
            "comm_tokens": s["comm_tokens"],
            "travel_m": s["travel_m"],
            "balance": s["balance"],
            "failed": s["failed_actions"],
            "usages": s["tokens"],
            "llm_fallbacks": s["llm_fallbacks"],
        }
        if benchmark == Benchmark.CWAH:
            row["total_steps"] = s["steps"]
            row["vs_oracle"] = s["steps"] / oracle["steps"] if oracle else None
        else:
            row["total"] = s["transport_rate"]
            row["food"] = s.get("food_rate")
            row["stuff"] = s.get("stuff_rate")
            row["vs_oracle"] = s["transport_rate"] / oracle["transport_rate"] if oracle else None
        rows.append(row)
    return rows


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if pct:
        return f"{100 * value:.2f}"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


TALK_HEAD = "| Comm | Chars | Comm tokens | Travel m | Balance | Failed | Usages |"


def _talk(r: dict[str, Any]) -> str:
    return (
        f"{_fmt(r['comm'])} | {r['chars']:.0f} | {r['comm_tokens']:.0f} | {r['travel_m']:.1f} | {r['balance']:.2f} | "
        f"{_fmt(r['failed'])} | {r['usages']:.0f} |"
    )


def _paired(r: dict[str, Any], pct: bool) -> str:
    diff = r["vs_reference"]
    if diff is None:
        return "–"
    scale = 100 if pct else 1
    return f"{scale * diff[0]:+.2f} ± {scale * diff[1]:.2f} ({diff[2]})"


def markdown(rows: list[dict[str, Any]], benchmark: Benchmark, title: str, reference: str | None = None) -> str:
    """n = episodes; ± = the standard error of the mean over them; Δ = the paired difference to ``reference`` over
    the episodes both ran (± its standard error, (episodes)). Comm = messages, Chars = their characters, Comm
    tokens = their o200k tokens (per episode); Travel m = metres walked by the whole team; Balance = the least busy
    agent's share of primitives against an even split; Failed = failed primitives; Usages = LLM tokens."""
    cwah = benchmark == Benchmark.CWAH
    delta = [f"Δ vs {reference}" + ("" if cwah else " (points)")] if reference else []
    main = ["Total Steps ↓"] if cwah else ["Total % ↑", *delta, "Food %", "Stuff %"]
    if cwah:
        main += delta
    columns = ["method", "n", *main, *TALK_HEAD.strip("| ").split(" | "), "× oracle steps" if cwah else "× oracle rate"]
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
    body = []
    for r in rows:
        cells = [r["method"], str(r["episodes"])]
        if cwah:
            cells.append(f"{_fmt(r['total_steps'])} ± {r['se']:.2f}")
            cells += [_paired(r, False)] if reference else []
        else:
            cells.append(f"{_fmt(r['total'], True)} ± {100 * r['se']:.2f}")
            cells += [_paired(r, True)] if reference else []
            cells += [_fmt(r["food"], True), _fmt(r["stuff"], True)]
        body.append("| " + " | ".join(cells) + " | " + _talk(r) + f" {_fmt(r['vs_oracle'])} |")
    note = "n: episodes; ±: standard error of the mean"
    if reference:
        note += f"; Δ: paired difference to {reference} over the episodes both ran (± its standard error, (episodes))"
    return f"## {title}\n\n{head}\n" + "\n".join(body) + f"\n\n{note}.\n"


def scaling_markdown(
    by_count: Mapping[int, Mapping[str, list[EpisodeResult]]], benchmark: Benchmark, suite: str
) -> str:
    """Methods by team size: steps (C-WAH) or transport rate (TDW-MAT), and messages per episode."""
    counts = sorted(by_count)
    methods = list(by_count[counts[0]])
    metric, label = ("steps", "steps ↓") if benchmark == Benchmark.CWAH else ("transport_rate", "transport rate ↑")
    head = (
        "| method | "
        + " | ".join(f"{n} agents: {label}" for n in counts)
        + " | "
        + " | ".join(f"{n}: msgs" for n in counts)
        + " |\n|"
        + "---|" * (1 + 2 * len(counts))
    )
    body = []
    for m in methods:
        spread = [mean_se([getattr(r, metric) for r in by_count[n][m]]) for n in counts]
        s = [summarize(list(by_count[n][m])) for n in counts]
        digits = 3 if metric == "transport_rate" else 1
        body.append(
            f"| {m} | "
            + " | ".join(f"{mean:.{digits}f} ± {se:.{digits}f}" for mean, se in spread)
            + " | "
            + " | ".join(f"{x['messages']:.1f}" for x in s)
            + " |"
        )
    episodes = sorted({len(by_count[n][m]) for n in counts for m in methods})
    note = f"{'/'.join(map(str, episodes))} episodes per cell; ±: standard error of the mean."
    return f"## {suite}: scaling with the number of agents\n\n{head}\n" + "\n".join(body) + f"\n\n{note}\n"


def bar_chart(rows: list[dict[str, Any]], benchmark: Benchmark, title: str, out: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    key, label = (
        ("total_steps", "total steps (lower is better)")
        if benchmark == Benchmark.CWAH
        else ("total", "transport rate (higher is better)")
    )
    fig = Figure(figsize=(max(4.0, 1.2 * len(rows) + 2), 3.6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    values = [r[key] for r in rows]
    errors = [r["se"] for r in rows]
    bars = ax.bar([r["method"] for r in rows], values, yerr=errors, capsize=3, color="#4c78a8")
    for bar, v, n in zip(bars, values, (r["episodes"] for r in rows), strict=True):
        ax.annotate(
            f"{v:.2f}\nn={n}",
            (bar.get_x() + bar.get_width() / 2, 0),
            ha="center",
            va="bottom",
            fontsize=7,
            color="white",
        )
    ax.set_ylabel(label)
    ax.set_title(f"{title}\n(error bars: standard error of the mean)", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out


def write_report(
    results: Mapping[str, list[EpisodeResult]],
    benchmark: Benchmark,
    suite: str,
    out: Path,
    reference: str | None = None,
) -> dict:
    """The comparison table (markdown, JSON) and its bar chart, each method paired against ``reference``."""
    rows = comparison(results, benchmark, reference)
    title = f"{suite}: {', '.join(results)}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(markdown(rows, benchmark, title, reference))
    data = {"suite": suite, "metric": headline(benchmark), "reference": reference, "rows": rows}
    (out / "comparison.json").write_text(json.dumps(data, indent=1))
    bar_chart(rows, benchmark, title, out / "comparison.png")
    return {
        "rows": rows,
        "markdown": out / "comparison.md",
        "json": out / "comparison.json",
        "png": out / "comparison.png",
    }


LOWER_IS_BETTER = {"steps": True, "messages": True, "comm_tokens": True, "transport_rate": False}


@dataclass(frozen=True)
class PaperOrdering:
    """A paper's claim that ``better`` beats ``worse`` on ``metric`` (a key of :func:`summarize`) in ``suite``.

    ``paper`` says where the paper shows it, with its figures; ``why_not`` why our simulator does not reproduce it,
    written once a run showed it does not (empty while it does)."""

    suite: str
    better: str
    worse: str
    metric: str
    paper: str
    why_not: str = ""

    def __post_init__(self) -> None:
        if self.metric not in LOWER_IS_BETTER:
            raise ValueError(f"unknown metric {self.metric!r}: one of {', '.join(LOWER_IS_BETTER)}")


def orderings_markdown(
    runs: Mapping[str, Mapping[str, list[EpisodeResult]]], orderings: list[PaperOrdering]
) -> list[str]:
    """A table of the papers' orderings against ours (``runs``: suite -> method -> results over the same episodes):
    our means, their paired difference with its standard error, and whether the ordering holds (the sign the paper
    has, past two standard errors; "within noise" when not past them); then a line for each one whose sign is not
    the paper's, with its ``why_not``. Orderings whose methods were not run are left out."""
    rows, misses = [], []
    for o in orderings:
        by_method = runs.get(o.suite, {})
        if o.better not in by_method or o.worse not in by_method:
            continue
        better, worse = list(by_method[o.better]), list(by_method[o.worse])
        ours = summarize(better)[o.metric], summarize(worse)[o.metric]
        lower = LOWER_IS_BETTER[o.metric]
        mean, se = paired_difference(better, worse, o.metric)
        holds = mean < 0 if lower else mean > 0
        noise = abs(mean) <= 2 * se
        claim = f"{o.better} {'<' if lower else '>'} {o.worse} ({o.metric.replace('_', ' ')})"
        digits = 3 if o.metric == "transport_rate" else 1
        verdict = ("yes" if holds else "**no**") + (", within noise" if noise and mean != 0 else "")
        rows.append(
            f"| {o.suite} | {claim} | {o.paper} | {ours[0]:.{digits}f} vs {ours[1]:.{digits}f} | "
            f"{mean:+.{digits}f} ± {se:.{digits}f} | {verdict} |"
        )
        if not holds:
            misses.append(f"- {o.suite}, {claim}: {o.why_not or 'not explained yet.'}")
    if not rows:
        return []
    head = "| suite | the paper's ordering | paper | ours | paired Δ ± SE | holds |"
    return [head, "|---|---|---|---|---|---|", *rows, "", *misses]


def results_table(results: list[EpisodeResult], title: str) -> Table:
    tdw = results and results[0].benchmark == Benchmark.TDWMAT.value
    table = Table(title=title)
    for col in (
        "episode",
        "task",
        "success",
        "frames" if tdw else "steps",
        "transport rate",
        "messages",
        "comm tokens",
        "travel m",
        "failed",
        "LLM tokens",
        "ms/decision",
    ):
        if col == "episode":  # never cut: an episode id is what a reader looks up (other columns wrap first)
            table.add_column(col, no_wrap=True, min_width=max((len(r.episode) for r in results), default=7))
        else:
            table.add_column(col, justify="left" if col == "task" else "right")
    for r in results:
        table.add_row(
            r.episode,
            r.task,
            "yes" if r.success else "no",
            str(r.steps),
            f"{r.transport_rate:.2f}",
            str(r.messages),
            str(r.comm_tokens),
            f"{r.travel_total_m:.1f}",
            str(r.failed_actions),
            str(r.tokens),
            f"{r.decision_ms_mean:.2f}",
        )
    s = summarize(results)
    table.add_section()
    table.add_row(
        "mean",
        "",
        f"{s['success_rate']:.0%}",
        f"{s['steps']:.1f}",
        f"{s['transport_rate']:.3f}",
        f"{s['messages']:.1f}",
        f"{s['comm_tokens']:.0f}",
        f"{s['travel_m']:.1f}",
        f"{s['failed_actions']:.1f}",
        f"{s['tokens']:.0f}",
        f"{s['decision_ms_mean']:.2f}",
    )
    return table
