"""``rhp``: a rule-based hierarchical planner in the spirit of the benchmarks' scripted helpers: each agent follows
the rule policy (:mod:`coteam.kit.policies`) on its own memory; the agents do not talk."""

from __future__ import annotations

from coteam.agent.reasoning import Decision, DecisionContext
from coteam.kit import AgentReasoner, PerAgentTeam
from coteam.kit.policies import rule_based_choice


class RhpAgent(AgentReasoner):
    def decide(self, ctx: DecisionContext) -> Decision:
        choice, rule = rule_based_choice(ctx)
        return Decision(choice.action, {"method": "rhp", "rule": rule})


class RhpTeam(PerAgentTeam):
    summary = "rule-based hierarchical planner (scripted helper baseline)"
    Agent = RhpAgent
