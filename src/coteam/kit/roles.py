"""The LLM-role toolkit every method with roles uses.

:class:`RoleKit` builds the role backend once per run (a team shares it across its agents and episodes, so a local
model loads once and one ledger counts every call). For each decision a method opens a :class:`RoleSession`: its
:meth:`~RoleSession.ask` answers a role and records in the decision's trace what was asked (the prompt, on an LLM
backend), what came back, parse errors and fallbacks; :meth:`~RoleSession.decision` closes the decision with its
token, call and fallback deltas (a fallback counts once per role answer).

With the switch ``decision_budget_s`` a decision's LLM role calls share that many seconds: a call is cut off when
the budget runs out and every later role of the decision is answered symbolically at once (source ``deadline``,
counted as a fallback and in ``llm_deadlines``), so a slow model never stalls a robot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from importlib.abc import Traversable
from typing import Any, TypeVar

from pydantic import BaseModel

from coteam.actions import HighLevelAction
from coteam.kit.config import MethodConfig, RoleMethodConfig
from coteam.llm import LLMConfig, PromptLibrary, Role, RoleAnswer, RoleBackend, RoleContext, Usage, make_backend
from coteam.reasoning import Decision

log = logging.getLogger("coteam.roles")

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
            )

    def session(self, agent: str, slots: Mapping[str, str]) -> RoleSession:
        """Start one decision of ``agent``; ``slots`` fill every role's prompt (a role may add its own)."""
        deadline = time.monotonic() + self.budget_s if self.budget_s is not None else None
        return RoleSession(self.backend, agent, dict(slots), deadline)


class RoleSession:
    """The role calls of one decision (see the module docstring)."""

    def __init__(self, backend: RoleBackend, agent: str, slots: dict[str, str], deadline: float | None = None):
        self.backend = backend
        self.agent = agent
        self.slots = slots
        self.deadline = deadline  # time.monotonic() instant after which roles are answered symbolically
        self.deadlines = 0
        ledger = backend.ledger
        self._start = (ledger.total_tokens, ledger.calls, ledger.fallbacks)
        self.trace: dict[str, dict[str, Any]] = {}

    def ask(self, role: Role[T], data: Any, **extra_slots: str) -> RoleAnswer[T]:
        ctx = RoleContext(self.agent, {**self.slots, **extra_slots}, data)
        if self.backend.name != "symbolic" and self.deadline is not None and time.monotonic() >= self.deadline:
            reason = "the decision's time budget was spent before this role was asked"
            self.backend.ledger.add_fallback(role.name, self.agent, reason)
            answer: RoleAnswer[T] = RoleAnswer(role.symbolic(ctx), "deadline", Usage(), 0, error=reason)
        else:
            answer = self.backend.answer(role, ctx, self.deadline)
        self.deadlines += answer.source == "deadline"
        entry: dict[str, Any] = {"source": answer.source, "tokens": answer.tokens, "calls": answer.calls}
        if answer.prompt:
            entry["prompt"] = list(answer.prompt)
            entry["answer"] = answer.raw
        if answer.error:
            entry["error"] = answer.error[:ERROR_CHARS]
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
            payload=payload,
            rejected_lines=rejected_lines,
        )
