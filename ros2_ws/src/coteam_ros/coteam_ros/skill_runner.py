"""What a robot's planner and a coordinated robot's relay share: running the robot's actions on its executor and
answering the bridge's statuses with step ticks (:class:`SkillRunner`, a base of both nodes).

Each action runs as an ``execute_skill`` goal (``coteam_interfaces/ExecuteSkill``) on the robot's executor, numbered
(``seq``) and stamped with the step it was decided at. The runner hears how it goes (the executor's feedback: the
goal is in place at a step; its result: how it ended), sends a goal again that the executor has not answered within
``goal_answer_timeout_s`` (DDS drops a goal's answer while the executor's server has not yet discovered this node;
the executor lets the goal take its skill over), and gives the executor up, once per outage, when it stays silent
past ``executor_timeout_s`` (``executor_startup_timeout_s`` until its first answer, as discovery is slow on a lossy
link): the action fails with ``executor unavailable`` and the robot idles until the executor answers again.

On real robots (``ends_task``) a runner counts the way its robot drove (its pose at each status), keeps the task's
time limit (``time_limit_s``) and writes its end report (``end_report``, :class:`coteam_ros.task_end.EndReport`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from coteam_interfaces.action import ExecuteSkill
from coteam_interfaces.msg import StepTick
from rclpy.action import ActionClient
from rclpy.node import Node
from std_msgs.msg import Header

from coteam.agent.reasoning import EPISODE_OVER
from coteam.agent.skills import SkillOutcome
from coteam.domain.actions import HighLevelAction, format_action
from coteam.domain.world import Benchmark
from coteam.home.safety import is_refusal
from coteam_ros.qos import LATCHED, own_publisher
from coteam_ros.runtime import RETRY_S, call_later
from coteam_ros.task_end import EndReport

END_GRACE_S = 1.5  # after the task's end, time for the team message to go out before the node stops


@dataclass
class RunningSkill:
    action: HighLevelAction
    started_step: int
    message: str = ""  # a message "skill" is the planner's own: sending takes the step it was decided in
    armed_step: int = -1
    outcome: SkillOutcome | None = None
    heard: float = field(default_factory=time.monotonic)  # when the executor last said anything about it
    sent: float = 0.0  # when its goal was last sent to the executor
    goal_step: int = -1  # the step of its goal (the step it was first sent at)
    seq: int = 0  # my number of the action (ExecuteSkill.seq): the same action decided again is a new goal
    target_view: str = ""  # my memory's view of its target when it was decided (ExecuteSkill.target_view)
    answered: bool = False  # the executor has answered that goal
    handle: Any = None  # the executor's goal (ClientGoalHandle), to cancel it
    given_up: bool = False  # left to a teammate that claimed the same object
    task_id: str = ""  # a serving team's task it was started for


class SkillRunner(Node):
    """A node that runs one robot's actions on its executor (see the module docstring). A subclass says when its
    turn waits for the executor (:meth:`_waiting_for_executor`), goes on with it once the executor has said something
    (:meth:`_resume`), and may hear of every goal that ended (:meth:`_skill_ended`) and of what the arm holds
    (:meth:`_arm_holds`)."""

    def __init__(self, node_name: str, **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.robot: str = self.declare_parameter("robot", "alice").value
        # the executor is given up on (and the robot idles) after this long without its server or any news of a goal
        self.executor_timeout_s: float = self.declare_parameter("executor_timeout_s", 10.0).value
        # before the executor's first answer: discovery between two hosts over a lossy link takes a while
        self.executor_startup_timeout_s: float = self.declare_parameter("executor_startup_timeout_s", 60.0).value
        self.goal_answer_timeout_s: float = self.declare_parameter("goal_answer_timeout_s", 1.0).value
        # real robots: the task ends when the goal is met, or at the time limit; the end report says how
        self.ends_task: bool = self.declare_parameter("ends_task", False).value
        self.time_limit_s: float = self.declare_parameter("time_limit_s", 0.0).value
        self.end_report: str = self.declare_parameter("end_report", "").value
        self.benchmark = Benchmark.CWAH  # the task's: a subclass sets it from its episode
        # the executor has reported on a goal (feedback, a result, a rejection) since this node started; an accepted
        # goal alone is not enough: the executor may still be discovering the servers it needs (the navigator's)
        self.executor_answered = False
        self.executor_lost: float | None = None  # since when the executor has not been reachable
        self.waiting_since = 0.0  # when the turn last stopped to wait for the executor
        self.step = -1
        self.clock = 0
        self.ready = False
        self.done = False
        self.skill: RunningSkill | None = None
        self.actions_started = 0  # numbers the actions (ExecuteSkill.seq)
        self.started: float | None = None  # when the first status came
        self.decisions = 0
        self.failures: Counter[str] = Counter()
        self.passage_meetings = 0  # meetings in passages the executor resolved (its results say)
        self.items_out_of_reach = 0
        self.travel_m = 0.0  # real robots: metres driven, from the pose at each status
        self.last_position: tuple[float, float] | None = None
        self.safety_refusals = 0  # my actions the safety policy refused, or a person did not approve
        self.skill_client = ActionClient(self, ExecuteSkill, "execute_skill")
        self.tick_publisher = self.create_publisher(StepTick, "step_tick", LATCHED, event_callbacks=own_publisher())

    # --- what a subclass says ---------------------------------------------------------------------------------
    def _waiting_for_executor(self) -> bool:
        """Whether the robot's turn waits for news from the executor."""
        raise NotImplementedError

    def _resume(self) -> None:
        """The executor said something of the running skill: go on with the turn."""
        raise NotImplementedError

    def _skill_ended(self, skill: RunningSkill) -> None:
        """The executor has ended ``skill``'s goal (or was given up on)."""

    def _arm_holds(self, holding: list[int]) -> None:
        """A real arm's word on what it holds now (the next status may not say)."""

    def _stopped(self, skill: RunningSkill) -> bool:
        """Whether ``skill`` is no longer wanted (its goal is canceled when the executor answers it)."""
        return skill.given_up or self.done

    def _wanted(self, skill: RunningSkill) -> bool:
        """Whether ``skill``'s goal is still to be sent (a retry while the executor's server is not up)."""
        return skill is self.skill

    def _dropped_counts(self) -> dict[str, int]:
        """The step tick's counts of dropped payloads and messages."""
        return {"payloads_dropped": 0, "messages_dropped": 0}

    def _runtime_counts(self) -> dict[str, int]:
        """The step tick's and the end report's counts of what the robot's runtime met."""
        return {
            "teammates_lost": 0,
            "teammates_returned": 0,
            "items_out_of_reach": self.items_out_of_reach,
            "safety_refusals": self.safety_refusals,
        }

    # --- the step tick --------------------------------------------------------------------------------------
    def _tick(self, kind: int, text: str = "", payload: str = "", receiver: str = "") -> None:
        self.tick_publisher.publish(
            StepTick(
                header=self._header(),
                robot=self.robot,
                step=self.step,
                kind=kind,
                text=text,
                payload_json=payload,
                receiver=receiver,
                **self._dropped_counts(),
                **self._runtime_counts(),
            )
        )

    def _header(self) -> Header:
        return Header(stamp=self.get_clock().now().to_msg())

    def _count_travel(self, position: tuple[float, float]) -> None:
        """Real robots: the way the robot drove, from its pose at each status."""
        if self.last_position is not None:
            self.travel_m += math.dist(self.last_position, position)
        self.last_position = position

    # --- the executor ---------------------------------------------------------------------------------------
    def _watch_executor(self) -> None:
        """Called by the node's timer: give up on a silent executor, send again a goal it has not answered."""
        skill = self.skill
        waiting = skill is not None and not skill.message and skill.outcome is None and self._waiting_for_executor()
        if not waiting or skill is None:
            return
        if time.monotonic() - max(skill.heard, self.waiting_since) > self._executor_patience():
            self._executor_lost(skill, f"no news of the goal for {self._executor_patience():g} s")
        elif (
            not self.done
            and skill.sent
            and not skill.answered
            and time.monotonic() - skill.sent > self.goal_answer_timeout_s
            and self.skill_client.server_is_ready()  # else the executor is away: executor_timeout_s deals with it
        ):
            text = format_action(skill.action, self.benchmark)
            self.get_logger().warning(
                f"no answer to the goal {text} within {self.goal_answer_timeout_s:g} s: sending it again "
                "(DDS drops a goal's answer while the executor has not yet discovered this node)",
                throttle_duration_sec=self.executor_timeout_s,
            )
            self._send_skill(skill, text)

    def _executor_lost(self, skill: RunningSkill, why: str) -> None:
        """The executor is gone: say so (once per outage) and fail the skill, so the robot decides anew (and idles
        while the executor stays away)."""
        if self.executor_lost is None:
            self.executor_lost = time.monotonic()
            self.get_logger().error(
                f"the executor of {self.robot} is not answering ({why}); is its node running? "
                "the robot idles until it is back"
            )
        skill.outcome = SkillOutcome(skill.action, False, "executor unavailable", 0)
        self._skill_ended(skill)
        if skill is self.skill:
            self._resume()

    def _running(self, action: HighLevelAction, target_view: str, task_id: str = "") -> RunningSkill:
        """A new action to run, numbered."""
        self.actions_started += 1
        return RunningSkill(action, self.step, target_view=target_view, seq=self.actions_started, task_id=task_id)

    def _executor_patience(self) -> float:
        """How long the executor may be silent before it is reported lost: longer until it has first answered."""
        return self.executor_timeout_s if self.executor_answered else self.executor_startup_timeout_s

    def _send_skill(self, skill: RunningSkill, text: str) -> None:
        if not self.skill_client.server_is_ready():
            if self.executor_lost is not None or time.monotonic() - skill.heard > self._executor_patience():
                self._executor_lost(skill, f"no execute_skill server for {self._executor_patience():g} s")
                return
            self.get_logger().info("waiting for execute_skill", throttle_duration_sec=5.0)

            def retry() -> None:
                if self._wanted(skill):  # (not if the task was stopped meanwhile)
                    self._send_skill(skill, text)

            call_later(self, RETRY_S, retry)
            return
        if skill.goal_step < 0:
            skill.goal_step = self.step
        future = self.skill_client.send_goal_async(
            # a goal sent again keeps its step
            ExecuteSkill.Goal(action=text, step=skill.goal_step, seq=skill.seq, target_view=skill.target_view),
            feedback_callback=lambda f, s=skill: self._on_skill_feedback(s, f),
        )
        sent = skill.sent = time.monotonic()
        skill.answered = False
        future.add_done_callback(lambda f, s=skill: self._on_skill_response(s, f, sent))

    def _on_skill_response(self, skill: RunningSkill, future: Any, sent: float) -> None:
        skill.heard = time.monotonic()
        # Only the answer to a goal sent since the outage began says the executor is back: one sent before may
        # arrive late, from an executor that died just after answering it.
        if self.executor_lost is not None and sent >= self.executor_lost:
            self.get_logger().info(f"the executor of {self.robot} answers again")
            self.executor_lost = None
        if sent != skill.sent:  # a late answer to a goal sent again since (the executor has replaced that goal)
            return
        skill.answered = True
        handle = skill.handle = future.result()
        if handle.accepted and self._stopped(skill):  # given up, or the task ended or was stopped, before the answer
            handle.cancel_goal_async()
        if not handle.accepted:
            self.executor_answered = True
            skill.outcome = SkillOutcome(skill.action, False, "rejected by the executor", 0)
            self._skill_ended(skill)
            self._resume()
            return
        handle.get_result_async().add_done_callback(lambda f, s=skill: self._on_skill_result(s, f))

    def _on_skill_feedback(self, skill: RunningSkill, message: Any) -> None:
        skill.heard = time.monotonic()
        self.executor_answered = True  # it works: its own servers (the navigator, the arm) are found too
        skill.armed_step = max(skill.armed_step, message.feedback.step)
        if skill is self.skill:
            self._resume()

    def _on_skill_result(self, skill: RunningSkill, future: Any) -> None:
        self.executor_answered = True
        if skill.outcome is not None:  # given up on already (the executor was silent too long)
            return
        result = future.result().result
        skill.outcome = SkillOutcome(skill.action, result.success, result.failure_reason, result.steps_taken)
        self.passage_meetings += result.meetings
        if result.holding:
            self._arm_holds(list(result.holding))
        if not result.success and result.failure_reason not in (EPISODE_OVER, "canceled"):  # no failure of the robot
            self.get_logger().info(f"{format_action(skill.action, self.benchmark)} failed: {result.failure_reason}")
            self.failures[result.failure_reason] += 1
            self.safety_refusals += is_refusal(result.failure_reason)
        self._skill_ended(skill)
        if skill is self.skill:
            self._resume()

    # --- the end of a task on real robots ----------------------------------------------------------------------
    def _out_of_time(self) -> bool:
        return (
            self.ends_task
            and not self.done
            and self.time_limit_s > 0
            and self.started is not None
            and time.monotonic() - self.started > self.time_limit_s
        )

    def _finish(self, report: EndReport, whose: str, shut_down: bool) -> None:
        """The task is over for this robot: its running action is canceled, its end report written (when asked
        for), and the node shuts down (exit 0) after a grace for its last messages. ``whose`` map counted the goal
        items."""
        self.done = True
        if self.skill is not None and self.skill.handle is not None:
            self.skill.handle.cancel_goal_async()
        done, wanted = report.goal_items
        self.get_logger().info(
            f"task over for {self.robot}: {report.ended} after {report.wall_s:.1f} s ({done}/{wanted} goal items on "
            f"{whose})"
        )
        if self.end_report:
            report.write(self.end_report)
        if shut_down:
            call_later(self, END_GRACE_S, self.context.try_shutdown)

    def _elapsed(self) -> float:
        return time.monotonic() - self.started if self.started is not None else 0.0

    def _end_report(self, why: str, met: bool, goal_items: tuple[int, int], **said: Any) -> EndReport:
        """The robot's end report: how the task ended and what its runtime counted (``said``: what its mind adds)."""
        return EndReport(
            robot=self.robot,
            ended=why,
            goal_met=met,
            goal_items=goal_items,
            wall_s=round(self._elapsed(), 3),
            statuses=self.step + 1,
            decisions=self.decisions,
            failures=dict(self.failures),
            passage_meetings=self.passage_meetings,
            travel_m=round(self.travel_m, 3),
            **said,
            **self._runtime_counts(),
        )
