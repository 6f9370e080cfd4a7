"""Episode results and suite summaries: the papers' metrics, as ``results.json`` stores them."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class EpisodeResult:
    episode: str
    scene: str
    task: str
    benchmark: str
    agents: int
    team: str
    success: bool
    steps: int  # C-WAH: steps to finish (horizon on failure); TDW-MAT: frames used
    transport_rate: float  # fraction of goal items in place at the end
    food_rate: float | None
    stuff_rate: float | None
    messages: int
    message_chars: int
    comm_tokens: int  # tokens of the message texts (o200k): the papers' measure of talk
    tokens: int  # LLM tokens spent deciding
    llm_calls: int
    llm_fallbacks: int  # role answers that fell back to the symbolic solver
    decisions: int
    decision_ms_mean: float
    decision_ms_median: float
    decision_ms_p95: float
    wall_s: float
    travel_m: dict[str, float] = field(default_factory=dict)  # metres walked per agent
    primitive_share: dict[str, float] = field(default_factory=dict)  # each agent's share of the team's primitives
    payloads_dropped: int = 0  # teammate message payloads rejected on receipt
    rejected_lines: int = 0  # lines of model answers a parser rejected (garbled belief statements)
    llm_deadlines: int = 0  # fallbacks because the decision's time budget ran out (LLM roles with decision_budget_s)
    trace: str | None = None
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def failed_actions(self) -> int:
        """Primitives that failed, whatever the reason."""
        return sum(self.failures.values())

    @property
    def travel_total_m(self) -> float:
        return sum(self.travel_m.values())

    @property
    def balance(self) -> float:
        """The least busy agent's share of primitives relative to an even split (1 = even, 0 = one idle)."""
        if len(self.primitive_share) < 2:
            return 1.0
        return min(self.primitive_share.values()) * len(self.primitive_share)


def p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def summarize(results: list[EpisodeResult]) -> dict[str, Any]:
    if not results:
        return {}

    def mean(values: list[Any]) -> float:
        vals = [v for v in values if v is not None]
        return statistics.fmean(vals) if vals else float("nan")

    def of(key: str) -> float:
        return mean([getattr(r, key) for r in results])

    out = {
        "episodes": len(results),
        "success_rate": of("success"),
        "steps": of("steps"),
        "transport_rate": of("transport_rate"),
        "messages": of("messages"),
        "message_chars": of("message_chars"),
        "comm_tokens": of("comm_tokens"),
        "tokens": of("tokens"),
        "llm_calls": of("llm_calls"),
        "llm_fallbacks": of("llm_fallbacks"),
        "llm_deadlines": of("llm_deadlines"),
        "rejected_lines": of("rejected_lines"),
        "failed_actions": of("failed_actions"),
        "travel_m": of("travel_total_m"),
        "balance": of("balance"),
        "payloads_dropped": of("payloads_dropped"),
        "decision_ms_mean": of("decision_ms_mean"),
        "wall_s": sum(r.wall_s for r in results),
    }
    for cat in ("food", "stuff"):
        vals = [getattr(r, f"{cat}_rate") for r in results if getattr(r, f"{cat}_rate") is not None]
        if vals:
            out[f"{cat}_rate"] = statistics.fmean(vals)
    return out


def write_results(results: list[EpisodeResult], path: str | Path, meta: Mapping[str, Any]) -> None:
    Path(path).write_text(
        json.dumps(
            {"meta": dict(meta), "summary": summarize(results), "episodes": [asdict(r) for r in results]}, indent=1
        )
    )
