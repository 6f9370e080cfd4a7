"""Skills as requests (coteam.agent.skills), the simulator's navigator (coteam_sim.navigator) and the observation's
JSON form: the pieces the in-process runner and the ROS nodes share."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from coteam.agent.skills import Manipulation, ManipulationKind, NavGoal, NavResult
from coteam.domain.observation import Message, observation_from_dict, observation_to_dict
from coteam.domain.world import Benchmark
from coteam_sim.engine import Simulator
from coteam_sim.navigator import GoalNavigator, manipulation_primitive
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_observation_json_round_trip(suite: str) -> None:
    sim = Simulator(get_suite(suite).episodes()[1].build(), ("alice", "bob"), full_observability=True)
    sim.step({"alice": Primitive(PrimitiveKind.SEND_MESSAGE, text="héllo, I'm in the kitchen")})
    for _ in range(40):
        sim.step({})
    obs = sim.observe("bob")
    assert obs.visible and obs.teammates and obs.messages == (Message("alice", "héllo, I'm in the kitchen", 0),)
    assert observation_from_dict(json.loads(json.dumps(observation_to_dict(obs)))) == obs
    camera = replace(obs, complete_fixtures=(5, 7), seen_empty=(23,))  # a camera's view
    assert observation_from_dict(json.loads(json.dumps(observation_to_dict(camera)))) == camera


def test_observation_from_malformed_json_names_the_problem() -> None:
    with pytest.raises(ValueError, match="malformed observation"):
        observation_from_dict({"agent": "alice", "step": "x"})


def test_turn_in_place_goal() -> None:
    sim = Simulator(get_suite("tdwmat-test").episodes()[0].build(), ("alice",))
    st = sim.world.agents["alice"]
    goal = NavGoal(st.position, (st.heading + 45) % 360)
    nav = GoalNavigator(Benchmark.TDWMAT, sim.nav, sim.config, goal, st.position)
    assert nav.turn_in_place
    turns = []
    while isinstance(planned := nav.plan(st.position, st.heading, ""), Primitive):
        turns.append(planned.kind)
        sim.step({"alice": planned})
        while not sim.is_ready("alice"):
            sim.step({})
    assert planned == NavResult(True)
    assert turns == [PrimitiveKind.TURN_LEFT] * 3  # 45 degrees in 15-degree turns


def test_walk_to_an_unreachable_point_fails_not_reachable() -> None:
    sim = Simulator(get_suite("cwah-test").episodes()[0].build(), ("alice",))
    st = sim.world.agents["alice"]
    nav = GoalNavigator(Benchmark.CWAH, sim.nav, sim.config, NavGoal((-5.0, -5.0)), st.position)
    first = nav.plan(st.position, st.heading, "")
    assert first == Primitive(PrimitiveKind.WALK_TO, (-5000, -5000))
    planned: Primitive | NavResult = first
    for _ in range(200):  # it walks as near as it can, then makes no progress three times
        sim.step({"alice": planned})
        planned = nav.plan(st.position, st.heading, sim.last_failure["alice"])
        if isinstance(planned, NavResult):
            break
    assert planned == NavResult(False, "not reachable")


def test_walk_to_a_point_arrives() -> None:
    sim = Simulator(get_suite("cwah-test").episodes()[0].build(), ("alice",))
    st = sim.world.agents["alice"]
    target = sim.scene.floorplan.room_center(sim.scene.floorplan.room_at(st.position).id)
    nav = GoalNavigator(Benchmark.CWAH, sim.nav, sim.config, NavGoal(target), st.position)
    for _ in range(100):
        planned = nav.plan(st.position, st.heading, sim.last_failure["alice"])
        if isinstance(planned, NavResult):
            break
        sim.step({"alice": planned})
    assert planned == NavResult(True) and st.position == pytest.approx(target, abs=1e-3)


def test_manipulation_primitives_per_benchmark() -> None:
    grab = Manipulation(ManipulationKind.GRASP, 21)
    assert manipulation_primitive(Benchmark.CWAH, grab) == Primitive(PrimitiveKind.GRAB, (21,))
    put = Manipulation(ManipulationKind.PUT_IN, 21, 31)
    assert manipulation_primitive(Benchmark.CWAH, put) == Primitive(PrimitiveKind.PUT_IN, (21, 31))
    assert manipulation_primitive(Benchmark.TDWMAT, Manipulation(ManipulationKind.GRASP, 21, hand=1)) == Primitive(
        PrimitiveKind.GRASP, (21, 1)
    )
    assert manipulation_primitive(Benchmark.TDWMAT, Manipulation(ManipulationKind.PUT_IN, 21, hand=0)) == Primitive(
        PrimitiveKind.PUT_INTO_CARRIER, (0,)
    )
    with pytest.raises(ValueError, match="cannot open"):
        manipulation_primitive(Benchmark.TDWMAT, Manipulation(ManipulationKind.OPEN, 31))
