"""PCE's four roles: answer schemas, semantic checks and symbolic solvers.

Each role is one question: to an LLM (prompt templates ``pce_*.md``) or to the symbolic solver. Semantic checks
run on LLM answers before they are accepted, so a repair round can tell the model exactly what was wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from coteam.agent.options import ActionOption
from coteam.belief import UncertainVariable
from coteam.domain.actions import ActionError, HighLevelAction, Verb, parse_action, validate_action
from coteam.domain.world import Benchmark
from coteam.kit import Doubt, Role, RoleContext, action_text_schema, message_role, model_schema, narrow
from coteam.methods.pce.scoring import LeafScore, ScoredLeaf, action_utilities, best_leaf, score_leaf
from coteam.methods.pce.symbolic import SymbolicContext
from coteam.methods.pce.tree import Hypothesis, Leaf, Node, Scenario, TreeError, parse_tree, tree_to_json

BRANCH_CANDIDATES = 12  # the most uncertain variables the symbolic Composer considers for each split


# --- answer schemas --------------------------------------------------------------------------------------
class PlannerAnswer(BaseModel):
    reasoning: str = Field(description="step-by-step reasoning about the situation")
    candidate: str = Field(description="one action copied verbatim from the available actions")
    assumptions: list[str] = Field(default_factory=list, description="uncertain facts the choice relies on")


class ComposerAnswer(BaseModel):
    tree: dict[str, Any]


class ScenarioScore(BaseModel):
    leaf: int = Field(ge=0)
    likelihood: float = Field(ge=1, le=5)
    gain: float = Field(ge=1, le=5)
    cost_penalty: float = Field(ge=1, le=5)
    action: str = ""


SCORE_FIELDS = ("likelihood", "gain", "cost_penalty")


class EvaluatorAnswer(BaseModel):
    scenarios: list[ScenarioScore]


# --- shared per-decision data ----------------------------------------------------------------------------
@dataclass
class PceQuestion:
    """What the roles of one decision share (``RoleContext.data``)."""

    benchmark: Benchmark
    symbolic: SymbolicContext
    known_objects: dict[int, str]
    planner: PlannerAnswer | None = None
    tree: Node | None = None
    leaves: list[Scenario] = field(default_factory=list)  # what the Evaluator scores, in leaf order
    incoming: tuple[str, ...] = ()  # recent teammate messages, for the communication module

    @property
    def available(self) -> list[HighLevelAction]:
        return [o.action for o in self.symbolic.options]

    def option(self, action: HighLevelAction) -> ActionOption:
        for o in self.symbolic.options:
            if o.action == action or (action.is_message and o.action.is_message):
                return o
        raise KeyError(f"{action} is not an available action")


def _check_action(text: str, q: PceQuestion) -> HighLevelAction:
    try:
        action = parse_action(text, q.benchmark)
        validate_action(action, q.known_objects, q.available)
    except ActionError as exc:
        raise ValueError(f"{text[:80]!r} is not one of the available actions: {exc}") from None
    if action.is_message and not q.symbolic.allow_messages:
        raise ValueError("messages are not allowed in this configuration")
    return action


# --- Planner ---------------------------------------------------------------------------------------------
def plan_symbolically(ctx: RoleContext[PceQuestion]) -> PlannerAnswer:
    q = ctx.data
    s = q.symbolic
    ranked = s.ranked()
    best = ranked[0]
    reasons = [f"{o.text}: gain {s.gain(o):.2f}, cost {s.cost_penalty(o):.1f}/5" for o in ranked[:3]]
    related = [v.text for v in s.variables() if _concerns(v, best)][:3]
    text = best.text if not best.action.is_message else f"[send_message] <{s.message_text(q.incoming)}>"
    if q.benchmark == Benchmark.TDWMAT and best.action.is_message:
        text = f"send a message: {s.message_text(q.incoming)}"
    return PlannerAnswer(
        reasoning="Best options by gain and cost: " + "; ".join(reasons), candidate=text, assumptions=related
    )


def _concerns(variable: Any, option: ActionOption) -> bool:
    target = option.action.target
    return target is not None and variable.object_id == target.id


def check_plan(answer: PlannerAnswer, ctx: RoleContext[PceQuestion]) -> None:
    _check_action(answer.candidate, ctx.data)


def _action_schema(q: PceQuestion) -> dict[str, Any]:
    physical = [o.text for o in q.symbolic.options if not o.action.is_message]
    return action_text_schema(physical, q.benchmark, messages=q.symbolic.allow_messages)


def planner_schema(ctx: RoleContext[PceQuestion]) -> dict[str, Any]:
    """The candidate is one of the available actions (or a message of the model's own)."""
    return narrow(model_schema(PlannerAnswer), replace={"candidate": _action_schema(ctx.data)})


PLANNER: Role[PceQuestion, PlannerAnswer] = Role(
    "pce.planner", "pce_planner", PlannerAnswer, plan_symbolically, check_plan, planner_schema
)


# --- Composer --------------------------------------------------------------------------------------------
def compose_symbolically(ctx: RoleContext[PceQuestion]) -> ComposerAnswer:
    """Branch on the uncertain variables that change the best action, up to depth D: the assumptions the Planner's
    candidate rests on first (the paper's Composer expands the Planner's proposal), then the most uncertain
    others; without a Planner (``no_planner``), the most uncertain first."""
    q = ctx.data
    behind = set(q.planner.assumptions) if q.planner is not None else set()
    variables = sorted(q.symbolic.variables(), key=lambda v: v.text not in behind)[:BRANCH_CANDIDATES]  # by entropy
    return ComposerAnswer(tree=tree_to_json(_branch(q, variables, {}, q.symbolic.max_depth)))


def _symbolic_leaf(q: PceQuestion, assumptions: dict[str, bool]) -> Leaf:
    """The best action under ``assumptions``, as a leaf (a message's text written out)."""
    best = q.symbolic.best(assumptions)
    if best.action.is_message:
        text = q.symbolic.message_text(q.incoming)
        action = HighLevelAction(Verb.SEND_MESSAGE, text=text)
        return Leaf(
            action, "[send_message] <" + text + ">" if q.benchmark == Benchmark.CWAH else "send a message: " + text
        )
    return Leaf(best.action, best.text)


def _branch(q: PceQuestion, variables: list[UncertainVariable], assumptions: dict[str, bool], depth_left: int) -> Node:
    """The symbolic Composer's subtree under ``assumptions``: a split on the first variable whose truth value changes
    the best action, else a leaf. (Module functions, not nested ones that call themselves: those would make a
    reference cycle that keeps the decision's value model alive until a full garbage collection.)"""
    here = _symbolic_leaf(q, assumptions)
    if depth_left == 0:
        return here
    for v in variables:
        if v.text in assumptions:
            continue
        yes, no = _symbolic_leaf(q, {**assumptions, v.text: True}), _symbolic_leaf(q, {**assumptions, v.text: False})
        if yes.action != no.action:
            return Hypothesis(
                v.text,
                f"p={v.probability:.2f}, {v.entropy:.2f} bits",
                _branch(q, variables, {**assumptions, v.text: True}, depth_left - 1),
                _branch(q, variables, {**assumptions, v.text: False}, depth_left - 1),
            )
    return here


def check_tree(answer: ComposerAnswer, ctx: RoleContext[PceQuestion]) -> None:
    q = ctx.data
    try:
        q.tree = parse_tree(
            answer.tree,
            benchmark=q.benchmark,
            known_objects=q.known_objects,
            available=q.available,
            max_depth=q.symbolic.max_depth,
            allow_messages=q.symbolic.allow_messages,
        )
    except TreeError as exc:
        raise ValueError(str(exc)) from None


def composer_schema(ctx: RoleContext[PceQuestion]) -> dict[str, Any]:
    """A tree at most D levels deep (written out level by level, so the depth limit is part of the grammar) whose
    leaves are available actions."""
    q = ctx.data
    leaf = {
        "type": "object",
        "properties": {"type": {"type": "string", "enum": ["action"]}, "action": _action_schema(q)},
        "required": ["type", "action"],
        "additionalProperties": False,
    }

    def node(levels: int) -> dict[str, Any]:
        if levels == 0:
            return leaf
        below = node(levels - 1)
        hypothesis = {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["hypothesis"]},
                "text": {"type": "string"},
                "reason": {"type": "string"},
                "True": below,
                "False": below,
            },
            "required": ["type", "text", "reason", "True", "False"],
            "additionalProperties": False,
        }
        return {"anyOf": [leaf, hypothesis]}

    return narrow(model_schema(ComposerAnswer), replace={"tree": node(q.symbolic.max_depth)})


