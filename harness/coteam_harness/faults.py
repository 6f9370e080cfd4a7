"""Fault injection shared by ``tests/faults/`` and ``bench/faults.py``: a team turned against its own robots."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from coteam.agent.reasoning import Decision, DecisionContext, Team
from coteam.domain.actions import HighLevelAction, Verb


class InjectedTeam:
    """``inner``, except that whenever it may talk it sends the next of ``texts``: what a model steered by injected
    text, or stuck in a loop, would say. Everything else (name, switches, reset, messages in) is ``inner``'s."""

    def __init__(self, inner: Team, texts: Iterator[str]):
        self.inner = inner
        self.texts = texts

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def decide(self, ctx: DecisionContext) -> Decision:
        if any(o.action.is_message for o in ctx.options):
            return Decision(HighLevelAction(Verb.SEND_MESSAGE, text=next(self.texts)))
        return self.inner.decide(ctx)
