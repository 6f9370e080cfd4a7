"""The planner node: one robot's reasoning (:class:`coteam.agent.reasoning.AgentBrain`) on ROS 2.

Topics and actions, relative to the robot's namespace:

* subscribes ``status`` (``coteam_interfaces/RobotStatus``): the robot's observation at every step;
* sends physical actions as ``execute_skill`` goals (``coteam_interfaces/ExecuteSkill``) to the robot's
  executor; a failed action's reason goes into the robot's memory and the method decides again;
* publishes messages on ``/team/messages`` (``coteam_interfaces/TeamMessage``, the only channel between robots;
  at most 500 characters, longer text is cut at the sender with a warning) and receives the teammates' there
  (into a :class:`~coteam_ros.inbox.TeamInbox`: only teammates, never replacing or replaying, bounded); with
  ``signing_key`` set it signs every message it sends and believes only the team's signed, new ones;
* publishes every decision on ``decision`` (``coteam_interfaces/Decision``, the trace record as JSON);
* answers every status with a ``step_tick`` (``coteam_interfaces/StepTick``) -- the lockstep protocol of the
  bridge: when the robot is ready, act (the executor has the step's goal in place), send a message, or idle; when
  it is busy with an action, ``OBSERVED`` once the observation is in the robot's memory (so the bridge never
  steps past a status the planner has not taken in).

A centralised method (one planner for the whole team) decides in the team's ``coordinator`` node, and each robot
runs a relay instead (:mod:`coteam_ros.nodes.relay`). The executor's side (goals, answers, an executor that is away)
is :class:`coteam_ros.skill_runner.SkillRunner`'s, shared with the relay.

A step's turn is :func:`coteam.agent.reasoning.agent_turn`, the same as the in-process runner's. Messages delivered by
the simulator at a step are listed (sender, step) in the status; their text comes from ``/team/messages`` (the
node waits up to ``message_wait_s`` for it, then goes on and hands the text over when it arrives).

Parameters: ``robot``, ``robots`` (the team, in simulator order), ``teammates`` (informational), ``method``,
``backend``, ``params_json`` (method hyper-parameters), ``scene_path`` / ``seed`` (the task's scene file and the
methods' seed, see ``coteam_ros.episode``), ``message_wait_s``, ``message_delivery`` (``status``: when the sim
bridge's status says; ``arrival``: on real robots, at the next status after the message arrived),
``executor_timeout_s`` (an executor without a server, or silent about a running goal, this long is reported once as
an error; its skill fails with ``executor unavailable`` and the robot idles until the executor answers again;
``executor_startup_timeout_s`` until the executor has first reported on a goal, as discovery is slow on a lossy link),
``goal_answer_timeout_s`` (a goal the executor has not answered this long is sent again with its step: DDS drops a
goal's answer while the executor's server has not yet discovered this planner; the executor lets it take its skill
over), ``signing_key`` (the robot's private key; empty: the team does not sign), ``team_keys`` (the team's public
keys), ``max_message_age_s`` (a signed message older than this is refused), ``stale_message_steps`` (a waiting
message this many steps older than the robot's clock that no status delivered is dropped), ``heartbeat_period_s``
and ``teammate_lease_s`` (a decentralised team's planners beat on ``/team/heartbeat``; a teammate silent past its
lease is lost: my memory plans without it, its claims lapse and what it held is out of reach, until it is heard
again; each change is logged once and counted in the step tick and the end report, ``coteam_ros.heartbeat``),
``memory_journal`` (a file keeping every observation taken in; a planner started again in the same episode takes
them in again first, so it remembers what it had seen and heard: ``coteam_ros.memory_journal``), ``capabilities_json``
(the team's bodies, :func:`coteam.domain.capabilities.team_capabilities`: the options keep to this robot's). On a real
robot (``ends_task``) the memory keeps the robot's clock, so an action that failed the same way twice is blocked for
seconds (:mod:`coteam.agent.retries`).

A serving team's planner (``serve``; real robots and the twin, a per-robot method) does not end with its task: it
takes the tasks the team's task node starts and stops on ``/team/task_assignment``
(``coteam_interfaces/TaskAssignment``, latched), each in the same home with the memory it kept
(:meth:`coteam.agent.reasoning.AgentBrain.take_task`), reports on ``/team/task_progress``
(``coteam_interfaces/TaskProgress``: each goal line as its map shows it, what it does, whether the goal is met) and
between tasks keeps still where it stopped, or walks into the room its world file names for it (``rest_room``) and
keeps still there, its memory still taking in what it sees. A task stopped while an action runs has its goal canceled
on the executor; the robot decides again (or walks to rest) once the executor has answered the cancel.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from coteam_interfaces.msg import Decision, RobotStatus, StepTick, TaskAssignment, TaskProgress, TeamMessage

from coteam.agent.options import walk_into
from coteam.agent.progress import goal_text
from coteam.agent.reasoning import AgentBrain, EpisodeInfo, EpisodeOutcome, PollSkill, StartSkill, agent_turn
from coteam.agent.skills import SkillOutcome
from coteam.domain.actions import MAX_MESSAGE_CHARS, HighLevelAction, format_action, truncate_message
from coteam.domain.capabilities import DEFAULT_CAPABILITIES, team_capabilities
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import Message, ObjectView, Observation, fixture_views, observation_from_dict
from coteam.home.roster import RosterChange
from coteam.home.signing import Envelope, Signer, Verifier, robot_keys
from coteam.home.world_file import goal_task
from coteam.registry import make_team, method_class
from coteam.senses.perception import ObservationAssembler
from coteam.tasks.words import GoalLine
from coteam_ros.convert import decision_to_msg, target_view_json
from coteam_ros.episode import load_episode
from coteam_ros.heartbeat import TeamHeartbeat
from coteam_ros.inbox import TeamInbox
from coteam_ros.memory_journal import MemoryJournal
from coteam_ros.operator import OPERATOR, parse_report
from coteam_ros.qos import DECISIONS, LATCHED, TEAM_MESSAGES, own_publisher, own_subscription
from coteam_ros.runtime import call_later, spin_node, wall_timer
from coteam_ros.skill_runner import RunningSkill, SkillRunner
from coteam_ros.task_end import (
    TeamHeard,
    claim_target,
    goal_met,
    goal_progress,
    intent_payload,
    line_progress,
    parse_intent,
    task_done_by,
    task_done_payload,
)

NODE_NAME = "planner"
INTENTS = "/team/intents"  # the channel of claims, and the receiver an intent is signed for


class PlannerNode(SkillRunner):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        robots = list(self.declare_parameter("robots", ["alice", "bob"]).value)
        self.declare_parameter("teammates", [r for r in robots if r != self.robot])
        self.method: str = self.declare_parameter("method", "pce").value
        self.backend: str = self.declare_parameter("backend", "symbolic").value
        params = json.loads(self.declare_parameter("params_json", "{}").value or "{}")
        scene_path = self.declare_parameter("scene_path", "").value
        seed = self.declare_parameter("seed", 0).value
        self.message_wait_s: float = self.declare_parameter("message_wait_s", 5.0).value
        # status: the sim bridge times delivery (the status lists what arrives); arrival: hand over on receipt
        self.message_delivery: str = self.declare_parameter("message_delivery", "status").value
        if self.message_delivery not in ("status", "arrival"):
            raise ValueError(f"message_delivery must be status or arrival, not {self.message_delivery!r}")
        if method_class(self.method).centralised:  # its team lives in the coordinator; a relay runs each robot
            raise ValueError(f"{self.method} plans for the whole team in the coordinator: its robots run relay nodes")
        if "backend" in method_class(self.method).Config.switch_names():
            params.setdefault("backend", self.backend)
        team = make_team(self.method, params)
        self.backend = str(getattr(team.config, "backend", "none"))  # what the method's roles really run on
        episode = load_episode(scene_path, seed, robots, self.declare_parameter("safety_path", "").value)
        info = episode.info
        # a serving team: tasks come and go on /team/task_assignment; between them the robot rests
        self.serve: bool = self.declare_parameter("serve", False).value
        self.home, self.home_info = episode.scene, info
        self.task_id = ""  # serving: the task the robot works on ('' between tasks)
        rest = self.declare_parameter("rest_room", "").value
        rooms = {room.name: room for room in self.home.floorplan.rooms}
        if rest and rest not in rooms:
            raise ValueError(f"rest_room: {rest!r} is not a room of the home ({', '.join(rooms)})")
        self.rest_room = rooms.get(rest)  # serving: where the robot waits between tasks (None: where it stopped)
        self.resting: RunningSkill | None = None  # serving: the walk to the rest room, while it runs
        self.stopping: RunningSkill | None = None  # serving: a stopped task's action until the executor has ended it
        self.progress_said: tuple = ()  # serving: the last progress reported
        self.benchmark = info.benchmark
        self.journal: MemoryJournal | None = None
        team.reset(info)
        self.team = team
        bodies = team_capabilities(self.declare_parameter("capabilities_json", "{}").value)
        body = bodies.get(self.robot, DEFAULT_CAPABILITIES)
        self.brain = AgentBrain(self.robot, info, team, NavGrid(info.floorplan), capabilities=body)
        journal_path = self.declare_parameter("memory_journal", "").value
        if journal_path:
            self.journal = MemoryJournal(journal_path, self.robot, info.episode, seed)
            self._recall(self.journal)
        self.verdict: tuple[bool, int, float] | None = None  # the episode's end (success, steps, transport rate)
        self.turn: Any = None
        self.request: Any = None
        teammates = [r for r in robots if r != self.robot]
        self.signer: Signer | None = None
        verifier: Verifier | None = None
        signing_key = self.declare_parameter("signing_key", "").value
        team_keys = self.declare_parameter("team_keys", "").value
        max_age_s = self.declare_parameter("max_message_age_s", 120.0).value
        intent_verifier: Verifier | None = None
        if signing_key:
            self.signer, verifier = robot_keys(self.robot, signing_key, team_keys, max_age_s)
            intent_verifier = robot_keys(self.robot, signing_key, team_keys, max_age_s)[1]  # its own sequence
        self.stale_message_steps: int = self.declare_parameter("stale_message_steps", 50).value
        self.inbox = TeamInbox(teammates, self.get_logger().warning, verifier=verifier)
        # a person's word (coteam tell), signed with the team's operator key when the team signs
        operator_verifier = robot_keys(self.robot, signing_key, team_keys, max_age_s)[1] if signing_key else None
        self.operator = TeamInbox([OPERATOR], self.get_logger().warning, verifier=operator_verifier)
        self.waiting: tuple[Observation, float] | None = None  # a status whose message texts have not arrived
        self.missing: set[tuple[str, int]] = set()  # delivered keys whose text never came (handed over later)
        # real robots: the task ends when my map shows the goal met, a teammate says so, or at the time limit
        self.teammate_done: str | None = None  # a teammate whose map showed the goal met
        self.team_put_down: dict[str, list[ObjectView]] = {}  # teammate -> the goal items its arm put in place
        if self.ends_task:  # real robots tell each other what they work on (claims)
            self.placements = ObservationAssembler(self.robot, episode.scene)  # teammates' deliveries on my map
            scene = episode.scene  # what the team has heard of: delivered items, containers' states
            self.heard = TeamHeard(doors={c.id: c.id in scene.initially_open for c in scene.containers})
            self.intents = TeamInbox(teammates, self.get_logger().warning, verifier=intent_verifier)
            self.intent_publisher = self.create_publisher(
                TeamMessage, INTENTS, TEAM_MESSAGES, event_callbacks=own_publisher()
            )
            self.create_subscription(
                TeamMessage, INTENTS, self._on_intent, TEAM_MESSAGES, event_callbacks=own_subscription()
            )
        if self.serve:
            self.progress_publisher = self.create_publisher(TaskProgress, "/team/task_progress", TEAM_MESSAGES)
            self.create_subscription(TaskAssignment, "/team/task_assignment", self._on_assignment, LATCHED)
        self.heartbeat: TeamHeartbeat | None = None  # which teammates I still hear
        if teammates:
            self.heartbeat = TeamHeartbeat(
                self,
                self.robot,
                teammates,
                self._teammate_change,
                period_s=self.declare_parameter("heartbeat_period_s", 0.5).value,
                lease_s=self.declare_parameter("teammate_lease_s", 5.0).value,
                keys=robot_keys(self.robot, signing_key, team_keys, max_age_s) if signing_key else None,
                step=lambda: self.step,
            )
        self.decision_publisher = self.create_publisher(
            Decision, "decision", DECISIONS, event_callbacks=own_publisher()
        )
        self.team_publisher = self.create_publisher(
            TeamMessage, "/team/messages", TEAM_MESSAGES, event_callbacks=own_publisher()
        )
        self.create_subscription(
            TeamMessage, "/team/messages", self._on_team_message, TEAM_MESSAGES, event_callbacks=own_subscription()
        )
        self.create_subscription(RobotStatus, "status", self._on_status, LATCHED, event_callbacks=own_subscription())
        how = f"{self.backend}, {'signed' if self.signer else 'unsigned'} messages"
        wall_timer(self, 0.1, self._on_timer)
        up = f"planner for {self.robot}: {self.method} ({how}), team {', '.join(robots)}"
        call_later(self, 0.0, lambda: self.get_logger().info(up))  # said once it spins: stopped now, it reports

    def _recall(self, journal: MemoryJournal) -> None:
        """Started again in the episode: take in again what my journal kept, up to the last status I had."""
        kept = journal.recall(self.get_logger().warning)
        for obs in kept:
            self.brain.observe(obs)
        if kept:
            self.step, self.clock = kept[-1].step, kept[-1].frames
            self.get_logger().info(
                f"recalled my memory of {len(kept)} statuses up to step {self.step} ({journal.path})"
            )

    # --- observations and messages ----------------------------------------------------------------------------
    def _on_status(self, status: RobotStatus) -> None:
        if status.robot != self.robot or status.step <= self.step or self.done:
            return
        if self.started is None:
            self.started = time.monotonic()
        try:
            obs = observation_from_dict(json.loads(status.observation_json))
        except ValueError as exc:
            self.get_logger().error(f"status for step {status.step} ignored: {exc}")
            return
        if self.waiting is not None:  # a newer status: stop waiting for the older one's messages
            self._deliver(self.waiting[0], give_up=True)
        self.step, self.clock, self.ready = status.step, status.clock, status.ready
        if status.episode_done:
            steps = status.clock if status.success else self.brain.info.task.horizon
            rate = round(float(status.transport_rate), 6)
            self.verdict = (status.success, steps, rate)  # passed to the team once this observation is delivered
        self.done = status.episode_done
        self.inbox.drop_stale(self.clock - self.stale_message_steps)
        self.waiting = (obs, time.monotonic())
        self._try_deliver()

    def _on_team_message(self, message: TeamMessage) -> None:
        if message.sender == self.robot or message.receiver not in ("", TeamMessage.RECEIVER_ALL, self.robot):
            return
        envelope = Envelope(message.seq, message.signature) if message.signature else None
        received = Message(message.sender, message.text, message.step, message.payload_json)
        if message.sender == OPERATOR:
            if self.operator.add(received, receiver=message.receiver, envelope=envelope):
                self._hear_operator(self.operator.pop((received.sender, received.step)))
            return
        if not self.inbox.add(received, self._take_in, receiver=message.receiver, envelope=envelope):
            return
        if self.heartbeat is not None:
            self.heartbeat.heard(message.sender)
        if self.teammate_done is not None and self.ends_task and not self.done:
            self._task_ends(f"{self.teammate_done} saw the goal met")
        elif self.waiting is not None:
            self._try_deliver()

    def _hear_operator(self, message: Message) -> None:
        """A person said where things are: my memory keeps it as a hint (the places' views from the world file), so
        my belief looks there first; a report of what the home does not have is dropped, logged."""
        try:
            pairs = parse_report(message.payload or "", self.home)
        except ValueError as exc:
            self.get_logger().warning(f"a person's report dropped: {exc}")
            self.operator.dropped += 1
            return
        memory = self.brain.memory
        for view in fixture_views(self.home, [fixture for _, fixture in pairs]):
            memory.objects.setdefault(view.id, view)
        for item, fixture in pairs:
            memory.hints.setdefault(item, set()).add(fixture)
        names = self.home.names()
        said = "; ".join(f"{item} in or on {names[fixture]}" for item, fixture in pairs)
        self.get_logger().info(f"{self.robot}: a person says {said} (a hint for my search)")

    def _take_in(self, message: Message) -> Message:
        """A message the inbox accepted, as the robot keeps it: cut to the length limit, its payload checked (a
        teammate's word that the goal is met is the planner's, not the method's)."""
        if (seen_by := task_done_by(message.payload or "", self.task_id)) is not None:
            self.teammate_done = seen_by
            message = replace(message, payload=None)
        if len(message.text) > MAX_MESSAGE_CHARS:  # a teammate that does not keep the limit: its message is cut here
            self.get_logger().warning(
                f"message of {len(message.text)} characters from {message.sender} cut to {MAX_MESSAGE_CHARS}"
            )
            message = replace(message, text=truncate_message(message.text))
        return self.brain.receive(message)

    def _on_timer(self) -> None:
        if self._out_of_time():
            self._end_task("time limit")
        if self.waiting is not None and time.monotonic() - self.waiting[1] > self.message_wait_s:
            self._deliver(self.waiting[0], give_up=True)
        stopping = self.stopping
        if stopping is not None and time.monotonic() - max(stopping.heard, stopping.sent) > self._executor_patience():
            self.get_logger().warning(
                f"the executor has not ended the stopped {format_action(stopping.action, self.benchmark)} within "
                f"{self._executor_patience():g} s: deciding without waiting for it"
            )
            self.stopping = None
        self._watch_executor()

    def _teammate_change(self, change: RosterChange) -> None:
        """A teammate lost (silent past its lease) or back: my memory plans without it, or with it again."""
        memory = self.brain.memory
        if change.lost:
            held = memory.lose(change.teammate)
            self.items_out_of_reach += len(held)
            names = ", ".join(f"{memory.objects[i].name} ({i})" if i in memory.objects else f"({i})" for i in held)
            self.get_logger().warning(
                f"{change.teammate} is lost (silent {change.silent_s:.1f} s): planning without it, its claims "
                "released" + (f"; what it held is out of reach: {names}" if held else "")
            )
        else:
            memory.regain(change.teammate)
            self.get_logger().info(f"{change.teammate} is back after {change.silent_s:.1f} s: planning with it again")

    def _waiting_for_executor(self) -> bool:
        return self.request is not None

    def _try_deliver(self) -> None:
        assert self.waiting is not None
        obs = self.waiting[0]
        if self.message_delivery == "arrival":  # everything received so far, oldest first
            self.missing |= set(self.inbox)
            self._deliver(obs, give_up=False)
        elif all((m.sender, m.step) in self.inbox for m in obs.messages):
            self._deliver(obs, give_up=False)

    def _deliver(self, obs: Observation, give_up: bool) -> None:
        """Hand the observation to the brain with the messages' texts, then play the robot's turn."""
        self.waiting = None
        keys = [(m.sender, m.step) for m in obs.messages]
        late = sorted((k for k in self.missing if k in self.inbox), key=lambda k: (k[1], k[0]))
        absent = [k for k in keys if k not in self.inbox]
        if absent and give_up:
            self.get_logger().warning(f"step {obs.step}: no text yet for messages {absent}; handed over on arrival")
        self.missing = (self.missing - set(late)) | set(absent)
        texts = tuple(self.inbox.pop(k) for k in [*late, *keys] if k in self.inbox)
        taken = replace(obs, messages=texts)
        if self.ends_task:  # a real robot: its limits are in seconds on its clock (failed actions' back-off)
            self.brain.memory.clock_s = self.get_clock().now().nanoseconds / 1e9
            self._count_travel(taken.position)
        self.brain.observe(taken)
        if self.journal is not None:
            self.journal.keep(taken)
        if self.verdict is not None:  # the last observation is in: the team's episode ends with what I know of it
            self.team.end_episode(EpisodeOutcome.of(self.brain.info.episode, *self.verdict, [self.brain.memory]))
            self.verdict = None
        if self.serve and not self.task_id:  # between tasks: it sees, and keeps still
            self._tick(StepTick.IDLE)
            return
        if self.ends_task and not self.done:
            if goal_met(self.brain.memory, self.team_put_down):
                self._task_ends("goal met on my map")
            elif self.teammate_done is not None:
                self._task_ends(f"{self.teammate_done} saw the goal met")
            elif self._out_of_time():
                self._end_task("time limit")
        if self.done or (self.serve and not self.task_id):
            return
        if self.serve:
            self._report_progress()
        if self.ready and self.stopping is None:  # (the executor takes a new goal once the stopped one has ended)
            self._start_turn()
        else:
            self._tick(StepTick.OBSERVED)

    # --- the turn --------------------------------------------------------------------------------------------
    def _start_turn(self) -> None:
        self.turn = agent_turn(self.brain, self.skill is not None)
        self._play(None)

    def _play(self, request: Any) -> None:
        """Run the turn (from its start: ``request`` None) until it needs news from the executor, or ends with this
        step's tick."""
        try:
            if request is None:
                request = next(self.turn)
            while True:
                if isinstance(request, StartSkill):
                    self._start_skill(request)
                    request = next(self.turn)
                    continue
                assert isinstance(request, PollSkill)
                skill = self.skill
                assert skill is not None
                if skill.message:
                    if skill.started_step == self.step:
                        request = self.turn.send(None)
                        continue
                    failure = self.brain.memory.last_failure
                    skill.outcome = SkillOutcome(skill.action, not failure, failure, 1)
                if skill.outcome is not None:
                    self.skill = None
                    request = self.turn.send(skill.outcome)
                    continue
                if skill.armed_step == self.step:
                    request = self.turn.send(None)
                    continue
                self.request = request
                self.waiting_since = time.monotonic()
                return  # wait for the executor's feedback or result
        except StopIteration as stop:
            self.turn = self.request = None
            acted = bool(stop.value)
            if not acted:
                self._tick(StepTick.IDLE)
            elif self.skill is not None and self.skill.message:
                self._tick(StepTick.MESSAGE, self.skill.message, self.skill.action.payload, self.skill.action.receiver)
            else:
                self._tick(StepTick.ACT)

    def _resume(self) -> None:
        if self.serve and not self.task_id:  # the task was stopped: its turn ended with it
            return
        if self.turn is not None and self.request is not None:
            request, self.request = self.request, None
            self._play(request)

    def _runtime_counts(self) -> dict[str, int]:
        roster = self.heartbeat.roster if self.heartbeat is not None else None
        counts = super()._runtime_counts()
        if roster is not None:
            counts.update(teammates_lost=roster.losses, teammates_returned=roster.returns)
        return counts

    def _dropped_counts(self) -> dict[str, int]:
        return {"payloads_dropped": self.brain.payloads_dropped, "messages_dropped": self.inbox.dropped}

    def _start_skill(self, request: StartSkill) -> None:
        decision = request.decision
        action = decision.action
        record = self.brain.record(decision, request.options)
        text = format_action(action, self.benchmark)
        self.skill = self._running(action, target_view_json(self.brain.memory, action), self.task_id)
        if action.is_message:  # the brain has cut it to the 500-character limit, with a warning
            self.skill.message = action.text
            self._send_team_message(action.text, action.payload, receiver=action.receiver)
        self.decision_publisher.publish(
            decision_to_msg(self._header(), self.method, self.backend, self.step, record, self.skill.message)
        )
        self.decisions += 1
        if not action.is_message:
            if self.ends_task:
                self._send_intent(action)
            self._send_skill(self.skill, text)

    # --- what the skill runner asks ------------------------------------------------------------------------------
    def _skill_ended(self, skill: RunningSkill) -> None:
        """The executor has ended a goal: a stopped task's (the robot may rest, or decide for the next task) or the
        walk to rest."""
        if skill is self.stopping:
            self.stopping = None
            self._go_rest()
        elif skill is self.resting:
            self.resting = None
            assert skill.outcome is not None and self.rest_room is not None
            if skill.outcome.success:
                self.get_logger().info(f"{self.robot} rests in the {self.rest_room.name}")

    def _arm_holds(self, holding: list[int]) -> None:
        self.brain.memory.arm_holds(holding)

    def _stopped(self, skill: RunningSkill) -> bool:
        return super()._stopped(skill) or (self.serve and skill.task_id != self.task_id)

    def _wanted(self, skill: RunningSkill) -> bool:
        return skill in (self.skill, self.resting)

    # --- the end of a task on real robots (coteam_ros.task_end) ---------------------------------------------------
    def _out_of_time(self) -> bool:
        return not self.serve and super()._out_of_time()  # a serving team's task node keeps each task's time

    def destroy_node(self) -> None:
        """Stopped (Ctrl-C, the launch's timeout) before the task ended: the end report says so."""
        if getattr(self, "brain", None) is not None and self.ends_task and not self.done:  # (not if it never started)
            self._end_task("stopped", shut_down=False)
        if getattr(self, "heartbeat", None) is not None:
            self.heartbeat.stop()
        if getattr(self, "journal", None) is not None:
            self.journal.close()
        super().destroy_node()

    def _task_ends(self, why: str) -> None:
        """The goal is met (on my map, or a teammate says so): the task ends for me; serving, the robot tells the
        team and the task node and rests until the next task."""
        if not self.serve:
            self._end_task(why)
            return
        if why == "goal met on my map":
            said = truncate_message(f"The goal is met: {goal_text(self.brain.memory)} I stop.")
            self._send_team_message(said, task_done_payload(self.robot, self.task_id))
        self._report_progress(goal_met=True)
        self.get_logger().info(f"{self.task_id} over for {self.robot}: {why}; waiting for the next task")
        self._stop_task()

    def _stop_task(self) -> None:
        """Serving: end the turn, cancel the running action, and, once the executor has ended it, walk to rest."""
        self.task_id = ""
        self.teammate_done = None
        skill, self.turn, self.request, self.skill = self.skill, None, None, None
        if skill is not None and not skill.message and skill.outcome is None:
            self._cancel_on_executor(skill)
        else:
            self._go_rest()

    def _cancel_on_executor(self, skill: RunningSkill) -> None:
        """Cancel ``skill``'s goal (or, its answer not in yet, when it comes: :meth:`_on_skill_response`) and hold new
        goals back until the executor has ended it."""
        self.stopping = skill
        if skill.handle is not None:
            skill.handle.cancel_goal_async()

    def _go_rest(self) -> None:
        """Serving, between tasks: walk into the rest room, unless the robot is in it already (or has none)."""
        room = self.rest_room
        if room is None or self.task_id or self.resting is not None:
            return
        if self.brain.memory.room == room.id:
            self.get_logger().info(f"{self.robot} rests in the {room.name}")
            return
        if not self.skill_client.server_is_ready():
            self.get_logger().warning(f"no execute_skill server: {self.robot} keeps still instead of resting")
            return
        self.get_logger().info(f"{self.robot} walks to rest in the {room.name}")
        action = walk_into(room, self.benchmark)
        self.resting = self._running(action, "")
        self._send_skill(self.resting, format_action(action, self.benchmark))

    def _on_assignment(self, message: TaskAssignment) -> None:
        """The task node starts a task (the robot leaves the one it had) or stops the current one."""
        if message.command == TaskAssignment.STOP:
            if message.task_id == self.task_id:
                self.get_logger().info(f"{self.task_id} stopped by the task node")
                self._stop_task()
            return
        if message.task_id == self.task_id:
            return
        try:
            name, goal = message.name or message.task_id, list(message.goal)
            task = goal_task(self.home, name, goal, horizon=self.home.task.horizon)
        except ValueError as exc:
            self.get_logger().error(f"task {message.task_id} ignored: {exc}")
            return
        if self.task_id:
            self._stop_task()
        if self.resting is not None:  # off to the new task instead
            self._cancel_on_executor(self.resting)
            self.resting = None
        home = self.home_info
        info = EpisodeInfo.for_scene(
            replace(self.home, task=task), home.agents, home.seed, home.physics, message.task_id
        )
        self.brain.take_task(replace(info, safety=home.safety))
        self.task_id, self.teammate_done, self.progress_said = message.task_id, None, ()
        self.get_logger().info(f"{self.robot} takes {message.task_id}: {'; '.join(message.goal)}")

    def _report_progress(self, goal_met: bool = False) -> None:
        """Serving: what my map shows of each goal line and what I do, to the task node (when it changed)."""
        names = self.home.names()
        lines = tuple(
            GoalLine.of(p, names).progress(done) for p, done in line_progress(self.brain.memory, self.team_put_down)
        )
        skill = self.skill
        doing = (
            format_action(skill.action, self.benchmark) if skill is not None and skill.task_id == self.task_id else ""
        )
        said = (self.task_id, lines, doing, goal_met)
        if said == self.progress_said:
            return
        self.progress_said = said
        self.progress_publisher.publish(
            TaskProgress(robot=self.robot, task_id=self.task_id, progress=list(lines), doing=doing, goal_met=goal_met)
        )

    def _end_task(self, why: str, shut_down: bool = True) -> None:
        """Stop the robot (its running action is canceled), tell the team when my map shows the goal met, write
        my end report and shut the node down (exit 0) once the message is out."""
        memory = self.brain.memory
        said = ""
        if why == "goal met on my map":
            said = truncate_message(f"The goal is met: {goal_text(memory)} I stop.")
            self._send_team_message(said, task_done_payload(self.robot))
        report = self._end_report(
            why,
            why.startswith("goal met") or self.teammate_done is not None,
            goal_progress(memory, self.team_put_down),
            decision_ms=[round(1000 * s, 3) for s in self.brain.decision_seconds],
            messages=len(memory.sent) + (1 if said else 0),
            message_chars=sum(len(m.text) for m in memory.sent) + len(said),
            messages_dropped=self.inbox.dropped,
            retries_blocked=memory.retries.retries_blocked,
        )
        self._finish(report, "my map", shut_down)

    def _send_team_message(
        self, text: str, payload: str, step: int | None = None, publisher: Any = None, receiver: str = ""
    ) -> None:
        """Publish a message to the whole team, or to the one teammate ``receiver`` names (the others ignore it),
        at my clock unless ``step`` is given, signed when the team signs; an intent is addressed to the intents
        channel (``receiver``), so that it is no team message replayed."""
        message = TeamMessage(
            header=self._header(),
            sender=self.robot,
            receiver=receiver,
            text=text,
            step=self.clock if step is None else step,
            payload_json=payload,
        )
        if self.signer is not None:
            envelope = self.signer.sign(message.receiver, message.step, message.text, message.payload_json)
            message.seq, message.signature = envelope.seq, envelope.signature
        (publisher or self.team_publisher).publish(message)

    # --- claims on real robots: what each robot works on now ------------------------------------------------------
    def _send_intent(self, action: HighLevelAction) -> None:
        """Tell the team the container or item I search or grab now (-1: something no claim covers), on
        ``/team/intents``: the robots' runtime, not the method's talk (it counts as no message)."""
        payload = intent_payload(claim_target(action), self.brain.memory, self.heard)
        self._send_team_message(
            format_action(action, self.benchmark), payload, self.decisions, self.intent_publisher, INTENTS
        )

    def _on_intent(self, message: TeamMessage) -> None:
        if message.sender == self.robot or self.done or message.receiver != INTENTS:
            return
        envelope = Envelope(message.seq, message.signature) if message.signature else None
        received = Message(message.sender, message.text, message.step, message.payload_json)
        if not self.intents.add(received, receiver=message.receiver, envelope=envelope):
            return
        if self.heartbeat is not None:
            self.heartbeat.heard(message.sender)
        self.intents.pop((message.sender, message.step))
        try:
            intent = parse_intent(message.payload_json)
        except ValueError as exc:
            self.get_logger().warning(f"intent of {message.sender} ignored: {exc}")
            return
        target = intent.claim
        self.brain.memory.claim(message.sender, target)
        for item, fixture, into in intent.in_place:
            view = self.placements.placed_view(item, fixture, into)
            if view is not None:
                self.brain.memory.teammate_placed(view, message.sender)
                self.heard.in_place.add(item)
        for container, is_open in intent.doors.items():
            if container in self.heard.doors:  # a container of the task's
                self.brain.memory.teammate_opened(container, is_open)
                self.heard.doors[container] = is_open
        views = (self.placements.placed_view(*placed) for placed in intent.put_down)
        self.team_put_down[message.sender] = [v for v in views if v is not None]
        skill = self.skill
        # the same object at once: the robot later in the team's order gives it up (and decides again)
        if skill is not None and target >= 0 and claim_target(skill.action) == target and self.robot > message.sender:
            self.get_logger().info(f"{message.sender} works on ({target}) too: I leave it to {message.sender}")
            skill.given_up = True
            if skill.handle is not None:
                skill.handle.cancel_goal_async()


def main(argv: list[str] | None = None) -> None:
    spin_node(PlannerNode, argv)


if __name__ == "__main__":
    main()
