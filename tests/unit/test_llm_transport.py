"""coteam.llm transport: the real `openai` client against the loopback server (127.0.0.1 only)."""

from __future__ import annotations

import json
import time

import openai
import pytest

from coteam.llm import (
    Completion,
    EndpointConfigError,
    LLMConfig,
    LLMError,
    OpenAIChatBackend,
    ReplayChatBackend,
    ResponseCache,
    TranscriptRecorder,
    Usage,
    cache_key,
    estimate_messages_tokens,
    estimate_tokens,
)
from coteam_testkit.llm_server import LoopbackOpenAIServer

MSGS = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello to Bob."}]


def chat(server: LoopbackOpenAIServer, **kw) -> OpenAIChatBackend:
    kw.setdefault("backoff_s", 0.001)
    return OpenAIChatBackend(LLMConfig("loopback-model", server.base_url, "test-key", **kw))


def test_completion_text_and_usage_are_the_servers():
    weird = lambda req, reply: (1000 + len(req["messages"]), 17)  # noqa: E731  (not an estimate)
    with LoopbackOpenAIServer(["Hello, Bob!"], usage=weird) as server:
        c = chat(server, temperature=0.3, top_p=0.9, max_tokens=55).complete(MSGS, seed=7)
        assert c == Completion("Hello, Bob!", Usage(1002, 17, estimated=False), "loopback-model")
        assert server.usages == [{"prompt_tokens": 1002, "completion_tokens": 17, "total_tokens": 1019}]
        (req,) = server.requests
        assert req["messages"] == MSGS and req["model"] == "loopback-model"
        assert (req["temperature"], req["top_p"], req["max_tokens"], req["seed"]) == (0.3, 0.9, 55, 7)


def test_default_server_usage_is_deterministic_and_models_are_listed():
    with LoopbackOpenAIServer(["Hello, Bob!"], model="m1") as server:
        c = chat(server).complete(MSGS)
        prompt = "You are terse.\nSay hello to Bob."
        assert c.usage == Usage(estimate_tokens(prompt), estimate_tokens("Hello, Bob!"))
        assert c.model == "m1"
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        assert [m.id for m in client.models.list()] == ["m1"]


def test_echo_server_and_omitted_usage_is_estimated():
    with LoopbackOpenAIServer(omit_usage=True) as server:
        c = chat(server).complete(MSGS)
        assert c.text == "Say hello to Bob."
        assert c.usage.estimated
        assert c.usage.prompt_tokens == estimate_messages_tokens(MSGS) > estimate_tokens("Say hello to Bob.")
        assert c.usage.completion_tokens == estimate_tokens("Say hello to Bob.") > 0
        assert server.usages == []


def test_rate_limited_requests_are_retried():
    with LoopbackOpenAIServer(["ok"], fail_first=2, fail_status=429) as server:
        c = chat(server, max_retries=3).complete(MSGS)
        assert c.text == "ok" and not c.usage.estimated
        assert len(server.requests) == 3 and server.failures == 2
        assert len(server.usages) == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_exhausted_retries_raise_a_clear_llm_error(status):
    with LoopbackOpenAIServer(["never"], fail_first=100, fail_status=status) as server:
        with pytest.raises(LLMError) as info:
            chat(server, max_retries=2).complete(MSGS)
        assert len(server.requests) == 3
    msg = str(info.value)
    assert "failed after 3 attempt(s)" in msg and f"HTTP {status}" in msg and "loopback-model" in msg
    assert server.base_url in msg


def test_client_errors_are_not_retried():
    with LoopbackOpenAIServer(["never"], fail_first=100, fail_status=400) as server:
        with pytest.raises(LLMError, match="rejected: HTTP 400"):
            chat(server, max_retries=3).complete(MSGS)
        assert len(server.requests) == 1


def test_timeouts_and_refused_connections_are_retried_then_reported():
    with LoopbackOpenAIServer(["slow"], delay_s=0.4) as server:
        with pytest.raises(LLMError, match=r"failed after 2 attempt.*timed out") as info:
            chat(server, max_retries=1, timeout_s=0.1, call_deadline_s=5.0).complete(MSGS)
        assert len(server.requests) == 2 and info.value.failed_attempts == 2
    server = LoopbackOpenAIServer(["x"]).start()
    url = server.base_url
    server.stop()
    backend = OpenAIChatBackend(LLMConfig("m", url, None, max_retries=1, backoff_s=0.001))
    with pytest.raises(LLMError, match="connection error"):
        backend.complete(MSGS)


def test_a_hanging_endpoint_costs_one_call_deadline_per_call_retries_included():
    with LoopbackOpenAIServer(["slow"], delay_s=2.0) as server:
        start = time.monotonic()
        with pytest.raises(LLMError, match=r"within the call deadline of 0.3 s \(1 attempt\(s\)\).*timed out") as info:
            chat(server, max_retries=3, timeout_s=0.3).complete(MSGS)  # by default the deadline is one timeout
        assert time.monotonic() - start < 1.5 and info.value.failed_attempts == 1
        with pytest.raises(LLMError, match=r"call deadline of 0.5 s \(2 attempt\(s\)\)"):
            chat(server, max_retries=3, timeout_s=0.3, backoff_s=0.01, call_deadline_s=0.5).complete(MSGS)


