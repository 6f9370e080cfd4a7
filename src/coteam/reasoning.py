"""The contract between an agent's runtime and a reasoning method, and the one registry of methods.

A *team* decides for every agent of the team. Decentralised methods are a team of independent per-agent
reasoners (:class:`PerAgentTeam`); a centralised planner (the oracle) implements :class:`Team` directly and
declares ``full_observability``. Runtimes (the in-process runner, the ROS planner node) only ever call
:meth:`Team.reset` and :meth:`Team.decide` through an :class:`AgentBrain`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from coteam.actions import (
    MAX_MESSAGE_CHARS,
    ActionNotAvailableError,
    HighLevelAction,
    Verb,
    format_action,
    truncate_message,
    validate_action,
)
from coteam.memory import AgentMemory
from coteam.navigation import NavGrid
from coteam.observation import ObjectView, Observation
from coteam.options import ActionOption, available_actions
from coteam.physics import Physics
from coteam.skills import SkillOutcome
from coteam.world import Benchmark, FloorPlan, Task

log = logging.getLogger(__name__)

MAX_INSTANT_DECISIONS = 4  # decisions allowed in one step when skills end before the robot acts


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


@dataclass
class DecisionContext:
    agent: str
    memory: AgentMemory
    options: list[ActionOption]
    nav: NavGrid

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
    llm_fallbacks: int = 0  # roles whose LLM answer was unusable and were answered symbolically


class Team(Protocol):
    name: str
    full_observability: bool

    def reset(self, info: EpisodeInfo) -> None: ...

    def decide(self, ctx: DecisionContext) -> Decision: ...


class Reasoner(Protocol):
    """A decentralised per-agent method."""

    def decide(self, ctx: DecisionContext) -> Decision: ...


ReasonerFactory = Callable[[str, EpisodeInfo, random.Random, Mapping[str, Any]], Reasoner]


class PerAgentTeam:
    """A team of independent reasoners, one per agent, each with its own seeded random stream."""

    full_observability = False

    def __init__(self, name: str, factory: ReasonerFactory, params: Mapping[str, Any] | None = None):
        self.name = name
        self._factory = factory
        self._params = dict(params or {})
        self._reasoners: dict[str, Reasoner] = {}

    def reset(self, info: EpisodeInfo) -> None:
        self._reasoners = {
            agent: self._factory(agent, info, random.Random(f"{info.seed}:{self.name}:{agent}"), self._params)
            for agent in info.agents
        }

    def decide(self, ctx: DecisionContext) -> Decision:
        return self._reasoners[ctx.agent].decide(ctx)


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str
    make_team: Callable[[Mapping[str, Any]], Team]
    switches: Mapping[str, str] = field(default_factory=dict)  # parameter -> description (with default)


_METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    if spec.name in _METHODS:
        raise ValueError(f"method {spec.name!r} is already registered")
    _METHODS[spec.name] = spec
    return spec


def methods() -> dict[str, MethodSpec]:
    import coteam.methods
    import coteam.teams  # noqa: F401  (registers the baselines)

    return dict(_METHODS)


def make_team(name: str, params: Mapping[str, Any] | None = None) -> Team:
    registry = methods()
    if name not in registry:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(registry))}")
    return registry[name].make_team(dict(params or {}))


class AgentBrain:
    """One agent's reasoning side: memory, the available-action list, and the team's decision.

    It knows nothing about the simulator or ROS: it consumes :class:`Observation` and emits
    :class:`Decision` objects whose actions are validated against the options it offered.
    """

    def __init__(self, agent: str, info: EpisodeInfo, team: Team, nav: NavGrid, *, allow_messages: bool = True):
        self.agent = agent
        self.info = info
        self.team = team
        self.nav = nav
        self.allow_messages = allow_messages and len(info.agents) > 1
        self.memory = AgentMemory(agent, info.benchmark, info.floorplan, info.task)
        self.memory.objects.update({v.id: v for v in info.landmarks})
        self.decision_seconds: list[float] = []

    def observe(self, obs: Observation) -> None:
        self.memory.update(obs)

    def decide(self) -> tuple[Decision, list[ActionOption]]:
        start = time.perf_counter()
        options = available_actions(self.memory, self.nav, allow_messages=self.allow_messages)
        decision = self.team.decide(DecisionContext(self.agent, self.memory, options, self.nav))
        action = validate_action(decision.action, self.memory.known_names(), [o.action for o in options])
        if action.verb == Verb.SEND_MESSAGE:
            text = action.text.strip()
            if len(text) > MAX_MESSAGE_CHARS:
                log.warning("%s: message of %d characters cut to %d", self.agent, len(text), MAX_MESSAGE_CHARS)
                text = truncate_message(text)
            if not text or text == "<message>":
                raise ActionNotAvailableError("a message action needs text")
            action = HighLevelAction(Verb.SEND_MESSAGE, text=text)
            decision = Decision(action, decision.rationale, decision.tokens, decision.llm_calls, decision.llm_fallbacks)
        self.decision_seconds.append(time.perf_counter() - start)
        self.memory.record_action(format_action(action, self.info.benchmark), "started")
        return decision, options


@dataclass(frozen=True)
class StartSkill:
    """Turn request: start running ``decision.action`` (the skill replaces nothing: the agent was idle)."""

    decision: Decision
    options: list[ActionOption]


@dataclass(frozen=True)
class PollSkill:
    """Turn request: step the running skill. Answer ``None`` when it made the robot act this step, or its
    :class:`~coteam.skills.SkillOutcome` when it ended without acting."""


def agent_turn(brain: AgentBrain, skill_running: bool) -> Generator[StartSkill | PollSkill, SkillOutcome | None, bool]:
    """One agent's turn at one step, shared by every runtime (in-process runner, ROS planner node).

    Decides when no skill runs, steps the skill, records how skills ended in the agent's memory and decides
    again -- at most :data:`MAX_INSTANT_DECISIONS` times. Returns True when the robot acts this step, False
    when it waits (every decision ended at once).
    """
    for _ in range(MAX_INSTANT_DECISIONS):
        if not skill_running:
            decision, options = brain.decide()
            yield StartSkill(decision, options)
        outcome = yield PollSkill()
        if outcome is None:
            return True
        brain.memory.record_action(
            format_action(outcome.action, brain.info.benchmark),
            "done" if outcome.success else f"failed: {outcome.reason}",
        )
        skill_running = False
    return False
