"""The planner's link to its executor.

* A planner that has lost its executor: only the executor's answer to a goal sent since the outage began says it is
  back. The answer to a goal sent before may arrive late (the planner was busy, the executor died just after
  answering): counted as a return, it made the planner say twice that one dead executor was not answering.
* An executor that has not yet answered a first goal is still being discovered: it is given
  ``executor_startup_timeout_s``, not ``executor_timeout_s`` (over a link losing 30 % of packets, the first answer
  came after 10 s; the robot was reported without executor, decided once more, and the lockstep run parted from the
  in-process one).
* A goal whose answer DDS dropped is sent again, and the executor lets the same action take its skill over (in a
  lockstep run under a flood of forged messages, a lost answer stalled a robot for 10 s and the run parted from the
  in-process one)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from action_msgs.msg import GoalStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from coteam.domain.actions import HighLevelAction, ObjectRef, Verb  # noqa: E402


class _Answer:
    """A goal response future whose goal the executor did not accept."""

    def result(self):
        return type("Handle", (), {"accepted": False})()


class _Accepted:
    """A goal response future whose goal the executor accepted; it records the goal's cancels."""

    accepted = True

    def __init__(self) -> None:
        self.canceled: list[bool] = []

    def result(self):
        return self

    def cancel_goal_async(self) -> None:
        self.canceled.append(True)

    def get_result_async(self):
        return type("Future", (), {"add_done_callback": lambda self, callback: None})()


@pytest.fixture
def nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A private ROS domain and rclpy session; the test adds its nodes to the list."""
    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as session:
        yield session


@pytest.fixture
def alice(tmp_path: Path) -> list[Parameter]:
    """alice's parameters: her name and the task's scene file."""
    return [Parameter("robot", value="alice"), Parameter("scene_path", value=task_scene(tmp_path))]


def _alice_planner(nodes: list, alice: list[Parameter], *overrides: Parameter):
    from coteam_ros.nodes.planner import PlannerNode

    planner = PlannerNode(namespace="/alice", parameter_overrides=[*alice, *overrides])
    nodes.append(planner)
    return planner


def test_only_an_answer_to_a_goal_sent_since_the_outage_says_the_executor_is_back(
    nodes: list, alice: list[Parameter]
) -> None:
    from coteam_ros.nodes.planner import RunningSkill

    planner = _alice_planner(nodes, alice)
    skill = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 0)
    sent_before = time.monotonic()
    planner._executor_lost(skill, "no news of the goal for 2 s")
    lost = planner.executor_lost
    planner._on_skill_response(skill, _Answer(), sent_before)
    assert planner.executor_lost == lost  # still lost: that answer predates the outage
    planner._on_skill_response(skill, _Answer(), time.monotonic())
    assert planner.executor_lost is None  # back


def test_a_goal_accepted_after_the_task_ended_is_canceled(nodes: list, alice: list[Parameter]) -> None:
    """The task ends (a teammate saw the goal met, the time limit) while the executor has not yet answered the
    running action's goal: the goal is canceled when the answer comes, so the robot does not set off after the end."""
    from coteam_ros.nodes.planner import RunningSkill

    planner = _alice_planner(nodes, alice)
    answer = _Accepted()
    skill = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 0)
    skill.sent = time.monotonic()
    planner._on_skill_response(skill, answer, skill.sent)
    assert answer.canceled == []  # the task goes on: the goal runs
    planner.done = True
    planner._on_skill_response(skill, answer, skill.sent)
    assert answer.canceled == [True]


