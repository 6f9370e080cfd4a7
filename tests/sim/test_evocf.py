"""EvoCF (`evocf`) and the strict suites it learns on: the handling limits of the simulator, the rules induced from
failures, the experience memory and its store, the counterfactual operators, the evaluator, explain."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import random
import re
import sqlite3
from collections import Counter

import pytest

from coteam.agent.memory import FAILED, AgentMemory
from coteam.agent.options import ActionOption, available_actions
from coteam.agent.reasoning import EpisodeInfo
from coteam.agent.retries import RETRY_STEPS
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
from coteam.domain.scene_io import scene_from_dict, scene_to_dict
from coteam.domain.world import Benchmark, HandlingLimits, Placement, Relation, Scene
from coteam.kit.embedding import HashingEmbedder
from coteam.kit.store import MethodStore, StoreError
from coteam.methods.evocf.counterfactual import OPERATORS, Candidate, at_random, guided, swaps, variants
from coteam.methods.evocf.experience import SCHEMA, ExperienceMemory
from coteam.methods.evocf.rules import ActionFacts, Outcome, Rule, RuleKind, hands, induce, kind_of
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite, strict_limits
from scenario import run_on_loopback

STRICT = get_suite("cwah-strict").episodes(seed=101, count=10)


# --- the strict suites ------------------------------------------------------------------------------------------
def test_handling_limits_say_why_a_robot_cannot_pick_an_item_up() -> None:
    limits = strict_limits(Benchmark.CWAH)  # coteam_sim/handling/cwah-strict.yaml
    assert limits.failure("grab", "bob", "apple", "bookshelf", []) == "out of reach"
    assert limits.failure("grab", "alice", "apple", "bookshelf", []) == ""
    assert limits.failure("grab", "alice", "wine", None, ["apple"]) == "needs both hands"
    assert limits.failure("grab", "alice", "wine", None, []) == ""
    assert limits.failure("grab", "alice", "apple", None, ["wine"]) == "hands busy with a heavy object"


def _strict_classes(benchmark: Benchmark) -> tuple[frozenset[str], frozenset[str]]:
    """The heavy item classes and the high places of ``benchmark``'s strict handling file."""
    when = {c.fails: dict(c.when) for c in strict_limits(benchmark).constraints}
    return when["needs both hands"]["item"], when["out of reach"]["place"]


def _strict_sim(benchmark: Benchmark) -> tuple[Scene, Simulator, int, int]:
    """A strict scene of ``benchmark`` with a heavy item, its simulator, that item and a light one."""
    heavy, _ = _strict_classes(benchmark)
    for spec in get_suite(f"{benchmark.value}-strict").episodes(seed=101, count=10):
        scene = spec.build()
        assert scene.handling == strict_limits(benchmark)
        heavies = [i.id for i in scene.items if i.name in heavy]
        lights = [i.id for i in scene.items if i.name not in heavy and not i.is_carrier]
        if heavies and len(lights) >= 2:
            return scene, Simulator(scene, ("alice", "bob"), seed=0), heavies[0], lights[0]
    raise AssertionError("no strict scene with a heavy item")


def _hold(sim: Simulator, agent: str, item: int) -> None:
    sim.world.agents[agent].hands[0] = item
    sim.world.placements[item] = Placement.held(agent, 0)


