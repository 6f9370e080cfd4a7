"""The hybrid backend: symbolic answers, a model only where the solvers are in doubt or lack knowledge."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import BaseModel

from coteam.agent.messages import TeamStatus
from coteam.belief import BeliefState
from coteam.domain.observation import Message
from coteam.kit import RoleKit
from coteam.llm import Doubt, HybridBackend, LLMBackend, PromptLibrary, Role, RoleContext
from coteam.methods.pce.reasoner import PceConfig, PceTeam
from coteam.methods.pce.scripted import scripted_pce_model
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer
from scenario import pce_brain


class Pick(BaseModel):
    option: str


def _role(scores: dict[str, float] | None) -> Role[None, Pick]:
    return Role(
        "test.pick",
        "example_echo",
        Pick,
        lambda ctx: Pick(option=max(scores, key=scores.get) if scores else "A"),
        doubt=lambda ctx, answer: None if scores is None else Doubt.between(scores),
        choice=lambda ctx, answer: answer.option,
    )


def test_doubt_between_the_best_two_is_their_relative_gap():
    assert Doubt.between({"a": 1.0}) is None
    d = Doubt.between({"a": 0.8, "b": 1.0, "c": 0.1})
    assert d is not None and d.gap == pytest.approx(0.2) and d.why == "close call: b (1.000) vs a (0.800)"
    assert d.close(0.25) == {"a", "b"} and d.close(0.0) == {"b"}
    assert Doubt.between({"near": -2.0, "far": -4.0}).gap == pytest.approx(0.5)  # distances as negative scores
    assert Doubt("unfamiliar").gap == 0.0  # knowledge the belief lacks: always in doubt


def _ask(scores: dict[str, float] | None, reply: str, margin: float = 0.3):
    from coteam.llm import LLMConfig, OpenAIChatBackend

    with LoopbackOpenAIServer([json.dumps({"option": reply})]) as server:
        chat = OpenAIChatBackend(LLMConfig("m", base_url=server.base_url, max_retries=0))
        backend = HybridBackend(LLMBackend(chat, PromptLibrary()), margin=margin)
        answer = backend.answer(_role(scores), RoleContext("alice", {"agent": "alice", "question": "A or B?"}, None))
        return answer, len(server.requests)


@pytest.mark.parametrize(
    ("scores", "asked"),
    [(None, False), ({"A": 1.0}, False), ({"A": 1.0, "B": 0.5}, False), ({"A": 1.0, "B": 0.8}, True)],
)
def test_the_model_is_asked_only_within_the_margin_and_says_why(monkeypatch, scores, asked):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answer, requests = _ask(scores, "B")
    assert (answer.value.option, answer.source, requests) == (("B", "llm", 1) if asked else ("A", "symbolic", 0))
    assert answer.reason == ("close call: A (1.000) vs B (0.800) (gap 0.200 <= margin 0.3)" if asked else "")


def test_the_model_breaks_close_calls_but_cannot_overturn_a_clear_one(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answer, requests = _ask({"A": 1.0, "B": 0.9, "C": 0.1}, "C")  # C is far behind: not the model's to pick
    assert requests == 1 and answer.source == "overruled" and answer.value.option == "A"
    assert "not one of the close options: A, B" in answer.error and answer.tokens > 0


def test_hybrid_pce_asks_the_evaluator_only_on_close_calls_and_records_why(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    symbolic = run_episode(scene, "pce", n_agents=2)
    with LoopbackOpenAIServer(scripted_pce_model) as server:
        params = {"backend": "hybrid", "base_url": server.base_url, "hybrid_margin": 1.0}
        result = run_episode(scene, "pce", params=params, n_agents=2, trace_path=tmp_path / "t.json")
        reported = sum(u["total_tokens"] for u in server.usages)
        names = {r["response_format"]["json_schema"]["name"] for r in server.requests}
    assert result.llm_calls == len(server.requests) > 0 and result.tokens == reported
    assert names == {"pce_evaluator"}  # planner, composer and messages stay symbolic
    asked = [
        entry
        for d in load_trace(tmp_path / "t.json")["decisions"]
        for entry in d["rationale"].get("roles", {}).values()
        if entry["source"] != "symbolic"
    ]
    assert len(asked) == result.llm_calls and all(e["why"].startswith("close call: ") for e in asked)
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    asked_in = [d["rationale"] for d in decisions if d["rationale"]["roles"].get("pce.evaluator", {}).get("why")]
    lines = PceTeam.explain(asked_in[0]).lines()
    assert any(line.startswith("  pce.evaluator asked the model because: close call: ") for line in lines)
    with LoopbackOpenAIServer(scripted_pce_model) as server:  # the default margin: the model is rarely asked
        params = {"backend": "hybrid", "base_url": server.base_url}
        default = run_episode(scene, "pce", params=params, n_agents=2)
    assert default.llm_calls < result.llm_calls and default.steps == symbolic.steps


def _responder(request: dict) -> str:
    fmt = request.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "")
    if name == "kit_classify":
        return json.dumps({"kind": "food"})
    if name == "kit_read_message":
        return json.dumps({"room": "kitchen", "holding": [], "seen": [{"object": "<wine> (777)", "room": "kitchen"}]})
    return "A" if not fmt else scripted_pce_model(request)


def _kit(server: LoopbackOpenAIServer) -> RoleKit:
    config = PceConfig(backend="hybrid", base_url=server.base_url, model="m", max_retries=0)
    return RoleKit(config, PceTeam.prompt_folder())


def _memory_with_goal(item: str):
    scene = get_suite("cwah-test").episodes()[0].build()
    first = scene.task.predicates[0]
    task = dataclasses.replace(scene.task, predicates=(dataclasses.replace(first, item=item),))
    sim = Simulator(dataclasses.replace(scene, task=task), ("alice", "bob"))
    return pce_brain(sim, "alice").memory


def test_an_unfamiliar_goal_item_is_classified_once_for_the_whole_run(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(_responder) as server:
        kit = _kit(server)
        first, second = _memory_with_goal("mango"), _memory_with_goal("mango")  # two episodes
        uniform = BeliefState(first).unseen_location("mango")
        session = kit.session("alice", {}, first)
        kit.session("bob", {}, second)
        asked = [json.loads(json.dumps(r["messages"]))[-1]["content"] for r in server.requests]
    assert asked == ["Object: mango"]  # one question for the name, for every agent and episode
    assert first.learned_categories == second.learned_categories == {"mango": "food"}
    assert session.trace["kit.classify"]["why"].startswith("unfamiliar object class 'mango'")
    learned = BeliefState(first).unseen_location("mango")
    kitchen = {r.id for r in first.floorplan.rooms if r.name == "kitchen"}

    def share(dist) -> float:
        return sum(p for place, p in dist.items() if getattr(place, "room", None) in kitchen)

    assert share(learned) > share(uniform)  # food's priors: mostly in the kitchen


def test_a_free_text_message_is_read_into_a_status_once(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    memory = _memory_with_goal("wine")
    memory.messages.append(Message("bob", "Found a <wine> (777) in the kitchen, grabbing it next.", 3))
    typed = TeamStatus(agent="bob", room="bedroom")
    memory.messages.append(Message("bob", "status", 4, typed))
    with LoopbackOpenAIServer(_responder) as server:
        kit = _kit(server)
        kit.session("alice", {}, memory)
        kit.session("alice", {}, memory)  # already read: not asked again
        requests = list(server.requests)
    assert len(requests) == 1
    prompt = requests[0]["messages"][-1]["content"]
    assert "<<<message from bob\nFound a <wine> (777)" in prompt  # fenced as data
    status = memory.messages[0].payload
    assert isinstance(status, TeamStatus) and status.agent == "bob" and status.room == "kitchen"
    assert [(s.id, s.name, s.room) for s in status.seen] == [(777, "wine", "kitchen")]
    assert memory.messages[1].payload is typed  # typed messages need no reading


@pytest.mark.parametrize("method", ["coela", "cobel"])
def test_every_method_with_roles_runs_hybrid(monkeypatch, tmp_path, method):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    scene = dataclasses.replace(scene, task=dataclasses.replace(scene.task, horizon=40))
    with LoopbackOpenAIServer(_responder) as server:
        params = {"backend": "hybrid", "base_url": server.base_url, "hybrid_margin": 1.0, "max_retries": 0}
        result = run_episode(scene, method, params=params, n_agents=2, trace_path=tmp_path / "t.json")
        reported = sum(u["total_tokens"] for u in server.usages)
    assert result.tokens == reported and result.llm_calls == len(server.requests)
    entries = [
        e for d in load_trace(tmp_path / "t.json")["decisions"] for e in d["rationale"].get("roles", {}).values()
    ]
    assert any(e["source"] == "symbolic" for e in entries)
    assert all(e.get("why") for e in entries if e["source"] != "symbolic")


def test_a_class_the_model_could_not_answer_is_asked_again_next_episode_not_every_decision(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(["no idea"]) as server:
        kit = _kit(server)
        first = _memory_with_goal("mango")
        kit.session("alice", {}, first)
        asked_once = len(server.requests)
        kit.session("alice", {}, first)  # the next decision of the same episode: not asked again
        assert len(server.requests) == asked_once > 0
        kit.session("alice", {}, _memory_with_goal("mango"))  # the next episode: asked again
        assert len(server.requests) > asked_once
    assert kit.learned == {} and first.learned_categories == {"mango": "misc"}
