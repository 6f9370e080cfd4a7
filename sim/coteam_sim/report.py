"""Paper-style comparison tables of several methods on one suite: markdown, JSON and a bar chart."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coteam.world import Benchmark
from coteam_sim.runner import EpisodeResult, summarize


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


def markdown(rows: list[dict[str, Any]], benchmark: Benchmark, title: str) -> str:
    if benchmark == Benchmark.CWAH:
        head = "| method | Total Steps ↓ | Comm | Usages | × oracle steps |\n|---|---|---|---|---|"
        body = [
            f"| {r['method']} | {_fmt(r['total_steps'])} | {_fmt(r['comm'])} | {_fmt(r['usages'])} | "
            f"{_fmt(r['vs_oracle'])} |"
            for r in rows
        ]
    else:
        head = (
            "| method | Total % ↑ | Food % | Stuff % | Comm | Usages | × oracle rate |\n|---|---|---|---|---|---|---|"
        )
        body = [
            f"| {r['method']} | {_fmt(r['total'], True)} | {_fmt(r['food'], True)} | {_fmt(r['stuff'], True)} | "
            f"{_fmt(r['comm'])} | {_fmt(r['usages'])} | {_fmt(r['vs_oracle'])} |"
            for r in rows
        ]
    return f"## {title}\n\n{head}\n" + "\n".join(body) + "\n"


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