@pytest.mark.parametrize("benchmark", [Benchmark.CWAH, Benchmark.TDWMAT])
def test_the_simulator_enforces_the_strict_limits(benchmark: Benchmark) -> None:
    scene, sim, heavy, light = _strict_sim(benchmark)
    _, high = _strict_classes(benchmark)
    shelf = next(f for f in (*scene.containers, *scene.surfaces) if f.name in high)
    relation = Relation.IN if any(c.id == shelf.id for c in scene.containers) else Relation.ON
    sim.world.is_open[shelf.id] = True
    sim.world.placements[light] = Placement(relation, shelf.id)
    sim.world.placements[heavy] = Placement(relation, shelf.id)
    grab = (
        (lambda item: Primitive(PrimitiveKind.GRAB, (item,)))
        if benchmark == Benchmark.CWAH
        else (lambda item: Primitive(PrimitiveKind.GRASP, (item, 1)))
    )
    for agent in ("alice", "bob"):
        st = sim.world.agents[agent]
        st.position = sim.world.position_of(light)
        st.heading = 0
    sim.config = dataclasses.replace(sim.config, tdw_near_visible_m=5.0)  # no turning towards it here
    assert sim.step({"bob": grab(light)})["bob"] == "out of reach", high
    assert sim.step({"alice": grab(light)})["alice"] == ""  # alice reaches the shelf; her hand 1 holds it now
    sim.busy_until = dict.fromkeys(sim.agents, 0)
    assert sim.step({"alice": grab(heavy)})["alice"] in ("needs both hands", "hand full")
    sim.world.agents["alice"].hands[:] = [None, None]
    _hold(sim, "alice", heavy)
    sim.world.placements[light] = Placement(relation, shelf.id)
    sim.busy_until = dict.fromkeys(sim.agents, 0)
    assert sim.step({"alice": grab(light)})["alice"] == "hands busy with a heavy object"


def test_strict_limits_travel_with_a_saved_scene_and_plain_suites_have_none() -> None:
    scene = STRICT[0].build()
    assert scene_from_dict(scene_to_dict(scene)) == scene and scene.handling.constraints
    assert get_suite("cwah").episodes(seed=101, count=1)[0].build().handling == HandlingLimits()
    # a scene saved before handling files (heavy / high / short lists) reads as the same limits
    old = {
        **scene_to_dict(scene),
        "handling": {
            "heavy": ["coffeepot", "juice", "wine"],
            "high": ["bookshelf", "kitchencabinet"],
            "short": ["bob", "dave", "frank", "heidi"],
        },
    }
    for robot, item, place, held in [
        ("bob", "cup", "bookshelf", []),
        ("alice", "wine", "sofa", ["cup"]),
        ("alice", "cup", "", ["juice"]),
        ("carol", "wine", "bookshelf", []),
    ]:
        assert scene_from_dict(old).handling.failure("grab", robot, item, place, held) == scene.handling.failure(
            "grab", robot, item, place, held
        )
    assert [s.name for s in STRICT[:2]] == ["cwah-strict/0", "cwah-strict/1"]


def test_an_action_that_failed_twice_for_a_handling_limit_is_not_offered_again_for_a_while() -> None:
    scene = STRICT[0].build()
    sim = Simulator(scene, ("alice", "bob"), seed=0)
    memory = AgentMemory("alice", Benchmark.CWAH, scene.floorplan, scene.task)
    memory.update(sim.observe("alice"))
    from coteam.domain.navigation import NavGrid

    nav = NavGrid(scene.floorplan)
    first = next(o for o in available_actions(memory, nav) if not o.action.is_message)
    memory.record_action(first.text, FAILED + "needs both hands")
    memory.record_action(first.text, FAILED + "needs both hands")
    assert first.text not in {o.text for o in available_actions(memory, nav)}
    memory.step += RETRY_STEPS
    assert first.text in {o.text for o in available_actions(memory, nav)}


# --- rules ----------------------------------------------------------------------------------------------------
FACTS = ActionFacts(
    "bob", "grab", "[gograb] <juice> (7)", "juice", "kitchencabinet", "some", ("apple",), "no", "cwah-strict/0", "7"
)


def _tried(
    robot: str, item: str, place: str, held: tuple[str, ...] = (), verb: str = "grab", n: int = 0
) -> ActionFacts:
    return ActionFacts(
        robot, verb, f"[{verb}] <{item}> ({n})", item, place, hands(len(held)), held, "no", "e/0", str(n)
    )


