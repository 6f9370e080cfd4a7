"""The Mind-Map agent (`mindmap`): the typed map and its key matching, the two phases on both backends (the LLM path
through the loopback server, with misspelt, extra, missing and unrepairable maps), the confabulation guard, the
component switches, explain."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from coteam.agent.goals import goal_status
from coteam.agent.messages import TeamStatus
from coteam.agent.options import available_actions
from coteam.agent.reasoning import DecisionContext
from coteam.domain.observation import Message, ObjectView
from coteam.domain.world import ObjectKind
from coteam.kit import Deliberation
from coteam.methods.mindmap.mindmap import COMPONENTS, CooperativeStrategy, Intention, MindMap, match_keys
from coteam.methods.mindmap.team import Clarification
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from scenario import method_brain, run_on_loopback


def test_key_matching_renames_fills_and_drops_keys_and_lists_each_repair() -> None:
    previous = MindMap(cooperative_strategy=CooperativeStrategy(immediate_focus="[gocheck] <fridge> (5)"))
    raw = {
        "Inferred Intentions": {"bob": {"aim": "[gograb] <apple> (12)", "reason": "he said so", "said": True}},
        "cooperative_stratgy": {"pending clarification": ["where is the wine?"], "long_term_plan": []},
        "mood": "cheerful",
    }
    mind_map, repairs = match_keys(raw, previous, COMPONENTS)
    assert mind_map.inferred_intentions == {"bob": Intention(aim="[gograb] <apple> (12)", said=True)}
    assert mind_map.cooperative_strategy.pending_clarifications == ["where is the wine?"]
    assert mind_map.cooperative_strategy.immediate_focus == "[gocheck] <fridge> (5)"  # kept from the previous map
    assert mind_map.communication_strategy is not None  # filled empty
    assert set(repairs) >= {
        "renamed Inferred Intentions -> inferred_intentions",
        "renamed cooperative_stratgy -> cooperative_strategy",
        "dropped mood",
        "dropped inferred_intentions.bob.reason",
        "filled inferred_intentions.bob.why empty",
        "filled cooperative_strategy.immediate_focus from the previous map",
        "filled communication_strategy empty",
    }
    for bad in (["a", "list"], {"cooperative_strategy": {"long_term_plan": "not a list"}}):
        with pytest.raises(ValueError) as caught:
            match_keys(bad, None, COMPONENTS)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("switches", "error"),
    [
        ({"components": "intentions,empathy"}, "empathy"),
        ({"components": ""}, "components"),
        ({"no_draft": "x"}, "no_draft"),
    ],
)
def test_bad_switches_are_refused_in_one_line(switches: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error) as caught:
        make_team("mindmap", switches)
    assert "\n" not in str(caught.value)
    team = make_team("mindmap", {"components": "communication, intentions"})
    assert team.config.parts == ("inferred_intentions", "communication_strategy")


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_symbolic_mindmap_finishes_its_episode_the_same_way_twice_with_its_maps_in_the_trace(suite, tmp_path) -> None:
    scene = get_suite(suite).episodes()[0].build()
    first = run_episode(scene, "mindmap", trace_path=tmp_path / "a.json")
    again = run_episode(scene, "mindmap")
    assert first.transport_rate > 0.5 and first.llm_calls == 0
    assert (first.steps, first.transport_rate, first.messages) == (again.steps, again.transport_rate, again.messages)
    trace = load_trace(tmp_path / "a.json")
    rationale = trace["decisions"][0]["rationale"]
    assert set(rationale["mind_map"]) == set(COMPONENTS) and rationale["map_changes"]
    for message in trace["messages"]:  # a draft's payload is what its words state: a status and its next action,
        payload = json.loads(message["payload"])  # or a question
        if payload["kind"] == "status":
            assert f"next I do {payload['intent']}" in message["text"]
        else:
            assert message["text"] == Clarification.model_validate(payload).text()


@pytest.mark.parametrize("agents", [1, 3, 4])
def test_mindmap_runs_alone_and_in_larger_teams(agents: int) -> None:
    result = run_episode(get_suite("cwah-test").episodes()[1].build(), "mindmap", n_agents=agents)
    assert result.success
    assert result.messages == 0 if agents == 1 else True


def _with_an_apple(agent: str = "alice"):
    """``agent``'s mindmap brain (of alice and bob) with a goal item beside it."""
    sim = Simulator(get_suite("cwah-test").episodes()[0].build(), ("alice", "bob"))
    brain = method_brain(sim, agent, "mindmap")
    m = brain.memory
    wanted = sorted(m.task.needed_names())[0]
    apple = ObjectView(900, wanted, ObjectKind.ITEM, m.room, m.position)
    m.objects[apple.id], m.last_seen[apple.id] = apple, m.step
    return brain, apple