def test_a_goal_whose_answer_was_lost_is_sent_again_and_a_late_answer_to_it_is_ignored(
    nodes: list, alice: list[Parameter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """DDS drops a goal's answer while the executor's server has not yet discovered the planner's client (Fast DDS:
    "client will not receive response"); the planner sends the goal again after ``goal_answer_timeout_s``."""
    from coteam_ros.nodes.planner import RunningSkill

    planner = _alice_planner(nodes, alice, Parameter("goal_answer_timeout_s", value=0.5))
    sent: list[str] = []
    monkeypatch.setattr(planner, "_send_skill", lambda skill, text: sent.append(text))
    skill = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 0)
    planner.skill, planner.request = skill, object()  # the turn waits for the executor
    skill.sent = time.monotonic()
    planner._on_timer()
    assert sent == []
    skill.sent = first = time.monotonic() - 1.0
    monkeypatch.setattr(planner.skill_client, "server_is_ready", lambda: False)
    planner._on_timer()
    assert sent == [], "no executor server: executor_timeout_s deals with that"
    monkeypatch.setattr(planner.skill_client, "server_is_ready", lambda: True)
    planner._on_timer()
    assert sent == ["[goexplore] <kitchen> (1)"]

    skill.sent = time.monotonic()  # as _send_skill records the goal sent again
    planner._on_skill_response(skill, _Answer(), first)  # the first goal's answer, late
    assert not skill.answered and skill.outcome is None
    planner._on_skill_response(skill, _Answer(), skill.sent)
    assert skill.answered and skill.outcome is not None  # the answer to the goal sent again counts


def test_a_goal_sent_again_takes_the_running_skill_over_or_gets_the_result_of_the_ended_one(
    nodes: list, alice: list[Parameter]
) -> None:
    from coteam_interfaces.action import ExecuteSkill
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor

    from coteam_ros.nodes.executor import ExecutorNode

    executor_node = ExecutorNode(namespace="/alice", parameter_overrides=alice)
    test = rclpy.create_node("planner_stand_in")
    nodes += [executor_node, test]
    spin = SingleThreadedExecutor()
    spin.add_node(executor_node)
    spin.add_node(test)
    client = ActionClient(test, ExecuteSkill, "/alice/execute_skill")
    deadline = time.monotonic() + 20

    def wait(future):
        while not future.done() and time.monotonic() < deadline:
            spin.spin_once(timeout_sec=0.05)
        assert future.done()
        return future.result()

    while not client.server_is_ready() and time.monotonic() < deadline:
        spin.spin_once(timeout_sec=0.05)
    explore = "[goexplore] <kitchen> (1)"
    first = wait(client.send_goal_async(ExecuteSkill.Goal(action=explore, step=0)))
    assert first.accepted
    again = wait(client.send_goal_async(ExecuteSkill.Goal(action=explore, step=0)))
    assert again.accepted
    superseded = wait(first.get_result_async())
    assert superseded.status == GoalStatus.STATUS_ABORTED
    assert superseded.result.failure_reason == "superseded by the same action sent again"
    other = wait(client.send_goal_async(ExecuteSkill.Goal(action="[goexplore] <bedroom> (2)", step=0)))
    assert not other.accepted, "another action while one runs is rejected"
    later = wait(client.send_goal_async(ExecuteSkill.Goal(action=explore, step=5)))
    assert not later.accepted, "the same action decided at another step is another goal"

    wait(again.cancel_goal_async())
    assert wait(again.get_result_async()).status == GoalStatus.STATUS_CANCELED
    repeat = wait(client.send_goal_async(ExecuteSkill.Goal(action=explore, step=0)))
    assert repeat.accepted
    answer = wait(repeat.get_result_async())
    assert answer.result.failure_reason == "canceled", "the goal sent again gets the result of the skill that ended"
    assert executor_node.job is None, "and the skill does not run a second time"
    decided_again = wait(client.send_goal_async(ExecuteSkill.Goal(action=explore, step=0, seq=1)))
    assert decided_again.accepted and executor_node.job is not None, "the same action decided again runs again"
    wait(decided_again.cancel_goal_async())
    client.destroy()


def test_an_executor_not_yet_heard_from_gets_the_startup_patience_then_the_usual_one(
    nodes: list, alice: list[Parameter], monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_ros.nodes.planner import RunningSkill

    planner = _alice_planner(
        nodes, alice, Parameter("executor_timeout_s", value=2.0), Parameter("executor_startup_timeout_s", value=30.0)
    )
    monkeypatch.setattr(planner, "_send_skill", lambda skill, text: None)
    skill = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 0)
    planner.skill, planner.request = skill, object()  # the turn waits for the executor
    skill.sent = skill.heard = time.monotonic() - 5.0  # silent for 5 s: past executor_timeout_s
    planner._on_timer()
    assert planner.executor_lost is None and skill.outcome is None, "not yet heard from: still being discovered"
    skill.heard = time.monotonic() - 31.0
    planner._on_timer()
    assert planner.executor_lost is not None and skill.outcome.reason == "executor unavailable"

    planner.executor_lost = None
    accepted = _Accepted()
    planner._on_skill_response(skill, accepted, skill.sent)  # accepted, but no report yet: still being discovered
    assert planner._executor_patience() == 30.0
    planner._on_skill_response(skill, _Answer(), skill.sent)  # the executor answers
    again = RunningSkill(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1)), 1)
    planner.skill, planner.request = again, object()
    again.sent = again.heard = time.monotonic() - 5.0
    planner._on_timer()
    assert planner.executor_lost is not None and again.outcome is not None, "heard from once: the usual patience"
