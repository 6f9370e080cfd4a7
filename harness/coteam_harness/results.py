"""Episode results and suite summaries: the papers' metrics, as ``results.json`` stores them.

Crash-safe: a run keeps its finished episodes in ``episodes.jsonl`` (:class:`ResultsLog`, one line per episode,
appended as each one ends, flushed and synced) and rewrites ``results.json`` atomically (a temporary file renamed
over it), so a run killed at any point leaves every episode it finished and a ``results.json`` that parses.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Mapping, Sequence
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
    messages_dropped: int = 0  # ROS: teammate messages refused (unknown sender, duplicate, replay, full inbox)
    messages_blocked: int = 0  # outgoing messages the message guard stopped (secret, repeated, too many)
    message_stalls: int = 0  # times the guard closed the channel after too many decisions in a row talked
    rejected_lines: int = 0  # lines of model answers a parser rejected (garbled belief statements)
    llm_deadlines: int = 0  # fallbacks because the decision's time budget ran out (LLM roles with decision_budget_s)
    llm_breaker: int = 0  # fallbacks because the circuit breaker was open (the model had stopped answering)
    teammates_lost: int = 0  # ROS: times a robot found a teammate silent past its lease (each robot counts its own)
    teammates_returned: int = 0  # ROS: times a robot heard a lost teammate again
    items_out_of_reach: int = 0  # ROS: items lost teammates were last known to hold when they were found lost
    safety_refusals: int = 0  # actions the safety policy refused, or a person did not approve (coteam.home.safety)
    retries_blocked: int = (
        0  # times an action failed the same way again and was blocked for a while (coteam.agent.retries)
    )
    passage_meetings: int = (
        0  # robots: times a robot met a teammate in a passage and gave way or held (coteam.home.passage)
    )
    trace: str | None = None
    failures: dict[str, int] = field(default_factory=dict)
    store_sha256: str | None = None  # the method's persisted store after this episode (coteam.kit.store)

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


def score(r: EpisodeResult) -> float:
    """The benchmark's own metric: C-WAH steps (fewer is better), TDW-MAT transport rate (higher is better)."""
    return r.steps if r.benchmark == "cwah" else r.transport_rate


def paired_difference(a: list[EpisodeResult], b: list[EpisodeResult], metric: str = "") -> tuple[float, float]:
    """The mean of ``score(a_i) - score(b_i)`` (or of a ``metric`` field of the results) over the same episodes and
    its standard error (0 for one episode)."""
    value = score if not metric else (lambda r: float(getattr(r, metric)))
    diffs = [value(x) - value(y) for x, y in zip(a, b, strict=True)]
    se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return statistics.fmean(diffs), se


def _digits(results: list[EpisodeResult]) -> int:
    """Decimals of the benchmark's metric in a table: C-WAH steps 1, TDW-MAT transport rate 3."""
    return 1 if results[0].benchmark == "cwah" else 3


def versus(a: list[EpisodeResult], b: list[EpisodeResult]) -> str:
    """``a`` minus ``b`` over the same episodes with its standard error, as a table cell: ``+1.4 ± 6.4``."""
    mean, se = paired_difference(a, b)
    digits = _digits(a)
    return f"{mean:+.{digits}f} ± {se:.{digits}f}"