COMPOSER: Role[PceQuestion, ComposerAnswer] = Role(
    "pce.composer", "pce_composer", ComposerAnswer, compose_symbolically, check_tree, composer_schema
)


# --- Evaluator -------------------------------------------------------------------------------------------
def evaluate_symbolically(ctx: RoleContext[PceQuestion]) -> EvaluatorAnswer:
    """L from the belief along the path, G from the goal progress bought in that scenario, C from distance."""
    q = ctx.data
    s = q.symbolic
    out = []
    for sc in q.leaves:
        assumptions = dict(sc.path)
        likelihood = s.path_likelihood(sc.path)
        option = q.option(sc.leaf.action)
        cost = s.cost_penalty(option)
        out.append(
            ScenarioScore(
                leaf=sc.index,
                likelihood=1 + 4 * likelihood,
                gain=1 + 4 * s.gain(option, assumptions),
                cost_penalty=cost,
                action=sc.leaf.text,
            )
        )
    return EvaluatorAnswer(scenarios=out)


def check_scores(answer: EvaluatorAnswer, ctx: RoleContext[PceQuestion]) -> None:
    q = ctx.data
    n = len(q.leaves)
    got = sorted(s.leaf for s in answer.scenarios)
    if got != list(range(n)):
        raise ValueError(f"score every leaf exactly once: expected leaves 0..{n - 1}, got {got}")


