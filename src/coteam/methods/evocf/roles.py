"""EvoCF's four roles, each answered by a model (``backend=llm``) or by its symbolic solver, which is also the
fallback for an unusable answer:

* ``evocf.plan`` -- the base planner (the paper's Actor): one action per waiting robot, by letter. Symbolic: the
  value model's greedy assignment.
* ``evocf.induce`` -- the constraint inductor: a failed action becomes a rule. The model names the rule's kind and
  which facts of the failed action are its conditions; the values come from the facts, so a rule never states
  what was not observed. Symbolic: learnt from the memory's actions and outcomes (:func:`.rules.induce`).
* ``evocf.generate`` -- the counterfactual generator: alternative joint plans by letter, each with the operators
  that made it. Symbolic: guided generation (:func:`.counterfactual.guided`).
* ``evocf.evaluate`` -- the evaluator: a ranking of the candidates by number, with reasons and no scores. Symbolic:
  broken rules, repeated failures, hand-overs, stopped robots that still fetch or deliver, the base plan, then value
  (:class:`.team.Assessment`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from coteam.agent.options import ActionOption
from coteam.kit import Lettered, Role, RoleContext, letter_schema, match_option
from coteam.methods.evocf.counterfactual import OPERATORS, Candidate
from coteam.methods.evocf.rules import CONDITIONS, ActionFacts, Outcome, RuleKind, induce


def _letters_of(lettered: Mapping[str, Lettered], plan: Mapping[str, ActionOption]) -> dict[str, str]:
    """Each robot's letter for its action in ``plan``."""
    return {r: next(k for k, text in lettered[r].items() if text == o.text) for r, o in plan.items()}


def _plan_schema(lettered: Mapping[str, Lettered]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {r: letter_schema(letters) for r, letters in lettered.items()},
        "required": list(lettered),
        "additionalProperties": False,
    }


def options_of(
    lettered: Mapping[str, Lettered], options: Mapping[str, Sequence[ActionOption]], plan: Mapping[str, str]
) -> dict[str, ActionOption]:
    """The options a plan of letters names (ValueError, in one line, for a robot or a letter that is not there)."""
    missing = set(lettered) - set(plan)
    if missing:
        raise ValueError(f"the plan has no action for {', '.join(sorted(missing))}: give every robot one letter")
    out = {}
    for robot, answer in plan.items():
        if robot not in lettered:
            raise ValueError(f"{robot!r} is not one of the robots to plan for ({', '.join(lettered)})")
        key, _ = match_option(answer, lettered[robot])
        out[robot] = next(o for o in options[robot] if o.text == lettered[robot][key])
    return out


# --- the base plan ---------------------------------------------------------------------------------------------
class PlanAnswer(BaseModel):
    plan: dict[str, str] = Field(description="each waiting robot's action: the letter of one of its options")


@dataclass(frozen=True)
class PlanQuestion:
    lettered: Mapping[str, Lettered]
    options: Mapping[str, Sequence[ActionOption]]
    greedy: Callable[[], dict[str, ActionOption]]  # the symbolic base plan (computed when asked)


def check_plan(answer: PlanAnswer, ctx: RoleContext[PlanQuestion]) -> None:
    options_of(ctx.data.lettered, ctx.data.options, answer.plan)


PLAN: Role[PlanQuestion, PlanAnswer] = Role(
    "evocf.plan",
    "evocf_plan",
    PlanAnswer,
    lambda ctx: PlanAnswer(plan=_letters_of(ctx.data.lettered, ctx.data.greedy())),
    check_plan,
    lambda ctx: {
        "type": "object",
        "properties": {"plan": _plan_schema(ctx.data.lettered)},
        "required": ["plan"],
        "additionalProperties": False,
    },
)


# --- rule induction ----------------------------------------------------------------------------------------------
class InduceAnswer(BaseModel):
    kind: RuleKind = Field(description="the constraint's kind")
    conditions: list[str] = Field(description="the facts of the failed action that the constraint requires")
    description: str = Field("", description="the constraint in a sentence")


@dataclass(frozen=True)
class InduceQuestion:
    facts: ActionFacts
    reason: str
    history: tuple[Outcome, ...] = ()  # the memory's actions and outcomes the symbolic inductor learns from

    def conditions(self) -> list[str]:
        """The conditions the facts give a value to (a teammate acting on another object is no condition)."""
        return [c for c in CONDITIONS if self.facts.value(c) and (c, self.facts.value(c)) != ("shared", "no")]


def induce_symbolically(ctx: RoleContext[InduceQuestion]) -> InduceAnswer:
    q = ctx.data
    rule = induce(q.facts, q.reason, q.history)
    return InduceAnswer(kind=rule.kind, conditions=list(rule.conditions), description=rule.text())


def check_induction(answer: InduceAnswer, ctx: RoleContext[InduceQuestion]) -> None:
    known = ctx.data.conditions()
    unknown = [c for c in answer.conditions if c not in known]
    if unknown or not answer.conditions:
        raise ValueError(f"conditions must be one or more of {', '.join(known)} (got {answer.conditions})")