def compared(a: list[EpisodeResult], b: list[EpisodeResult]) -> str:
    """``a`` against ``b`` over the same episodes in words, from their paired difference and its standard error:
    "better" or "worse" on the benchmark's metric when the difference passes two standard errors, else "within
    noise"; the difference follows in brackets (C-WAH steps: fewer is better; TDW-MAT transport rate: higher)."""
    mean, se = paired_difference(a, b)
    cwah, digits = a[0].benchmark == "cwah", _digits(a)
    said = f"({mean:+.{digits}f} {'steps' if cwah else 'transport'}, paired SE {se:.{digits}f})"
    if abs(mean) <= 2 * se or mean == 0:
        return f"within noise {said}"
    return f"{'better' if (mean < 0) == cwah else 'worse'} {said}"


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
        "llm_breaker": of("llm_breaker"),
        "rejected_lines": of("rejected_lines"),
        "failed_actions": of("failed_actions"),
        "travel_m": of("travel_total_m"),
        "balance": of("balance"),
        "payloads_dropped": of("payloads_dropped"),
        "messages_dropped": of("messages_dropped"),
        "teammates_lost": of("teammates_lost"),
        "teammates_returned": of("teammates_returned"),
        "items_out_of_reach": of("items_out_of_reach"),
        "safety_refusals": of("safety_refusals"),
        "retries_blocked": of("retries_blocked"),
        "passage_meetings": of("passage_meetings"),
        "messages_blocked": of("messages_blocked"),
        "message_stalls": of("message_stalls"),
        "decision_ms_mean": of("decision_ms_mean"),
        "wall_s": sum(r.wall_s for r in results),
    }
    for cat in ("food", "stuff"):
        vals = [getattr(r, f"{cat}_rate") for r in results if getattr(r, f"{cat}_rate") is not None]
        if vals:
            out[f"{cat}_rate"] = statistics.fmean(vals)
    return out


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` all at once: readers see the old file or the new one, never a part."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_results(
    results: list[EpisodeResult],
    path: str | Path,
    meta: Mapping[str, Any],
    *,
    stopped: str | None = None,
    interrupted: Sequence[Mapping[str, Any]] = (),
    planned: int | None = None,
    failed: Mapping[str, str] | None = None,
) -> None:
    """``results.json``: the run's ``meta``, ``complete`` (false when ``stopped``, e.g. by "SIGTERM", or while
    fewer than ``planned`` episodes are in), the summary and every episode; ``interrupted`` names the episodes that
    were running when the run stopped, ``failed`` the episodes that failed and why (``--resume`` plays them again).
    ``complete`` false without ``stopped``: the run is still going, or it was killed outright."""
    finished = planned is None or len(results) >= planned
    data: dict[str, Any] = {"meta": dict(meta), "complete": stopped is None and finished}
    if stopped is not None:
        data["stopped"] = stopped
    if interrupted:
        data["interrupted"] = [dict(i) for i in interrupted]
    if failed:
        data["failed"] = [{"episode": name, "reason": reason} for name, reason in failed.items()]
    data.update(summary=summarize(results), episodes=[asdict(r) for r in results])
    atomic_write_text(path, json.dumps(data, indent=1))


RESULTS_LOG = "episodes.jsonl"
RESULTS_JSON = "results.json"


class ResultsLog:
    """The results of one run in ``out``: ``episodes.jsonl`` (a ``{"meta": ...}`` line, then one
    ``{"episode": ...}`` line per finished episode) and ``results.json``, both written as each episode ends.

    ``results.json`` exists from the start, ``complete`` only once ``planned`` episodes are in. ``resume=True``
    keeps what an earlier run of the same configuration (``meta``) left there: its episodes count as done
    (:attr:`done`). A last line cut short (the run was killed while writing it) is dropped with a
    warning; anything else unreadable, or a different configuration, is a :class:`ValueError`."""

    def __init__(
        self,
        out: str | Path,
        meta: Mapping[str, Any],
        *,
        planned: int,
        resume: bool = False,
        order: Sequence[str] = (),
    ):
        self.out = Path(out)
        self.meta = dict(meta)
        self.planned = planned
        self.order = {name: i for i, name in enumerate(order)}  # results.json lists the episodes so
        self.failed: dict[str, str] = {}  # episode -> why it failed (not done: --resume plays it again)
        self.path = self.out / RESULTS_LOG
        self.results: list[EpisodeResult] = self._load() if resume and self.path.exists() else []
        self.out.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"meta": self.meta})] + [json.dumps({"episode": asdict(r)}) for r in self.results]
        atomic_write_text(self.path, "".join(line + "\n" for line in lines))
        self.write()

    @property
    def done(self) -> set[str]:
        """Names of the episodes already finished."""
        return {r.episode for r in self.results}

    def _load(self) -> list[EpisodeResult]:
        lines = self.path.read_text().splitlines()
        out: list[EpisodeResult] = []
        meta: Any = None
        for n, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
                if n == 1:
                    meta = record["meta"]
                else:
                    out.append(EpisodeResult(**record["episode"]))
            except (ValueError, KeyError, TypeError) as e:
                if n == len(lines) and n > 1:
                    print(
                        f"{self.path}:{n}: dropping a cut-short last line (the run was killed while writing it)",
                        file=sys.stderr,
                    )
                    break
                raise ValueError(f"{self.path}:{n}: not a results line ({e})") from None
        if meta is None:
            raise ValueError(f"{self.path}: empty, nothing to resume")
        if meta != json.loads(json.dumps(self.meta)):
            diff = sorted(k for k in {*meta, *self.meta} if meta.get(k) != self.meta.get(k))
            raise ValueError(f"cannot resume {self.out}: it was run with other settings ({', '.join(diff)})")
        return out

    def add(self, result: EpisodeResult) -> None:
        """A finished episode: appended to ``episodes.jsonl`` (synced) and ``results.json`` rewritten (in the run's
        order, whatever order the episodes ended in)."""
        self.results.append(result)
        self.results.sort(key=lambda r: self.order.get(r.episode, len(self.order)))
        self.failed.pop(result.episode, None)
        with self.path.open("a") as f:
            f.write(json.dumps({"episode": asdict(result)}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.write()

    def fail(self, episode: str, reason: str) -> None:
        """An episode that failed (its worker died, it raised): said in ``results.json``, not counted as done."""
        self.failed[episode] = reason
        self.write()

    def write(self, *, stopped: str | None = None, interrupted: Sequence[Mapping[str, Any]] = ()) -> None:
        write_results(
            self.results,
            self.out / RESULTS_JSON,
            self.meta,
            stopped=stopped,
            interrupted=interrupted,
            planned=self.planned,
            failed=self.failed,
        )