def test_the_inductor_learns_from_the_outcomes_which_facts_separate_a_failure_from_the_successes() -> None:
    """No table of reasons: the same outcomes with any wording of the reason give the same rule. Grabbing juice worked
    with empty hands, and grabbing with a hand full worked for an apple: only juice with a hand full separates."""
    history = [
        Outcome(_tried("bob", "juice", "fridge", n=1)),
        Outcome(_tried("alice", "apple", "kitchencabinet", ("cup",), n=2)),
        Outcome(_tried("alice", "juice", "table", ("plate",), n=3), "grasp failed"),
    ]
    for reason in ("grasp failed", "xyzzy"):
        past = [dataclasses.replace(o, reason=reason if o.reason else "") for o in history]
        rule = induce(FACTS, reason, past)
        assert dict(rule.conditions) == {"item": "juice", "holding": "some"}, reason
        assert (rule.kind, rule.verb, rule.reason, rule.support, rule.contradictions) == (
            RuleKind.ACTION_VALIDITY,
            "grab",
            reason,
            2,
            0,
        )
    # a fact two failures differ on is no cause (their generalisation): the place and the object's id go
    assert rule.matches(dataclasses.replace(FACTS, place="sofa", target="99", robot="alice"))
    assert not rule.matches(dataclasses.replace(FACTS, holding="none", held=()))
    assert not rule.matches(dataclasses.replace(FACTS, item="apple"))
    assert not rule.matches(dataclasses.replace(FACTS, verb="put"))
    assert rule.key == "grab ?x if item(?x)=juice and holding(?x)=some -> fails 'xyzzy'"


def test_a_robot_that_cannot_reach_a_place_is_learnt_as_that_robot_and_place() -> None:
    reach = _tried("bob", "plate", "bookshelf", n=5)
    history = [
        Outcome(_tried("alice", "plate", "bookshelf", n=6)),  # alice reaches the bookshelf
        Outcome(_tried("bob", "plate", "table", n=7)),  # bob grabs plates elsewhere
        Outcome(_tried("bob", "cup", "bookshelf", n=8), "no"),
    ]
    rule = induce(reach, "no", history)
    assert dict(rule.conditions) == {"place": "bookshelf", "holding": "none", "robot": "bob", "episode": "e/0"}
    assert (rule.kind, rule.support, rule.contradictions) == (RuleKind.OBJECT_REACHABILITY, 2, 0)
    assert rule.matches(_tried("bob", "book", "bookshelf", n=9)) and not rule.matches(history[0].facts)


def test_a_failure_of_the_same_words_but_another_cause_is_not_generalised_over() -> None:
    """Both limits say only 'grasp failed'. Generalising bob's failure on the bookshelf over alice's with a wine in a
    full hand would leave a rule that covers the successes: that failure had another cause and is skipped."""
    history = [
        Outcome(_tried("alice", "cup", "bookshelf", n=1)),
        Outcome(_tried("bob", "cup", "table", n=2)),
        Outcome(_tried("alice", "wine", "table", ("plate",), n=3), "grasp failed"),
        Outcome(_tried("bob", "book", "bookshelf", n=4), "grasp failed"),
    ]
    rule = induce(_tried("bob", "cup", "bookshelf", n=5), "grasp failed", history)
    assert dict(rule.conditions) == {"place": "bookshelf", "holding": "none", "robot": "bob", "episode": "e/0"}
    assert (rule.support, rule.contradictions) == (2, 0)


def test_a_first_failure_keeps_every_fact_and_its_successes_lower_its_confidence() -> None:
    """No failure has varied any fact yet: none is guessed away. The same action in the same situation (as far as
    the facts tell) also worked once: a contradiction, and the rule's confidence says how far it holds."""
    history = [Outcome(dataclasses.replace(FACTS, action="[gograb] <juice> (8)", target="8", place="sofa"))]
    rule = induce(dataclasses.replace(FACTS, place="sofa", target="8"), "slipped", history)
    assert set(rule.conditions) == {"item", "place", "holding", "held", "robot", "episode", "target"}
    assert (rule.support, rule.contradictions, rule.confidence) == (1, 1, 0.5)


