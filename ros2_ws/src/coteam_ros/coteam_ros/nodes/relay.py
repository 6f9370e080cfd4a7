"""The relay node: one robot of a centralised team, run for the team's ``coordinator`` (which decides for every robot).

Topics and actions, relative to the robot's namespace:

* subscribes ``status`` (``coteam_interfaces/RobotStatus``) and reports each step's on ``turn_report``
  (``coteam_interfaces/TurnReport``: the observation, and whether the running action acts at this step or has ended),
  once the running action's state at that step is known;
* takes the actions the coordinator sends on ``turn_command`` (``coteam_interfaces/TurnCommand``: only its own
  robot's, for the step it is at, each once; a garbled one is answered as failed) and runs them as ``execute_skill``
  goals on the robot's executor (:class:`coteam_ros.skill_runner.SkillRunner`), reporting how each goes;
* answers the bridge with the step tick the coordinator says (``step_tick``); when the coordinator's word is
  known already -- the robot's action acts at this step (``ACT``) or the robot is busy (``OBSERVED``): that robot's turn
  decides nothing -- it answers at once, once the report is out, and the coordinator's ``END`` then only says how far
  it has played. It stays at most :data:`AHEAD_STEPS` steps ahead of the coordinator's ``END`` (whose reports wait in
  ``turn_report``'s history meanwhile): a step with a decision waits for the coordinator as before.

It builds no team and sends no team messages. On real robots (``ends_task``) the coordinator ends the task
(``END_TASK``, with the goal items its team's map shows); the relay writes its end report and stops, as a planner
does, or at the task's time limit.

Parameters: ``robot``, ``scene_path`` (the task's scene file), the executor's timeouts, ``ends_task``,
``time_limit_s`` and ``end_report`` (:mod:`coteam_ros.skill_runner`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from coteam_interfaces.msg import RobotStatus, StepTick, TurnCommand, TurnReport

from coteam.domain.actions import format_action, parse_action
from coteam.domain.observation import observation_from_dict
from coteam.domain.scene_io import load_scene
from coteam_ros.qos import LATCHED, TURNS, own_publisher, own_subscription
from coteam_ros.runtime import call_later, spin_node, wall_timer
from coteam_ros.skill_runner import SkillRunner

NODE_NAME = "relay"
AHEAD_STEPS = 3  # at most this many steps answered before the coordinator has played them (TURNS keeps 10 reports)


class RelayNode(SkillRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        scene_path: str = self.declare_parameter("scene_path", "").value
        if not scene_path:
            raise ValueError(
                "no scene_path: the task's scene file (coteam.domain.scene_io JSON; `coteam launch` writes it)"
            )
        self.benchmark = load_scene(scene_path).benchmark
        self.report: TurnReport | None = None  # the report due once the running action's state is known
        self.last_command = (0, 0)  # the (epoch, seq) of the last command taken
        self.played = -1  # the last step the coordinator has played for this robot (its END)
        self.answered: tuple[int, int] | None = None  # (step, tick) this relay answered the bridge with by itself
        self.report_publisher = self.create_publisher(TurnReport, "turn_report", TURNS, event_callbacks=own_publisher())
        self.create_subscription(
            TurnCommand, "turn_command", self._on_command, TURNS, event_callbacks=own_subscription()
        )
        self.create_subscription(RobotStatus, "status", self._on_status, LATCHED, event_callbacks=own_subscription())
        wall_timer(self, 0.1, self._on_timer)
        up = f"relay for {self.robot}: decided by the team's coordinator"
        call_later(self, 0.0, lambda: self.get_logger().info(up))  # said once it spins: stopped now, it reports

    def _on_timer(self) -> None:
        if self._out_of_time():
            self._end_task("time limit")
        self._watch_executor()

    def _waiting_for_executor(self) -> bool:
        return self.report is not None

    def _resume(self) -> None:
        self._send_report()

    def _on_status(self, status: RobotStatus) -> None:
        """Tell the coordinator what the robot observed at this step, once the running action's state is known."""
        if status.robot != self.robot or status.step <= self.step or self.done:
            return
        self.step, self.clock, self.ready, self.done = status.step, status.clock, status.ready, status.episode_done
        if self.ends_task:
            if self.started is None:
                self.started = time.monotonic()
            self._count_travel(observation_from_dict(json.loads(status.observation_json)).position)
        if self.report is None:  # else the executor has still not said how the action goes: the wait goes on
            self.waiting_since = time.monotonic()
        self.report = TurnReport(
            robot=self.robot,
            step=status.step,
            clock=status.clock,
            ready=status.ready,
            episode_done=status.episode_done,
            success=status.success,
            transport_rate=status.transport_rate,
            observation_json=status.observation_json,
            command_seq=0,
        )
        self._send_report()

    def _on_command(self, command: TurnCommand) -> None:
        if command.robot == self.robot and command.kind == TurnCommand.END_TASK and self.ends_task and not self.done:
            done, wanted = [*command.goal_items, 0, 0][:2]
            self._end_task(command.action or "the coordinator ended the task", (done, wanted))
            return
        if command.robot == self.robot and command.kind == TurnCommand.END:
            self.played = max(self.played, command.step)
        if command.robot != self.robot or command.step != self.step:
            return  # another robot's, or for a step that is over
        epoch, seq = self.last_command
        if command.epoch == epoch and command.seq <= seq:
            return  # seen already
        if command.epoch != epoch and epoch:
            self.get_logger().info("a new coordinator decides for the team")
        self.last_command = (command.epoch, command.seq)
        if command.kind == TurnCommand.END:
            if self.answered != (self.step, command.tick):  # (not the same answer again)
                self._tick(command.tick)
            return
        self.report = TurnReport(robot=self.robot, step=self.step, clock=self.clock, command_seq=command.seq)
        try:
            action = parse_action(command.action, self.benchmark)
        except ValueError as exc:  # the coordinator validated it: a garbled or forged command, answered as failed
            self.get_logger().error(f"command {command.seq} for step {command.step} refused: {exc}")
            self.report.action_state, self.report.action = TurnReport.ENDED, command.action
            self.report.failure_reason = f"not an action: {exc}"
            self._publish_report()
            return
        # the action comes from the team's view, which the executor takes in too: the relay has no view to add
        self.skill = self._running(action, "")
        self.waiting_since = time.monotonic()
        self._send_skill(self.skill, command.action)

    def _send_report(self) -> None:
        """Send the due report once the running action's state at this step is known: it acts (its goal is in
        place), it has ended, or the robot is not ready (or the episode is over)."""
        report, skill = self.report, self.skill
        if report is None:
            return
        if report.command_seq == 0 and (not report.ready or report.episode_done):
            report.action_state = TurnReport.BUSY
        elif skill is None:
            report.action_state = TurnReport.NO_ACTION
        elif skill.outcome is not None:
            outcome = skill.outcome
            self.skill = None
            report.action_state = TurnReport.ENDED
            report.action = format_action(outcome.action, self.benchmark)
            report.action_success = outcome.success
            report.failure_reason = outcome.reason
            report.steps_taken = outcome.primitives
        elif skill.armed_step == self.step:
            report.action_state = TurnReport.ACTING
        else:
            return  # wait for the executor's feedback or result
        self._publish_report()

    def _publish_report(self) -> None:
        report, self.report = self.report, None
        assert report is not None
        report.header = self._header()
        self.report_publisher.publish(report)
        if report.command_seq == 0 and self.played >= report.step - AHEAD_STEPS:
            # the coordinator's END is known already: the robot acts on, or is busy (it sees, and its turn ends)
            if report.action_state == TurnReport.ACTING:
                self._answer(StepTick.ACT)
            elif report.action_state == TurnReport.BUSY and not report.episode_done:
                self._answer(StepTick.OBSERVED)

    def _answer(self, tick: int) -> None:
        """Answer the bridge for this step without waiting for the coordinator."""
        self.answered = (self.step, tick)
        self._tick(tick)

    def _end_task(self, why: str, told: tuple[int, int] = (0, 0)) -> None:
        """The task is over (the coordinator says so, with the goal items ``told`` its team's map shows; or the time
        limit): the end report, and the node stops."""
        report = self._end_report(why, why.startswith("goal met"), told)
        self._finish(report, "the team's map", shut_down=True)


def main(argv: list[str] | None = None) -> None:
    spin_node(RelayNode, argv)


if __name__ == "__main__":
    main()
