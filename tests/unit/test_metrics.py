"""The episode meter: the papers' metrics computed once for every runtime, checked against the trace."""

from __future__ import annotations

import math

import pytest

from coteam.llm import estimate_tokens
from coteam_harness.trace import load_trace
from talking import first_talking_episode


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_metrics_agree_with_the_trace(suite, tmp_path):
    _, result = first_talking_episode(suite, trace_path=tmp_path / "t.json")
    trace = load_trace(tmp_path / "t.json")
    texts = [m["text"] for m in trace["messages"]]
    assert result.messages == len(texts) > 0
    assert result.message_chars == sum(len(t) for t in texts)
    assert result.comm_tokens == sum(estimate_tokens(t) for t in texts)  # o200k tokens of the message texts
    walked = {a: 0.0 for a in trace["agents"]}
    before = _starts(trace)
    for step in trace["steps"]:
        for a, (x, y, _) in step["positions"].items():
            walked[a] += math.dist(before[a], (x, y))
            before[a] = (x, y)
    assert result.travel_m == pytest.approx(walked, abs=0.01)
    acts = {a: sum(1 for s in trace["steps"] if s["actions"].get(a, "[wait]") != "[wait]") for a in trace["agents"]}
    total = sum(acts.values())
    assert result.primitive_share == pytest.approx({a: n / total for a, n in acts.items()})
    assert sum(result.primitive_share.values()) == pytest.approx(1.0) and 0 < result.balance <= 1
    assert result.failed_actions == sum(len(s["failures"]) for s in trace["steps"]) == sum(result.failures.values())


def _starts(trace: dict) -> dict[str, tuple[float, float]]:
    starts = {name: tuple(position) for name, position, _heading in trace["scene"]["agent_starts"]}
    return {a: starts[a] for a in trace["agents"]}
