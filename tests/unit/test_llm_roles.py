"""coteam.llm roles and backends: LLMBackend over the loopback server, fallbacks, ledger, registry, replay."""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict

import pytest
from pydantic import BaseModel

from coteam.domain.actions import HighLevelAction, Verb
from coteam.kit.roles import RoleSession
from coteam.llm import (
    EndpointConfigError,
    HybridBackend,
    LLMBackend,
    LLMConfig,
    LLMError,
    OpenAIChatBackend,
    PromptLibrary,
    Role,
    RoleContext,
    SymbolicBackend,
    TokenLedger,
    Usage,
    backends,
    make_backend,
)
from coteam.methods.pce.scripted import scripted_pce_model
from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer


class Answer(BaseModel):
    answer: str


def answer_names_agent(value: Answer, ctx: RoleContext) -> None:
    if ctx.agent not in value.answer:
        raise ValueError(f"the answer must mention {ctx.agent}")


def polite(text: str, ctx: RoleContext) -> None:
    if not text.startswith("hello"):
        raise ValueError("a message must start with 'hello'")


PLANNER = Role(
    "pce.planner", "example_echo", Answer, symbolic=lambda ctx: Answer(answer=f"plan-{ctx.data}"),
    validate=answer_names_agent,
)  # fmt: skip
MESSENGER = Role(
    "pce.messenger", "example_echo", None, symbolic=lambda ctx: f"symbolic hello {ctx.agent}", validate=polite
)

ASKER = re.compile(r"Question from (\w+): (\w+)")


def sensible(request: dict) -> str:
    agent, kind = ASKER.search(request["messages"][-1]["content"]).groups()
    return f'Here you go: {{"answer": "plan for {agent}"}}' if kind == "plan" else f"hello, I am {agent}"


def server_usage(request: dict, reply: str) -> tuple[int, int]:
    # deterministic, and deliberately unlike any local estimate
    return 500 + 7 * len(request["messages"]), 11 + len(reply) % 5


def ctx(agent: str, kind: str, data: object = None) -> RoleContext:
    return RoleContext(agent, {"agent": agent, "question": kind}, data)


def llm_backend(server: LoopbackOpenAIServer, **kw) -> LLMBackend:
    return LLMBackend(
        OpenAIChatBackend(LLMConfig("loopback-model", server.base_url, "k", backoff_s=0.001, **kw)), PromptLibrary()
    )


def test_ledger_adds_up_to_the_server_usage_per_role_and_agent():
    with LoopbackOpenAIServer(sensible, usage=server_usage) as server:
        backend = llm_backend(server)
        asks = [("alice", "plan"), ("bob", "plan"), ("alice", "chat"), ("alice", "plan"), ("bob", "chat")]
        answers = [backend.answer(PLANNER if k == "plan" else MESSENGER, ctx(a, k)) for a, k in asks]
    assert [a.source for a in answers] == ["llm"] * 5
    assert answers[0].value == Answer(answer="plan for alice") and answers[2].value == "hello, I am alice"
    assert all(a.calls == 1 and not a.error for a in answers)
    assert answers[1].raw == 'Here you go: {"answer": "plan for bob"}'

    ledger = backend.ledger
    sent = server.usages
    assert len(sent) == len(server.requests) == ledger.calls == 5
    assert ledger.prompt_tokens == sum(u["prompt_tokens"] for u in sent)
    assert ledger.completion_tokens == sum(u["completion_tokens"] for u in sent)
    assert ledger.total_tokens == sum(u["total_tokens"] for u in sent) == sum(a.usage.total for a in answers)
    assert ledger.fallbacks == 0 and ledger.estimated_calls == 0
    for answer, usage in zip(answers, sent, strict=True):
        assert answer.usage == Usage(usage["prompt_tokens"], usage["completion_tokens"])

    by_agent, by_role = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
    for request, usage in zip(server.requests, sent, strict=True):
        agent, kind = ASKER.search(request["messages"][-1]["content"]).groups()
        for bucket in (by_agent[agent], by_role["pce.planner" if kind == "plan" else "pce.messenger"]):
            bucket[0] += 1
            bucket[1] += usage["total_tokens"]
    assert {k: [v["calls"], v["total_tokens"]] for k, v in ledger.by_agent().items()} == by_agent
    assert {k: [v["calls"], v["total_tokens"]] for k, v in ledger.by_role().items()} == by_role
    d = ledger.to_dict()
    assert d["calls"] == 5 and d["total_tokens"] == ledger.total_tokens and d["by_role"] == ledger.by_role()