@pytest.mark.parametrize(
    ("verb", "conditions", "kind"),
    [
        ("grab", {"item": "juice", "holding": "some"}, RuleKind.ACTION_VALIDITY),
        ("grab", {"robot": "bob", "place": "bookshelf"}, RuleKind.OBJECT_REACHABILITY),
        ("grab", {"robot": "bob", "episode": "e/0", "target": "7"}, RuleKind.SPATIAL_FEASIBILITY),
        ("grab", {"shared": "yes"}, RuleKind.TEMPORAL_CONSISTENCY),
        ("grab", {"holding": "full"}, RuleKind.LOAD_BALANCE),
        ("put", {"held": "apple"}, RuleKind.GOAL_ALIGNMENT),
    ],
)
def test_a_rules_kind_is_what_its_conditions_are_about(verb: str, conditions: dict, kind: RuleKind) -> None:
    assert kind_of(verb, conditions) == kind
    assert kind.family == (
        "dep" if kind.value in ("ActionValidity", "ObjectReachability", "SpatialFeasibility") else "coord"
    )


# --- the experience memory --------------------------------------------------------------------------------------
def test_memory_counts_support_and_contradictions_and_retrieves_the_nearest_failures() -> None:
    memory = ExperienceMemory(MethodStore("evocf", SCHEMA), HashingEmbedder())
    rule = induce(FACTS, "needs both hands")
    memory.record("e", 3, "s", FACTS, "bob: grab juice", "needs both hands", rule)
    memory.record("e", 9, "s", FACTS, "bob: grab juice", "needs both hands", rule)
    assert memory.rules[rule.key].support == 2
    memory.record("e", 12, "s", FACTS, "bob: grab juice", "", None)  # it worked once: a contradiction
    assert (memory.rules[rule.key].contradictions, round(memory.rules[rule.key].confidence, 2)) == (1, 0.67)
    reach = dataclasses.replace(FACTS, item="plate", holding="none", held=())
    memory.record("e", 20, "s", reach, "bob: grab plate", "out of reach", induce(reach, "out of reach"))
    near = memory.recall(dataclasses.replace(reach, action="[gograb] <plate> (30)"), k=1, min_confidence=0.5)
    assert [f.reason for f in near.failures] == ["out of reach"] and [r.reason for r in near.rules] == ["out of reach"]
    both = memory.recall(FACTS, k=3, min_confidence=0.5)
    assert {r.reason for r in both.rules} == {"out of reach", "needs both hands"}
    assert memory.recall(FACTS, k=3, min_confidence=0.9).rules == tuple(r for r in both.rules if r.confidence >= 0.9)
    rows = memory.store.db.execute("SELECT outcome, reason FROM transitions").fetchall()
    assert rows == [("failed", "needs both hands")] * 2 + [("done", "")] + [("failed", "out of reach")]


def test_the_heuristic_evaluator_counts_rules_alike_and_keeps_no_base_plan_preference() -> None:
    """The ablation is its own evaluator, not `induction=false`: it reads the rule library, but counts the rules a
    plan breaks (one sure rule weighs as much as a doubtful one), and prefers no plan for being the base plan."""
    from coteam.methods.evocf.team import Assessment

    sure = Rule(RuleKind.ACTION_VALIDITY, "grab", {"item": "juice"}, "x", support=9, contradictions=0)
    doubtful = Rule(RuleKind.ACTION_VALIDITY, "grab", {"place": "sofa"}, "y", support=3, contradictions=7)
    one_sure = Candidate(BASE, ("SwapAgent",))
    two_doubtful = Candidate(BASE, ("ReplaceObject",))

    def ranked(heuristic: bool, base_value: float = 1.0) -> list[Candidate]:
        assessed = [
            Assessment(Candidate(BASE), (), (), (), (), base_value, heuristic),
            Assessment(one_sure, (("bob", sure),), (), (), (), 5.0, heuristic),
            Assessment(two_doubtful, (("bob", doubtful), ("alice", doubtful)), (), (), (), 5.0, heuristic),
            Assessment(Candidate(BASE, ("DeleteAction",)), (), (), (), (), 2.0, heuristic),
        ]
        return [a.candidate for a in sorted(assessed, key=lambda a: a.rank)]

    rules = ranked(False)
    assert rules[0] == Candidate(BASE) and rules[2:] == [two_doubtful, one_sure]  # by confidence: 0.6 before 1.0
    heuristic = ranked(True)
    assert heuristic[0].operators == ("DeleteAction",)  # more value than the base plan, which has no preference
    assert heuristic[2:] == [one_sure, two_doubtful]  # by count: one rule before two


