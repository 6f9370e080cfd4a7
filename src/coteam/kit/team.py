"""Team base classes: everything a method needs besides its decision procedure and its prompts.

* :class:`MethodTeam` -- the lifecycle of :class:`coteam.reasoning.Team` (``reset`` per episode, ``decide``,
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
from importlib import resources
from importlib.abc import Traversable
from typing import Any, ClassVar

from pydantic import BaseModel

from coteam.kit.config import MethodConfig, RoleMethodConfig
from coteam.kit.explanation import Explanation, rationale_section
from coteam.kit.roles import RoleKit
from coteam.kit.store import MethodStore, StoreSchema
from coteam.navigation import NavGrid
from coteam.observation import Message
from coteam.reasoning import Decision, DecisionContext, EpisodeInfo, EpisodeOutcome
from coteam.value.abstract import Geometry


class MethodTeam:
    """Base of every method's team (see the module docstring). Subclasses set the class attributes."""

    summary: ClassVar[str] = ""
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    payload_types: ClassVar[tuple[type[BaseModel], ...]] = ()  # what this method's messages may carry
    store_schema: ClassVar[StoreSchema | None] = None  # what the method keeps across episodes (none by default)
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


class CentralisedTeam(MethodTeam):
    """One planner for all agents. ``contexts`` holds every agent's latest decision context (its memory, so the
    planner sees everything any agent has perceived); a subclass implements :meth:`plan`. Set
    ``full_observability`` for a planner that sees the whole world (the oracle)."""

    def start_episode(self, info: EpisodeInfo) -> None:
        self.contexts: dict[str, DecisionContext] = {}

    def decide(self, ctx: DecisionContext) -> Decision:
        self.contexts[ctx.agent] = ctx
        return self.plan(ctx)

    def plan(self, ctx: DecisionContext) -> Decision:
        raise NotImplementedError


class TeamWrapper:
    """Wraps a team and forwards the whole contract to it (like Gymnasium's ``Wrapper``): override what you want
    to watch or change, e.g. ``decide`` to record decisions."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.config = getattr(inner, "config", None)
        self.name = inner.name
        self.full_observability = inner.full_observability
        self.payload_types = inner.payload_types
        self.store = getattr(inner, "store", None)

    def reset(self, info: EpisodeInfo) -> None:
        self.inner.reset(info)

    def decide(self, ctx: DecisionContext) -> Decision:
        return self.inner.decide(ctx)

    def on_message(self, agent: str, message: Message) -> None:
        self.inner.on_message(agent, message)

    def end_episode(self, outcome: EpisodeOutcome) -> None:
        self.inner.end_episode(outcome)
