"""REVECA (`reveca`): relevance estimation (levels, the symbolic judge, the cache), retrieval by relevance and
relative proximity with its switches, a decision when one option is left, both backends end to end (the LLM path
through the loopback server, malformed answers included), explain."""

from __future__ import annotations

import json
import re

import pytest

from coteam.agent.memory import TeammateSighting
from coteam.agent.options import available_actions
from coteam.agent.reasoning import DecisionContext
from coteam.domain.actions import Verb
from coteam.domain.observation import ObjectView
from coteam.domain.world import Benchmark, ObjectKind
from coteam.kit import Deliberation
from coteam.methods.reveca.relevance import RelevanceScale, cache_key, symbolic_grade
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from scenario import method_brain, run_on_loopback


def _brain(suite: str = "cwah-test", index: int = 0, params: dict | None = None):
    sim = Simulator(get_suite(suite).episodes()[index].build(), ("alice", "bob"))
    return sim, method_brain(sim, "alice", "reveca", params)


def test_the_symbolic_judge_grades_by_the_goal_and_the_priors() -> None:
    sim, brain = _brain()
    m = brain.memory
    scale = RelevanceScale(4)
    task = m.task
    wanted = next(iter(task.needed_names()))
    item = ObjectView(900, wanted, ObjectKind.ITEM, 1, (0.0, 0.0))
    distractor = ObjectView(901, "toothbrush", ObjectKind.ITEM, 1, (0.0, 0.0))
    target = next(v for v in sim.landmarks() if v.id == task.predicates[0].target)
    fridge = ObjectView(902, "fridge", ObjectKind.CONTAINER, 1, (0.0, 0.0), is_open=False)
    assert symbolic_grade(item, m, scale) == "strong" and symbolic_grade(target, m, scale) == "strong"
    assert symbolic_grade(distractor, m, scale) == "none"
    grades = {
        symbolic_grade(ObjectView(r.id, r.name, ObjectKind.ROOM, r.id, (0, 0)), m, scale) for r in m.floorplan.rooms
    }
    assert grades <= {"medium", "low"} and "medium" in grades  # the likeliest room for the goal's things
    if {m.item_category(n, goal=True) for n in task.needed_names()} & {"food"}:
        assert symbolic_grade(fridge, m, scale) == "medium"
    # three levels fold medium and low together; five tell useless places from low ones
    assert symbolic_grade(fridge, m, RelevanceScale(3)) in ("some", "strong")
    useless = ObjectView(903, "bathroomcabinet", ObjectKind.CONTAINER, 1, (0.0, 0.0))
    assert symbolic_grade(useless, m, RelevanceScale(5)) == "slight"
    assert RelevanceScale(4).tier("strong") > RelevanceScale(4).tier("medium") + 1  # nearness never beats a level
    # judged once: by class on C-WAH (a second apple), by object on TDW-MAT
    other = ObjectView(904, wanted, ObjectKind.ITEM, 2, (1.0, 1.0))
    assert cache_key(item, Benchmark.CWAH) == cache_key(other, Benchmark.CWAH)
    assert cache_key(item, Benchmark.TDWMAT) != cache_key(other, Benchmark.TDWMAT)


def _deliberation(brain) -> tuple[Deliberation, DecisionContext]:
    agent = brain.team.agents["alice"]
    ctx = DecisionContext("alice", brain.memory, available_actions(brain.memory, brain.nav), brain.nav)
    return Deliberation(agent, ctx), ctx