def _decide(brain):
    ctx = DecisionContext(brain.agent, brain.memory, available_actions(brain.memory, brain.nav), brain.nav)
    agent = brain.team.agents[brain.agent]
    decision = agent.deliberate(Deliberation(agent, ctx))
    return agent.mind_map, decision, ctx


def test_a_message_i_sent_is_not_an_action_i_did() -> None:
    """alice told the team she grabs the apple next; her map still has the apple on the table, in nobody's hand,
    and grabbing it is still hers to do."""
    brain, apple = _with_an_apple()
    m = brain.memory
    grab = f"[gograb] <{apple.name}> ({apple.id})"
    said = TeamStatus.of(m, intent=grab)
    m.record_sent(Message("alice", said.text(), m.step, said))
    mind_map, _, ctx = _decide(brain)
    assert not m.objects[apple.id].held_by and apple.id not in {v.id for v in m.held_items()}
    assert all(apple.id not in s.done for s in goal_status(m))
    assert grab in {o.text for o in ctx.options}
    assert "holding nothing" in mind_map.communication_strategy.message_draft


def test_a_robot_keeps_its_word_the_action_its_message_announced_comes_next() -> None:
    """alice's last action was a message saying she grabs the apple next: her teammate plans on it, so she grabs
    it, without a new map; once it is no longer among her options she decides anew."""
    brain, apple = _with_an_apple()
    m = brain.memory
    grab = f"[gograb] <{apple.name}> ({apple.id})"
    said = TeamStatus.of(m, intent=grab)
    m.record_sent(Message("alice", said.text(), m.step, said))
    m.record_action(f"[send_message] <{said.text()}>", "done")
    mind_map, decision, _ = _decide(brain)
    assert decision.rationale["announced"] == grab and decision.action.verb.value == "grab"
    assert mind_map is None
    explained = brain.team.explain(decision.rationale)
    assert explained.sections[0].title == f"Kept its word: {grab}, which its last message announced"
    del m.objects[apple.id]
    mind_map, decision, _ = _decide(brain)
    assert "announced" not in decision.rationale and mind_map is not None


def test_a_teammates_stated_intention_is_an_intention_not_a_done_action() -> None:
    """bob said he grabs the apple next: alice's map says so (said, an intention), while her memory and goal status
    still have the apple where it lies, and she may still grab it."""
    brain, apple = _with_an_apple()
    m = brain.memory
    grab = f"[gograb] <{apple.name}> ({apple.id})"
    said = TeamStatus(agent="bob", intent=grab)
    m.messages.append(Message("bob", said.text(), m.step, said))
    mind_map, _, ctx = _decide(brain)
    assert mind_map.inferred_intentions["bob"] == Intention(aim=grab, why=f"it said so at step {m.step}", said=True)
    assert not m.objects[apple.id].held_by
    assert all(apple.id not in s.done for s in goal_status(m))
    assert grab in {o.text for o in ctx.options}


def test_the_plan_spans_several_actions_and_is_kept_until_news_makes_it_weighed_again() -> None:
    """The map persists: alice's plan names several of her actions; a decision with nothing new keeps it without
    weighing it; a goal item seen since is news, and the plan is weighed against the best option again."""
    brain, apple = _with_an_apple()
    first, decided, _ = _decide(brain)
    plan = first.cooperative_strategy.long_term_plan
    assert len([line for line in plan if line.startswith("alice: ")]) >= 2, plan
    assert decided.rationale["plan"].startswith("revised")
    again, decided, _ = _decide(brain)
    assert decided.rationale["plan"] == "kept: no news since it was made"
    assert again.cooperative_strategy.long_term_plan == plan
    m = brain.memory
    other = dataclasses.replace(apple, id=901)
    m.objects[other.id], m.last_seen[other.id] = other, m.step
    _, decided, _ = _decide(brain)
    assert decided.rationale["plan"] != "kept: no news since it was made"


def _bob_beside_an_apple_and_alice_seen_far():
    from coteam.agent.memory import TeammateSighting

    brain, apple = _with_an_apple("bob")
    m = brain.memory
    centres = {r.id: m.floorplan.room_center(r.id) for r in m.floorplan.rooms}
    far = max(centres, key=lambda r: abs(centres[r][0] - m.position[0]) + abs(centres[r][1] - m.position[1]))
    m.teammates["alice"] = TeammateSighting(m.step, centres[far], far, (None, None))
    return brain, apple


