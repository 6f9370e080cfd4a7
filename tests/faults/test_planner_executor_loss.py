"""A planner that has lost its executor: only the executor's answer to a goal sent since the outage began says it
is back. The answer to a goal sent before may arrive late (the planner was busy, the executor died just after
answering): counted as a return, it made the planner say twice that one dead executor was not answering."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session

pytest.importorskip("rclpy")

from rclpy.parameter import Parameter

from coteam.actions import HighLevelAction, ObjectRef, Verb


class _Answer:
    """A goal response future whose goal the executor did not accept."""

    def result(self):
        return type("Handle", (), {"accepted": False})()


def test_only_an_answer_to_a_goal_sent_since_the_outage_says_the_executor_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_ros.nodes.planner import PlannerNode, RunningSkill

    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as nodes:
        planner = PlannerNode(namespace="/alice", parameter_overrides=[Parameter("robot", value="alice")])
        nodes.append(planner)
        skill = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 0)
        sent_before = time.monotonic()
        planner._executor_lost(skill, "no news of the goal for 2 s")
        lost = planner.executor_lost
        planner._on_skill_response(skill, _Answer(), sent_before)
        assert planner.executor_lost == lost  # still lost: that answer predates the outage
        planner._on_skill_response(skill, _Answer(), time.monotonic())
        assert planner.executor_lost is None  # back