def test_attempts_that_failed_before_an_answer_are_counted_with_it():
    with LoopbackOpenAIServer(["ok"], fail_first=2, fail_status=503) as server:
        c = chat(server, max_retries=3, backoff_s=0.01).complete(MSGS)
    assert c.text == "ok" and c.failed_attempts == 2


def test_no_api_key_for_the_default_endpoint_is_a_clear_error():
    with pytest.raises(EndpointConfigError, match="OPENAI_API_KEY"):
        OpenAIChatBackend(LLMConfig("gpt-4o-mini", None, None))


def test_cache_hit_sends_no_request_and_persists(tmp_path):
    path = tmp_path / "cache" / "llm.sqlite"
    with LoopbackOpenAIServer(["first", "second", "third"]) as server:
        backend = OpenAIChatBackend(
            LLMConfig("loopback-model", server.base_url, "k", backoff_s=0.001), cache=ResponseCache(path)
        )
        a = backend.complete(MSGS)
        b = backend.complete(MSGS)
        assert (a.text, a.cached, b.text, b.cached) == ("first", False, "first", True)
        assert b.usage == a.usage and len(server.requests) == 1
        # other parameters are another request
        assert backend.complete(MSGS, temperature=0.7).text == "second"
        assert len(server.requests) == 2
        # the file outlives the backend
        again = OpenAIChatBackend(LLMConfig("loopback-model", server.base_url, "k"), cache=ResponseCache(path))
        assert again.complete(MSGS).cached and len(server.requests) == 2
        # a different model is a different key
        other = OpenAIChatBackend(LLMConfig("other-model", server.base_url, "k"), cache=ResponseCache(path))
        assert not other.complete(MSGS).cached and len(server.requests) == 3


def test_cache_key_is_stable_and_sensitive():
    k = cache_key("m", MSGS, {"temperature": 0.0, "top_p": 1.0})
    assert k == cache_key("m", [dict(m) for m in MSGS], {"top_p": 1.0, "temperature": 0.0})
    assert len(k) == 64
    assert k != cache_key("m2", MSGS, {"temperature": 0.0, "top_p": 1.0})
    assert k != cache_key("m", MSGS[1:], {"temperature": 0.0, "top_p": 1.0})
    assert k != cache_key("m", MSGS, {"temperature": 0.5, "top_p": 1.0})
    with pytest.raises(TypeError, match="JSON"):
        cache_key("m", MSGS, {"bad": object()})


def test_a_transcript_line_cut_short_is_left_out_and_a_bad_one_is_refused(tmp_path):
    from coteam.llm.transcript import load_transcript

    entry = {"key": "k", "model": "m", "text": "hi", "usage": {}}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(entry) + "\n" + '{"key": "k2", "mod')  # a run stopped while writing
    assert load_transcript(path) == [entry]
    path.write_text('{"key": "k2", "mod\n' + json.dumps(entry) + "\n")
    with pytest.raises(ValueError, match=r"run\.jsonl:1: not a transcript entry"):
        load_transcript(path)


def test_transcript_replays_identically_without_the_server(tmp_path):
    path = tmp_path / "run.jsonl"
    questions = [[{"role": "user", "content": f"question {i}"}] for i in range(3)]
    with LoopbackOpenAIServer(lambda req: "answer to " + req["messages"][-1]["content"]) as server:
        live = OpenAIChatBackend(
            LLMConfig("loopback-model", server.base_url, "k", backoff_s=0.001), recorder=TranscriptRecorder(path)
        )
        recorded = [live.complete(q) for q in questions] + [live.complete(questions[0], temperature=0.5)]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 4 and lines[0]["text"] == "answer to question 0"
    assert lines[3]["params"] == {"temperature": 0.5} and lines[3]["sampling"]["temperature"] == 0.0

    replay = ReplayChatBackend(path)
    assert replay.model == "loopback-model"
    replayed = [replay.complete(q) for q in questions] + [replay.complete(questions[0], temperature=0.5)]
    assert replayed == recorded
    with pytest.raises(LLMError, match=r"no recorded answer.*question 9"):
        replay.complete([{"role": "user", "content": "question 9"}])
    with pytest.raises(LLMError, match="no recorded answer"):
        replay.complete(questions[0], temperature=0.9)


def test_replay_serves_repeated_requests_in_recorded_order(tmp_path):
    path = tmp_path / "t.jsonl"
    rec = TranscriptRecorder(path)
    for text in ("one", "two"):
        rec.record("m", MSGS, {}, Completion(text, Usage(3, 1), "m"))
    replay = ReplayChatBackend(path)
    assert [replay.complete(MSGS).text for _ in range(3)] == ["one", "two", "two"]
    (tmp_path / "bad.jsonl").write_text('{"key": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        ReplayChatBackend(tmp_path / "bad.jsonl")