def test_a_teammates_inferred_intention_binds_my_plan_while_nothing_contradicts_it() -> None:
    """bob's previous map says alice, ranked before him, explores a room (inferred, not said, and she has not been
    seen since): the intention is kept, and bob goes for the item he rates best. When the map says she goes for that
    item, beside which she was seen, the intention is kept too, and bob plans around it: he leaves her the item."""
    from coteam.agent.memory import TeammateSighting
    from coteam.domain.actions import parse_action
    from coteam.methods.mindmap.team import MapBasis

    def bobs_focus(alice_aims_at: str | None) -> str:
        brain, _ = _bob_beside_an_apple_and_alice_seen_far()
        m = brain.memory
        if alice_aims_at is not None:
            item = m.objects[parse_action(alice_aims_at, m.benchmark).target.id]
            m.teammates["alice"] = TeammateSighting(m.step, item.position, item.room, (None, None))
        explore = next(o.text for o in available_actions(m, brain.nav) if o.text.startswith("[goexplore]"))
        agent = brain.team.agents["bob"]
        aim = alice_aims_at or explore
        agent.mind_map = MindMap(inferred_intentions={"alice": Intention(aim=aim, why="seen heading there")})
        agent.basis = MapBasis(formed={"alice": m.step})
        mind_map, _, _ = _decide(brain)
        assert mind_map.inferred_intentions["alice"].aim == aim, "kept: nothing contradicts it"
        return mind_map.cooperative_strategy.immediate_focus

    free = bobs_focus(None)
    assert free.startswith("[gograb]")
    assert bobs_focus(free) != free


def test_a_question_to_me_is_answered_with_my_plan_and_the_answer_binds_the_asker() -> None:
    """alice asked bob what he does next: bob's next decision is the answer, his status with his plan (a reason to
    send that outweighs any reason not to); alice, told, holds bob to the action he said."""
    brain, _ = _bob_beside_an_apple_and_alice_seen_far()
    m = brain.memory
    question = Clarification(agent="alice", to="bob", items=("wine",))
    m.messages.append(Message("alice", question.text(), m.step, question, "bob"))
    mind_map, decision, _ = _decide(brain)
    assert decision.action.is_message and decision.rationale["talk"]["send"] == float("inf")
    status = decision.payload
    assert isinstance(status, TeamStatus) and status.intent == mind_map.cooperative_strategy.immediate_focus
    assert len(status.plan) >= 2 and decision.action.text == status.text()

    asker, _ = _with_an_apple()
    asker.memory.messages.append(Message("bob", status.text(), asker.memory.step, status))
    told, _, _ = _decide(asker)
    assert told.inferred_intentions["bob"] == Intention(
        aim=status.intent, why=f"it said so at step {asker.memory.step}", said=True
    )


@pytest.mark.parametrize(("send", "hold", "sent"), [(2.0, 1.0, True), (2.0, float("inf"), False), (0.5, 1.0, False)])
def test_the_draft_is_sent_only_when_the_reason_to_send_outweighs_the_reason_not_to(send, hold, sent) -> None:
    from coteam.domain.actions import HighLevelAction, Verb
    from coteam.kit import Lettered
    from coteam.llm import RoleContext
    from coteam.methods.mindmap.mindmap import CommunicationStrategy
    from coteam.methods.mindmap.team import SelectQuestion, Talk, select_symbolically

    go = HighLevelAction(Verb.EXPLORE, None)
    draft = HighLevelAction(Verb.SEND_MESSAGE, text="alice: next I do [goexplore] <kitchen> (1).")
    lettered = Lettered([go, draft], ["[goexplore] <kitchen> (1)", "[send_message] <...>"])
    mind_map = MindMap(
        cooperative_strategy=CooperativeStrategy(immediate_focus="[goexplore] <kitchen> (1)"),
        communication_strategy=CommunicationStrategy(reason_to_send="it changes bob's choice"),
    )
    talk = Talk(send, hold, TeamStatus(agent="alice"))
    question = SelectQuestion(lettered, mind_map, draft, "", talk)
    answer = select_symbolically(RoleContext("alice", {}, question))
    assert (answer.choice == "B") == sent


def test_without_communication_it_talks_coela_style_and_without_cooperation_it_plans_alone(monkeypatch) -> None:
    """The component switches: without the communication strategy a status report with news is sent (CoELA's
    rule); the symbolic planner plans around its teammates only with the cooperative strategy and lets said
    intentions bind them only with the inferred intentions."""
    asked = []
    team_aware = Deliberation.value_model

    def spy(self, memory=None, *, alone=False, heed_intents=True):
        asked.append((alone, heed_intents))
        return team_aware(self, memory, alone=alone, heed_intents=heed_intents)

    monkeypatch.setattr(Deliberation, "value_model", spy)
    scene = get_suite("cwah-test").episodes()[1].build()
    full = run_episode(scene, make_team("mindmap"))
    assert set(asked) == {(False, True)}
    asked.clear()
    chatty = run_episode(scene, make_team("mindmap", {"components": "intentions,cooperation"}))
    assert set(asked) == {(False, True)} and chatty.messages > full.messages
    asked.clear()
    run_episode(scene, make_team("mindmap", {"components": "communication"}))
    assert set(asked) == {(True, False)}


