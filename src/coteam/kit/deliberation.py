"""The role-method base: a method with LLM roles writes its decision procedure (:meth:`RoleAgent.deliberate`), its
roles and its prompts; everything one decision needs besides them is a :class:`Deliberation`.

A deliberation opens the decision's role session (the situation slots every role's prompt gets, and on the hybrid
backend the kit's own questions first), builds the belief state and the team value model when the procedure first
asks for them, says whether the agent may talk, letters option lists, keeps the rationale, and closes the decision:
the rationale is stamped with the method and the action taken, a message carries its typed payload (a payload is
kept for messages only), and the session adds what its roles cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel

from coteam.agent.memory import AgentMemory
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.belief import BeliefState
from coteam.domain.actions import HighLevelAction, format_action
from coteam.kit.config import ValueRoleConfig
from coteam.kit.context import SITUATION_SLOTS, situation_slots
from coteam.kit.lettered import Lettered
from coteam.kit.roles import RoleSession
from coteam.kit.team import AgentReasoner
from coteam.llm import Role, RoleAnswer
from coteam.value.team import ValueModel

if TYPE_CHECKING:
    from coteam.kit.team import PerAgentTeam

Q = TypeVar("Q")
T = TypeVar("T")
P = TypeVar("P", bound=BaseModel)


class Deliberation:
    """One decision of one :class:`RoleAgent` (see the module docstring)."""

    def __init__(self, agent: RoleAgent, ctx: DecisionContext):
        cfg = agent.config
        self.ctx = ctx
        self.memory: AgentMemory = ctx.memory
        self.agent = agent.agent
        self.info = agent.info
        self.team = agent.team
        self.slots = situation_slots(ctx, agent.info, last_actions=cfg.K_action, last_messages=cfg.K_message)
        assert agent.roles is not None, "a role method's config is a RoleMethodConfig"
        prompt_slots = {k: self.slots[k] for k in agent.prompt_situation}
        self.session: RoleSession = agent.roles.session(agent.agent, prompt_slots, ctx.memory)
        self.rationale: dict[str, Any] = {"method": agent.team.name}

    def ask(self, role: Role[Q, T], data: Q, **slots: str) -> RoleAnswer[T]:
        """``role``'s answer (:meth:`RoleSession.ask`)."""
        return self.session.ask(role, data, **slots)

    # --- what the agent may do -----------------------------------------------------------------------------
    @property
    def can_message(self) -> bool:
        """A message is among the options (a teammate to talk to, and the message guard lets me)."""
        return any(o.action.is_message for o in self.ctx.options)

    @property
    def can_talk(self) -> bool:
        """A message is among the options and my last action was not one."""
        return self.can_message and not self.memory.last_action_was_message()

    @property
    def announced(self) -> ActionOption | None:
        """The action my last message announced as my next (``TeamStatus.intent``), when that message was my last
        action and the action is still available: a robot keeps its word, or its teammates, bound by what it said,
        plan around a move it does not make."""
        m = self.memory
        if not m.sent or not m.last_action_was_message():
            return None
        intent = getattr(m.sent[-1].payload, "intent", None)
        return next((o for o in self.ctx.options if intent and o.text == intent), None)

    @property
    def teammates(self) -> list[str]:
        """The teammates to plan and talk with: the team but me and those lost (``AgentMemory.lost``)."""
        return [a for a in self.info.agents if a != self.agent and a not in self.ctx.memory.lost]

    def lettered(self, *extra: HighLevelAction) -> Lettered:
        """My physical options and ``extra`` actions, lettered."""
        return Lettered.physical(self.ctx.options, *extra, benchmark=self.info.benchmark)

    # --- belief and value ----------------------------------------------------------------------------------
    @cached_property
    def value(self) -> ValueModel:
        """The team value model over my own belief."""
        return self.value_model()

    @property
    def belief(self) -> BeliefState:
        """My belief state (the one the value model reads)."""
        return self.value.belief

    def value_model(
        self, memory: AgentMemory | None = None, *, alone: bool = False, heed_intents: bool = True
    ) -> ValueModel:
        """The team value model over ``memory``: mine by default, or a teammate's as I believe it (then its
        options are unknown to me); ``alone``: with no teammate in its rollouts; ``heed_intents`` false: what
        teammates said they do next does not bind them."""
        cfg = self.team.config
        if not isinstance(cfg, ValueRoleConfig):
            raise TypeError(f"{self.team.name}: a value model needs a ValueRoleConfig")
        ctx = self.ctx if memory is None else replace(self.ctx, agent=memory.agent, memory=memory, options=[])
        mates = [a for a in self.info.agents if a != ctx.agent]
        belief = BeliefState(ctx.memory, teammates=mates, distance=ctx.nav.path_length)
        return ValueModel(
            ctx,
            belief,
            self.info.physics,
            config=cfg.value_config,
            geometry=self.team.geometry(ctx.nav),
            seed=f"{self.info.seed}:{self.info.episode}",
            alone=alone,
            heed_intents=heed_intents,
        )

    # --- closing the decision ------------------------------------------------------------------------------
    @staticmethod
    def payload_of(answer: RoleAnswer[Any], typed: Callable[[], P]) -> P | None:
        """The typed payload of a message whose text ``answer`` wrote: a symbolic text is the typed report and
        travels with it; a model's text may say less than the report, so it travels alone."""
        return typed() if answer.source != "llm" else None

    def decision(
        self, action: HighLevelAction, payload: BaseModel | None = None, *, rejected_lines: int = 0
    ) -> Decision:
        """The decision to take ``action``, with the rationale gathered so far and what the roles cost."""
        self.rationale["action"] = format_action(action, self.info.benchmark)
        return self.session.decision(
            action, self.rationale, payload if action.is_message else None, rejected_lines=rejected_lines
        )


class RoleAgent(AgentReasoner):
    """One agent of a method with LLM roles: its decision procedure is :meth:`deliberate`. ``prompt_situation``
    names the situation slots (:data:`~coteam.kit.context.SITUATION_SLOTS`) every role prompt of the method
    takes; a role that needs another one gets it from ``d.slots`` when asked."""

    team: PerAgentTeam
    prompt_situation: ClassVar[Sequence[str]] = SITUATION_SLOTS

    def decide(self, ctx: DecisionContext) -> Decision:
        return self.deliberate(Deliberation(self, ctx))

    def deliberate(self, d: Deliberation) -> Decision:
        """The method's decision procedure: ask its roles through ``d`` and return ``d.decision(...)``."""
        raise NotImplementedError