# --- counterfactual operators -----------------------------------------------------------------------------------
def _option(verb: Verb, name: str, ident: int, distance: float) -> ActionOption:
    action = HighLevelAction(verb, ObjectRef(name, ident))
    return ActionOption(action, f"[go{verb.value}] <{name}> ({ident})", distance)


OPTIONS = {
    "alice": [
        _option(Verb.GRAB, "juice", 7, 2.0),
        _option(Verb.GRAB, "apple", 8, 3.0),
        _option(Verb.PUT, "coffeetable", 20, 9.0),
        _option(Verb.CHECK, "fridge", 11, 4.0),
        _option(Verb.EXPLORE, "kitchen", 1, 1.0),
    ],
    "bob": [
        _option(Verb.GRAB, "juice", 7, 5.0),
        _option(Verb.GRAB, "apple", 8, 1.0),
        _option(Verb.CHECK, "fridge", 11, 2.0),
    ],
}
BASE = {"alice": OPTIONS["alice"][0], "bob": OPTIONS["bob"][1]}


def test_each_operator_changes_what_the_paper_says_and_keeps_actions_among_the_options() -> None:
    (swap,) = swaps(BASE, OPTIONS)
    assert (swap["alice"].text, swap["bob"].text) == (BASE["bob"].text, BASE["alice"].text)
    inserted = variants("InsertAction", "alice", BASE, OPTIONS["alice"])
    assert {p["alice"].action.verb for p in inserted} == {Verb.PUT, Verb.CHECK, Verb.EXPLORE}
    (deleted,) = variants("DeleteAction", "alice", BASE, OPTIONS["alice"])
    assert deleted["alice"].action.verb == Verb.EXPLORE  # its nearest search
    replaced = variants("ReplaceObject", "alice", BASE, OPTIONS["alice"])
    assert [p["alice"].text for p in replaced] == ["[gograb] <apple> (8)"]
    for plans in (inserted, [deleted], replaced):
        assert all(p["bob"] is BASE["bob"] and p["alice"] in OPTIONS["alice"] for p in plans)
    with pytest.raises(ValueError, match="unknown counterfactual operator"):
        variants("Crossover", "alice", BASE, OPTIONS["alice"])


def test_guided_generation_changes_the_flagged_robot_first_and_never_returns_the_base_plan() -> None:
    made = guided(BASE, OPTIONS, ["bob"], count=3)
    assert Candidate(BASE).signature() not in {c.signature() for c in made}
    assert made[0].operators == ("SwapAgent",)
    assert all(c.plan["alice"] is BASE["alice"] for c in made[1:])  # bob's actions changed first
    handed = guided(BASE, OPTIONS, [], count=1, handovers={"bob": [OPTIONS["bob"][0]]})
    assert handed[0].plan["bob"].text == "[gograb] <juice> (7)" and handed[0].operators == ("SwapAgent",)
    first = at_random(BASE, OPTIONS, 5, random.Random(3))
    assert [c.signature() for c in first] == [c.signature() for c in at_random(BASE, OPTIONS, 5, random.Random(3))]
    assert {op for c in first for op in c.operators} <= set(OPERATORS)


# --- the method -------------------------------------------------------------------------------------------------
def test_switches_are_checked_when_the_team_is_made() -> None:
    for bad, word in (({"K": 0}, "K"), ({"embedder": "nope"}, "embedder"), ({"generator": "evolved"}, "generator")):
        with pytest.raises(ValueError) as err:
            make_team("evocf", bad)
        assert word in str(err.value) and "\n" not in str(err.value)


def _failures(result) -> int:
    return result.failed_actions


