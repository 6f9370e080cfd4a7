"""``pce``: Planner → Composer → Evaluator, with a communication module, on any role backend.

Per decision: the Planner proposes a candidate and its reasoning; the Composer turns the uncertain assumptions
behind it into a binary tree (depth ≤ D) whose leaves are available actions or messages; the Evaluator scores
every leaf's Likelihood, Gain and CostPenalty on 1–5; the system normalises the scores and takes the leaf with
the highest ``U = L·G − λ·(α·cost·1{move} + β·cost·1{message})``. A winning message is written by the
communication module (answer questions first, then share what reduces the teammate's uncertainty).

Robustness: an invalid tree falls back to the Planner's candidate; invalid Evaluator scores fall back to
symbolic scores (the role backend does that); every fallback is logged and counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from coteam.agent.messages import TeamStatus
from coteam.agent.reasoning import Decision
from coteam.domain.actions import HighLevelAction, Verb, format_action, parse_action
from coteam.kit import (
    Deliberation,
    Explanation,
    PerAgentTeam,
    RoleAgent,
    RoleContext,
    Section,
    ValueRoleConfig,
    rationale_section,
)
from coteam.methods.pce.roles import (
    COMMUNICATOR,
    COMPOSER,
    EVALUATOR,
    PLANNER,
    PceQuestion,
    check_tree,
    scored_leaves,
)
from coteam.methods.pce.scoring import ScoredLeaf, Weights, action_utilities, best_leaf
from coteam.methods.pce.symbolic import SymbolicContext
from coteam.methods.pce.tree import Hypothesis, Leaf, Node, Scenario, explained_tree, scenarios, tree_to_json

log = logging.getLogger("coteam.pce")

Ablation = Literal[
    "none",
    "no_planner",
    "no_composer",
    "no_evaluator",
    "planner_only",
    "physical_only",
    "communication_only",
]
ABLATIONS: tuple[str, ...] = get_args(Ablation)


class PceConfig(ValueRoleConfig):
    D: int = Field(3, ge=1, le=6, description="maximum depth of the assumption tree")
    alpha: float = Field(1.0, ge=0, description="weight of travel cost")
    beta: float = Field(1.0, ge=0, description="weight of message cost")
    lam: float = Field(1.0, ge=0, alias="lambda", description="gain/cost trade-off λ")
    K_action: int = Field(10, ge=0, description="previous actions shown to the roles")
    K_message: int = Field(3, ge=0, description="previous messages shown to the roles")
    ablation: Ablation = Field("none", description="switch a module off (the paper's ablations)")

    @property
    def weights(self) -> Weights:
        return Weights(self.alpha, self.beta, self.lam)


class PceAgent(RoleAgent):
    config: PceConfig
    team: PceTeam

    # --- the decision ------------------------------------------------------------------------------------
    def deliberate(self, d: Deliberation) -> Decision:
        cfg = self.config
        ctx, m = d.ctx, d.memory
        d.rationale["ablation"] = cfg.ablation
        announced = d.announced
        if announced is not None:  # the communication module keeps its word: the action just announced comes next
            d.rationale["announced"] = announced.text
            return d.decision(announced.action)
        value = d.value
        allow_messages = cfg.ablation != "physical_only" and d.can_message
        if cfg.ablation == "physical_only":  # no message is among what the roles are shown they can do
            d.session.slots["available"] = "\n".join(o.annotated() for o in ctx.options if not o.action.is_message)
        sym = SymbolicContext(m, value.belief, ctx.options, cfg.weights, cfg.D, allow_messages, value)
        incoming = tuple(msg.text for msg in m.messages[-cfg.K_message :]) if cfg.K_message else ()
        q = PceQuestion(self.info.benchmark, sym, m.known_names(), incoming=incoming)
        trace = d.rationale
        trace["context"] = {k: d.slots[k] for k in ("goal", "progress", "dialogue", "actions")}
        # teammates in my rollouts and the first action each is expected to take (value model, point 4)
        trace["leaders"] = {r.name: f"{k[0]} {k[1]}" for r, k in value.leaders() if k is not None}

        candidate: HighLevelAction | None = None
        if cfg.ablation != "no_planner":
            plan = d.ask(PLANNER, q).value
            q.planner = plan
            candidate = parse_action(plan.candidate, self.info.benchmark)
            trace["planner"] = plan.model_dump()
        if cfg.ablation == "planner_only":
            assert candidate is not None
            return self._finish(candidate, None, q, d)

        q.leaves = self._compose(q, d, candidate)
        if cfg.ablation == "no_evaluator":
            chosen = self._most_likely_leaf(q)
        else:
            scored = self._evaluate(q, d)
            actions = [sc.leaf.text for sc in q.leaves]
            trace["action_utilities"] = {a: round(u, 4) for a, u in action_utilities(scored, actions).items()}
            chosen = best_leaf(scored, actions).leaf
        return self._finish(q.leaves[chosen].leaf.action, chosen, q, d)

    def _compose(self, q: PceQuestion, d: Deliberation, candidate: HighLevelAction | None) -> list[Scenario]:
        cfg = self.config
        s = q.symbolic
        trace = d.rationale
        if cfg.ablation == "no_composer":  # no assumptions: the best few actions are scored side by side
            trace["tree"] = None
            return [Scenario(i, (), Leaf(o.action, o.text)) for i, o in enumerate(s.ranked()[: 2**cfg.D])]
        plan = q.planner
        answer = d.ask(
            COMPOSER,
            q,
            max_depth=str(cfg.D),
            planner_reasoning=plan.reasoning if plan else "(no planner in this configuration)",
            planner_candidate=plan.candidate if plan else "(none)",
        )
        if answer.source == "fallback" and candidate is not None:
            # An invalid tree falls back to the Planner's candidate.
            q.tree = Leaf(candidate, format_action(candidate, self.info.benchmark))
            trace["tree_fallback"] = True
        elif q.tree is None:  # answers that skipped the semantic check (symbolic ones) are parsed here
            check_tree(answer.value, RoleContext(self.agent, {}, q))
        assert q.tree is not None
        if cfg.ablation == "communication_only":
            q.tree = self._only_candidate_or_messages(q, candidate)
        trace["tree"] = tree_to_json(q.tree)
        return scenarios(q.tree)

    def _only_candidate_or_messages(self, q: PceQuestion, candidate: HighLevelAction | None) -> Node:
        """Communication-only: uncertainty may be resolved by talking, not by other physical actions."""
        s = q.symbolic
        msg_action = HighLevelAction(Verb.SEND_MESSAGE, text=s.message_text(q.incoming))
        msg_leaf = Leaf(msg_action, format_action(msg_action, self.info.benchmark))

        def rewrite(n: Node) -> Node:
            if isinstance(n, Hypothesis):
                return Hypothesis(n.text, n.reason, rewrite(n.when_true), rewrite(n.when_false))
            if n.action.is_message or candidate is None or n.action == candidate:
                return n
            return msg_leaf if s.allow_messages else Leaf(candidate, format_action(candidate, self.info.benchmark))

        assert q.tree is not None
        return rewrite(q.tree)

    def _evaluate(self, q: PceQuestion, d: Deliberation) -> list[ScoredLeaf]:
        listing = "\n".join(
            f"Scenario {sc.index}: "
            + (" and ".join(f"'{t}' is {'true' if v else 'false'}" for t, v in sc.path) or "as things stand")
            + f" -> {sc.leaf.text}"
            for sc in q.leaves
        )
        answer = d.ask(EVALUATOR, q, scenarios=listing)
        scored = scored_leaves(q, answer.value)
        d.rationale["scores"] = [s.to_json() for s in scored]
        return scored

    def _most_likely_leaf(self, q: PceQuestion) -> int:
        """Without an Evaluator: the leaf reached by taking each assumption's more likely answer."""
        return max(q.leaves, key=lambda sc: (q.symbolic.path_likelihood(sc.path), -sc.index)).index

    def _finish(self, action: HighLevelAction, chosen: int | None, q: PceQuestion, d: Deliberation) -> Decision:
        payload = None
        if action.is_message:  # the communication module writes the text
            answer = d.ask(COMMUNICATOR, q)
            action = HighLevelAction(Verb.SEND_MESSAGE, text=answer.value.message)
            payload = d.payload_of(answer, q.symbolic.status)
            advice = q.symbolic.announcement()
            if advice is not None:
                d.rationale["announcement"] = {
                    "intent": q.symbolic.intent_text(),
                    "teammate": advice.teammate,
                    "team_value_with": round(advice.value_with, 2),
                    "team_value_without": round(advice.value_without, 2),
                }
        d.rationale["chosen_leaf"] = chosen
        return d.decision(action, payload)


