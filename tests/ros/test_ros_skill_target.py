"""The planner's view of a skill's target travels with the ExecuteSkill goal: the executor's memory takes it unless
it saw the object since, so a target the planner knows only from a teammate's message (REVECA's initial sharing)
is sought where the planner thinks, as in process. The lockstep run of ``tests/ros/test_ros_team.py`` with reveca parts
from the in-process run without it."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")

from coteam.agent.memory import AgentMemory
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
from coteam.domain.observation import ObjectView
from coteam.domain.world import ObjectKind, Relation
from coteam_ros.convert import target_view_from_json, target_view_json
from coteam_sim.suites import get_suite


def _memory(agent: str) -> AgentMemory:
    scene = get_suite("cwah-test").episodes()[0].build()
    return AgentMemory(agent, scene.benchmark, scene.floorplan, scene.task)


def test_the_planners_view_of_the_target_round_trips_and_bad_text_is_one_line() -> None:
    planner = _memory("alice")
    told = ObjectView(27, "wine", ObjectKind.ITEM, 3, (4.0, 9.75), location=Relation.ON, holder=6)
    planner.objects[27], planner.last_seen[27] = told, 9
    grab = HighLevelAction(Verb.GRAB, ObjectRef("wine", 27))
    assert target_view_from_json(target_view_json(planner, grab)) == (told, 9)
    assert target_view_json(planner, HighLevelAction(Verb.GRAB, ObjectRef("apple", 23))) == ""  # not remembered
    assert target_view_from_json("") is None
    for bad in ("{not json", '{"view": {}}', '{"view": {"id": 1}, "seen": 0}', "[1, 2]"):
        with pytest.raises(ValueError, match="malformed target_view") as caught:
            target_view_from_json(bad)
        assert "\n" not in str(caught.value)


def test_the_executors_memory_takes_the_view_unless_it_saw_the_object_since() -> None:
    executor = _memory("alice")
    told = ObjectView(27, "wine", ObjectKind.ITEM, 3, (4.0, 9.75))
    executor.adopt(told, 9)
    assert executor.objects[27] == told and executor.last_seen[27] == 9
    seen = ObjectView(27, "wine", ObjectKind.ITEM, 3, (3.5, 9.0))
    executor.objects[27], executor.last_seen[27] = seen, 12
    executor.adopt(told, 10)  # older than my own sighting: mine stays
    assert executor.objects[27] == seen
    executor.adopt(told, 14)  # newer: taken
    assert executor.objects[27] == told and executor.last_seen[27] == 14