_LETTERS = re.compile(r"^([A-Z])\. ", re.M)


class ScriptedModel:
    """Answers both phases: maps with misspelt, extra and missing keys, now and then one that cannot be repaired or
    no JSON at all; the first letter for a selection."""

    def __init__(self):
        self.calls = {"update": 0, "select": 0, "message": 0}

    def __call__(self, request: dict) -> str:
        system = request["messages"][0]["content"]
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        kind = (
            "update"
            if "mind map:" in system and "rewrite" in system
            else "message"
            if "message" in system[:200] and "Write one short" in system
            else "select"
        )
        self.calls[kind] += 1
        n = self.calls[kind]
        if kind == "message":
            return json.dumps({"message": "I searched the kitchen."})
        if kind == "select":
            return json.dumps({"choice": _LETTERS.findall(user)[0]})
        if n % 5 == 0:
            return "I will keep it in my head."  # no JSON: the repair round, then the symbolic update
        if n % 7 == 0:
            return json.dumps({"cooperative_strategy": {"long_term_plan": "all of it"}})  # not repairable
        return json.dumps(
            {
                "Inferred intentions": {"bob": {"aim": "explore", "why": "guess", "said": False, "mood": "ok"}},
                "cooperative strategy": {"pending_clarifications": [], "long_term_plan": ["alice: search"]},
                "communication_strategy": {
                    "dialogue_summary": "quiet",
                    "message_draft": "I search the kitchen.",
                    "reason_to_send": "",
                    "reason_not_to_send": "nothing new",
                },
            }
        )


def test_the_llm_path_end_to_end(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedModel()
    scene = get_suite("cwah-test").episodes()[0].build()
    result, requests, sent = run_on_loopback("mindmap", model, scene, tmp_path / "t.json")
    assert model.calls["update"] > 0 and model.calls["select"] > 0
    assert result.llm_calls == len(requests) and result.tokens == sent > 0
    assert result.llm_fallbacks > 0  # the maps that could not be repaired: the symbolic update, counted
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    repaired = [d["rationale"]["map_repairs"] for d in decisions if "map_repairs" in d["rationale"]]
    assert repaired and any("renamed cooperative strategy -> cooperative_strategy" in r for r in repaired)
    sources = [d["rationale"]["roles"]["mindmap.update"]["source"] for d in decisions if "roles" in d["rationale"]]
    assert "llm" in sources and "fallback" in sources
    assert result.steps > 0


def test_without_key_matching_a_misspelt_map_is_not_repaired(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedModel()
    scene = get_suite("cwah-test").episodes()[0].build()
    result, _, _ = run_on_loopback("mindmap", model, scene, no_key_matching=True)
    assert result.llm_fallbacks >= model.calls["update"] // 2  # every misspelt map fell back to the symbolic update


def test_explain_prints_the_map_and_what_changed(tmp_path, capsys) -> None:
    from coteam.cli import main

    run_episode(get_suite("cwah-test").episodes()[0].build(), "mindmap", trace_path=tmp_path / "t.json")
    assert main(["explain", str(tmp_path / "t.json"), "--step", "0", "--agent", "alice"]) == 0
    out = capsys.readouterr().out
    assert "Mind map:" in out and '"immediate_focus"' in out and "Changed since my previous decision:" in out


def test_an_ablated_component_is_neither_asked_for_nor_explained_in_the_update_prompt(monkeypatch) -> None:
    """`components` takes a component out of the prompt's instructions as well as out of the map's form."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    full = get_suite("cwah-test").episodes()[0].build()
    scene = dataclasses.replace(full, task=dataclasses.replace(full.task, horizon=2))
    said = {}
    for components in ("intentions,cooperation,communication", "intentions"):
        _, requests, _ = run_on_loopback("mindmap", ScriptedModel(), scene, components=components)
        said[components] = [
            r["messages"][0]["content"] for r in requests if "keep a mind map" in r["messages"][0]["content"]
        ]
    assert said["intentions,cooperation,communication"] and said["intentions"]
    for text in ("Long-term plan", "Message draft", "For each teammate"):
        assert all(text in prompt for prompt in said["intentions,cooperation,communication"]), text
    assert all("For each teammate" in prompt for prompt in said["intentions"])
    assert not any("Long-term plan" in p or "Message draft" in p for p in said["intentions"])