def test_retrieval_puts_relevance_first_then_what_i_am_closer_to_than_my_teammate() -> None:
    _, brain = _brain()
    m = brain.memory
    agent = brain.team.agents["alice"]
    d, ctx = _deliberation(brain)
    physical = [o for o in ctx.options if not o.action.is_message]
    rooms = [
        o
        for o in physical
        if o.action.target is not None and any(r.id == o.action.target.id for r in m.floorplan.rooms)
    ]
    assert len(rooms) >= 2
    # bob stands at the far room: the rooms nearer to me than to him come first within their level
    far = max(rooms, key=lambda o: o.my_distance)
    m.teammates["bob"] = TeammateSighting(
        m.step - 5, m.floorplan.room_center(far.action.target.id), far.action.target.id, (None, None)
    )
    _, where = agent._nearest_teammate(m, d)
    ranked = agent.retrieve(d, physical, where)
    assert len(ranked) == 3  # K = 3
    tiers = [RelevanceScale(4).tier(c.level) for c in ranked]
    assert tiers == sorted(tiers, reverse=True)  # relevance first
    for level in {c.level for c in ranked}:  # within a level, what I am closer to first, the nearest first
        same = [(not c.closer, c.mine) for c in ranked if c.level == level]
        assert same == sorted(same)
    assert where is not None and where[0] == m.floorplan.room_center(far.action.target.id)  # out of sight: the centre
    # K = all keeps every option; without relevance the nearest come first
    _, everything = _brain(params={"K": "all", "no_relevance": True, "no_proximity": True})
    d2, ctx2 = _deliberation(everything)
    agent2 = everything.team.agents["alice"]
    all_physical = [o for o in ctx2.options if not o.action.is_message]
    ordered = agent2.retrieve(d2, all_physical, None)
    assert len(ordered) == len(all_physical)
    assert [c.mine for c in ordered] == sorted(c.mine for c in ordered)


@pytest.mark.parametrize(
    ("switches", "error"),
    [
        ({"K": 0}, "K must be at least 1"),
        ({"K": "some"}, "K"),
        ({"R": 6}, "R"),
        ({"no_proximity": "yes"}, "no_proximity"),
    ],
)
def test_bad_switches_are_refused_in_one_line(switches: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error) as caught:
        make_team("reveca", switches)
    assert "\n" not in str(caught.value)
    assert make_team("reveca", {"K": "all", "R": 3}).config.K == "all"


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_symbolic_reveca_finishes_its_episode_the_same_way_twice(suite: str, tmp_path) -> None:
    scene = get_suite(suite).episodes()[0].build()
    first = run_episode(scene, "reveca", trace_path=tmp_path / "a.json")
    again = run_episode(scene, "reveca", trace_path=tmp_path / "b.json")
    assert first.transport_rate > 0.5 and first.llm_calls == 0
    assert (first.steps, first.transport_rate) == (again.steps, again.transport_rate)
    decisions = load_trace(tmp_path / "a.json")["decisions"]
    assert all(1 <= len(d["rationale"]["candidates"]) <= 3 for d in decisions if "candidates" in d["rationale"])
    assert any(d["rationale"].get("choice") == "the only option retrieved" for d in decisions) or any(
        d["rationale"]["roles"].get("reveca.plan") for d in decisions if "roles" in d["rationale"]
    )


@pytest.mark.parametrize("agents", [1, 3, 4])
@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_reveca_runs_alone_and_in_larger_teams(suite: str, agents: int, tmp_path) -> None:
    """One robot says nothing; in a team of three or four every message goes to everyone or to one teammate."""
    scene = get_suite(suite).episodes()[1].build()
    result = run_episode(scene, "reveca", n_agents=agents, trace_path=tmp_path / "t.json")
    assert result.transport_rate >= 0.5
    messages = load_trace(tmp_path / "t.json")["messages"]
    team = {"alice", "bob", "carol", "dave"}
    assert not messages if agents == 1 else messages
    assert all(m.get("to", "alice") in team and m.get("to") != m["sender"] for m in messages)


_LETTERS = re.compile(r"^([A-E])\. ", re.M)


