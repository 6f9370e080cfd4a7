"""The LLM-role toolkit every method with roles uses.

:class:`RoleKit` builds the role backend once per run (a team shares it across its agents and episodes, so a local
model loads once and one ledger counts every call). For each decision a method opens a :class:`RoleSession`: its
:meth:`~RoleSession.ask` answers a role and records in the decision's trace what was asked (the prompt, on an LLM
backend), what came back, parse errors and fallbacks; :meth:`~RoleSession.decision` closes the decision with its
token, call and fallback deltas (a fallback counts once per role answer).

With the switch ``decision_budget_s`` a decision's LLM role calls share that many seconds: a call is cut off when
the budget runs out and every later role of the decision is answered symbolically at once (source ``deadline``,
counted as a fallback and in ``llm_deadlines``), so a slow model never stalls a robot. One call never takes longer
than ``call_deadline_s`` (default: its ``timeout_s``), retries included, and a model that stops answering is
left alone for a while: after ``breaker_failures`` unanswered calls in a row the circuit breaker
(:class:`~coteam.llm.CircuitBreaker`) answers the next ``breaker_decisions`` decisions symbolically (source
``breaker``, counted as fallbacks and in ``llm_breaker``), then asks again.

On the ``hybrid`` backend a role is answered by its symbolic solver unless the solver is in doubt (the best two
options within ``hybrid_margin``), and each model call records why it was made (``why`` in the trace). A session
opened with the agent's memory first asks what the belief cannot know (:mod:`coteam.kit.knowledge`): the kind of
an unfamiliar goal item (answered once per name for the whole run) and what a teammate's free-text message says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from importlib.abc import Traversable
from typing import Any, TypeVar

from pydantic import BaseModel

from coteam.agent.memory import AgentMemory
from coteam.agent.reasoning import Decision
from coteam.domain.actions import HighLevelAction
from coteam.kit import knowledge
from coteam.kit.config import MethodConfig, RoleMethodConfig
from coteam.llm import (
    CircuitBreaker,
    HybridBackend,
    LLMBackend,
    LLMConfig,
    PromptLibrary,
    Role,
    RoleAnswer,
    RoleBackend,
    RoleContext,
    Usage,
    make_backend,
)

log = logging.getLogger("coteam.roles")

Q = TypeVar("Q")
T = TypeVar("T")
ERROR_CHARS = 300  # of a parse error kept in the trace


class RoleKit:
    """The role backend of one team for a whole run (see the module docstring)."""

    def __init__(self, config: MethodConfig, prompt_folder: Traversable):
        assert isinstance(config, RoleMethodConfig)
        self.budget_s = config.decision_budget_s
        if config.backend == "symbolic":
            self.backend: RoleBackend = make_backend("symbolic")
        else:
            llm = None if config.replay is not None else LLMConfig.from_env(**config.llm_settings())
            self.backend = make_backend(
                config.backend,
                config=llm,
                prompts=PromptLibrary(prompt_folder),
                transcript=config.transcript,
                replay=config.replay,
                cache=config.cache,
                margin=config.hybrid_margin,
            )
        # The kit's own questions (hybrid): its prompts, the same model and ledger.
        self.knowledge: RoleBackend | None = None
        if isinstance(self.backend, HybridBackend):
            llm = self.backend.llm
            prompts = PromptLibrary(resources.files("coteam.kit") / "prompts")
            self.knowledge = HybridBackend(LLMBackend(llm.chat, prompts, llm.ledger, **llm.params), self.backend.margin)
        self.learned: dict[str, str] = {}  # unfamiliar item name -> the category a model named, for the whole run
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_decisions)

    def session(self, agent: str, slots: Mapping[str, str], memory: AgentMemory | None = None) -> RoleSession:
        """Start one decision of ``agent``; ``slots`` fill every role's prompt (a role may add its own). With the
        agent's ``memory`` (hybrid backend), first learn what the belief cannot know (see the module docstring)."""
        deadline = time.monotonic() + self.budget_s if self.budget_s is not None else None
        self.breaker.next_decision()
        session = RoleSession(self.backend, agent, dict(slots), deadline, self.breaker)
        if memory is not None and self.knowledge is not None:
            self._learn(session, self.knowledge, memory)
        return session

    def _learn(self, session: RoleSession, backend: RoleBackend, memory: AgentMemory) -> None:
        for name in knowledge.unfamiliar_names(memory):
            if name not in self.learned:
                kind = session.ask_with(backend, knowledge.CLASSIFY, knowledge.classify_slots(name), None)
                if kind.source != "llm":  # no answer: none for this episode, asked again in the next
                    memory.learned_categories[name] = knowledge.learned_category(kind.value)
                    continue
                self.learned[name] = knowledge.learned_category(kind.value)
            memory.learned_categories[name] = self.learned[name]
        for i in knowledge.unread_messages(memory):
            message = memory.messages[i]
            reading = session.ask_with(backend, knowledge.READ_MESSAGE, knowledge.read_slots(memory, message), memory)
            memory.messages_read.add(i)
            status = knowledge.status_of(reading.value, message.sender)
            if status is not None:
                memory.messages[i] = replace(message, payload=status)


