"""The coordinator node: a centralised method's one planner for the whole team, on ROS 2.

One per team: ``coteam launch`` starts it when the team's method is centralised (the oracle, or any
:class:`coteam.kit.CentralisedTeam`). It holds the team object and one :class:`coteam.agent.reasoning.AgentBrain` per
robot, each robot's memory also taking in its teammates' observations (the union of what they see) unless the team
sees the whole world, exactly as the in-process runner does. Per robot (namespace from ``namespaces``, default
``/<robot>``) it

* subscribes ``turn_report`` (``coteam_interfaces/TurnReport``) from the robot's relay: what the robot observed at
  a step and how its running action goes, and the answer to each started action;
* publishes ``turn_command`` (``coteam_interfaces/TurnCommand``): ``START`` an action, ``END`` the robot's turn
  with the step tick its relay answers the bridge with;
* publishes ``decision`` (``coteam_interfaces/Decision``, the trace record as JSON), as a planner does.

**Turns.** With ``lockstep`` (a simulated world in lockstep) it takes one step's reports from every robot it plans
with, hands every observation to the brains, then plays the ready robots' turns one after the other in the team's
order -- :func:`coteam.agent.reasoning.agent_turn`, the running action polled through the robot's report, a new action
started by ``START`` and polled through its answer -- and ends each turn with ``END`` (``ACT`` or ``IDLE``); a busy
robot's turn ends at once (``OBSERVED``). So a joint decision sees what the in-process runner's sees, and the run is
step for step the in-process one. A turn that decides nothing (the robot acts on, or is busy) is answered to the bridge
by the robot's relay itself, which then goes on to the next step; its ``END`` tells the relay how far the coordinator
has played, and a report that comes before its step is played waits its turn. Without ``lockstep`` (real time, real
robots) each report is played as it comes.

**A robot that stops answering** -- no report for ``report_timeout_s`` (``startup_timeout_s`` before its first), or
no answer to a started action for ``answer_timeout_s``, both shorter than the bridge's ``tick_timeout_s`` so that
the others' turns are played before the bridge gives up on them -- is dropped from the joint plan
(:meth:`coteam.agent.reasoning.Team.leave`): the others go on and take over what it had claimed. It joins again when it
reports again (a robot whose executor died: once its relay's ``executor_timeout_s`` says so; it then idles, its
actions failing as ``executor unavailable``, as a decentralised robot's do).

At the episode's end (a report with ``episode_done``) the team's episode ends with every robot's memory
(``end_episode``; a method's store is saved then).

**Real robots** (``ends_task``): no simulator says when the task is over. The coordinator ends it when a robot's
memory (what the team saw) shows the goal met by distinct items (:func:`coteam_ros.task_end.goal_progress`, each
robot's own put-downs counted by robot), or ``time_limit_s`` after the first report: it sends every relay
``END_TASK`` with why and the goal items, and decides no more; each relay stops its robot, writes its end report
and ends, as a decentralised one does.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from coteam_interfaces.msg import Decision, StepTick, TurnCommand, TurnReport
from rclpy.node import Node
from rclpy.publisher import Publisher
from std_msgs.msg import Header

from coteam.agent.reasoning import AgentBrain, EpisodeOutcome, PollSkill, StartSkill, agent_turn
from coteam.agent.skills import SkillOutcome
from coteam.domain.actions import HighLevelAction, format_action
from coteam.domain.capabilities import DEFAULT_CAPABILITIES, team_capabilities
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import Observation, observation_from_dict
from coteam.registry import make_team, method_class
from coteam_ros.convert import decision_to_msg
from coteam_ros.episode import load_episode
from coteam_ros.qos import DECISIONS, TURNS, own_publisher, own_subscription
from coteam_ros.runtime import spin_node, wall_timer
from coteam_ros.task_end import goal_met, goal_progress

NODE_NAME = "coordinator"
LOST = "the robot's relay lost the action"  # an action the relay no longer runs (it was restarted)


@dataclass
class TeamRobot:
    """One robot as the coordinator runs it."""

    name: str
    brain: AgentBrain
    commands: Publisher
    decisions: Publisher
    reports: deque[TurnReport] = field(default_factory=deque)  # its status reports not yet played, oldest first
    answer: TurnReport | None = None  # how its running action goes at this step (a report, or a START's answer)
    action: HighLevelAction | None = None  # the action its relay runs, as far as the coordinator knows
    turn: Generator[Any, Any, bool] | None = None
    step: int = -1  # the last status step played
    seq: int = 0  # the last command's seq
    since: float = field(default_factory=time.monotonic)  # since when it is waited for (a report or an answer)
    in_team: bool = True  # planned with (dropped while it does not answer)
    reported: bool = False  # it has reported at least once


class CoordinatorNode(Node):
    """Decides for every robot of a centralised team (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        robots = list(self.declare_parameter("robots", ["alice", "bob"]).value)
        namespaces = list(self.declare_parameter("namespaces", [""]).value)
        self.method: str = self.declare_parameter("method", "oracle").value
        backend: str = self.declare_parameter("backend", "symbolic").value
        params = json.loads(self.declare_parameter("params_json", "{}").value or "{}")
        scene_path = self.declare_parameter("scene_path", "").value
        seed = self.declare_parameter("seed", 0).value
        self.lockstep: bool = self.declare_parameter("lockstep", True).value
        # both shorter than the bridge's tick_timeout_s (5 s): the others' turns are played before the bridge gives up
        self.report_timeout_s: float = self.declare_parameter("report_timeout_s", 3.0).value
        self.answer_timeout_s: float = self.declare_parameter("answer_timeout_s", 3.0).value
        self.startup_timeout_s: float = self.declare_parameter("startup_timeout_s", 60.0).value
        # real robots: the task ends when the team's map shows the goal met, or at the time limit
        self.ends_task: bool = self.declare_parameter("ends_task", False).value
        self.time_limit_s: float = self.declare_parameter("time_limit_s", 0.0).value
        self.started: float | None = None  # when the first report came
        if namespaces == [""]:
            namespaces = ["/" + r for r in robots]
        if len(namespaces) != len(robots):
            raise ValueError(f"{len(namespaces)} namespaces for {len(robots)} robots")
        cls = method_class(self.method)
        if not cls.centralised:
            raise ValueError(f"{self.method} is not a centralised method: each robot's planner decides for it")
        if "backend" in cls.Config.switch_names():
            params.setdefault("backend", backend)
        self.team = make_team(self.method, params)
        self.backend = str(getattr(self.team.config, "backend", "none"))
        self.info = load_episode(scene_path, seed, robots, self.declare_parameter("safety_path", "").value).info
        self.team.reset(self.info)
        nav = NavGrid(self.info.floorplan)
        bodies = team_capabilities(self.declare_parameter("capabilities_json", "{}").value)
        self.shared = not self.team.full_observability  # each robot's memory takes in what its teammates see
        self.robots: dict[str, TeamRobot] = {}
        for name, ns in zip(robots, namespaces, strict=True):
            robot = TeamRobot(
                name,
                AgentBrain(name, self.info, self.team, nav, capabilities=bodies.get(name, DEFAULT_CAPABILITIES)),
                self.create_publisher(TurnCommand, f"{ns}/turn_command", TURNS, event_callbacks=own_publisher()),
                self.create_publisher(Decision, f"{ns}/decision", DECISIONS, event_callbacks=own_publisher()),
            )
            self.robots[name] = robot
            self.create_subscription(
                TurnReport,
                f"{ns}/turn_report",
                lambda m, r=robot: self._on_report(r, m),
                TURNS,
                event_callbacks=own_subscription(),
            )
        self.queue: deque[TeamRobot] = deque()  # ready robots whose turns are still to play, in the team's order
        self.playing: TeamRobot | None = None  # the robot whose turn waits for its relay's answer
        self.done = False
        self.epoch = time.time_ns()  # a restarted coordinator's commands are told from an earlier one's
        wall_timer(self, 0.1, self._on_timer)
        self.get_logger().info(
            f"coordinator of {', '.join(robots)}: {self.method} ({self.backend}), "
            f"{'lockstep' if self.lockstep else 'as reports come'}"
        )

    # --- reports -----------------------------------------------------------------------------------------------
    def _on_report(self, robot: TeamRobot, report: TurnReport) -> None:
        if report.robot != robot.name or self.done:
            return
        if report.command_seq:
            if report.command_seq == robot.seq and robot is self.playing and report.step == robot.step:
                robot.answer = report
                self._advance(robot, PollSkill())
            return
        if report.step <= (robot.reports[-1].step if robot.reports else robot.step):
            return  # seen already (a late-matching copy)
        if robot is self.playing:  # real time: the robot has gone on with its new action before the answer came
            robot.answer = TurnReport(action_state=TurnReport.ACTING)
            self._advance(robot, PollSkill())
        if robot.reports and not self.lockstep:  # real time: a newer report before this one was played; what it saw
            self._take_in([robot])  # counts
        # (in lockstep a relay whose robot acts on, or is busy, answers the bridge itself: its next step's report may
        # come before this step is played, and waits its turn)
        robot.reports.append(report)
        robot.reported = True
        if not robot.in_team:
            robot.in_team = True
            self.team.join(robot.name, robot.brain.memory)
            self.get_logger().info(f"{robot.name} reports again: the team plans with it again")
        self._take_step()

    def _take_step(self) -> None:
        """Play the reports in: in lockstep one step of every robot in the team at once, else each as it comes (and
        on, while the reports of later steps are in)."""
        while self.playing is None and not self.queue and not self.done:
            members = [r for r in self.robots.values() if r.in_team]
            reported = [r for r in members if r.reports]
            if not reported or (self.lockstep and len(reported) < len(members)):
                return
            observations = self._take_in(reported)
            ending = next((self.robots[n].answer for n in observations if self.robots[n].answer.episode_done), None)
            if ending is not None:
                self._end_episode(ending)
                return
            if self.ends_task and self._task_over():
                return
            for name in observations:
                robot = self.robots[name]
                if robot.answer.ready:
                    self.queue.append(robot)
                else:
                    self._end_turn(robot, StepTick.OBSERVED)
            self._play_next()

    def _take_in(self, robots: list[TeamRobot]) -> dict[str, Observation]:
        """The observations of ``robots``' reports, handed to the brains as the in-process runner does (every robot
        its own, then each its teammates'); each robot's report becomes the answer its turn starts from."""
        observations = {}
        for robot in robots:
            report = robot.reports.popleft()
            robot.step = report.step
            try:
                observations[robot.name] = observation_from_dict(json.loads(report.observation_json))
            except ValueError as exc:
                self.get_logger().error(f"{robot.name}'s report of step {report.step} ignored: {exc}")
                self._end_turn(robot, StepTick.IDLE if report.ready else StepTick.OBSERVED)
                continue
            robot.answer = report
        for name, obs in observations.items():
            self.robots[name].brain.observe(obs)
        if self.shared:
            for name, obs in observations.items():
                for other in self.robots.values():
                    if other.name != name:
                        other.brain.absorb(obs)
        return observations

    def _task_over(self) -> bool:
        """Real robots: end the task when a robot's memory shows the goal met, or at the time limit (every relay
        is told); False while it goes on."""
        now = time.monotonic()
        self.started = now if self.started is None else self.started
        progress = {r.name: goal_progress(r.brain.memory, self._put_down_by_others(r)) for r in self.robots.values()}
        best = max(progress.values())
        met = any(goal_met(r.brain.memory, self._put_down_by_others(r)) for r in self.robots.values())
        if met:
            why = "goal met on the team's map"
        elif self.time_limit_s > 0 and now - self.started > self.time_limit_s:
            why = "time limit"
        else:
            return False
        self.done = True
        for robot in self.robots.values():
            self._command(robot, TurnCommand.END_TASK, action=why, goal_items=list(best))
        done, wanted = best
        memories = [r.brain.memory for r in self.robots.values()]
        clock = max(r.brain.memory.step for r in self.robots.values())
        self.team.end_episode(EpisodeOutcome.of(self.info.episode, met, clock, done / max(wanted, 1), memories))
        self.get_logger().info(f"task over: {why} after {now - self.started:.1f} s ({done}/{wanted} goal items)")
        return True

    def _put_down_by_others(self, robot: TeamRobot) -> dict[str, list]:
        """The other robots' own put-downs, by robot: each item where that robot's arm left it."""
        return {
            other.name: list(other.brain.memory.put_down_by_me.values())
            for other in self.robots.values()
            if other is not robot
        }

    def _end_episode(self, report: TurnReport) -> None:
        self.done = True
        steps = report.clock if report.success else self.info.task.horizon
        memories = [r.brain.memory for r in self.robots.values()]
        outcome = EpisodeOutcome.of(self.info.episode, report.success, steps, round(report.transport_rate, 6), memories)
        self.team.end_episode(outcome)
        self.get_logger().info(f"episode over: {'success' if report.success else 'not finished'}")

    # --- turns -------------------------------------------------------------------------------------------------
    def _play_next(self) -> None:
        while self.playing is None and self.queue:
            robot = self.queue.popleft()
            if not robot.in_team:
                continue
            if robot.action is None:
                robot.answer = None  # the report says nothing of an action the turn polls
            elif robot.answer is not None and robot.answer.action_state == TurnReport.NO_ACTION:
                text = format_action(robot.action, self.info.benchmark)
                self.get_logger().warning(f"{robot.name}'s relay no longer runs {text}")
            robot.turn = agent_turn(robot.brain, robot.action is not None)
            self.playing = robot
            self._advance(robot, None)

    def _advance(self, robot: TeamRobot, request: Any) -> None:
        """Play ``robot``'s turn (from its start: ``request`` None) until it waits for its relay's answer, or
        ends."""
        assert robot.turn is not None
        try:
            if request is None:
                request = next(robot.turn)
            while True:
                if isinstance(request, StartSkill):
                    self._start(robot, request)
                    request = next(robot.turn)
                    continue
                answer = robot.answer
                if answer is None:
                    robot.since = time.monotonic()
                    return  # the START's answer comes as a report
                robot.answer = None
                if answer.action_state == TurnReport.ACTING:
                    request = robot.turn.send(None)
                    continue
                action, robot.action = robot.action, None
                assert action is not None
                if answer.action_state == TurnReport.ENDED:
                    outcome = SkillOutcome(action, answer.action_success, answer.failure_reason, answer.steps_taken)
                else:
                    outcome = SkillOutcome(action, False, LOST)
                request = robot.turn.send(outcome)
        except StopIteration as stop:
            robot.turn = None
            self._end_turn(robot, StepTick.ACT if stop.value else StepTick.IDLE)

    def _start(self, robot: TeamRobot, request: StartSkill) -> None:
        """Record the decision and send its action to the robot's relay."""
        record = robot.brain.record(request.decision, request.options)
        robot.action, robot.answer = request.decision.action, None
        robot.decisions.publish(decision_to_msg(self._header(), self.method, self.backend, robot.step, record))
        self._command(robot, TurnCommand.START, action=record["action"])

    def _end_turn(self, robot: TeamRobot, tick: int) -> None:
        self._command(robot, TurnCommand.END, tick=tick)
        robot.since = time.monotonic()
        if robot is self.playing:
            self.playing = None
            self._play_next()
            self._take_step()

    def _command(
        self, robot: TeamRobot, kind: int, action: str = "", tick: int = 0, goal_items: list[int] | None = None
    ) -> None:
        robot.seq += 1
        command = TurnCommand(
            header=self._header(),
            robot=robot.name,
            step=robot.step,
            epoch=self.epoch,
            seq=robot.seq,
            kind=kind,
            action=action,
            tick=tick,
            goal_items=goal_items or [],
        )
        robot.commands.publish(command)

    def _header(self) -> Header:
        return Header(stamp=self.get_clock().now().to_msg())

    # --- robots that stop answering ----------------------------------------------------------------------------
    def _on_timer(self) -> None:
        if self.done:
            return
        now = time.monotonic()
        playing = self.playing
        if playing is not None and now - playing.since > self.answer_timeout_s:
            self._drop(playing, f"no answer to its action for {self.answer_timeout_s:g} s")
            return
        if playing is not None or self.queue:
            return
        waiting = [r for r in self.robots.values() if r.in_team and not r.reports]
        if len(waiting) == sum(r.in_team for r in self.robots.values()):
            return  # nobody has reported this step yet: nothing to wait for
        for robot in waiting:
            limit = self.report_timeout_s if robot.reported else self.startup_timeout_s
            if now - robot.since > limit:
                self._drop(robot, f"no report for step {robot.step + 1} within {limit:g} s")
        self._take_step()

    def _drop(self, robot: TeamRobot, why: str) -> None:
        """Plan without ``robot`` until it reports again."""
        robot.in_team = False
        self.team.leave(robot.name)
        if robot.turn is not None:
            robot.turn.close()
            robot.turn = None
        self.get_logger().warning(f"{robot.name} does not answer ({why}): the team plans without it")
        if robot is self.playing:
            self.playing = None
            self._play_next()
        self._take_step()


def main(argv: list[str] | None = None) -> None:
    spin_node(CoordinatorNode, argv)


if __name__ == "__main__":
    main()