class PceTeam(PerAgentTeam):
    summary = "Planner-Composer-Evaluator: assumption trees scored by likelihood, gain and cost"
    Config = PceConfig
    Agent = PceAgent
    payload_types: ClassVar = (TeamStatus,)

    @classmethod
    def explain(cls, rationale: Mapping[str, Any]) -> Explanation:
        """The Planner's candidate and assumptions, the assumption tree with each leaf's scores, the actions'
        utilities, then the rest of the rationale."""
        r = dict(rationale)
        sections: list[Section] = []
        plan = r.pop("planner", None)
        if plan is not None:
            source = r.get("roles", {}).get("pce.planner", {}).get("source", "?")
            lines = [f"reasoning: {plan['reasoning']}", *(f"assumes: {a}" for a in plan.get("assumptions") or [])]
            sections.append(Section(f"Planner ({source}): {plan['candidate']}", tuple(lines)))
        tree, scores, chosen = r.pop("tree", None), r.pop("scores", []), r.pop("chosen_leaf", None)
        if tree:
            title = "Assumption tree (L, G, C normalised to [0, 1]; U = L*G - lambda*C):"
            sections.append(Section(title, tree=explained_tree(tree, scores, chosen)))
        if r.pop("tree_fallback", False):
            sections.append(Section("The model's tree was invalid: fell back to the Planner's candidate."))
        utilities = sorted((r.pop("action_utilities", None) or {}).items(), key=lambda kv: -kv[1])
        return Explanation((*sections, rationale_section(r)), tuple(utilities), "utility U (the best leaf per action)")