def test_a_failure_becomes_a_rule_the_next_episode_reads_from_the_memory_file(tmp_path) -> None:
    path = tmp_path / "evocf.sqlite"
    first = make_team("evocf", {"store": str(path)})
    results = [
        run_episode(spec.build(), first, n_agents=2, trace_path=tmp_path / f"{i}.json")
        for i, spec in enumerate(STRICT[:3])
    ]
    assert sum(_failures(r) for r in results) > 0
    rules = sqlite3.connect(path).execute("SELECT rule, kind, support FROM rules").fetchall()
    assert rules and all(support >= 1 for _, _, support in rules)
    second = make_team("evocf", {"store": str(path)})  # another run reads the file
    run_episode(STRICT[3].build(), second, n_agents=2, trace_path=tmp_path / "second.json")
    rounds = [d["rationale"] for d in load_trace(tmp_path / "second.json")["decisions"]]
    assert rounds[0]["memory"]["rules"] >= len(rules)
    json.dumps(rounds)  # every rationale is JSON
    explained = make_team("evocf").explain(rounds[0]).lines()
    assert any("<== chosen" in line for line in explained) and any("Candidates" in line for line in explained)


def test_rules_are_applied_within_the_episode_they_are_learnt_in() -> None:
    full, base = make_team("evocf"), make_team("evocf", {"candidates": 0, "induction": False})
    full_runs = [run_episode(s.build(), full, n_agents=2) for s in STRICT[:3]]
    base_runs = [run_episode(s.build(), base, n_agents=2) for s in STRICT[:3]]
    assert sum(map(_failures, full_runs)) < sum(map(_failures, base_runs))


def test_a_corrupt_memory_file_is_refused_in_one_line_and_left_as_it_was(tmp_path) -> None:
    path = tmp_path / "evocf.sqlite"
    path.write_bytes(b"not a database at all" * 20)
    with pytest.raises(ValueError) as err:
        make_team("evocf", {"store": str(path)})
    assert isinstance(err.value, StoreError) or "not a coteam store" in str(err.value)
    assert "\n" not in str(err.value) and path.read_bytes() == b"not a database at all" * 20


def _learn(path: str, index: int) -> None:
    team = make_team("evocf", {"store": path})
    for spec in STRICT[index : index + 2]:
        run_episode(spec.build(), team, n_agents=2)


