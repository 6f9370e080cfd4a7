"""Roles: "ask a role a question, get text or validated structured output, plus its token usage".

A :class:`Role` names a prompt template, an answer schema, a deterministic *symbolic* solver and optional
semantic checks. A :class:`RoleBackend` answers roles: :class:`SymbolicBackend` with the solver only,
:class:`LLMBackend` with a chat model — and with the solver as the fallback whenever the model's answer is
unusable (never a guess, never random), so an LLM method always produces a valid answer — and
:class:`HybridBackend` with the solver, asking the chat model only where the solver is in doubt: a role's ``doubt``
says how far apart the symbolic answer's best two options are (a :class:`Doubt`), and the model is asked when
that gap is within the backend's margin, with the reason recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from coteam.llm.accounting import TokenLedger
from coteam.llm.base import ChatBackend, Completion, DeadlineExceeded, LLMError, StructuredOutputError, Usage
from coteam.llm.prompts import PromptLibrary
from coteam.llm.schema import model_schema
from coteam.llm.structured import ask_structured, ask_text

log = logging.getLogger("coteam.llm")

Q = TypeVar("Q")  # what one question to a role carries for its solver and checks (RoleContext.data)
T = TypeVar("T")  # a role's answer


@dataclass
class RoleContext(Generic[Q]):
    """One question to a role: who asks, the prompt's slots, and the question's data for the symbolic solver and
    checks (typed: a ``Role[Q, T]`` reads ``ctx.data`` as a ``Q``, no downcast)."""

    agent: str
    slots: dict[str, str]
    data: Q


@dataclass(frozen=True)
class Doubt:
    """Why a symbolic answer may be worth a model's second opinion. ``scores`` (option -> score, higher is better)
    are what the solver weighed; their best two decide the ``gap``. Knowledge the belief lacks altogether has no
    scores (a gap of 0, and any answer of the model's stands)."""

    why: str
    scores: Mapping[str, float] | None = None

    @classmethod
    def between(cls, scores: Mapping[str, float]) -> Doubt | None:
        """The doubt between the best two of ``scores``; None with fewer than two options."""
        if len(scores) < 2:
            return None
        (a, x), (b, y) = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
        return cls(f"close call: {a} ({x:.3f}) vs {b} ({y:.3f})", dict(scores))

    @property
    def gap(self) -> float:
        """How far apart the best two options are, relative to the larger magnitude (0: a tie)."""
        return self.behind(max(self.scores.values()), sorted(self.scores.values())[-2]) if self.scores else 0.0

    def close(self, margin: float) -> set[str]:
        """The options within ``margin`` of the best (relative gap)."""
        if not self.scores:
            return set()
        best = max(self.scores.values())
        return {k for k, v in self.scores.items() if self.behind(best, v) <= margin}

    @staticmethod
    def behind(best: float, score: float) -> float:
        return (best - score) / max(abs(best), abs(score), 1e-9)


@dataclass(frozen=True)
class Role(Generic[Q, T]):
    """A question a method asks, answered by a model or by the symbolic solver: ``Q`` is what each question carries
    (``RoleContext.data``), ``T`` the answer."""

    name: str  # e.g. "pce.planner"; the ledger's role key
    template: str  # prompt template name
    schema: type[T] | None  # a pydantic model; None = free text (str)
    symbolic: Callable[[RoleContext[Q]], T]  # deterministic answer from the agent's belief state
    validate: Callable[[T, RoleContext[Q]], None] | None = None  # semantic checks; raise ValueError
    # The JSON schema of one question: ``schema``'s narrowed to the options it has (coteam.llm.schema.narrow);
    # None: ``schema``'s own.
    constrain: Callable[[RoleContext[Q]], dict[str, Any]] | None = None
    # How sure the symbolic answer is (the hybrid backend asks the model when the gap is within its margin);
    # None, or a role without it: the belief decides alone.
    doubt: Callable[[RoleContext[Q], T], Doubt | None] | None = None
    # The option an answer picks, named as the doubt's scores name it (the hybrid backend keeps a model's answer
    # only when it picks one of the close options).
    choice: Callable[[RoleContext[Q], T], str] | None = None

    def request_schema(self, ctx: RoleContext[Q]) -> dict[str, Any] | None:
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
    # | "breaker" (the circuit breaker was open: a fallback)
    # | "overruled" (hybrid: the model picked an option that is not a close call; the symbolic answer stands)
    usage: Usage
    calls: int
    error: str = ""  # why the model's answer was not used (fallback)
    raw: str = ""  # the model's last raw text
    prompt: tuple[dict[str, str], ...] = ()  # the chat messages sent (LLM backends)
    reason: str = ""  # why the hybrid backend asked the model
    unanswered: bool = False  # the model was asked and never answered (endpoint down, hanging, out of time)

    @property
    def tokens(self) -> int:
        return self.usage.total


class CircuitBreaker:
    """Stops asking a model that does not answer. After ``failures`` role calls in a row got no answer at all
    (the endpoint down, refusing or hanging past its deadline), the rest of that decision and the next
    ``decisions`` decisions are answered symbolically; the decision after them asks again. An answer closes the
    breaker; another unanswered call opens it again for twice as many decisions (at most ``MAX_DOUBLINGS``
    doublings). ``decisions=0`` switches it off."""

    MAX_DOUBLINGS = 5

    def __init__(self, failures: int, decisions: int):
        self.failures, self.decisions = failures, decisions
        self.streak = 0  # unanswered calls in a row
        self.period = decisions  # decisions the next opening lasts
        self.left = 0  # decisions still to answer symbolically after the current one
        self.blocking = False  # the current decision is answered symbolically
        self.openings = 0

    def next_decision(self) -> None:
        """A decision starts."""
        self.blocking = self.left > 0
        self.left = max(0, self.left - 1)

    def record(self, answer: RoleAnswer[Any]) -> None:
        """The outcome of one role call that asked the model."""
        if not answer.unanswered:
            self.streak, self.period = 0, self.decisions
            return
        self.streak += 1
        if self.decisions > 0 and self.streak >= self.failures:
            self.blocking, self.left = True, self.period
            self.openings += 1
            log.warning(
                "the model did not answer %d call(s) in a row (%s); symbolic answers for the next %d decision(s)",
                self.streak,
                answer.error[:200],
                self.period,
            )
            self.period = min(self.period * 2, self.decisions * 2**self.MAX_DOUBLINGS)


@runtime_checkable
class RoleBackend(Protocol):
    name: str
    ledger: TokenLedger

    def answer(self, role: Role[Q, T], ctx: RoleContext[Q], deadline: float | None = None) -> RoleAnswer[T]: ...


class SymbolicBackend:
    """Answers every role with its symbolic solver: no model, no tokens."""

    name = "symbolic"

    def __init__(self, ledger: TokenLedger | None = None):
        self.ledger = ledger if ledger is not None else TokenLedger()

    def answer(self, role: Role[Q, T], ctx: RoleContext[Q], deadline: float | None = None) -> RoleAnswer[T]:
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

    def answer(self, role: Role[Q, T], ctx: RoleContext[Q], deadline: float | None = None) -> RoleAnswer[T]:
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
            calls = self._account(role, ctx, completions)
            self.ledger.add_failed(role.name, ctx.agent, exc.failed_attempts)
            reason = f"invalid output: {exc.reason}" if isinstance(exc, StructuredOutputError) else str(exc)
            log.warning("role %s (agent %s) falls back to its symbolic solver: %s", role.name, ctx.agent, reason)
            self.ledger.add_fallback(role.name, ctx.agent, reason)
            return RoleAnswer(
                role.symbolic(ctx),
                "deadline" if isinstance(exc, DeadlineExceeded) else "fallback",
                sum((c.usage for c in completions), Usage()),
                calls + exc.failed_attempts,
                error=reason,
                raw=completions[-1].text if completions else "",
                prompt=tuple(messages),
                unanswered=not completions and exc.failed_attempts > 0,
            )
        return RoleAnswer(
            value,
            "llm",
            sum((c.usage for c in completions), Usage()),
            self._account(role, ctx, completions),
            raw=completions[-1].text,
            prompt=tuple(messages),
        )

    def _account(self, role: Role[Any, Any], ctx: RoleContext[Any], completions: list[Completion]) -> int:
        """Count ``completions`` (and the attempts that failed before each) in the ledger; the requests sent."""
        for c in completions:
            self.ledger.add(role.name, ctx.agent, c.usage, cached=c.cached, failed_attempts=c.failed_attempts)
        return sum(1 + c.failed_attempts for c in completions)


class HybridBackend:
    """The symbolic solvers, and a chat model only where they are in doubt (see the module docstring).

    Every role is answered symbolically first; when the role's ``doubt`` finds the best two options within
    ``margin`` of each other (relative gap) the question goes to ``llm`` (an :class:`LLMBackend`: constrained
    output, repair, fallback to the same symbolic answer), and the answer records why it was asked. The model
    breaks close calls but does not overturn clear ones: an answer whose ``choice`` is not among the options within
    the margin is overruled (source ``overruled``, the symbolic answer stands, the tokens still count).
    """

    name = "hybrid"

    def __init__(self, llm: LLMBackend, margin: float):
        self.llm = llm
        self.ledger = llm.ledger
        self.margin = margin

    def answer(self, role: Role[Q, T], ctx: RoleContext[Q], deadline: float | None = None) -> RoleAnswer[T]:
        value = role.symbolic(ctx)
        doubt = role.doubt(ctx, value) if role.doubt is not None else None
        if doubt is None or doubt.gap > self.margin:
            return RoleAnswer(value, "symbolic", Usage(), 0)
        reason = f"{doubt.why} (gap {doubt.gap:.3f} <= margin {self.margin:g})"
        answer = self.llm.answer(role, ctx, deadline)
        if answer.source == "llm" and doubt.scores and role.choice is not None:
            picked = role.choice(ctx, answer.value)
            close = doubt.close(self.margin)
            if picked not in close:
                error = f"the model picked {picked!r}, not one of the close options: {', '.join(sorted(close))}"
                return replace(answer, value=value, source="overruled", error=error, reason=reason)
        return replace(answer, reason=reason)