class RoleSession:
    """The role calls of one decision (see the module docstring)."""

    def __init__(
        self,
        backend: RoleBackend,
        agent: str,
        slots: dict[str, str],
        deadline: float | None = None,
        breaker: CircuitBreaker | None = None,
    ):
        self.backend = backend
        self.breaker = breaker
        self.agent = agent
        self.slots = slots
        self.deadline = deadline  # time.monotonic() instant after which roles are answered symbolically
        self.deadlines = 0
        self.breaker_answers = 0
        ledger = backend.ledger
        self._start = (ledger.total_tokens, ledger.calls, ledger.fallbacks)
        self.trace: dict[str, dict[str, Any]] = {}

    def ask(self, role: Role[Q, T], data: Q, **extra_slots: str) -> RoleAnswer[T]:
        """``role``'s answer; its prompt gets the session's slots and ``extra_slots``."""
        return self.ask_with(self.backend, role, {**self.slots, **extra_slots}, data)

    def ask_with(self, backend: RoleBackend, role: Role[Q, T], slots: dict[str, str], data: Q) -> RoleAnswer[T]:
        """``role``'s answer from ``backend`` with exactly ``slots``, recorded in this decision like any other."""
        ctx = RoleContext(self.agent, slots, data)
        answer: RoleAnswer[T]
        if backend.name != "symbolic" and self.deadline is not None and time.monotonic() >= self.deadline:
            reason = "the decision's time budget was spent before this role was asked"
            backend.ledger.add_fallback(role.name, self.agent, reason)
            answer = RoleAnswer(role.symbolic(ctx), "deadline", Usage(), 0, error=reason)
        elif backend.name != "symbolic" and self.breaker is not None and self.breaker.blocking:
            reason = "the circuit breaker is open: the model stopped answering"
            backend.ledger.add_fallback(role.name, self.agent, reason)
            answer = RoleAnswer(role.symbolic(ctx), "breaker", Usage(), 0, error=reason)
        else:
            answer = backend.answer(role, ctx, self.deadline)
            if self.breaker is not None and (answer.calls or answer.unanswered):
                self.breaker.record(answer)
        self.deadlines += answer.source == "deadline"
        self.breaker_answers += answer.source == "breaker"
        entry: dict[str, Any] = {"source": answer.source, "tokens": answer.tokens, "calls": answer.calls}
        if answer.reason:
            entry["why"] = answer.reason
        if answer.prompt:
            entry["prompt"] = list(answer.prompt)
            entry["answer"] = answer.raw
        if answer.error:
            entry["error"] = answer.error[:ERROR_CHARS]
            if answer.source == "breaker":
                log.debug("%s %s: %s", self.agent, role.name, answer.error)
            elif answer.source == "overruled":
                log.info("%s %s: the symbolic answer stands: %s", self.agent, role.name, answer.error[:200])
            else:
                log.warning("%s %s fell back to the symbolic answer: %s", self.agent, role.name, answer.error[:200])
        key, n = role.name, 2
        while key in self.trace:  # a role asked twice in one decision keeps both records
            key, n = f"{role.name}#{n}", n + 1
        self.trace[key] = entry
        return answer

    def decision(
        self,
        action: HighLevelAction,
        rationale: Mapping[str, Any],
        payload: BaseModel | None = None,
        rejected_lines: int = 0,
    ) -> Decision:
        """The decision, with this session's token, call and fallback deltas and the answer lines a parser rejected
        (``rejected_lines``, e.g. garbled belief statements)."""
        ledger = self.backend.ledger
        tokens0, calls0, fallbacks0 = self._start
        fallbacks = ledger.fallbacks - fallbacks0
        full = {**rationale, "backend": self.backend.name, "roles": self.trace, "llm_fallbacks": fallbacks}
        return Decision(
            action,
            full,
            tokens=ledger.total_tokens - tokens0,
            llm_calls=ledger.calls - calls0,
            llm_fallbacks=fallbacks,
            llm_deadlines=self.deadlines,
            llm_breaker=self.breaker_answers,
            payload=payload,
            rejected_lines=rejected_lines,
        )
