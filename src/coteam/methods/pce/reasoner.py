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
import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from coteam.actions import HighLevelAction, Verb, format_action, parse_action
from coteam.belief import BeliefState
from coteam.llm import LLMConfig, RoleAnswer, RoleContext, make_backend
from coteam.methods.pce.roles import COMMUNICATOR, COMPOSER, EVALUATOR, PLANNER, PceQuestion, check_tree
from coteam.methods.pce.scoring import LeafScore, ScoredLeaf, Weights, action_utilities, best_leaf, score_leaf
from coteam.methods.pce.symbolic import SymbolicContext
from coteam.methods.pce.tree import Hypothesis, Leaf, Node, Scenario, scenarios, tree_to_json
from coteam.progress import goal_text, progress_text
from coteam.reasoning import Decision, DecisionContext, EpisodeInfo

log = logging.getLogger("coteam.pce")

ABLATIONS = (
    "none",
    "no_planner",
    "no_composer",
    "no_evaluator",
    "planner_only",
    "physical_only",
    "communication_only",
)
LLM_PARAMS = ("model", "base_url", "api_key", "temperature", "top_p", "max_tokens", "timeout_s", "max_retries")
IO_PARAMS = ("transcript", "replay", "cache")


@dataclass(frozen=True)
class PceConfig:
    D: int = 3  # maximum tree depth
    alpha: float = 1.0
    beta: float = 1.0
    lam: float = 1.0  # λ; set with --set lambda=...
    K_action: int = 10  # previous actions shown to the roles
    K_message: int = 3  # previous messages shown to the roles
    ablation: str = "none"
    backend: str = "symbolic"

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> PceConfig:
        known = {f.name for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in params.items():
            name = "lam" if key == "lambda" else key
            if name in known:
                kwargs[name] = type(getattr(cls(), name))(value)
            elif key not in LLM_PARAMS + IO_PARAMS:
                raise ValueError(f"unknown pce parameter {key!r}; switches: {', '.join(SWITCHES)}")
        config = cls(**kwargs)
        if config.ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {config.ablation!r}; choose one of {', '.join(ABLATIONS)}")
        if config.D < 1 or config.K_action < 0 or config.K_message < 0:
            raise ValueError("D must be >= 1 and the memory windows >= 0")
        return config

    @property
    def weights(self) -> Weights:
        return Weights(self.alpha, self.beta, self.lam)


SWITCHES = {
    "backend": "symbolic (default) | llm — who answers the roles",
    "ablation": "none | " + " | ".join(ABLATIONS[1:]),
    "D": "maximum depth of the assumption tree (3)",
    "alpha": "weight of travel cost (1.0)",
    "beta": "weight of message cost (1.0)",
    "lambda": "gain/cost trade-off λ (1.0)",
    "K_action": "previous actions in the context (10)",
    "K_message": "previous messages in the context (3)",
    "model, base_url, api_key, temperature, top_p, max_tokens, timeout_s, max_retries": "LLM endpoint settings "
    "(default from OPENAI_API_KEY, OPENAI_BASE_URL, COTEAM_LLM_MODEL)",
    "transcript, replay, cache": "JSONL transcript to record / replay, sqlite response cache",
}


class PceReasoner:
    def __init__(self, agent: str, info: EpisodeInfo, rng: random.Random, params: Mapping[str, Any]):
        self.agent = agent
        self.info = info
        self.config = PceConfig.from_params(params)
        llm = {k: params[k] for k in LLM_PARAMS if k in params}
        io = {k: str(params[k]) for k in IO_PARAMS if k in params}
        if self.config.backend == "symbolic":
            self.backend = make_backend("symbolic")
        else:
            config = None if "replay" in io else LLMConfig.from_env(**llm)
            self.backend = make_backend(self.config.backend, config=config, **io)
        self.communicated: set[str] = set()
        self.sent: list[tuple[int, str]] = []  # my own messages, for the dialogue history

    # --- context -----------------------------------------------------------------------------------------
    def _slots(self, ctx: DecisionContext) -> dict[str, str]:
        m = ctx.memory
        cfg = self.config
        dialogue = [(msg.step, f"{msg.sender}: {msg.text}") for msg in m.messages]
        dialogue += [(step, f"{self.agent} (me): {text}") for step, text in self.sent]
        dialogue = sorted(dialogue)[-cfg.K_message :] if cfg.K_message else []
        actions = m.actions[-cfg.K_action :] if cfg.K_action else []
        return {
            "agent": self.agent,
            "teammates": ", ".join(a for a in self.info.agents if a != self.agent) or "none",
            "goal": goal_text(m),
            "progress": progress_text(m),
            "dialogue": "\n".join(t for _, t in dialogue) or "(no messages yet)",
            "actions": "\n".join(f"step {a.step}: {a.action} -> {a.outcome}" for a in actions) or "(none yet)",
            "available": "\n".join(o.annotated() for o in ctx.options),
        }

    # --- the decision ------------------------------------------------------------------------------------
    def decide(self, ctx: DecisionContext) -> Decision:
        cfg = self.config
        m = ctx.memory
        ledger = self.backend.ledger
        tokens0, calls0, fallbacks0 = ledger.total_tokens, ledger.calls, ledger.fallbacks
        belief = BeliefState(
            m, teammates=[a for a in self.info.agents if a != self.agent], distance=ctx.nav.path_length
        )
        allow_messages = cfg.ablation != "physical_only" and any(o.action.is_message for o in ctx.options)
        sym = SymbolicContext(m, belief, ctx.options, cfg.weights, cfg.D, allow_messages, self.communicated)
        incoming = tuple(msg.text for msg in m.messages[-cfg.K_message :]) if cfg.K_message else ()
        q = PceQuestion(self.info.benchmark, sym, m.known_names(), incoming=incoming)
        slots = self._slots(ctx)
        trace: dict[str, Any] = {
            "method": "pce",
            "backend": self.backend.name,
            "ablation": cfg.ablation,
            "context": {k: slots[k] for k in ("goal", "progress", "dialogue", "actions")},
            "roles": {},
        }

        def ask(role: Any, extra: Mapping[str, str] = {}) -> RoleAnswer:
            answer = self.backend.answer(role, RoleContext(self.agent, {**slots, **extra}, q))
            trace["roles"][role.name] = {"source": answer.source, "tokens": answer.tokens, "calls": answer.calls}
            if answer.error:
                trace["roles"][role.name]["error"] = answer.error[:300]
                log.warning("%s %s fell back to the symbolic answer: %s", self.agent, role.name, answer.error[:200])
            return answer

        candidate: HighLevelAction | None = None
        if cfg.ablation != "no_planner":
            plan = ask(PLANNER).value
            q.planner = plan
            candidate = parse_action(plan.candidate, self.info.benchmark)
            trace["planner"] = plan.model_dump()
        if cfg.ablation == "planner_only":
            assert candidate is not None
            return self._finish(candidate, None, trace, q, slots, tokens0, calls0, fallbacks0)

        q.leaves = self._compose(q, ask, candidate, trace)
        if cfg.ablation == "no_evaluator":
            chosen = self._most_likely_leaf(q)
        else:
            scored = self._evaluate(q, ask, trace)
            actions = [sc.leaf.text for sc in q.leaves]
            trace["action_utilities"] = {a: round(u, 4) for a, u in action_utilities(scored, actions).items()}
            chosen = best_leaf(scored, actions).leaf
        return self._finish(q.leaves[chosen].leaf.action, chosen, trace, q, slots, tokens0, calls0, fallbacks0)

    def _compose(self, q: PceQuestion, ask: Any, candidate: HighLevelAction | None, trace: dict) -> list[Scenario]:
        cfg = self.config
        s = q.symbolic
        if cfg.ablation == "no_composer":  # no assumptions: the best few actions are scored side by side
            trace["tree"] = None
            return [Scenario(i, (), Leaf(o.action, o.text)) for i, o in enumerate(s.ranked()[: 2**cfg.D])]
        plan = q.planner
        extra = {
            "max_depth": str(cfg.D),
            "planner_reasoning": plan.reasoning if plan else "(no planner in this configuration)",
            "planner_candidate": plan.candidate if plan else "(none)",
        }
        answer = ask(COMPOSER, extra)
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

    def _evaluate(self, q: PceQuestion, ask: Any, trace: dict) -> list[ScoredLeaf]:
        listing = "\n".join(
            f"Scenario {sc.index}: "
            + (" and ".join(f"'{t}' is {'true' if v else 'false'}" for t, v in sc.path) or "as things stand")
            + f" -> {sc.leaf.text}"
            for sc in q.leaves
        )
        answer = ask(EVALUATOR, {"scenarios": listing})
        by_leaf = {s.leaf: s for s in answer.value.scenarios}
        scored = [
            score_leaf(
                LeafScore(
                    sc.index, by_leaf[sc.index].likelihood, by_leaf[sc.index].gain, by_leaf[sc.index].cost_penalty
                ),
                is_message=sc.leaf.action.is_message,
                weights=self.config.weights,
            )
            for sc in q.leaves
        ]
        trace["scores"] = [s.to_json() for s in scored]
        return scored

    def _most_likely_leaf(self, q: PceQuestion) -> int:
        """Without an Evaluator: the leaf reached by taking each assumption's more likely answer."""
        return max(q.leaves, key=lambda sc: (q.symbolic.path_likelihood(sc.path), -sc.index)).index

    def _finish(
        self,
        action: HighLevelAction,
        chosen: int | None,
        trace: dict[str, Any],
        q: PceQuestion,
        slots: dict[str, str],
        tokens0: int,
        calls0: int,
        fallbacks0: int,
    ) -> Decision:
        if action.is_message:  # the communication module writes the text
            text = self.backend.answer(COMMUNICATOR, RoleContext(self.agent, slots, q)).value.message
            action = HighLevelAction(Verb.SEND_MESSAGE, text=text[:500])
            q.symbolic.mark_sent()
            self.sent.append((q.symbolic.memory.step, action.text))
        trace["chosen_leaf"] = chosen
        trace["action"] = format_action(action, self.info.benchmark)
        ledger = self.backend.ledger
        fallbacks = ledger.fallbacks - fallbacks0 + int(bool(trace.get("tree_fallback")))
        trace["llm_fallbacks"] = fallbacks
        return Decision(
            action,
            trace,
            tokens=ledger.total_tokens - tokens0,
            llm_calls=ledger.calls - calls0,
            llm_fallbacks=fallbacks,
        )