def evaluator_schema(ctx: RoleContext[PceQuestion]) -> dict[str, Any]:
    """One score per leaf, the leaves numbered as listed, each score a whole number from 1 to 5 (grammar
    converters do not enforce a number's bounds; an enum they do)."""
    n = len(ctx.data.leaves)
    scale = [1, 2, 3, 4, 5]
    enums = {"scenarios.leaf": list(range(n)), **{f"scenarios.{k}": scale for k in SCORE_FIELDS}}
    return narrow(model_schema(EvaluatorAnswer), enums=enums, lengths={"scenarios": n})


def scored_leaves(q: PceQuestion, answer: EvaluatorAnswer) -> list[ScoredLeaf]:
    """The Evaluator's scores of every leaf, normalised and weighted into utilities (in leaf order)."""
    by_leaf = {s.leaf: s for s in answer.scenarios}
    return [
        score_leaf(
            LeafScore(sc.index, *(getattr(by_leaf[sc.index], k) for k in SCORE_FIELDS)),
            is_message=sc.leaf.action.is_message,
            weights=q.symbolic.weights,
        )
        for sc in q.leaves
    ]


def evaluator_doubt(ctx: RoleContext[PceQuestion], answer: EvaluatorAnswer) -> Doubt | None:
    """How close the symbolic scores leave the best two actions (their utilities, as the decision sums them)."""
    q = ctx.data
    return Doubt.between(action_utilities(scored_leaves(q, answer), [sc.leaf.text for sc in q.leaves]))


def evaluator_choice(ctx: RoleContext[PceQuestion], answer: EvaluatorAnswer) -> str:
    """The action the scores make the decision take."""
    q = ctx.data
    return q.leaves[best_leaf(scored_leaves(q, answer), [sc.leaf.text for sc in q.leaves]).leaf].leaf.text


EVALUATOR: Role[PceQuestion, EvaluatorAnswer] = Role(
    "pce.evaluator",
    "pce_evaluator",
    EvaluatorAnswer,
    evaluate_symbolically,
    check_scores,
    evaluator_schema,
    evaluator_doubt,
    evaluator_choice,
)


# --- Communication ---------------------------------------------------------------------------------------
def write_message_symbolically(ctx: RoleContext[PceQuestion]) -> str:
    q = ctx.data
    return q.symbolic.message_text(q.incoming)


COMMUNICATOR = message_role("pce.message", "pce_message", write_message_symbolically)
