"""Requests in words read as goals of the home's world file: the grammar, the world file's goal check, the reading role
on a chat model (held to the home's names, checked, and replaced by the grammar's reading when it does not check),
and the local model's recorded readings replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coteam.domain.world import Relation
from coteam.home.world_file import goal_task, load_world
from coteam.llm import LLMConfig, make_backend
from coteam.tasks.reading import prompt_library, read
from coteam.tasks.words import RequestRefused, read_request
from coteam_testkit.llm_server import LoopbackOpenAIServer

CONFIG = Path(__file__).resolve().parents[2] / "config"
DATA = Path(__file__).resolve().parents[1] / "data" / "local_llm"


@pytest.fixture(scope="module")
def flat():
    return load_world(CONFIG / "flat.world.yaml").scene


@pytest.fixture(scope="module")
def cottage():
    return load_world(CONFIG / "cottage.world.yaml").scene


def _lines(sentence: str, scene) -> list[str]:
    return sorted(g.text() for g in read_request(sentence, scene))


@pytest.mark.parametrize(
    ("sentence", "goal"),
    [
        ("put the cupcake in the fridge", ["in(cupcake, fridge): 1"]),
        ("Please put two plates on the kitchen table.", ["on(plate, kitchentable): 2"]),
        ("put the apples in the fridge", ["in(apple, fridge): 2"]),  # a plural without a number: all of them
        ("put an apple in the refrigerator", ["in(apple, fridge): 1"]),  # a synonym
        ("put all the food in the fridge", ["in(apple, fridge): 2", "in(cupcake, fridge): 1", "in(juice, fridge): 1"]),
        ("bring the juice to the coffee table", ["on(juice, coffeetable): 1"]),  # "to" a surface: on it
        ("put the plates in the cabinet in the kitchen", ["in(plate, kitchencabinet): 2"]),  # narrowed by room
        (
            "put the apples in the fridge and the plates on the coffeetable",
            ["in(apple, fridge): 2", "on(plate, coffeetable): 2"],
        ),
        (
            "put the juice in the fridge; then put the cupcake in the fridge",
            ["in(cupcake, fridge): 1", "in(juice, fridge): 1"],
        ),
    ],
)
def test_the_grammar_reads_requests_as_the_homes_goals(flat, sentence: str, goal: list[str]) -> None:
    assert _lines(sentence, flat) == sorted(goal)
    goal_task(flat, sentence, goal)  # and the world file's own check takes them


def test_in_a_home_of_tdwmat_rules_every_goal_is_near_the_place(cottage) -> None:
    assert _lines("bring all the food to the bed", cottage) == [
        "near(apple, bed): 3",
        "near(bread, bed): 1",
        "near(orange, bed): 2",
    ]
    assert {g.relation for g in read_request("take the mugs to the desk", cottage)} == {Relation.NEAR}


@pytest.mark.parametrize(
    ("sentence", "refusal"),
    [
        ("put the plates on the table", "which table: coffeetable or kitchentable?"),
        ("put the toothbrush in the cabinet", "which cabinet: bathroomcabinet or kitchencabinet?"),
        ("move the apple to the kitchen", "where in the kitchen: fridge, kitchencabinet or kitchentable?"),
        ("put some apples in the fridge", "how many apples: say a number or all"),
        ("put the bananas in the fridge", "no banana in this home (items: apple, cupcake, juice, plate, toothbrush)"),
        ("put five apples in the fridge", "5 apples asked for fridge, and this home has 2"),
        ("put the apples in the garage", "no place called 'garage' in this home"),
        ("put the apples", "names no place"),
        ("", "the request is empty"),
        ("put " + "apple " * 120 + "in the fridge", "say it in at most 500"),
    ],
)
def test_an_ambiguous_or_impossible_request_is_refused_in_one_line_naming_the_choices(
    flat, sentence: str, refusal: str
) -> None:
    with pytest.raises(RequestRefused) as caught:
        read_request(sentence, flat)
    assert refusal in str(caught.value) and "\n" not in str(caught.value)


def test_a_goal_by_other_rules_than_the_homes_is_refused(flat, cottage) -> None:
    with pytest.raises(ValueError, match="this home's robots work by cwah rules"):
        goal_task(flat, "x", ["near(apple, bed): 1"])
    with pytest.raises(ValueError, match="no item is named 'banana'"):
        goal_task(cottage, "x", ["near(banana, bed): 1"])


def _model_backend(server: LoopbackOpenAIServer):
    config = LLMConfig.from_env(base_url=server.base_url, model="loopback-model", max_retries=0, api_key="x")
    return make_backend("llm", config=config, prompts=prompt_library())


def test_a_models_reading_is_held_to_the_homes_names_and_checked(flat) -> None:
    """The schema's things and places are the home's; an answer that checks is used, one that names a count the home
    cannot hold gets the repair round and then the grammar's reading; a refusal is passed on in one line."""
    answers = iter(
        [
            json.dumps({"goals": [{"item": "apple", "target": "fridge", "count": 2}], "refuse": ""}),
            json.dumps({"goals": [{"item": "apple", "target": "fridge", "count": 9}], "refuse": ""}),
            json.dumps({"goals": [{"item": "apple", "target": "fridge", "count": 9}], "refuse": ""}),
            json.dumps({"goals": [], "refuse": "which table: coffeetable or kitchentable?\nthanks"}),
        ]
    )
    with LoopbackOpenAIServer(lambda request: next(answers)) as server:
        backend = _model_backend(server)
        used = read("put the apples in the fridge", flat, backend)
        fell = read("put an apple in the fridge", flat, backend)
        refused = read("put the plates on the table", flat, backend)
        schema = json.dumps(server.requests[0].get("response_format", {}))
        prompt = server.requests[0]["messages"][-1]["content"]
    assert used.goal == ("in(apple, fridge): 2",) and used.source == "llm"
    assert fell.goal == ("in(apple, fridge): 1",) and fell.source == "fallback"  # the grammar's reading
    assert refused.refused == "which table: coffeetable or kitchentable?" and not refused.goal
    assert all(name in schema for name in ("cupcake", "toothbrush", "kitchencabinet", "bathroomcabinet"))
    assert "apple (food, 2)" in prompt and "fridge (kitchen)" in prompt