def test_garbage_model_falls_back_to_the_symbolic_solver_and_never_raises():
    with LoopbackOpenAIServer(["Bananas! {not json", "still bananas"], usage=server_usage) as server:
        backend = llm_backend(server)
        plans = [backend.answer(PLANNER, ctx(a, "plan", data=i)) for i, a in enumerate(["alice", "bob", "alice"])]
        chats = [backend.answer(MESSENGER, ctx("bob", "chat"))]
    assert [p.value for p in plans] == [Answer(answer=f"plan-{i}") for i in range(3)]
    assert chats[0].value == "symbolic hello bob"
    for a in [*plans, *chats]:
        assert a.source == "fallback" and a.calls == 2 and a.error and a.raw == "still bananas"
    assert "invalid output" in plans[0].error and "start with 'hello'" in chats[0].error
    ledger = backend.ledger
    assert ledger.fallbacks == 4 and ledger.calls == 8 == len(server.requests)
    assert ledger.total_tokens == sum(u["total_tokens"] for u in server.usages)  # rejected answers still cost
    assert ledger.by_role()["pce.planner"]["fallbacks"] == 3 and ledger.by_agent()["bob"]["fallbacks"] == 2
    assert [e["role"] for e in ledger.to_dict()["fallback_log"]] == ["pce.planner"] * 3 + ["pce.messenger"]


def test_semantically_wrong_answer_is_repaired_then_used():
    replies = ['{"answer": "plan for nobody"}', '{"answer": "plan for carol"}']
    with LoopbackOpenAIServer(replies) as server:
        a = llm_backend(server).answer(PLANNER, ctx("carol", "plan"))
    assert (a.source, a.value.answer, a.calls) == ("llm", "plan for carol", 2)
    assert "must mention carol" in server.requests[1]["messages"][-1]["content"]


def test_transport_failure_falls_back(caplog):
    with LoopbackOpenAIServer(["x"], fail_first=100, fail_status=503) as server:
        backend = llm_backend(server, max_retries=1)
        a = backend.answer(PLANNER, ctx("alice", "plan", data="s"))
    # Both requests were calls, though neither was answered: the fallback rate is fallbacks / role answers.
    assert (a.source, a.value, a.calls, a.usage) == ("fallback", Answer(answer="plan-s"), 2, Usage())
    assert "HTTP 503" in a.error and a.unanswered
    assert backend.ledger.fallbacks == 1 and backend.ledger.calls == 2 and backend.ledger.failed_calls == 2
    assert any("falls back to its symbolic solver" in r.getMessage() for r in caplog.records)


def test_programming_errors_are_not_masked():
    class Unreachable:
        model = "none"

        def complete(self, messages, **params):
            raise AssertionError("no request expected")

    backend = LLMBackend(Unreachable(), PromptLibrary())
    with pytest.raises(KeyError, match="question"):
        backend.answer(PLANNER, RoleContext("alice", {"agent": "alice"}, None))
    with pytest.raises(KeyError, match="unknown prompt template"):
        backend.answer(Role("x", "no_such_template", None, symbolic=lambda c: ""), ctx("a", "b"))


def test_symbolic_backend():
    backend = SymbolicBackend()
    a = backend.answer(PLANNER, ctx("alice", "plan", data=3))
    assert (a.value, a.source, a.usage, a.calls, a.error) == (Answer(answer="plan-3"), "symbolic", Usage(), 0, "")
    assert backend.name == "symbolic" and backend.ledger.calls == 0


def test_omitted_usage_is_estimated_in_the_ledger():
    with LoopbackOpenAIServer(sensible, omit_usage=True) as server:
        backend = llm_backend(server)
        a = backend.answer(PLANNER, ctx("alice", "plan"))
    assert a.usage.estimated and a.usage.prompt_tokens > 0 and a.usage.completion_tokens > 0
    assert backend.ledger.estimated_calls == 1 and backend.ledger.total_tokens == a.usage.total


