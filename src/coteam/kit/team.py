"""Team base classes: everything a method needs besides its decision procedure and its prompts.

* :class:`MethodTeam` -- the lifecycle of :class:`coteam.agent.reasoning.Team` (``reset`` per episode, ``decide``,
  ``on_message``, ``end_episode``), the validated config, the role toolkit built once per run (methods with a
  :class:`~coteam.kit.config.RoleMethodConfig`), the store a method declares (:mod:`.store`), and how the method's trace
  records are explained.
* :class:`PerAgentTeam` -- a decentralised method: one :class:`AgentReasoner` per agent, each with its own seeded
  random stream, rebuilt at every ``reset`` (the team object and its model backend stay).
* :class:`CentralisedTeam` -- one planner for the whole team; it sees what each agent has perceived (their
  decision contexts), with or without full observability.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from typing import Any, ClassVar

from pydantic import BaseModel

from coteam.agent.memory import AgentMemory
from coteam.agent.options import available_actions
from coteam.agent.reasoning import STARTED, Decision, DecisionContext, EpisodeInfo, EpisodeOutcome
from coteam.domain.actions import HighLevelAction, format_action, parse_action
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import Message
from coteam.kit.config import MethodConfig, RoleMethodConfig
from coteam.kit.context import team_slots
from coteam.kit.explanation import Explanation, rationale_section
from coteam.kit.roles import RoleKit, RoleSession
from coteam.kit.store import MethodStore, StoreSchema
from coteam.value.abstract import Geometry


class MethodTeam:
    """Base of every method's team (see the module docstring). Subclasses set the class attributes."""

    summary: ClassVar[str] = ""
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    payload_types: ClassVar[tuple[type[BaseModel], ...]] = ()  # what this method's messages may carry
    store_schema: ClassVar[StoreSchema | None] = None  # what the method keeps across episodes (none by default)
    centralised: ClassVar[bool] = False  # one planner for the whole team (CentralisedTeam)
    full_observability: ClassVar[bool] = False

    _geometry: Geometry | None = None

    def __init__(self, config: MethodConfig | None = None, *, name: str | None = None):
        self.config = config if config is not None else self.Config()
        self.name = name or type(self).__name__.removesuffix("Team").lower()  # the registered name by convention
        self.store = self._open_store()
        self.roles = RoleKit(self.config, self.prompt_folder()) if isinstance(self.config, RoleMethodConfig) else None
        self.info: EpisodeInfo | None = None
        self.episodes = 0

    def _open_store(self) -> MethodStore | None:
        path = self.config.store
        if self.store_schema is None:
            if path is not None:
                raise ValueError(f"{self.name}: switch store: this method keeps nothing across episodes")
            return None
        return MethodStore(self.name, self.store_schema, path)

    @classmethod
    def prompt_folder(cls) -> Traversable:
        """The ``prompts`` folder next to the method's module: its prompt templates."""
        package = sys.modules[cls.__module__].__package__ or cls.__module__
        return resources.files(package) / "prompts"

    def geometry(self, nav: NavGrid) -> Geometry:
        """Path lengths on ``nav`` for the value model, cached for the whole team (pure geometry: nothing one agent
        knows)."""
        if self._geometry is None or self._geometry.nav is not nav:
            self._geometry = Geometry(nav)
        return self._geometry

    # --- lifecycle ---------------------------------------------------------------------------------------------
    def reset(self, info: EpisodeInfo) -> None:
        if self.store is not None and not self.store.persisted:
            self.store.clear()
        self.info = info
        self.episodes += 1
        self.start_episode(info)

    def start_episode(self, info: EpisodeInfo) -> None:
        """Per-episode set-up (override)."""

    def next_task(self, info: EpisodeInfo) -> None:
        """A serving team's next task in the same home (``info`` names it): what a method keeps per task starts
        afresh (:meth:`start_episode`), what it keeps across episodes stays (its store is not cleared); the robots
        ``join`` again with the memories they kept."""
        self.info = info
        self.episodes += 1
        self.start_episode(info)

    def join(self, agent: str, memory: AgentMemory) -> None:
        """A robot of the team starts the episode with ``memory`` (its runtime keeps it up to date)."""

    def leave(self, agent: str) -> None:
        """A robot of the team stopped answering: its runtime gives up on it, so the team plans without it (until it
        ``join``s again)."""

    def decide(self, ctx: DecisionContext) -> Decision:
        raise NotImplementedError

    def on_message(self, agent: str, message: Message) -> None:
        """A teammate's message was delivered to ``agent`` (already in its memory, payload validated)."""

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        """The episode is over: learn from it, then save the store (to its file, when it has one)."""
        self.learn(outcome)
        if self.store is not None:
            self.store.save()

    def learn(self, outcome: EpisodeOutcome) -> None:
        """What the method keeps of an episode (override; write what should last into ``self.store``)."""

    # --- explaining ----------------------------------------------------------------------------------------------
    @classmethod
    def explain(cls, rationale: Mapping[str, Any]) -> Explanation:
        """One recorded decision explained (``coteam explain``); methods override it to show their own keys."""
        return Explanation((rationale_section(rationale),))