def test_the_local_models_recorded_readings_replay_offline() -> None:
    """bench/task_words.py's readings by the packaged local model, replayed from its transcript: the same ones."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from task_words import RESULTS, TRANSCRIPT, readings

    recorded = json.loads(RESULTS.read_text())["readings"]
    replayed = readings(make_backend("llm", prompts=prompt_library(), replay=TRANSCRIPT))
    got = [{"say": r["say"], "goal": list(m.goal), "refused": m.refused, "source": m.source} for _, r, m in replayed]
    assert got == recorded


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_desk_queues_tasks_in_order_puts_a_first_one_ahead_and_runs_one_at_a_time(flat) -> None:
    from coteam.tasks.desk import TaskDesk, TaskState

    clock = Clock()
    desk = TaskDesk(flat, clock)
    apples = desk.give("put the apples in the fridge")
    plates = desk.give("on(plate, kitchentable): 2")  # goal lines are taken as they are
    juice = desk.give("put the juice in the fridge", first=True)
    assert [t.id for t in desk.queue] == [juice.id, apples.id, plates.id]
    assert plates.read_by == "goal" and apples.read_by == "symbolic" and apples.goal == ("in(apple, fridge): 2",)
    assert desk.start_next() is juice and desk.start_next() is None  # one at a time
    urgent = desk.give("put the cupcake in the fridge", first=True)  # ahead of the queue, not of the running one
    assert desk.position(urgent) == 1 and desk.position(juice) == 0
    clock.now = 30.0
    done = desk.end(TaskState.DONE, work={"robot1": {"travel_m": 4.0}})
    assert done.seconds == 30.0 and done.record()["outcome"] == "done" and done.record()["work"]["robot1"]
    assert desk.start_next() is urgent
    assert desk.cancel(plates.id).state == TaskState.CANCELED and plates not in desk.queue  # queued: just dropped
    canceled = desk.cancel(urgent.id)  # running: the runtime stops the robots
    assert canceled.state == TaskState.CANCELED and desk.running is None
    assert [t.id for t in desk.ended] == [juice.id, plates.id, urgent.id] and desk.cancel("task-99") is None


@pytest.mark.parametrize(
    ("request_text", "why"),
    [
        ("put the plates on the table", "which table: coffeetable or kitchentable?"),
        ("near(apple, bed): 1", "this home's robots work by cwah rules"),
        ("in(apple, fridge): 7", "7 wanted, 2 in items"),
        ("put the toothbrush in the bathroom cabinet", "bathroom, a no-go room (safety policy)"),
        ("put the juice in the fridge", "juice is never touched (safety policy)"),
        ("", "the request is empty"),
    ],
)
def test_the_desk_refuses_at_once_what_cannot_be_done_and_queues_nothing(flat, request_text: str, why: str) -> None:
    from coteam.home.safety import SafetyGate, SafetyPolicy
    from coteam.tasks.desk import TaskDesk, TaskState

    gate = SafetyGate(SafetyPolicy(no_go=["bathroom"], never_touch=["juice"]), flat.floorplan)
    desk = TaskDesk(flat, Clock(), safety=gate)
    task = desk.give(request_text)
    assert task.state == TaskState.REFUSED and why in task.reason and "\n" not in task.reason
    assert not desk.queue and desk.start_next() is None and desk.ended == [task]


def test_what_a_person_says_of_where_things_are_is_read_against_the_home(flat) -> None:
    from coteam.tasks.words import read_report

    assert read_report("the plates are in the kitchen cabinet", flat) == [("plate", "kitchencabinet")]
    assert read_report("there is an apple on the sofa", flat) == [("apple", "sofa")]
    assert {item for item, _ in read_report("I think the food is in the fridge", flat)} == {"apple", "cupcake", "juice"}
    with pytest.raises(RequestRefused, match="no place called 'garage'"):
        read_report("the toothbrush is in the garage", flat)


def test_a_persons_word_weighs_its_place_up_in_every_robots_belief_and_moves_the_search(flat) -> None:
    """Told the juice is in the bathroom cabinet, the belief puts most of an unseen juice there, and the robot
    searches there first instead of where the priors point (the kitchen); no hint changes nothing."""
    from dataclasses import replace

    from coteam.belief import BeliefState, PlaceKind
    from coteam.domain.observation import fixture_views
    from coteam_sim.engine import Simulator
    from scenario import method_brain

    home = replace(flat, task=goal_task(flat, "juice", ["in(juice, fridge): 1"]))
    sim = Simulator(home, ("robot1", "robot2"))
    brain = method_brain(sim, "robot1", "pce")
    cabinet = next(c for c in home.containers if c.name == "bathroomcabinet")
    (view,) = fixture_views(home, [cabinet.id])  # known from the world file, as the operator's word names it
    brain.memory.objects.setdefault(cabinet.id, view)

    def there(memory) -> float:
        where = BeliefState(memory, teammates=("robot2",)).unseen_location("juice")
        return sum(
            p
            for place, p in where.items()
            if place.id == cabinet.id or (place.kind == PlaceKind.ROOM and place.id == cabinet.room)
        )

    before = there(brain.memory)
    brain.memory.hints["juice"] = {cabinet.id}
    assert there(brain.memory) > 0.5 > before
    action = brain.decide()[0].action
    assert action.target is not None and action.target.id in (cabinet.id, cabinet.room), action


def test_an_operators_report_is_checked_against_the_home_before_any_robot_takes_it(flat) -> None:
    from coteam_ros.operator import parse_report, report_payload

    fridge = next(c.id for c in flat.containers if c.name == "fridge")
    assert parse_report(report_payload([("apple", "fridge")]), flat) == [("apple", fridge)]
    for bad, why in (
        ("{not json", "not an operator's report"),
        ('{"operator_report": []}', "not an operator's report"),
        (report_payload([("banana", "fridge")]), "names 'banana' on or in 'fridge', which this home does not have"),
        (report_payload([("apple", "garage")]), "which this home does not have"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_report(bad, flat)


def test_a_hint_on_a_surface_is_dropped_once_its_room_is_seen_whole(flat) -> None:
    """Told the apples are on the sofa, the robot looks in the living room first; once it has seen the room whole
    without them, the word weighs nothing more."""
    from dataclasses import replace

    from coteam.belief import BeliefState, PlaceKind
    from coteam.domain.geometry import FULL_TURN_BINS
    from coteam.domain.observation import fixture_views
    from coteam_sim.engine import Simulator
    from scenario import method_brain

    home = replace(flat, task=goal_task(flat, "cupcake", ["in(cupcake, fridge): 1"]))
    brain = method_brain(Simulator(home, ("robot1", "robot2")), "robot1", "pce")
    (sofa,) = fixture_views(home, [next(s.id for s in home.surfaces if s.name == "sofa")])
    brain.memory.objects.setdefault(sofa.id, sofa)

    def in_the_room(memory) -> float:
        where = BeliefState(memory, teammates=("robot2",)).unseen_location("cupcake")
        return sum(p for place, p in where.items() if place.kind == PlaceKind.ROOM and place.id == sofa.room)

    unhinted = in_the_room(brain.memory)
    brain.memory.hints["cupcake"] = {sofa.id}
    assert in_the_room(brain.memory) > 0.9 > unhinted
    brain.memory.room_coverage[sofa.room] = set(range(FULL_TURN_BINS))
    assert in_the_room(brain.memory) < 0.05


def test_a_tasks_predicates_are_written_and_followed_as_goal_lines(flat) -> None:
    from coteam.tasks.words import GoalLine

    (line,) = [GoalLine.of(p, flat.names()) for p in goal_task(flat, "x", ["in(apple, fridge): 2"]).predicates]
    assert line.text() == "in(apple, fridge): 2" and line.progress(1) == "in(apple, fridge): 1 of 2"