def test_concurrent_answers_are_all_counted():
    with LoopbackOpenAIServer(sensible, usage=server_usage) as server:
        backend = llm_backend(server)
        agents = [f"robot{i}" for i in range(6)]

        def work(agent: str) -> None:
            for _ in range(3):
                assert backend.answer(PLANNER, ctx(agent, "plan")).source == "llm"

        threads = [threading.Thread(target=work, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert backend.ledger.calls == 18 == len(server.usages)
    assert backend.ledger.total_tokens == sum(u["total_tokens"] for u in server.usages)
    assert {k: v["calls"] for k, v in backend.ledger.by_agent().items()} == dict.fromkeys(agents, 3)


def test_registry():
    assert backends() == ["hybrid", "llm", "symbolic"]
    assert isinstance(make_backend("symbolic"), SymbolicBackend)
    hybrid = make_backend("hybrid", config=LLMConfig("m", base_url="http://127.0.0.1:9/v1", api_key="x"), margin=0.1)
    assert isinstance(hybrid, HybridBackend) and hybrid.margin == 0.1 and hybrid.ledger is hybrid.llm.ledger
    with pytest.raises(KeyError, match=r"unknown backend 'gpt'.*hybrid, llm, symbolic"):
        make_backend("gpt")
    with pytest.raises(ValueError, match="replay"):
        make_backend("symbolic", replay="x.jsonl")


def test_make_backend_llm_from_env_and_config(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "COTEAM_LLM_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(EndpointConfigError, match="OPENAI_API_KEY"):
        make_backend("llm")
    with LoopbackOpenAIServer(sensible, usage=server_usage) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("COTEAM_LLM_MODEL", "loopback-model")
        from_env = make_backend("llm", cache=str(tmp_path / "c.sqlite"))
        assert isinstance(from_env, LLMBackend) and from_env.name == "llm"
        assert from_env.answer(PLANNER, ctx("alice", "plan")).source == "llm"
        assert from_env.answer(PLANNER, ctx("alice", "plan")).source == "llm"
        assert len(server.requests) == 1  # the second answer came from the cache
        assert from_env.ledger.calls == 2 and from_env.ledger.cached_calls == 1
        explicit = make_backend("llm", config=LLMConfig("other-model", server.base_url, "k"))
        assert explicit.chat.model == "other-model"


def test_recorded_run_replays_identically_with_the_server_stopped(tmp_path):
    path = tmp_path / "transcripts" / "episode.jsonl"
    asks = [
        (PLANNER, "alice", "plan"),
        (MESSENGER, "bob", "chat"),
        (PLANNER, "bob", "plan"),
        (PLANNER, "alice", "plan"),
    ]
    with LoopbackOpenAIServer(sensible, usage=server_usage) as server:
        live = make_backend("llm", config=LLMConfig("loopback-model", server.base_url, "k"), transcript=str(path))
        recorded = [live.answer(role, ctx(agent, kind)) for role, agent, kind in asks]
    assert len(path.read_text().splitlines()) == 4

    # a config (e.g. from the environment, another model) does not redirect a replay
    replay = make_backend("llm", replay=str(path), config=LLMConfig("gpt-4o-mini", None, None))
    assert replay.chat.model == "loopback-model"
    replayed = [replay.answer(role, ctx(agent, kind)) for role, agent, kind in asks]
    assert replayed == recorded
    assert replay.ledger.to_dict() == live.ledger.to_dict()

    with pytest.raises(LLMError, match="no recorded answer"):
        replay.chat.complete([{"role": "user", "content": "never asked"}])
    unrecorded = replay.answer(PLANNER, ctx("dave", "plan", data="d"))
    assert unrecorded.source == "fallback" and "no recorded answer" in unrecorded.error
    assert unrecorded.value == Answer(answer="plan-d")


def test_ledger_reset_merge_and_fallback_counts():
    a, b = TokenLedger(), TokenLedger()
    a.add("r1", "alice", Usage(10, 5))
    a.add("r2", "bob", Usage(3, 1, estimated=True), cached=True)
    a.add_fallback("r2", "bob", "bad output")
    b.add("r1", "bob", Usage(1, 1))
    b.merge(a)
    assert (b.calls, b.prompt_tokens, b.completion_tokens, b.total_tokens) == (3, 14, 7, 21)
    assert (b.fallbacks, b.estimated_calls, b.cached_calls) == (1, 1, 1)
    assert b.by_agent()["bob"] == {
        "calls": 2,
        "prompt_tokens": 4,
        "completion_tokens": 2,
        "total_tokens": 6,
        "fallbacks": 1,
    }
    assert b.usage == Usage(14, 7, estimated=True)
    a.reset()
    assert a.to_dict()["calls"] == 0 and a.by_role() == {} and a.fallbacks == 0
    assert sum([Usage(1, 2), Usage(3, 4)]) == Usage(4, 6) and Usage(1, 2).total == 3


# --- the decision's time budget ---------------------------------------------------------------------------------
def test_a_slow_model_is_cut_off_by_the_decision_budget_and_later_roles_skip_it():
    with LoopbackOpenAIServer(sensible, delay_s=2.0) as server:
        backend = llm_backend(server, timeout_s=30, max_retries=3)
        session = RoleSession(backend, "alice", {"agent": "alice"}, deadline=time.monotonic() + 0.3)
        start = time.monotonic()
        first = session.ask(PLANNER, 1, question="plan")
        second = session.ask(PLANNER, 2, question="plan")
        waited = time.monotonic() - start
        requests = len(server.requests)
    assert (first.source, second.source) == ("deadline", "deadline")
    assert first.value.answer == "plan-1" and second.value.answer == "plan-2"  # the symbolic answers
    assert "budget" in first.error and "budget" in second.error
    assert requests == 1  # the second role never reached the model
    assert waited < 1.5  # not the server's 2 s, let alone the retries
    decision = session.decision(HighLevelAction(Verb.SEND_MESSAGE, text="hi"), {})
    assert decision.llm_deadlines == 2 and decision.llm_fallbacks == 2


def test_without_a_budget_the_slow_model_is_waited_for():
    with LoopbackOpenAIServer(sensible, delay_s=0.3) as server:
        session = RoleSession(llm_backend(server), "alice", {"agent": "alice"})
        assert session.ask(PLANNER, 1, question="plan").source == "llm"
        assert session.decision(HighLevelAction(Verb.SEND_MESSAGE, text="hi"), {}).llm_deadlines == 0


def test_an_episode_under_a_tight_budget_is_played_with_symbolic_answers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    with LoopbackOpenAIServer(scripted_pce_model, delay_s=0.5) as server:
        params = {"backend": "llm", "base_url": server.base_url, "model": "m", "decision_budget_s": 0.02}
        budgeted = run_episode(scene, "pce", params=params)
    symbolic = run_episode(scene, "pce")
    # The budget cuts the first calls off; the circuit breaker then answers symbolically without asking.
    assert budgeted.llm_deadlines > 0 and budgeted.llm_breaker > 0
    assert budgeted.llm_deadlines + budgeted.llm_breaker == budgeted.llm_fallbacks
    assert budgeted.steps == symbolic.steps  # every role answered as the symbolic backend would


def test_a_choice_role_takes_a_letter_of_its_questions_list_and_names_the_option() -> None:
    """``coteam.kit.choice_role``: the schema allows the question's letters alone, an answer whose letter matches no
    option is rejected, and the option an answer picks is named by its text (what a doubt's scores name)."""
    from dataclasses import dataclass

    from coteam.kit import Lettered, choice_role

    @dataclass
    class Question:
        lettered: Lettered

    class Pick(BaseModel):
        reasoning: str = ""
        choice: str

    role = choice_role("test.pick", "t", Pick, "choice", lambda ctx: Pick(choice="B"))
    question = RoleContext("alice", {}, Question({"A": "[goexplore] <kitchen> (1)", "B": "[gograb] <apple> (12)"}))
    assert role.request_schema(question)["properties"]["choice"]["enum"] == ["A", "B"]
    answer = role.symbolic(question)
    assert role.validate is not None and role.choice is not None
    role.validate(answer, question)
    assert role.choice(question, answer) == "[gograb] <apple> (12)"
    with pytest.raises(ValueError):
        role.validate(Pick(choice="Z"), question)