class AgentReasoner:
    """One agent of a :class:`PerAgentTeam`, for one episode."""

    def __init__(self, team: PerAgentTeam, agent: str, info: EpisodeInfo, rng: random.Random):
        self.team = team
        self.agent = agent
        self.info = info
        self.rng = rng
        self.config: Any = team.config
        self.roles = team.roles

    @property
    def teammates(self) -> list[str]:
        return [a for a in self.info.agents if a != self.agent]

    def decide(self, ctx: DecisionContext) -> Decision:
        raise NotImplementedError

    def on_message(self, message: Message) -> None:
        """A teammate's message was delivered to this agent."""


class PerAgentTeam(MethodTeam):
    """A decentralised team: each agent decides on its own (``Agent``), from its own memory and messages."""

    Agent: ClassVar[type[AgentReasoner]] = AgentReasoner

    def start_episode(self, info: EpisodeInfo) -> None:
        self.agents = {a: self.Agent(self, a, info, random.Random(f"{info.seed}:{self.name}:{a}")) for a in info.agents}

    def decide(self, ctx: DecisionContext) -> Decision:
        return self.agents[ctx.agent].decide(ctx)

    def on_message(self, agent: str, message: Message) -> None:
        self.agents[agent].on_message(message)


@dataclass(frozen=True)
class TeamRound:
    """One decision round of a :class:`CentralisedTeam`: the robots that wait for an action (their decision
    contexts, in the team's order, the asking robot among them) and what each other robot is doing."""

    contexts: dict[str, DecisionContext]
    running: dict[str, HighLevelAction]  # busy robots -> the action their skill runs
    memories: Mapping[str, AgentMemory]  # every robot's memory: each holds the union of the robots' observations

    @property
    def asking(self) -> str:
        """The robot whose request opened the round."""
        return next(iter(self.contexts))


class CentralisedTeam(MethodTeam):
    """One planner for the whole team: whenever a robot needs an action, :meth:`plan_round` decides one action for
    every robot that waits for one (a joint decision), from the union of the robots' observations (the runtime
    shares each robot's observation with its teammates' memories), or from the whole world with
    ``full_observability`` (the oracle). A robot that asks later in the same step gets the action planned for it
    then, while it is still one of its options; a robot that asks later is planned for in a round of its own."""

    centralised: ClassVar[bool] = True

    def start_episode(self, info: EpisodeInfo) -> None:
        self.memories: dict[str, AgentMemory] = {}
        self.planned: dict[str, tuple[tuple[int, int], Decision]] = {}  # robot -> (step, clock), its decision

    def join(self, agent: str, memory: AgentMemory) -> None:
        self.memories[agent] = memory

    def leave(self, agent: str) -> None:
        self.memories.pop(agent, None)
        self.planned.clear()  # the decisions of its last round counted on what it was doing

    def decide(self, ctx: DecisionContext) -> Decision:
        when = (ctx.memory.step, ctx.memory.frames)
        planned = self.planned.pop(ctx.agent, None)
        if planned is not None and planned[0] == when and ctx.option_for(planned[1].action) is not None:
            return planned[1]
        decisions = self.plan_round(self._round(ctx))
        self.planned = {a: (when, d) for a, d in decisions.items() if a != ctx.agent}
        return decisions[ctx.agent]

    def _round(self, ctx: DecisionContext) -> TeamRound:
        assert self.info is not None
        contexts, running = {ctx.agent: ctx}, {}
        for agent in self.info.agents:
            memory = self.memories.get(agent)
            if agent == ctx.agent or memory is None:
                continue
            last = memory.actions[-1] if memory.actions else None
            if last is not None and last.outcome == STARTED:
                running[agent] = parse_action(last.action, memory.benchmark)
            else:
                options = available_actions(memory, ctx.nav, allow_messages=False)
                contexts[agent] = DecisionContext(agent, memory, options, ctx.nav)
        return TeamRound(contexts, running, dict(self.memories))

    def plan_round(self, round: TeamRound) -> dict[str, Decision]:
        """A decision for every robot of ``round.contexts`` (the method's joint decision procedure)."""
        raise NotImplementedError

    def session(self, round: TeamRound) -> RoleSession:
        """The role session of one round (a method with roles): its prompts get the team's slots
        (:data:`~coteam.kit.context.TEAM_SLOTS`); the calls are charged to the asking robot's decision."""
        assert self.roles is not None and isinstance(self.config, RoleMethodConfig), "a role method's team"
        benchmark = next(iter(round.contexts.values())).memory.benchmark
        doing = {a: format_action(x, benchmark) for a, x in round.running.items()}
        return self.roles.session(round.asking, team_slots(round.contexts, doing, last_actions=self.config.K_action))


class TeamWrapper:
    """Wraps a team and forwards the whole contract to it (like Gymnasium's ``Wrapper``): override what you want
    to watch or change, e.g. ``decide`` to record decisions."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.config = getattr(inner, "config", None)
        self.name = inner.name
        self.full_observability = inner.full_observability
        self.payload_types = inner.payload_types
        self.centralised = inner.centralised
        self.store = getattr(inner, "store", None)

    def reset(self, info: EpisodeInfo) -> None:
        self.inner.reset(info)

    def join(self, agent: str, memory: AgentMemory) -> None:
        self.inner.join(agent, memory)

    def leave(self, agent: str) -> None:
        self.inner.leave(agent)

    def decide(self, ctx: DecisionContext) -> Decision:
        return self.inner.decide(ctx)

    def on_message(self, agent: str, message: Message) -> None:
        self.inner.on_message(agent, message)

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        self.inner.end_episode(outcome)
