"""``coela``: the CoELA-style baseline on both backends, its answer matching, and its every-step message policy."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from coteam.kit import letter, match_option
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer

LETTERED = {
    "A": "[gograb] <apple> (21)",
    "B": "[goexplore] <kitchen> (2)",
    "C": "[gocheck] <fridge> (9)",
    "D": "[send_message] <alice: in the <kitchen> (2); holding nothing.>",
}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("[goexplore] <kitchen> (2)", ("B", "exact")),
        ("  [gocheck] <fridge> (9) - my cost: 3.0 m ", ("C", "exact")),
        ("I think [gograb] <apple> (21) is best.", ("A", "text")),
        ("C. [gograb] <apple> (21)", ("C", "letter")),
        ("B", ("B", "letter")),
        ("(C)", ("C", "letter")),
        ("C.", ("C", "letter")),
        ("Option D", ("D", "letter")),
        ("My choice: A because it is close", ("A", "letter")),
        ("A, since it is closest", ("A", "letter")),
        ("b", ("B", "letter")),
        ("**B**", ("B", "letter")),
        ("The answer is C", ("C", "letter")),
        ("My choice is A", ("A", "letter")),
        ("I choose B", ("B", "letter")),
        ("grab the apple (21)", ("A", "name")),
        ("look inside the <fridge>", ("C", "name")),
        ("walk over to the kitchen (2)", ("B", "name")),  # the drafted message names the kitchen too: not counted
    ],
)
def test_answers_are_matched_by_text_then_letter_then_name_or_id(answer, expected):
    assert match_option(answer, LETTERED) == expected


@pytest.mark.parametrize(
    "answer", ["I would rather write a poem.", "A poem.", "Z", "", "<kitchen> or <fridge>, hard to say"]
)
def test_an_answer_that_names_no_action_is_rejected_with_what_to_answer(answer):
    with pytest.raises(ValueError, match="answer with one letter from A, B, C, D"):
        match_option(answer, LETTERED)


def test_letters_go_past_z():
    assert [letter(i) for i in (0, 25, 26, 27, 51, 52)] == ["A", "Z", "AA", "AB", "AZ", "BA"]


def _run(suite: str, index: int, params: dict | None = None, trace=None):
    scene = get_suite(suite).episodes()[index].build()
    return run_episode(scene, "coela", params=params, trace_path=trace)


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_symbolic_coela_talks_a_lot_but_never_twice_in_a_row_and_finishes(suite, tmp_path):
    result = _run(suite, 0, trace=tmp_path / "t.json")
    assert result.transport_rate > 0.5 and result.messages >= 3
    trace = load_trace(tmp_path / "t.json")
    for agent in ("alice", "bob"):
        actions = [d["action"] for d in trace["decisions"] if d["agent"] == agent]
        talk = [a.startswith(("[send_message]", "send a message")) for a in actions]
        assert not any(a and b for a, b in pairwise(talk)), f"{agent} sent two in a row"
    assert all(
        json.loads(m["payload"])["kind"] == "status" for m in trace["messages"]
    )  # the symbolic draft travels typed
    drafted = [d for d in trace["decisions"] if d["rationale"]["draft"]]
    assert len(drafted) > result.messages  # a draft at most decisions; sent only when it says something new


def test_random_sends_no_messages():
    scene = get_suite("cwah-test").episodes()[0].build()
    assert run_episode(scene, "random").messages == 0


def _scripted(request: dict) -> str:
    """A model that drafts a fixed message and picks the first lettered option by its letter."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "Actions to choose from" in user:
        return "A"
    return json.dumps({"message": "I am searching the kitchen."})


def test_the_llm_path_counts_exactly_what_the_server_reported(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(_scripted) as server:
        params = {"backend": "llm", "base_url": server.base_url, "max_retries": 0}
        result = _run("cwah-test", 0, params, trace=tmp_path / "t.json")
        sent = sum(u["total_tokens"] for u in server.usages)
    assert result.llm_calls == len(server.requests) > 0
    assert result.tokens == sent and result.llm_fallbacks == 0
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    roles = decisions[0]["rationale"]["roles"]
    assert roles["coela.plan"]["source"] == "llm" and roles["coela.plan"]["answer"] == "A"
    assert "Actions to choose from" in roles["coela.plan"]["prompt"][-1]["content"]
    assert all(d["rationale"]["matched"] == "letter" for d in decisions)


def test_a_model_that_talks_nonsense_falls_back_to_the_stated_default_and_counts_it(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    replies = ["I would rather write a poem about apples.", "Still a poem.", json.dumps({"message": "A draft."})]
    with LoopbackOpenAIServer(replies) as server:
        params = {"backend": "llm", "base_url": server.base_url, "max_retries": 0}
        result = _run("cwah-test", 0, params, trace=tmp_path / "t.json")
        sent = sum(u["total_tokens"] for u in server.usages)
    assert result.tokens == sent
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    fell_back = [d for d in decisions if d["rationale"]["matched"] == "fallback"]
    assert fell_back and result.llm_fallbacks >= len(fell_back)
    assert all("names none of the actions" in d["rationale"]["roles"]["coela.plan"]["error"] for d in fell_back)
    assert result.transport_rate > 0  # the deterministic default (the rules' nearest useful action) made progress


def test_explain_asks_coela_how_to_print_its_decisions(tmp_path, capsys):
    from coteam.cli import main

    _run("cwah-test", 0, trace=tmp_path / "t.json")
    decision = load_trace(tmp_path / "t.json")["decisions"][3]
    argv = ["explain", str(tmp_path / "t.json"), "--agent", decision["agent"], "--step", str(decision["step"])]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Drafted message:" in out and "Planner answered" in out and "coela.plan symbolic" in out
    assert main([*argv, "--png", str(tmp_path / "x.png")]) == 0  # every method's explanation can be drawn
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"