def test_two_runs_writing_one_memory_file_at_once_lose_nothing(tmp_path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_learn, args=(path, i)) for i in (0, 2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(300)
    assert [w.exitcode for w in workers] == [0, 0]
    db = sqlite3.connect(path)
    failed = db.execute("SELECT count(*) FROM transitions WHERE outcome = 'failed'").fetchone()[0]
    support = db.execute("SELECT coalesce(sum(support), 0) FROM rules").fetchone()[0]
    assert failed > 0 and support >= failed  # every failure supports its rule (a general one covers others too)
    keys = {r[0] for r in db.execute("SELECT rule FROM rules")}
    assert {r[0] for r in db.execute("SELECT rule FROM transitions WHERE outcome = 'failed'")} <= keys, "none lost"
    episodes = {r[0] for r in db.execute("SELECT DISTINCT episode FROM transitions")}
    assert episodes == {s.name for s in STRICT[:4]}


def test_the_rule_library_is_typed_by_the_six_kinds() -> None:
    assert [k.value for k in RuleKind] == [
        "ActionValidity",
        "ObjectReachability",
        "SpatialFeasibility",
        "TemporalConsistency",
        "LoadBalance",
        "GoalAlignment",
    ]
    assert Rule(RuleKind.LOAD_BALANCE, "grab", {"holding": "full"}, "no free hand", 3, 1).confidence == 0.75


# --- the LLM path ------------------------------------------------------------------------------------------------
class ScriptedEvocf:
    """Answers the four roles through the loopback server; two answers in four of a role, and so a bad answer and
    its repair, are unusable: no JSON (plan, generate), a condition that was not observed (induce), a candidate
    that does not exist (evaluate)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    @staticmethod
    def _options(user: str) -> dict[str, list[str]]:
        part = user.split("Options of each waiting robot:\n", 1)[1]
        out: dict[str, list[str]] = {}
        robot = ""
        for line in part.splitlines():
            if re.fullmatch(r"[a-z]+:", line):
                robot = line[:-1]
                out[robot] = []
            elif robot and re.match(r"[A-Z]+\. ", line):
                out[robot].append(line.split(".", 1)[0])
            elif line and not line[0].isupper():
                continue
            else:
                break
        return out

    def __call__(self, request: dict) -> str:
        system = request["messages"][0]["content"]
        user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
        kind = (
            "induce"
            if "general constraint" in system
            else "generate"
            if "better joint plans" in system
            else "evaluate"
            if "carries out next" in system
            else "plan"
        )
        self.calls[kind] += 1
        broken = self.calls[kind] % 4 in (0, 1)  # a bad answer and its repair: the symbolic answer
        if kind == "induce":
            facts = user.split("(name: value):\n", 1)[1].splitlines()
            names = ["colour"] if broken else [line.split(":")[0] for line in facts[:2]]
            return json.dumps({"kind": "ActionValidity", "conditions": names, "description": "do not"})
        if kind == "evaluate":
            count = len(re.findall(r"(?m)^\d+\. \(", user))
            first = 99 if broken else count
            return json.dumps({"ranking": [{"candidate": first, "reasoning": "it breaks nothing learnt"}]})
        if broken:
            return "I would rather think about it."
        letters = {r: ls[-1] for r, ls in self._options(user).items()}
        if kind == "plan":
            return json.dumps({"plan": {r: ls[0] for r, ls in self._options(user).items()}})
        return json.dumps({"plans": [{"operators": ["ReplaceObject"], "plan": letters}]})


def test_the_llm_path_runs_every_role_through_the_loopback_server_and_falls_back_on_bad_answers(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedEvocf()
    scene = STRICT[0].build()
    result, requests, sent = run_on_loopback("evocf", model, scene, tmp_path / "t.json", store=str(tmp_path / "m.db"))
    assert set(model.calls) == {"plan", "induce", "generate", "evaluate"}, model.calls
    assert result.llm_calls == len(requests) and result.tokens == sent > 0
    assert result.llm_fallbacks > 0  # the unusable answers: the symbolic solver answered, counted
    decisions = load_trace(tmp_path / "t.json")["decisions"]
    sources = Counter(
        (role.split("#")[0], entry["source"])
        for d in decisions
        for role, entry in (d["rationale"].get("roles") or {}).items()
    )
    for role in ("evocf.plan", "evocf.generate", "evocf.evaluate"):
        assert sources[(role, "llm")] > 0 and sources[(role, "fallback")] > 0, sources
    assert sources[("evocf.induce", "llm")] + sources[("evocf.induce", "fallback")] > 0
    rules = sqlite3.connect(tmp_path / "m.db").execute("SELECT rule FROM rules").fetchall()
    assert rules and all("colour" not in rule for (rule,) in rules)
    assert any(d["rationale"].get("evaluator") for d in decisions)  # the model's reasoning for its winner


@pytest.mark.parametrize(
    ("switch", "never_asked"),
    [({"induction": False}, "induce"), ({"generator": "random"}, "generate"), ({"evaluator": "heuristic"}, "evaluate")],
)
def test_an_llm_ablation_asks_the_model_nothing_of_the_module_it_takes_out(
    switch: dict, never_asked: str, tmp_path, monkeypatch
) -> None:
    """On the LLM path a switched-off module is not asked: no rule induction, a random generator instead of the
    model's guided one, the heuristic evaluator instead of the model's ranking. The other roles still are."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ScriptedEvocf()
    run_on_loopback("evocf", model, STRICT[0].build(), store=str(tmp_path / "m.db"), **switch)
    assert never_asked not in model.calls and "plan" in model.calls, model.calls


def test_the_inductor_role_answered_symbolically_learns_from_the_teams_memory() -> None:
    """The role's symbolic answer is the data's rule: what the team's memory recorded decides its conditions."""
    team = make_team("evocf")
    team.start_episode(EpisodeInfo.for_scene(STRICT[0].build(), ("alice", "bob"), 0))
    before = dataclasses.replace(FACTS, robot="alice", place="fridge", target="9", held=("cup",))
    team.experience.record("e", 1, "s", before, "alice: grab juice", "slipped", None)
    rule = team._induce(FACTS, "slipped", team.roles.session("bob", {}))
    assert rule == induce(FACTS, "slipped", team.experience.history)
    assert dict(rule.conditions) == {"item": "juice", "holding": "some", "episode": "cwah-strict/0"}
    assert len(induce(FACTS, "slipped").conditions) == 7, "with nothing recorded: every fact of the failure"


def test_a_recorded_llm_run_replays_offline_to_the_same_result(tmp_path, monkeypatch) -> None:
    """The loopback run recorded as a transcript (`transcript=PATH`), then answered from it with no server
    (`replay=PATH`): the same decisions, calls and tokens."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = STRICT[0].build()
    recorded, _, _ = run_on_loopback(
        "evocf", ScriptedEvocf(), scene, tmp_path / "live.json", transcript=str(tmp_path / "evocf.jsonl")
    )
    team = make_team("evocf", {"backend": "llm", "replay": str(tmp_path / "evocf.jsonl")})
    replayed = run_episode(scene, team, n_agents=2, trace_path=tmp_path / "replay.json")
    fields = ("steps", "llm_calls", "tokens", "llm_fallbacks", "success")
    assert {k: getattr(replayed, k) for k in fields} == {k: getattr(recorded, k) for k in fields}
    actions = [[d["action"] for d in load_trace(tmp_path / f"{n}.json")["decisions"]] for n in ("live", "replay")]
    assert actions[0] == actions[1]


def test_rules_given_to_the_base_planner_alone_keep_it_from_what_they_forbid(tmp_path) -> None:
    """The paper's transfer design (Table 6): the planner alone (no counterfactuals, no evaluator, no induction) with
    a rule library as its priors. A held rule that bob's grabs fail keeps bob from every grab; without the priors
    the same planner sends him to grab."""
    store = tmp_path / "given.sqlite"
    team = make_team("evocf", {"store": str(store)})
    team.start_episode(EpisodeInfo.for_scene(STRICT[0].build(), ("alice", "bob"), 0))
    team.experience._put(Rule(RuleKind.OBJECT_REACHABILITY, "grab", {"robot": "bob"}, "given", support=5))
    team.store.save()
    grabs = {}
    for priors in (True, False):
        params = {"store": str(store), "candidates": 0, "induction": False, "rules_in_plan": priors}
        run_episode(STRICT[0].build(), make_team("evocf", params), n_agents=2, trace_path=tmp_path / f"{priors}.json")
        decisions = load_trace(tmp_path / f"{priors}.json")["decisions"]
        grabs[priors] = [d["action"] for d in decisions if d["agent"] == "bob" and "grab" in d["action"]]
    assert grabs[False] and not grabs[True]


def test_the_plan_prompt_letters_exactly_the_options_the_planner_takes(tmp_path, monkeypatch) -> None:
    """The joint plan is made of the task's actions: the robots' grabs of things no goal wants are not among its
    options, and the prompt's lettered lists are the planner's own (a letter names the same action in both)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test-noisy20").episodes()[0].build()
    wanted = scene.task.needed_names()
    others = {i.name for i in scene.items} - wanted
    model = ScriptedEvocf()
    _, requests, _ = run_on_loopback("evocf", model, scene, tmp_path / "t.json", store=str(tmp_path / "m.db"))
    listed = [
        line
        for r in requests
        if "Options of each waiting robot:" in r["messages"][-1]["content"]
        for line in r["messages"][-1]["content"].split("Options of each waiting robot:\n", 1)[1].splitlines()
        if "[gograb]" in line
    ]
    offending = [line for line in listed for name in others if f"<{name}>" in line]
    assert listed and not offending, offending[:5]
    assert model.calls["plan"] > 0
