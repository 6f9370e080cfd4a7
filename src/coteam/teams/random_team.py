"""``random``: a uniform choice among the currently available physical actions (a lower bound; it does not talk,
as in the papers)."""

from __future__ import annotations

from coteam.agent.messages import TeamStatus
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.domain.actions import HighLevelAction, Verb
from coteam.kit import AgentReasoner, PerAgentTeam


class RandomAgent(AgentReasoner):
    def decide(self, ctx: DecisionContext) -> Decision:
        physical = [o for o in ctx.options if not o.action.is_message]
        if not physical:  # every physical action was unreachable lately: say where I am rather than nothing
            status = TeamStatus.of(ctx.memory)
            return Decision(
                HighLevelAction(Verb.SEND_MESSAGE, text=status.text()), {"method": "random"}, payload=status
            )
        option = self.rng.choice(physical)
        return Decision(option.action, {"method": "random", "choices": len(physical)})


class RandomTeam(PerAgentTeam):
    summary = "uniform over the available physical actions, no messages (lower bound)"
    Agent = RandomAgent
    payload_types = (TeamStatus,)
