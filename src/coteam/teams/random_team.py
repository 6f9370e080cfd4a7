"""``random``: a uniform choice among the currently available high-level actions (a lower bound)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from coteam.actions import HighLevelAction, Verb
from coteam.progress import status_message
from coteam.reasoning import Decision, DecisionContext, EpisodeInfo, MethodSpec, PerAgentTeam, register_method


class RandomReasoner:
    def __init__(self, agent: str, info: EpisodeInfo, rng: random.Random, params: Mapping[str, Any]):
        self.rng = rng

    def decide(self, ctx: DecisionContext) -> Decision:
        option = self.rng.choice(ctx.options)
        action = option.action
        if action.is_message:
            action = HighLevelAction(Verb.SEND_MESSAGE, text=status_message(ctx.memory))
        return Decision(action, {"method": "random", "choices": len(ctx.options)})


register_method(
    MethodSpec(
        "random",
        "uniform over the available high-level actions (lower bound)",
        lambda params: PerAgentTeam("random", RandomReasoner, params),
    )
)