INDUCE: Role[InduceQuestion, InduceAnswer] = Role(
    "evocf.induce",
    "evocf_induce",
    InduceAnswer,
    induce_symbolically,
    check_induction,
    lambda ctx: {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": [k.value for k in RuleKind]},
            "conditions": {
                "type": "array",
                "items": {"type": "string", "enum": ctx.data.conditions()},
                "minItems": 1,
                "maxItems": len(ctx.data.conditions()),
            },
            "description": {"type": "string", "maxLength": 300},
        },
        "required": ["kind", "conditions", "description"],
        "additionalProperties": False,
    },
)


# --- counterfactual generation -----------------------------------------------------------------------------------
class GeneratedPlan(BaseModel):
    operators: list[str] = Field(description="the operators that made it from the base plan")
    plan: dict[str, str] = Field(description="each waiting robot's action: a letter")


class GenerateAnswer(BaseModel):
    plans: list[GeneratedPlan] = Field(description="alternative joint plans")


@dataclass(frozen=True)
class GenerateQuestion:
    lettered: Mapping[str, Lettered]
    options: Mapping[str, Sequence[ActionOption]]
    base: Mapping[str, ActionOption]
    count: int
    symbolic: Callable[[], list[Candidate]]


def candidates_of(answer: GenerateAnswer, q: GenerateQuestion) -> list[Candidate]:
    """The model's plans as candidates: each plan once, the base plan left out (it is a candidate anyway)."""
    out: dict[tuple[str, ...], Candidate] = {Candidate(q.base).signature(): Candidate(q.base)}
    for p in answer.plans[: q.count]:
        operators = tuple(op for op in p.operators if op in OPERATORS)
        c = Candidate(options_of(q.lettered, q.options, p.plan), operators)
        out.setdefault(c.signature(), c)
    return list(out.values())[1:]


def check_generation(answer: GenerateAnswer, ctx: RoleContext[GenerateQuestion]) -> None:
    if not answer.plans:
        raise ValueError("no plan: give at least one alternative joint plan")
    candidates_of(answer, ctx.data)


GENERATE: Role[GenerateQuestion, GenerateAnswer] = Role(
    "evocf.generate",
    "evocf_generate",
    GenerateAnswer,
    lambda ctx: GenerateAnswer(
        plans=[
            GeneratedPlan(operators=list(c.operators), plan=_letters_of(ctx.data.lettered, c.plan))
            for c in ctx.data.symbolic()
        ]
    ),
    check_generation,
    lambda ctx: {
        "type": "object",
        "properties": {
            "plans": {
                "type": "array",
                "minItems": 1,
                "maxItems": max(1, ctx.data.count),
                "items": {
                    "type": "object",
                    "properties": {
                        "operators": {"type": "array", "items": {"type": "string", "enum": list(OPERATORS)}},
                        "plan": _plan_schema(ctx.data.lettered),
                    },
                    "required": ["operators", "plan"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["plans"],
        "additionalProperties": False,
    },
)


# --- evaluation ----------------------------------------------------------------------------------------------------
class RankedPlan(BaseModel):
    candidate: int = Field(description="the candidate's number")
    reasoning: str = Field("", description="why it stands here")


class EvaluateAnswer(BaseModel):
    ranking: list[RankedPlan] = Field(description="the candidates, most promising first")


@dataclass(frozen=True)
class EvaluateQuestion:
    count: int  # candidates, numbered from 1
    order: Sequence[int]  # the symbolic ranking (candidate numbers)
    reasons: Mapping[int, str]  # what the symbolic evaluator found on each


def check_ranking(answer: EvaluateAnswer, ctx: RoleContext[EvaluateQuestion]) -> None:
    count = ctx.data.count
    if not answer.ranking:
        raise ValueError("an empty ranking: list the candidates, most promising first")
    bad = [r.candidate for r in answer.ranking if not 1 <= r.candidate <= count]
    if bad:
        raise ValueError(f"candidate number(s) {bad} do not exist: number from 1 to {count}")


EVALUATE: Role[EvaluateQuestion, EvaluateAnswer] = Role(
    "evocf.evaluate",
    "evocf_evaluate",
    EvaluateAnswer,
    lambda ctx: EvaluateAnswer(
        ranking=[RankedPlan(candidate=i, reasoning=ctx.data.reasons[i]) for i in ctx.data.order]
    ),
    check_ranking,
    lambda ctx: {
        "type": "object",
        "properties": {
            "ranking": {
                "type": "array",
                "minItems": 1,
                "maxItems": ctx.data.count,
                "items": {
                    "type": "object",
                    "properties": {
                        "candidate": {"type": "integer", "enum": list(range(1, ctx.data.count + 1))},
                        "reasoning": {"type": "string", "maxLength": 400},
                    },
                    "required": ["candidate", "reasoning"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["ranking"],
        "additionalProperties": False,
    },
)