class ScriptedModel:
    """Answers REVECA's roles in their schemas, now and then malformed."""

    def __init__(self):
        self.calls = {"relevance": 0, "plan": 0, "validate": 0, "message": 0}

    def __call__(self, request: dict) -> str:
        system = request["messages"][0]["content"]
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        kind = (
            "relevance"
            if "how much it matters" in system
            else "validate"
            if "ask it first" in system
            else "message"
            if "warmer and shorter" in system
            else "plan"
        )
        self.calls[kind] += 1
        if sum(self.calls.values()) % 11 in (0, 1):
            return "I would rather not say."  # malformed, and again when asked to repair it: a fallback
        letters = _LETTERS.findall(user)
        if kind == "relevance":
            return json.dumps({"reasoning": "it looks useful", "level": "A" if "apple" in user else "B"})
        if kind == "validate":
            return json.dumps({"reasoning": "it may have been there", "answer": "B"})
        if kind == "message":
            return json.dumps({"message": "Hi! " + user.split("The message: ")[-1][:400]})
        return json.dumps({"reasoning": "the first is best", "choice": letters[0]})


def test_the_llm_path_end_to_end(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedModel()
    scene = get_suite("cwah-test").episodes()[0].build()
    result, requests, sent = run_on_loopback("reveca", model, scene, tmp_path / "t.json")
    schemas = [r["response_format"]["json_schema"] for r in requests if "response_format" in r]
    # every answer is held to its letters (a grammar-constrained model cannot answer anything else)
    letters = {s["name"]: s["schema"]["properties"] for s in schemas}
    assert letters["reveca_relevance"]["level"]["enum"] == ["A", "B", "C", "D"]
    assert letters["reveca_plan"]["choice"]["enum"][0] == "A"
    assert model.calls["relevance"] > 0 and model.calls["plan"] > 0 and model.calls["message"] > 0
    assert result.llm_calls == len(requests) and result.steps > 0
    assert result.tokens == sent > 0  # exactly what the server reported
    assert result.llm_fallbacks > 0  # the malformed answers that stayed malformed: the symbolic answer, counted
    trace = load_trace(tmp_path / "t.json")
    decisions = trace["decisions"]
    # a message is the rule's, made kinder by the model (or the rule's own text where its answer was malformed);
    # the typed payload the rule made travels with it either way
    rewritten = [m for m in trace["messages"] if m["text"].startswith("Hi! ")]
    assert rewritten and all(m["payload"] for m in trace["messages"])
    for m in rewritten:
        payload = json.loads(m["payload"])
        assert payload["kind"] in ("found", "subgoal_done", "validation_request", "validation_reply")
    asked = [d["rationale"] for d in decisions if d["rationale"].get("matched") == "letter"]
    assert asked, "the planner's letters were matched to the retrieved options"
    # each class is judged once per agent: no more relevance calls than classes, rooms and furniture met
    assert model.calls["relevance"] < 2 * len(
        {
            *(i.name for i in scene.items),
            *(f.name for f in scene.containers),
            *(f.name for f in scene.surfaces),
            *(r.name for r in scene.floorplan.rooms),
        }
    )


@pytest.mark.parametrize(
    ("switch", "kept_out"),
    [
        ("no_relevance", ("relevance:", "it matters to the task")),
        (
            "no_proximity",
            ("I think bob is in", "I think alice is in", "I do not know where", "closer than", "farther than"),
        ),
    ],
)
def test_an_llm_ablation_takes_its_information_out_of_the_prompts(monkeypatch, tmp_path, switch, kept_out) -> None:
    """Each ablation removes what it names from what the model reads (the full method shows it): no relevance is
    judged or shown; no teammate's whereabouts or relative proximity are told."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    seen = {}
    for name, params in (("full", {}), (switch, {switch: True})):
        model = ScriptedModel()
        _, requests, _ = run_on_loopback("reveca", model, scene, tmp_path / f"{name}.json", **params)
        seen[name] = ("\n".join(m["content"] for r in requests for m in r["messages"]), model.calls["relevance"])
    full, mine = seen["full"][0], seen[switch][0]
    assert any(text in full for text in kept_out), "the full method's prompts show it"
    assert not any(text in mine for text in kept_out), switch
    if switch == "no_relevance":
        assert seen["full"][1] > 0 and seen[switch][1] == 0, "no object's relevance is asked"


def test_explain_shows_the_retrieved_options_and_the_validation_exchange(tmp_path, capsys) -> None:
    from coteam.cli import main

    scene = get_suite("cwah-test").episodes()[0].build()
    run_episode(scene, "reveca", trace_path=tmp_path / "t.json")
    assert main(["explain", str(tmp_path / "t.json"), "--step", "0", "--agent", "alice"]) == 0
    out = capsys.readouterr().out
    assert "Retrieved options (relevance, then relative proximity):" in out and "relevance: " in out
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    asked = next(d for d in decisions if "validation" in d["rationale"])
    answered = next(d for d in decisions if "answers" in d["rationale"])
    replied = next(d for d in decisions if d["rationale"].get("message") == "validation_reply")
    for d in (asked, answered, replied):
        assert main(["explain", str(tmp_path / "t.json"), "--step", str(d["step"]), "--agent", d["agent"]]) == 0
    out = capsys.readouterr().out
    plan = asked["rationale"]["validation"]["plan"]
    assert f"Validation: {asked['rationale']['validation']['asked']} may have been in the" in out
    assert f"asked it before {plan}" in out
    assert "Answers to my questions, taken into memory:" in out
    assert "Sent its validation reply message" in out


def test_the_initial_sharing_and_the_subgoals_done_reach_the_teammates_memory(tmp_path) -> None:
    """REVECA's first decision tells the teammates the items around it; a delivery of its own is told once; a
    receiver takes the items in at the centre of the sender's room, and a delivered item at the goal's place."""
    from coteam.agent.messages import ItemRef
    from coteam.domain.observation import Message
    from coteam.methods.reveca.messages import Found, SubgoalDone

    scene = get_suite("cwah-test").episodes()[0].build()
    result = run_episode(scene, "reveca", trace_path=tmp_path / "t.json")
    trace = load_trace(tmp_path / "t.json")
    kinds = [json.loads(m["payload"])["kind"] for m in trace["messages"]]
    assert kinds.count("found") <= 2 and "subgoal_done" in kinds and result.messages == len(kinds)
    done = [json.loads(m["payload"])["item"]["id"] for m in trace["messages"] if "subgoal_done" in m["payload"]]
    assert len(done) == len(set(done))  # each sub-goal told once

    sim, alice = _brain()
    me = alice.team.agents["alice"]
    kitchen = alice.memory.floorplan.rooms[0]
    stranger = max(i.id for i in scene.items) + 50
    me.on_message(
        Message("bob", "x", 0, Found(agent="bob", room=kitchen.name, objects=(ItemRef(id=stranger, name="apple"),)))
    )
    target = next(v for v in sim.landmarks() if v.id == scene.task.predicates[0].target)
    alice.memory.objects.setdefault(target.id, target)
    item = next(i for i in scene.items if i.name == scene.task.predicates[0].item)
    told = SubgoalDone(
        agent="bob", item=ItemRef(id=item.id, name=item.name), target=ItemRef(id=target.id, name=target.name)
    )
    me.on_message(Message("bob", told.text(), 0, told))
    me._take_in(alice.memory)
    assert alice.memory.objects[stranger].position == alice.memory.floorplan.room_center(kitchen.id)
    assert (alice.memory.objects[item.id].holder, alice.memory.objects[item.id].room) == (target.id, target.room)
    assert me.rooms_of["bob"][0][1] == kitchen.id


def _an_apple_out_of_view(brain):
    """alice's agent and a deliberation of hers, with a goal item she saw at step 0 in a room she is not in now."""
    m = brain.memory
    d, _ = _deliberation(brain)
    room = next(r for r in m.floorplan.rooms if r.id != m.room)
    apple = ObjectView(
        900, next(iter(m.task.needed_names())), ObjectKind.ITEM, room.id, m.floorplan.room_center(room.id)
    )
    m.objects[apple.id], m.last_seen[apple.id] = apple, 0
    return brain.team.agents["alice"], d, room, apple


def test_trajectory_based_validation_asks_one_teammate_once_and_its_answer_drops_a_false_plan() -> None:
    """Before grabbing an apple last seen in a room that bob has been in since, alice asks bob (only him) whether
    he has already done it; not again about that room at once; bob answers from his memory (he was there and saw
    no apple), and alice's memory drops the apple. Without validation, or about an object in view, no question."""
    from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
    from coteam.methods.reveca.messages import ValidationReply

    _, alice = _brain()
    m = alice.memory
    me, d, room, apple = _an_apple_out_of_view(alice)
    wanted = apple.name
    m.step = 12
    me.rooms_of["bob"] = [(4, room.id)]
    grab = HighLevelAction(Verb.GRAB, ObjectRef(wanted, apple.id))
    question = me._question(d, grab)
    assert question is not None and (question.to, question.room, question.target.id) == ("bob", room.name, 900)
    assert me._question(d, grab) is None  # not twice in a row about one room
    decision = me._say(d, question)
    assert decision.action.receiver == "bob" and decision.payload == question
    me.last_asked_room = None
    me.rooms_of["bob"] = [(-1, m.room)]  # bob has not been there since: act without asking
    assert me._question(d, grab) is None
    # bob's answer: he was in that room at step 8 and saw nothing there
    _, bob_brain = _brain()
    bob_brain.memory.agent = "bob"
    bob_brain.memory.room_visits[room.id] = 8
    reply = ValidationReply.answer(bob_brain.memory, question)
    assert reply.known and not reply.seen and reply.to == "alice" and "nothing more to do" in reply.text()
    reply.taken_in(m)
    assert apple.id not in m.objects
    # switches: no validation, or questions to the whole team
    _, quiet = _brain(params={"no_validation": True})
    dq, _ = _deliberation(quiet)
    quiet.memory.objects[apple.id] = apple
    quiet.team.agents["alice"].rooms_of["bob"] = [(4, room.id)]
    assert quiet.team.agents["alice"]._question(dq, grab) is None
    _, loud = _brain(params={"broadcast": True})
    dl, _ = _deliberation(loud)
    assert loud.team.agents["alice"]._say(dl, question).action.receiver == ""


def test_validation_asks_the_likeliest_teammate_and_the_next_when_it_denies() -> None:
    """In a team of three, bob and carol have both been in the apple's room since alice saw it there, carol last, as
    alice predicts their ways: alice asks carol; when carol answers that she knows nothing of the room (she did not
    take it), alice asks bob before acting, and then nobody."""
    from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
    from coteam.methods.reveca.messages import ValidationReply

    sim = Simulator(get_suite("cwah-test").episodes()[0].build(), ("alice", "bob", "carol"))
    alice = method_brain(sim, "alice", "reveca")
    m = alice.memory
    me, d, room, apple = _an_apple_out_of_view(alice)
    wanted, m.step = apple.name, 12
    me.rooms_of.update({"bob": [(4, room.id)], "carol": [(7, room.id)]})
    grab = HighLevelAction(Verb.GRAB, ObjectRef(wanted, apple.id))
    first = me._question(d, grab)
    assert first is not None and first.to == "carol"
    assert me._question(d, grab) is None, "no second question before the answer"
    denial = ValidationReply(agent="carol", to="alice", room=room.name, target=apple.id, known=False)
    me.inbox.append(("carol", denial))
    me._take_in(m)
    second = me._question(d, grab)
    assert second is not None and second.to == "bob"
    me.inbox.append(("bob", denial.model_copy(update={"agent": "bob"})))
    me._take_in(m)
    assert me._question(d, grab) is None, "everyone likely has been asked"


def test_a_teammate_that_checked_the_container_i_asked_about_spares_me_the_check() -> None:
    """A reply "I did that" to a question about checking a container marks it checked; the container stays on my
    map (it was once deleted like a grabbed item, and the next option on it named an object I no longer knew)."""
    from coteam.methods.reveca.messages import ValidationReply

    _, alice = _brain()
    m = alice.memory
    box = m.unchecked_containers()[0]
    room = m.room_name(box.room)
    reply = ValidationReply(agent="bob", to="alice", room=room, target=box.id, known=True, visited=5, done=True)
    reply.taken_in(m)
    assert box.id in m.objects and box.id in m.checked
    assert box.id not in {v.id for v in m.unchecked_containers()}


def test_without_other_info_the_robot_keeps_no_memory_of_its_teammates() -> None:
    """no_other_info: no teammate's room history nor position: no relative proximity in the retrieval, and no
    trajectory that could make it ask anyone."""
    _, brain = _brain(params={"no_other_info": True})
    m = brain.memory
    agent = brain.team.agents["alice"]
    m.teammates["bob"] = TeammateSighting(m.step, m.position, m.room, (None, None))
    d, ctx = _deliberation(brain)
    agent._follow_teammates(m)
    assert agent.rooms_of == {} and agent._nearest_teammate(m, d)[1] is None
    physical = [o for o in ctx.options if not o.action.is_message]
    assert all(c.theirs is None for c in agent.retrieve(d, physical, None))


@pytest.mark.parametrize(
    ("switches", "alone"), [({}, False), ({"no_proximity": True}, True), ({"no_other_info": True}, True)]
)
def test_told_nothing_of_the_teammates_the_symbolic_planner_values_the_options_as_if_alone(
    monkeypatch, switches: dict, alone: bool
) -> None:
    """The paper's planner without relative proximity does not know who is nearer; ours, whose symbolic choice is
    the team value model's, then leaves the teammates out of its rollouts."""
    asked: list[bool] = []
    team_aware = Deliberation.value_model

    def spy(self, memory=None, *, alone=False):
        model = team_aware(self, memory, alone=alone)
        asked.append(alone)
        assert not model.teammates if alone else True
        return model

    monkeypatch.setattr(Deliberation, "value_model", spy)
    scene = get_suite("cwah-test").episodes()[2].build()
    run_episode(scene, make_team("reveca", switches or None))
    assert set(asked) == {alone}


def test_without_reasoning_the_model_is_asked_to_answer_at_once(monkeypatch) -> None:
    """no_reasoning: every role's prompt that reasons asks for the answer alone (the paper's ablation of its chain
    of thought; the message's rewording never reasons), and answers without a reasoning field are taken."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def model(request: dict) -> str:
        system = request["messages"][0]["content"]
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        assert "step by step" not in system
        if "warmer and shorter" in system:
            return json.dumps({"message": "Hello, team."})
        assert "Answer at once" in system
        if "how much it matters" in system:
            return json.dumps({"level": "A"})
        if "ask it first" in system:
            return json.dumps({"answer": "A"})
        return json.dumps({"choice": _LETTERS.findall(user)[0]})

    scene = get_suite("cwah-test").episodes()[0].build()
    result, _, _ = run_on_loopback("reveca", model, scene, no_reasoning=True)
    assert result.llm_calls > 0 and result.llm_fallbacks == 0 and result.steps > 0


def test_the_symbolic_planner_weighs_relevance_and_proximity_against_the_team_value(monkeypatch) -> None:
    """Among retrieved options the team value model rates alike, the planner's judgement takes the more relevant
    one, and between equally relevant ones the one I am closer to than my teammate: change who is relevant, or who is
    closer, and the choice changes. A large enough difference in team value outweighs both."""
    from coteam.kit.lettered import Lettered
    from coteam.llm import RoleContext
    from coteam.methods.reveca.team import Candidate, PlanQuestion, choose_symbolically
    from coteam.value.team import ValueModel

    _, brain = _brain()
    d, ctx = _deliberation(brain)
    first, second = [o for o in ctx.options if not o.action.is_message][:2]
    worth = {first.text: 0.0, second.text: 0.0}
    monkeypatch.setattr(ValueModel, "outcome", lambda self, option: option.text)
    monkeypatch.setattr(ValueModel, "value", lambda self, outcome, conditions=(): worth[outcome] * self.scale)

    def choice(*candidates: Candidate) -> str:
        lettered = Lettered([c.option.action for c in candidates], [c.option.text for c in candidates])
        answer = choose_symbolically(RoleContext("alice", {}, PlanQuestion(list(candidates), lettered, ctx, d)))
        return lettered[answer.choice]

    assert choice(Candidate(first, "low", 5, 1), Candidate(second, "strong", 5, 1)) == second.text
    assert choice(Candidate(first, "strong", 5, 1), Candidate(second, "low", 5, 1)) == first.text
    assert choice(Candidate(first, "medium", 5, 1), Candidate(second, "medium", 1, 5)) == second.text
    assert choice(Candidate(first, "medium", 1, 5), Candidate(second, "medium", 5, 1)) == first.text
    worth[first.text] = 0.1  # a tenth of the value scale: more than relevance and proximity together
    assert choice(Candidate(first, "none", 5, 1), Candidate(second, "strong", 1, 5)) == first.text


@pytest.mark.parametrize(("switches", "judged"), [({}, True), ({"no_relevance": True}, False)])
def test_relevance_is_judged_when_an_object_is_seen_not_when_an_option_names_it(switches: dict, judged: bool) -> None:
    """A toothbrush in view whose place (on or in what) is not known yet, so no option names it: at the decision it is
    seen at, its relevance is judged (none) all the same; without relevance nothing is judged."""
    _, brain = _brain(params=switches)
    m = brain.memory
    agent = brain.team.agents["alice"]
    toothbrush = ObjectView(901, "toothbrush", ObjectKind.ITEM, m.room, m.position)
    m.objects[toothbrush.id], m.last_seen[toothbrush.id] = toothbrush, m.step
    d, ctx = _deliberation(brain)
    assert not any(o.action.target and o.action.target.id == toothbrush.id for o in ctx.options)
    agent.deliberate(d)
    key = cache_key(toothbrush, Benchmark.CWAH)
    assert (agent.relevance.get(key) == "none") if judged else key not in agent.relevance


@pytest.mark.parametrize(("switches", "distracted"), [({"K": 1}, False), ({"K": 1, "no_relevance": True}, True)])
def test_relevance_keeps_a_thing_at_hand_that_no_goal_wants_out_of_the_retrieval(switches: dict, distracted: bool):
    """A noisy home: standing next to things no goal wants, the robot may pick them up (they are options). Judged
    irrelevant, they rank below every goal option and are not retrieved; without relevance the nearest option comes
    first, and with K=1 that is a thing at hand: the planner takes it."""
    scene = get_suite("cwah-test-noisy20").episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    distractor = next(
        i
        for i in scene.items
        if i.name not in scene.task.needed_names() and scene.placements[i.id].relation.value == "on"
    )
    sim.world.agents["alice"].position = sim.world.position_of(distractor.id)
    brain = method_brain(sim, "alice", "reveca", switches)
    agent = brain.team.agents["alice"]
    options = available_actions(brain.memory, brain.nav, allow_messages=False)  # it has just said what it sees
    ctx = DecisionContext("alice", brain.memory, options, brain.nav)
    assert any(o.action.target and o.action.target.id == distractor.id for o in ctx.options)
    decision = agent.deliberate(Deliberation(agent, ctx))
    target = decision.action.target
    grabbed = decision.action.verb == Verb.GRAB and target is not None and target.name not in scene.task.needed_names()
    assert grabbed is distracted
