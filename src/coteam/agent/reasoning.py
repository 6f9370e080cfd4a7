"""The contract between an agent's runtime and a reasoning method.

A *team* decides for every agent of the team and lives for a whole run of episodes: ``reset(info)`` at the start
of each episode, ``decide(ctx)`` whenever one of its agents is free, ``on_message(agent, message)`` for each
teammate message delivered to one of its agents, and ``end_episode(outcome)`` at the end. Runtimes (the
in-process runner, the ROS planner node) drive it through an :class:`AgentBrain` and :func:`agent_turn`. The shared
implementations of this contract (per-agent and centralised teams, typed configs, the LLM-role toolkit) are in
:mod:`coteam.kit`; methods are found through :mod:`coteam.registry`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import BaseModel

from coteam.agent.goals import goal_status
from coteam.agent.memory import FAILED, STARTED, AgentMemory
from coteam.agent.message_guard import MessageGuard
from coteam.agent.messages import PayloadError, decode_payload, encode_payload
from coteam.agent.options import ActionOption, available_actions
from coteam.agent.skills import SkillOutcome
from coteam.domain.actions import (
    MAX_MESSAGE_CHARS,
    ActionNotAvailableError,
    HighLevelAction,
    Verb,
    format_action,
    truncate_message,
    validate_action,
)
from coteam.domain.capabilities import DEFAULT_CAPABILITIES, RobotCapabilities
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import Message, ObjectView, Observation, task_landmarks
from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, FloorPlan, GoalPredicate, Scene, Task
from coteam.home.safety import SafetyGate

log = logging.getLogger(__name__)

MAX_INSTANT_DECISIONS = 4  # decisions allowed in one step when skills end before the robot acts
EPISODE_OVER = "episode over"  # the reason of a skill the episode's end cut short (not a failure of the robot)


class NothingToDo(Exception):
    """The agent has no action it can take now: each failed the same way twice lately (coteam.agent.retries). It
    waits."""


@dataclass(frozen=True)
class EpisodeInfo:
    """What every agent knows at reset: the map, the task and the team."""

    benchmark: Benchmark
    task: Task
    floorplan: FloorPlan
    agents: tuple[str, ...]
    seed: int
    # Objects named by the task description (goal surfaces/containers, the bed), known from the start.
    landmarks: tuple[ObjectView, ...] = ()
    # What the robots' primitives do and cost (the simulator's rules, or a hardware profile).
    physics: Physics = field(default_factory=Physics)
    episode: str = ""  # the episode's name, e.g. cwah-test/3
    safety: SafetyGate | None = None  # the home's safety policy (coteam.home.safety): never offered, never executed

    @classmethod
    def for_scene(
        cls, scene: Scene, agents: tuple[str, ...], seed: int, physics: Physics | None = None, episode: str = ""
    ) -> EpisodeInfo:
        """What every agent knows at the start of ``scene``: the map, the task and the objects it names."""
        return cls(
            scene.benchmark,
            scene.task,
            scene.floorplan,
            tuple(agents),
            seed,
            task_landmarks(scene),
            physics or Physics(),
            episode or scene.name,
        )


@dataclass(frozen=True)
class FailedAction:
    """A high-level action of one robot that failed, and why (the skill's reason)."""

    agent: str
    step: int
    action: str
    reason: str


@dataclass(frozen=True)
class GoalResult:
    """One goal predicate at the end: how many items the team saw satisfy it."""

    predicate: GoalPredicate
    done: int

    @property
    def met(self) -> bool:
        return self.done >= self.predicate.count


@dataclass(frozen=True)
class EpisodeOutcome:
    """How an episode ended, as its team learns it in ``end_episode``: the runtime's verdict (success, steps,
    transport rate) and what the team's robots know of it -- every failed action with its reason, each goal
    predicate as they saw it at the end, and the messages they sent (:meth:`of`)."""

    episode: str
    success: bool
    steps: int  # C-WAH steps (the horizon on failure) / TDW-MAT frames
    transport_rate: float
    failed_actions: tuple[FailedAction, ...] = ()
    goals: tuple[GoalResult, ...] = ()
    messages: tuple[Message, ...] = ()

    @property
    def goals_met(self) -> tuple[GoalPredicate, ...]:
        return tuple(g.predicate for g in self.goals if g.met)

    @property
    def goals_missed(self) -> tuple[GoalPredicate, ...]:
        return tuple(g.predicate for g in self.goals if not g.met)

    @classmethod
    def of(
        cls, episode: str, success: bool, steps: int, transport_rate: float, memories: Sequence[AgentMemory]
    ) -> EpisodeOutcome:
        """The outcome the runtime reports, with what ``memories`` (the team's robots' at the end) hold: their
        failed actions (an action the episode's end cut short is not a failure), each goal predicate with the most
        items any robot saw satisfy it, and every message sent, in the order sent."""
        failed = tuple(
            FailedAction(m.agent, a.step, a.action, a.outcome.removeprefix(FAILED))
            for m in memories
            for a in m.actions
            if a.outcome.startswith(FAILED) and a.outcome != FAILED + EPISODE_OVER
        )
        statuses = [goal_status(m) for m in memories]
        goals = tuple(GoalResult(st[0].predicate, max(len(s.done) for s in st)) for st in zip(*statuses, strict=True))
        sent = sorted((msg for m in memories for msg in m.sent), key=lambda msg: (msg.step, msg.sender))
        return cls(episode, success, steps, transport_rate, failed, goals, tuple(sent))


@dataclass
class DecisionContext:
    agent: str
    memory: AgentMemory
    options: list[ActionOption]
    nav: NavGrid

    def option_for_text(self, text: str) -> ActionOption | None:
        """The available option whose text is ``text`` exactly."""
        return next((o for o in self.options if o.text == text), None)

    def option_for(self, action: HighLevelAction) -> ActionOption | None:
        for o in self.options:
            if o.action == action or (action.is_message and o.action.is_message):
                return o
        return None


@dataclass(frozen=True)
class Decision:
    action: HighLevelAction
    rationale: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    llm_calls: int = 0
    llm_fallbacks: int = 0  # role answers that fell back to the symbolic solver
    llm_deadlines: int = 0  # of those, the answers that the decision's time budget cut off
    llm_breaker: int = 0  # of those, the answers given while the circuit breaker was open
    rejected_lines: int = 0  # lines of model answers a parser rejected (e.g. garbled belief statements)
    payload: BaseModel | None = None  # a message's structured payload (one of the team's payload types)

    COST_FIELDS = ("tokens", "llm_calls", "llm_fallbacks", "llm_deadlines", "llm_breaker", "rejected_lines")

    def charged_with(self, earlier: Decision) -> Decision:
        """This decision, also charged with what ``earlier`` cost (a decision taken first and set aside)."""
        return replace(self, **{f: getattr(self, f) + getattr(earlier, f) for f in self.COST_FIELDS})


class Team(Protocol):
    name: str
    full_observability: bool
    centralised: bool  # one planner for the whole team: the runtime shares every robot's observation with the others
    payload_types: tuple[type[BaseModel], ...]  # what its messages may carry, checked on receipt

    def reset(self, info: EpisodeInfo) -> None: ...

    def next_task(self, info: EpisodeInfo) -> None: ...

    def join(self, agent: str, memory: AgentMemory) -> None: ...

    def leave(self, agent: str) -> None: ...

    def decide(self, ctx: DecisionContext) -> Decision: ...

    def on_message(self, agent: str, message: Message) -> None: ...

    def end_episode(self, outcome: EpisodeOutcome) -> None: ...


class AgentBrain:
    """One agent's reasoning side: memory, the available-action list, and the team's decision.

    It knows nothing about the simulator or ROS: it consumes :class:`Observation` (validating teammates' message
    payloads against the team's payload types: a bad one is dropped, logged and counted, its text kept) and emits
    :class:`Decision` objects whose actions are validated against the options it offered.
    """

    def __init__(
        self,
        agent: str,
        info: EpisodeInfo,
        team: Team,
        nav: NavGrid,
        *,
        allow_messages: bool = True,
        capabilities: RobotCapabilities = DEFAULT_CAPABILITIES,
    ):
        self.agent = agent
        self.info = info
        self.team = team
        self.nav = nav
        # a centralised team is one mind: its robots have nothing to tell each other
        self.allow_messages = allow_messages and len(info.agents) > 1 and not team.centralised
        self.memory = AgentMemory(
            agent, info.benchmark, info.floorplan, info.task, safety=info.safety, capabilities=capabilities
        )
        self.memory.objects.update({v.id: v for v in info.landmarks})
        team.join(agent, self.memory)
        self.decision_seconds: list[float] = []
        self.payloads_dropped = 0
        self.guard = MessageGuard()
        self._guarded: dict[str, Any] = {}  # what the guard did in the last decision (for its trace record)

    def take_task(self, info: EpisodeInfo, *, restart_team: bool = True) -> None:
        """A new task for this robot in the same home (a serving team; ``info`` is the home's with the new task).
        The memory keeps what the robot learnt of the home -- its map, where things are, its teammates -- and
        takes the task and the places it names; the team starts the task afresh (:meth:`Team.next_task`; a team
        shared by several in-process brains is restarted once: the others pass ``restart_team=False``)."""
        self.info = info
        self.memory.task = info.task
        for view in info.landmarks:
            self.memory.objects.setdefault(view.id, view)
        if restart_team:
            self.team.next_task(info)
        self.team.join(self.agent, self.memory)

    def observe(self, obs: Observation) -> None:
        if obs.messages:
            obs = replace(obs, messages=tuple(self.receive(m) for m in obs.messages))
        self.memory.update(obs)
        for message in obs.messages:
            self.team.on_message(self.agent, message)

    def absorb(self, obs: Observation) -> None:
        """A teammate's observation of this step (a centralised team's robots share what they see)."""
        self.memory.absorb(obs)

    def receive(self, message: Message) -> Message:
        """``message`` with its payload validated against the team's payload types (a bad one dropped, logged and
        counted). Runtimes that receive messages before they are delivered (the ROS planner) check them at once."""
        try:
            payload = decode_payload(message.payload, self.team.payload_types)
            speaker = getattr(payload, "agent", message.sender)
            if speaker != message.sender:
                raise PayloadError(f"the payload speaks for {speaker!r}, the message is from {message.sender!r}")
        except PayloadError as exc:
            self.payloads_dropped += 1
            log.warning(
                "%s: payload of %s's message (step %d) dropped: %s", self.agent, message.sender, message.step, exc
            )
            payload = None
        return replace(message, payload=payload)

    def decide(self) -> tuple[Decision, list[ActionOption]]:
        """The team's decision, its action validated against the options offered, a message passed through the
        :class:`~coteam.agent.message_guard.MessageGuard` (a blocked one replaced by the team's choice among the
        physical actions)."""
        start = time.perf_counter()
        stalls = self.guard.stalls
        self._guarded = {}
        decision, options = self._decide(self.allow_messages and self.guard.open())
        if decision.action.verb == Verb.SEND_MESSAGE:
            blocked = self.guard.check(decision.action.text, self.memory.step)
            if blocked is not None:
                log.warning("%s: message not sent (%s); deciding among physical actions", self.agent, blocked)
                first = decision
                self._guarded = {
                    "message_blocked": {"text": first.action.text, "why": blocked, "rationale": first.rationale}
                }
                decision, options = self._decide(False)
                decision = decision.charged_with(first)
        action = decision.action
        if action.verb == Verb.SEND_MESSAGE:
            self.memory.record_sent(
                Message(self.agent, action.text, self.memory.frames, decision.payload, action.receiver)
            )
        self.guard.record(message=action.text if action.verb == Verb.SEND_MESSAGE else None, step=self.memory.step)
        if self.guard.stalls > stalls:
            self._guarded["message_stall"] = True
        self.decision_seconds.append(time.perf_counter() - start)
        self.memory.record_action(format_action(action, self.info.benchmark), STARTED)
        return decision, options

    def _decide(self, allow_messages: bool) -> tuple[Decision, list[ActionOption]]:
        options = available_actions(self.memory, self.nav, allow_messages=allow_messages)
        if not any(not o.action.is_message for o in options):
            raise NothingToDo(f"{self.agent}: every action failed the same way twice lately; waiting")
        decision = self.team.decide(DecisionContext(self.agent, self.memory, options, self.nav))
        action = validate_action(decision.action, self.memory.known_names(), [o.action for o in options])
        if action.verb == Verb.SEND_MESSAGE:
            action = self._message(action, decision.payload)
        return replace(decision, action=action), options

    def _message(self, action: HighLevelAction, payload: BaseModel | None) -> HighLevelAction:
        text = action.text.strip()
        if len(text) > MAX_MESSAGE_CHARS:
            log.warning("%s: message of %d characters cut to %d", self.agent, len(text), MAX_MESSAGE_CHARS)
            text = truncate_message(text)
        if not text or text == "<message>":
            raise ActionNotAvailableError("a message action needs text")
        if payload is not None and not isinstance(payload, self.team.payload_types):
            raise TypeError(f"{type(payload).__name__} is not a payload type of team {self.team.name}")
        if action.receiver and (action.receiver == self.agent or action.receiver not in self.info.agents):
            raise ActionNotAvailableError(f"a message for {action.receiver!r}, who is no teammate")
        return HighLevelAction(Verb.SEND_MESSAGE, text=text, payload=encode_payload(payload), receiver=action.receiver)

    def record(self, decision: Decision, options: list[ActionOption]) -> dict[str, Any]:
        """The trace record of the decision just taken (JSON-ready), the same in every runtime."""
        m = self.memory
        previous = m.actions[-2] if len(m.actions) > 1 else None
        return {
            "agent": self.agent,
            "step": m.step,
            "clock": m.frames,
            "position": list(m.position),
            "action": format_action(decision.action, m.benchmark),
            "payload": decision.action.payload or None,
            **({"to": decision.action.receiver} if decision.action.receiver else {}),
            "options": [o.annotated() for o in options],
            "rationale": decision.rationale,
            "tokens": decision.tokens,
            "llm_calls": decision.llm_calls,
            "llm_fallbacks": decision.llm_fallbacks,
            "llm_deadlines": decision.llm_deadlines,
            "llm_breaker": decision.llm_breaker,
            "rejected_lines": decision.rejected_lines,
            "seconds": self.decision_seconds[-1] if self.decision_seconds else 0.0,
            "payloads_dropped": self.payloads_dropped,
            "retries_blocked": m.retries.retries_blocked,
            **self._guarded,
            "previous": [previous.action, previous.outcome] if previous else None,
        }


@dataclass(frozen=True)
class StartSkill:
    """Turn request: start running ``decision.action`` (the skill replaces nothing: the agent was idle)."""

    decision: Decision
    options: list[ActionOption]


@dataclass(frozen=True)
class PollSkill:
    """Turn request: step the running skill. Answer ``None`` when it made the robot act this step, or its
    :class:`~coteam.agent.skills.SkillOutcome` when it ended without acting."""


def agent_turn(brain: AgentBrain, skill_running: bool) -> Generator[StartSkill | PollSkill, SkillOutcome | None, bool]:
    """One agent's turn at one step, shared by every runtime (in-process runner, ROS planner node).

    Decides when no skill runs, steps the skill, records how skills ended in the agent's memory and decides
    again -- at most :data:`MAX_INSTANT_DECISIONS` times. Returns True when the robot acts this step, False
    when it waits (every decision ended at once, or it has nothing it can do: :class:`NothingToDo`).
    """
    for _ in range(MAX_INSTANT_DECISIONS):
        if not skill_running:
            try:
                decision, options = brain.decide()
            except NothingToDo as idle:
                log.debug("%s", idle)
                return False
            yield StartSkill(decision, options)
        outcome = yield PollSkill()
        if outcome is None:
            return True
        brain.memory.record_action(
            format_action(outcome.action, brain.info.benchmark),
            "done" if outcome.success else FAILED + outcome.reason,
        )
        if not outcome.success and outcome.action.verb == Verb.GRAB and outcome.action.target is not None:
            brain.memory.grab_failed(outcome.action.target.id, outcome.reason)
        skill_running = False
    return False
