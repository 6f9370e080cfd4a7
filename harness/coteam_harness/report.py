"""Paper-style comparison tables of several methods on one suite: markdown, JSON and a bar chart."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coteam.world import Benchmark
from coteam_harness.results import EpisodeResult, summarize


def comparison(results: Mapping[str, list[EpisodeResult]], benchmark: Benchmark) -> list[dict[str, Any]]:
    """One row per method: the papers' metrics plus the ratio to the oracle when it was run."""
    rows = []
    oracle = summarize(results["oracle"]) if "oracle" in results else None
    for method, rs in results.items():
        s = summarize(rs)
        row: dict[str, Any] = {
            "method": method,
            "episodes": len(rs),
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


def markdown(rows: list[dict[str, Any]], benchmark: Benchmark, title: str) -> str:
    """Comm = messages, Chars = their characters, Comm tokens = their o200k tokens (per episode); Travel m =
    metres walked by the whole team; Balance = the least busy agent's share of primitives against an even split;
    Failed = failed primitives; Usages = LLM tokens."""
    if benchmark == Benchmark.CWAH:
        head = "| method | Total Steps ↓ " + TALK_HEAD + " × oracle steps |\n|" + "---|" * 10
        body = [
            f"| {r['method']} | {_fmt(r['total_steps'])} | " + _talk(r) + f" {_fmt(r['vs_oracle'])} |" for r in rows
        ]
    else:
        head = "| method | Total % ↑ | Food % | Stuff % " + TALK_HEAD + " × oracle rate |\n|" + "---|" * 12
        body = [
            f"| {r['method']} | {_fmt(r['total'], True)} | {_fmt(r['food'], True)} | {_fmt(r['stuff'], True)} | "
            + _talk(r)
            + f" {_fmt(r['vs_oracle'])} |"
            for r in rows
        ]
    return f"## {title}\n\n{head}\n" + "\n".join(body) + "\n"


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
        s = [summarize(list(by_count[n][m])) for n in counts]
        body.append(
            f"| {m} | "
            + " | ".join(f"{x[metric]:.3f}" if metric == "transport_rate" else f"{x[metric]:.1f}" for x in s)
            + " | "
            + " | ".join(f"{x['messages']:.1f}" for x in s)
            + " |"
        )
    return f"## {suite}: scaling with the number of agents\n\n{head}\n" + "\n".join(body) + "\n"


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
    bars = ax.bar([r["method"] for r in rows], values, color="#4c78a8")
    for bar, v in zip(bars, values, strict=True):
        ax.annotate(
            f"{v:.2f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8
        )
    ax.set_ylabel(label)
    ax.set_title(title, fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out


def write_report(results: Mapping[str, list[EpisodeResult]], benchmark: Benchmark, suite: str, out: Path) -> dict:
    rows = comparison(results, benchmark)
    title = f"{suite}: {', '.join(results)}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.md").write_text(markdown(rows, benchmark, title))
    (out / "comparison.json").write_text(json.dumps({"suite": suite, "rows": rows}, indent=1))
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
    """A table of the papers' orderings against ours (``runs``: suite -> method -> results), then a line for each
    one that does not hold, with its ``why_not``. Orderings whose methods were not run are left out."""
    rows, misses = [], []
    for o in orderings:
        by_method = runs.get(o.suite, {})
        if o.better not in by_method or o.worse not in by_method:
            continue
        ours = summarize(list(by_method[o.better]))[o.metric], summarize(list(by_method[o.worse]))[o.metric]
        holds = ours[0] < ours[1] if LOWER_IS_BETTER[o.metric] else ours[0] > ours[1]
        claim = f"{o.better} {'<' if LOWER_IS_BETTER[o.metric] else '>'} {o.worse} ({o.metric.replace('_', ' ')})"
        digits = 3 if o.metric == "transport_rate" else 1
        rows.append(
            f"| {o.suite} | {claim} | {o.paper} | {ours[0]:.{digits}f} vs {ours[1]:.{digits}f} | "
            f"{'yes' if holds else '**no**'} |"
        )
        if not holds:
            misses.append(f"- {o.suite}, {claim}: {o.why_not or 'not explained yet.'}")
    if not rows:
        return []
    return ["| suite | the paper's ordering | paper | ours | holds |", "|---|---|---|---|---|", *rows, "", *misses]
