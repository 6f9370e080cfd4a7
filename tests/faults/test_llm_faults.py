"""A model that fails in every way: the episode still finishes on symbolic answers, every call and fallback is
counted, and a silent endpoint is left alone by the circuit breaker after two calls."""

from __future__ import annotations

import functools
import time
from collections import Counter

import pytest

from coteam.llm import CircuitBreaker, RoleAnswer, Usage
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import BrokenEndpoint, LoopbackOpenAIServer

FAST = {"timeout_s": 0.3, "max_retries": 1, "backoff_s": 0.01}


def _answer(unanswered: bool) -> RoleAnswer[str]:
    return RoleAnswer("x", "fallback" if unanswered else "llm", Usage(), 1, error="down", unanswered=unanswered)


def test_the_breaker_opens_after_failures_in_a_row_backs_off_and_closes_on_an_answer():
    b = CircuitBreaker(failures=2, decisions=3)
    pattern = []
    for unanswered in [True, True]:
        b.next_decision()
        b.record(_answer(unanswered))
    for _ in range(5):
        b.next_decision()
        pattern.append(b.blocking)
    assert pattern == [True, True, True, False, False]
    b.record(_answer(True))  # the probe fails: open again, for twice as long
    assert b.blocking and b.left == 6
    for _ in range(7):
        b.next_decision()
    assert not b.blocking
    b.record(_answer(False))
    assert b.streak == 0 and b.period == 3
    off = CircuitBreaker(failures=1, decisions=0)
    off.record(_answer(True))
    off.next_decision()
    assert not off.blocking and off.openings == 0


def _play(base_url: str, tmp_path, **extra):
    scene = get_suite("cwah-test").episodes()[0].build()
    params = {"backend": "llm", "base_url": base_url, "model": "m", **FAST, **extra}
    start = time.monotonic()
    result = run_episode(scene, "pce", params=params, trace_path=tmp_path / "trace.json")
    sources = Counter(
        e["source"] for d in load_trace(tmp_path / "trace.json")["decisions"] for e in d["rationale"]["roles"].values()
    )
    return result, sources, time.monotonic() - start


@functools.cache
def _symbolic_steps() -> int:
    return run_episode(get_suite("cwah-test").episodes()[0].build(), "pce").steps


@pytest.mark.parametrize("endpoint", BrokenEndpoint.KINDS)
def test_a_dead_endpoint_costs_two_calls_then_the_breaker_plays_symbolically(endpoint, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with BrokenEndpoint(endpoint) as broken:
        result, sources, wall = _play(broken.base_url, tmp_path)
    assert result.steps == _symbolic_steps()  # every role answered as the symbolic backend would
    assert set(sources) == {"fallback", "breaker"} and result.llm_breaker == sources["breaker"]
    assert result.llm_fallbacks == sum(sources.values())  # every role answer was a fallback, each counted once
    # Calls are the requests sent: a hang uses the whole call deadline (one request), a closed or refused
    # connection is retried once within it; after two unanswered calls the breaker stops asking.
    attempts = 1 if endpoint == "silent" else 2
    assert result.llm_calls == attempts * sources["fallback"] and sources["fallback"] == 2
    assert wall < 30


@pytest.mark.parametrize(
    ("server", "kind"),
    [
        (dict(fail_first=10**6, fail_status=500), "HTTP 500"),
        (dict(fail_first=10**6, fail_status=429), "HTTP 429"),
    ],
)
def test_an_endpoint_that_always_errs_is_counted_and_left_alone(server, kind, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(["never"], **server) as srv:
        result, sources, _ = _play(srv.base_url, tmp_path)
        assert len(srv.requests) == result.llm_calls
    assert result.steps == _symbolic_steps() and result.llm_breaker > 0
    assert result.llm_fallbacks == sum(sources.values())
    trace = load_trace(tmp_path / "trace.json")
    errors = [e.get("error", "") for d in trace["decisions"] for e in d["rationale"]["roles"].values()]
    assert any(kind in e for e in errors)


def test_garbage_answers_fall_back_each_time_but_do_not_open_the_breaker(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(["<html>502 Bad Gateway</html>", "]]]{not json"]) as srv:
        # a deadline a loaded machine cannot reach: under the whole suite's load 0.3 s cut a repair round short
        result, sources, _ = _play(srv.base_url, tmp_path, timeout_s=10.0)
        assert len(srv.requests) == result.llm_calls
    # The model answers (badly): every role falls back after its repair round, and it keeps being asked.
    assert set(sources) == {"fallback"} and result.llm_breaker == 0
    assert result.llm_fallbacks == sources["fallback"] and result.llm_calls == 2 * sources["fallback"]
    assert result.steps == _symbolic_steps()
