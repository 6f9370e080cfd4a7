"""Roles: "ask a role a question, get text or validated structured output, plus its token usage".

A :class:`Role` names a prompt template, an answer schema, a deterministic *symbolic* solver and optional
semantic checks. A :class:`RoleBackend` answers roles: :class:`SymbolicBackend` with the solver only,
:class:`LLMBackend` with a chat model — and with the solver as the fallback whenever the model's answer is
unusable (never a guess, never random), so an LLM method always produces a valid answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from coteam.llm.accounting import TokenLedger
from coteam.llm.base import ChatBackend, Completion, DeadlineExceeded, LLMError, StructuredOutputError, Usage
from coteam.llm.prompts import PromptLibrary
from coteam.llm.schema import model_schema
from coteam.llm.structured import ask_structured, ask_text

log = logging.getLogger("coteam.llm")

T = TypeVar("T")


@dataclass
class RoleContext:
    """One question to a role: who asks, the prompt's slots, and data for the symbolic solver and checks."""

    agent: str
    slots: dict[str, str] = field(default_factory=dict)
    data: Any = None


@dataclass(frozen=True)
class Role(Generic[T]):
    name: str  # e.g. "pce.planner"; the ledger's role key
    template: str  # prompt template name
    schema: type[T] | None  # a pydantic model; None = free text (str)
    symbolic: Callable[[RoleContext], T]  # deterministic answer from the agent's belief state
    validate: Callable[[T, RoleContext], None] | None = None  # semantic checks; raise ValueError
    # The JSON schema of one question: ``schema``'s narrowed to the options it has (coteam.llm.schema.narrow);
    # None: ``schema``'s own.
    constrain: Callable[[RoleContext], dict[str, Any]] | None = None

    def request_schema(self, ctx: RoleContext) -> dict[str, Any] | None:
        """What a chat model's answer to this question must look like (None for a free-text role)."""
        if self.schema is None:
            return None
        if self.constrain is not None:
            return self.constrain(ctx)
        assert issubclass(self.schema, BaseModel)
        return model_schema(self.schema)


@dataclass(frozen=True)
class RoleAnswer(Generic[T]):
    value: T
    source: str  # "llm" | "symbolic" | "fallback" | "deadline" (the decision's time budget ran out: a fallback)
    usage: Usage
    calls: int
    error: str = ""  # why the model's answer was not used (fallback)
    raw: str = ""  # the model's last raw text
    prompt: tuple[dict[str, str], ...] = ()  # the chat messages sent (LLM backends)

    @property
    def tokens(self) -> int:
        return self.usage.total


@runtime_checkable
class RoleBackend(Protocol):
    name: str
    ledger: TokenLedger

    def answer(self, role: Role[T], ctx: RoleContext, deadline: float | None = None) -> RoleAnswer[T]: ...


class SymbolicBackend:
    """Answers every role with its symbolic solver: no model, no tokens."""

    name = "symbolic"

    def __init__(self, ledger: TokenLedger | None = None):
        self.ledger = ledger if ledger is not None else TokenLedger()

    def answer(self, role: Role[T], ctx: RoleContext, deadline: float | None = None) -> RoleAnswer[T]:
        return RoleAnswer(role.symbolic(ctx), "symbolic", Usage(), 0)


class LLMBackend:
    """Answers roles with a chat model; falls back to the symbolic solver when the model's answer is unusable.

    ``params`` (e.g. ``temperature``) are sent with every request. Every call's usage is added to ``ledger``
    under ``(role.name, ctx.agent)``, including the calls whose answers were rejected. A fallback (output still
    invalid after the repair round, or a transport failure) is logged as a warning, counted with
    ``ledger.add_fallback`` and answered by ``role.symbolic(ctx)`` with source ``"fallback"`` (``"deadline"`` when
    the ``deadline``, a ``time.monotonic()`` instant, passed before the model answered).
    Programming errors (an unknown template, a missing slot, a bug in a solver) are raised, not masked.
    """

    name = "llm"

    def __init__(self, chat: ChatBackend, prompts: PromptLibrary, ledger: TokenLedger | None = None, **params: Any):
        self.chat = chat
        self.prompts = prompts
        self.ledger = ledger if ledger is not None else TokenLedger()
        self.params = params

    def answer(self, role: Role[T], ctx: RoleContext, deadline: float | None = None) -> RoleAnswer[T]:
        messages = self.prompts.render(role.template, **ctx.slots)
        check = role.validate
        completions: list[Completion] = []
        try:
            if role.schema is None:
                value, completions = ask_text(
                    self.chat,
                    messages,
                    validate=(lambda v: check(v, ctx)) if check else None,
                    deadline=deadline,
                    **self.params,
                )
            else:
                value, completions = ask_structured(
                    self.chat,
                    messages,
                    role.schema,
                    validate=(lambda v: check(v, ctx)) if check else None,
                    request_schema=role.request_schema(ctx),
                    name=role.name,
                    deadline=deadline,
                    **self.params,
                )
        except LLMError as exc:
            completions = exc.completions
            self._account(role, ctx, completions)
            reason = f"invalid output: {exc.reason}" if isinstance(exc, StructuredOutputError) else str(exc)
            log.warning("role %s (agent %s) falls back to its symbolic solver: %s", role.name, ctx.agent, reason)
            self.ledger.add_fallback(role.name, ctx.agent, reason)
            return RoleAnswer(
                role.symbolic(ctx),
                "deadline" if isinstance(exc, DeadlineExceeded) else "fallback",
                sum((c.usage for c in completions), Usage()),
                len(completions),
                error=reason,
                raw=completions[-1].text if completions else "",
                prompt=tuple(messages),
            )
        self._account(role, ctx, completions)
        return RoleAnswer(
            value,
            "llm",
            sum((c.usage for c in completions), Usage()),
            len(completions),
            raw=completions[-1].text,
            prompt=tuple(messages),
        )

    def _account(self, role: Role[Any], ctx: RoleContext, completions: list[Completion]) -> None:
        for c in completions:
            self.ledger.add(role.name, ctx.agent, c.usage, cached=c.cached)
