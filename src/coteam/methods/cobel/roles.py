"""CoBel-World's modules as roles: one prompt each (``prompts/``), a typed answer, a check that reads the answer with
the belief-language parser or the action grammar, and the symbolic answer (:mod:`.symbolic`) the symbolic backend
gives and an unusable model answer falls back to.

Answers naming belief statements are read line by line: statements that do not parse or that the rules do not
allow are rejected and counted (:attr:`CobelQuestion.rejected`); an answer with no usable statement at all is
repaired or falls back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import Field

from coteam.agent.messages import TeamStatus
from coteam.agent.options import ActionOption
from coteam.domain.actions import HighLevelAction, format_action, parse_action
from coteam.kit import (
    Doubt,
    Lettered,
    Role,
    RoleContext,
    StrictAnswer,
    letter_schema,
    match_option,
    message_role,
    model_schema,
    narrow,
)
from coteam.methods.cobel.belief_language import (
    Belief,
    BeliefError,
    Entity,
    EntityKind,
    RuleSet,
    parse_beliefs,
    parse_rules,
)
from coteam.methods.cobel.belief_world import statement_pattern
from coteam.methods.cobel.symbolic import CobelSymbolic, Plan, Prediction, Verdict

SUBPLAN_DONE = "SUBPLAN DONE"
MAX_REASONS = 3
MAX_STATEMENTS = 200  # of one belief update
ASKED_STATEMENTS = 12  # a model is asked for at most this many, the ones that matter most (its answer stays short)


class RuleDraft(StrictAnswer):
    reasoning: str = ""
    zero_order: list[str] = Field(min_length=1, max_length=40)
    first_order: list[str] = Field(min_length=1, max_length=40)


class RuleCritique(StrictAnswer):
    reasoning: str = ""
    suggestions: list[str] = Field(default_factory=list, max_length=20)
    satisfied: bool


class BeliefUpdate(StrictAnswer):
    beliefs: list[str] = Field(default_factory=list, max_length=MAX_STATEMENTS)
    plan: list[str] = Field(default_factory=list, max_length=3)  # first-order update: the teammate's stated plan


class PlanAnswer(StrictAnswer):
    reasoning: list[str] = Field(default_factory=list, max_length=MAX_REASONS)
    plan: list[str] = Field(min_length=1, max_length=3)


class PlansAnswer(StrictAnswer):
    reasoning: list[str] = Field(default_factory=list, max_length=MAX_REASONS)
    plans: list[list[str]] = Field(min_length=1, max_length=3)


class GateAnswer(StrictAnswer):
    reasons: list[str] = Field(default_factory=list, max_length=MAX_REASONS)
    heavy: bool
    misaligned: list[str] = Field(default_factory=list, max_length=40)


class ActAnswer(StrictAnswer):
    reasons: list[str] = Field(default_factory=list, max_length=MAX_REASONS)
    answer: str


@dataclass
class CobelQuestion:
    """What the roles of one decision share (``RoleContext.data``)."""

    sym: CobelSymbolic
    rules: RuleSet
    kind_of: Callable[[Entity], EntityKind | None] | None  # what an entity is (None: rule negotiation)
    options: Sequence[ActionOption]
    free_text_beliefs: bool = False  # no_sbr in LLM mode: beliefs are read as plain text
    teammate: str = ""  # the teammate a per-teammate role is about
    plan: Plan | None = None  # my sub-plan (symbolic)
    next_step: str | None = None  # the symbolic next step of my sub-plan (None: the sub-plan is done)
    zero_text: str = ""  # my zero-order beliefs as the roles read them
    first_text: dict[str, str] = field(default_factory=dict)  # per teammate, my first-order beliefs
    stated_text: dict[str, list[str]] = field(default_factory=dict)  # per teammate, its stated sub-plan
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # the symbolic gate's, per teammate asked
    rejected: list[str] = field(default_factory=list)  # belief statements rejected this decision

    @classmethod
    def for_rules(cls, rules: RuleSet) -> CobelQuestion:
        """The question of the rule negotiation (before any decision: no beliefs, no options)."""
        return cls(None, rules, None, ())  # type: ignore[arg-type]

    def note(self) -> TeamStatus:
        """The message the heavy verdicts call for: what the teammates lack, and my sub-plan."""
        assert self.plan is not None
        facts = dict.fromkeys(f for v in self.verdicts.values() if v.heavy for f in v.misaligned)
        return self.sym.note(list(facts), self.plan)

    @property
    def lettered(self) -> Lettered:
        return Lettered.physical(self.options, benchmark=self.sym.memory.benchmark)

    def beliefs(self, lines: Sequence[str], order: int) -> list[Belief]:
        """``lines`` as beliefs of the given order; the lines that are not are recorded in :attr:`rejected`."""
        parsed = parse_beliefs("\n".join(lines), self.rules, self.kind_of)
        wrong_order = [b for b in parsed.beliefs if b.order != order]
        self.rejected += parsed.rejected + [f"{b}: expected a belief of order {order}" for b in wrong_order]
        return [b for b in parsed.beliefs if b.order == order]


def _action_text(text: str, ctx: RoleContext[CobelQuestion]) -> str:
    """An action in the benchmark's grammar, normalised; ``ValueError`` saying what is wrong."""
    q = ctx.data
    benchmark = q.sym.memory.benchmark
    action = parse_action(text, benchmark)
    known = q.sym.memory.known_names()
    rooms = {r.id for r in q.sym.memory.floorplan.rooms}
    for ref in (action.target, action.container):
        if ref is not None and ref.id not in known and ref.id not in rooms:
            raise ValueError(f"{text[:80]!r} names id {ref.id}, which nobody has seen")
    return format_action(action, benchmark)


def normalised(step: str, q: CobelQuestion) -> str:
    """A plan step as the option list words it (as the grammar prints it when no option does it now; a step that
    does not parse is kept as written: the action role reads it)."""
    benchmark = q.sym.memory.benchmark
    try:
        action = parse_action(step, benchmark)
    except ValueError:
        return step
    return next((o.text for o in q.options if o.action == action), format_action(action, benchmark))


def draft_text(draft: RuleDraft) -> str:
    return "\n".join(["Zero-order belief rules:", *draft.zero_order, "First-order belief rules:", *draft.first_order])


# --- rules (once per task, LLM mode) ---------------------------------------------------------------------------
def _fixed_rules(ctx: RoleContext[CobelQuestion]) -> RuleDraft:
    rules = ctx.data.rules
    return RuleDraft(
        reasoning="the suite's fixed rule set",
        zero_order=[str(r) for r in rules.zero_order],
        first_order=[str(r) for r in rules.first_order],
    )


def check_rules(draft: RuleDraft, ctx: RoleContext[CobelQuestion]) -> None:
    try:
        parse_rules("\n".join(draft.zero_order), "\n".join(draft.first_order))
    except BeliefError as exc:
        raise ValueError(str(exc)) from None


RULES_PROPOSE: Role[CobelQuestion, RuleDraft] = Role(
    "cobel.rules_propose", "cobel_rules_propose", RuleDraft, _fixed_rules, check_rules
)
RULES_CRITIQUE: Role[CobelQuestion, RuleCritique] = Role(
    "cobel.rules_critique",
    "cobel_rules_critique",
    RuleCritique,
    lambda ctx: RuleCritique(reasoning="the rules cover the task", satisfied=True),
)
RULES_REFINE: Role[CobelQuestion, RuleDraft] = Role(
    "cobel.rules_refine", "cobel_rules_refine", RuleDraft, _fixed_rules, check_rules
)


# --- belief update ---------------------------------------------------------------------------------------------
def _zero(ctx: RoleContext[CobelQuestion]) -> BeliefUpdate:
    q = ctx.data
    return BeliefUpdate(beliefs=[f"{q.sym.world.agent} BELIEVE {f}" for f in q.sym.relevant_zero()])


def _first(ctx: RoleContext[CobelQuestion]) -> BeliefUpdate:
    q = ctx.data
    w = q.sym.world
    stated = q.sym.stated(q.teammate)
    return BeliefUpdate(
        beliefs=[f"{w.agent} BELIEVE {q.teammate} BELIEVE {f}" for f in q.sym.relevant_first(q.teammate)],
        plan=list(stated.texts) if stated is not None else [],
    )


def _check_update(order: int):
    def check(answer: BeliefUpdate, ctx: RoleContext[CobelQuestion]) -> None:
        q = ctx.data
        if q.free_text_beliefs or not answer.beliefs:
            return
        parsed = parse_beliefs("\n".join(answer.beliefs), q.rules, q.kind_of)
        if not parsed.beliefs:
            raise ValueError(
                f"none of the {len(answer.beliefs)} statements is a belief the rules allow: {parsed.rejected[0]}"
            )
        for step in answer.plan:
            _action_text(step, ctx)

    return check


def _statements(q: CobelQuestion, *believers: str) -> dict[str, Any]:
    """A belief statement of the given believers (one per order) about entities I know of; free text in no_sbr."""
    if q.free_text_beliefs:
        return {"type": "string"}
    w = q.sym.world
    return {
        "type": "string",
        "pattern": statement_pattern(
            q.sym.memory, (w.agent, *w.teammates), [[b] for b in believers], q.rules, q.kind_of or w.kind_of
        ),
    }


def _update_schema(order: int) -> Callable[[RoleContext], dict[str, Any]]:
    """Belief statements of the order asked that the rules allow about known entities; for a teammate, its stated
    plan as nameable steps (no plan in a zero-order update)."""

    def schema(ctx: RoleContext[CobelQuestion]) -> dict[str, Any]:
        q = ctx.data
        believers = (q.sym.world.agent, q.teammate)[: order + 1]
        fields = {"beliefs": {"type": "array", "items": _statements(q, *believers), "maxItems": ASKED_STATEMENTS}}
        stated = q.sym.stated(q.teammate) if order else None
        steps = _steps(q, stated.texts if stated is not None else ())
        fields["plan"] = {"type": "array", "items": steps, "maxItems": 3 if order else 0}
        return narrow(model_schema(BeliefUpdate), replace=fields)

    return schema


UPDATE_ZERO: Role[CobelQuestion, BeliefUpdate] = Role(
    "cobel.update_zero", "cobel_update_zero", BeliefUpdate, _zero, _check_update(0), _update_schema(0)
)
UPDATE_FIRST: Role[CobelQuestion, BeliefUpdate] = Role(
    "cobel.update_first", "cobel_update_first", BeliefUpdate, _first, _check_update(1), _update_schema(1)
)
# no_sbr on a model: the same questions without the belief language (no rules, no statement form, plain sentences)
UPDATE_ZERO_PLAIN = replace(UPDATE_ZERO, template="cobel_update_zero_plain")
UPDATE_FIRST_PLAIN = replace(UPDATE_FIRST, template="cobel_update_first_plain")


# --- prediction ------------------------------------------------------------------------------------------------
def _predict_first(ctx: RoleContext[CobelQuestion]) -> PlansAnswer:
    q = ctx.data
    prediction: Prediction | None = q.sym.predict(q.teammate)
    plans = [list(p.texts) for p in prediction.plans if p.texts] if prediction else []
    reason = "its stated plan" if prediction and prediction.stated else "best by team value over what it believes"
    return PlansAnswer(reasoning=[reason], plans=plans or [["(unknown)"]])


def check_plans(answer: PlansAnswer, ctx: RoleContext[CobelQuestion]) -> None:
    for plan in answer.plans:
        if not plan or len(plan) > 3:
            raise ValueError("every plan has 1 to 3 actions")
        for step in plan:
            _action_text(step, ctx)


def _my_plan(ctx: RoleContext[CobelQuestion]) -> PlanAnswer:
    q = ctx.data
    assert q.plan is not None
    return PlanAnswer(reasoning=["best by expected team value"], plan=list(q.plan.texts))


def check_plan(answer: PlanAnswer, ctx: RoleContext[CobelQuestion]) -> None:
    q = ctx.data
    steps = [_action_text(s, ctx) for s in answer.plan]
    available = {o.text for o in q.options}
    if steps[0] not in available:
        raise ValueError(f"the plan's first action {steps[0]!r} is not one of the available actions")


def _steps(q: CobelQuestion, *plans: Sequence[str]) -> dict[str, Any]:
    """A plan step: one of the steps that can be named now (and of the symbolic plans', so those stay sayable)."""
    texts = [*q.sym.step_texts(q.options), *(t for p in plans for t in p)]
    return {"type": "string", "enum": list(dict.fromkeys(texts))}


def _plans_schema(ctx: RoleContext[CobelQuestion]) -> dict[str, Any]:
    """A teammate's plans: 1-3 plans of 1-3 nameable steps."""
    q = ctx.data
    prediction = q.sym.predict(q.teammate)
    predicted = [p.texts for p in prediction.plans] if prediction is not None else []
    plan = {"type": "array", "items": _steps(q, *predicted), "minItems": 1, "maxItems": 3}
    plans = {"type": "array", "items": plan, "minItems": 1, "maxItems": 3}
    return narrow(model_schema(PlansAnswer), replace={"plans": plans})


def _plan_schema(ctx: RoleContext[CobelQuestion]) -> dict[str, Any]:
    """My plan: an available action first, then up to two nameable steps."""
    q = ctx.data
    mine = q.plan.texts if q.plan is not None else ()
    first = {"type": "string", "enum": list(dict.fromkeys([*q.lettered.values(), *mine[:1]]))}
    plan = {"type": "array", "prefixItems": [first], "items": _steps(q, mine), "minItems": 1, "maxItems": 3}
    return narrow(model_schema(PlanAnswer), replace={"plan": plan})


PREDICT_FIRST: Role[CobelQuestion, PlansAnswer] = Role(
    "cobel.predict_first", "cobel_predict_first", PlansAnswer, _predict_first, check_plans, _plans_schema
)


def _plan_doubt(ctx: RoleContext[CobelQuestion], answer: PlanAnswer) -> Doubt | None:
    """How close the expected team values of my best two first steps are."""
    return Doubt.between(ctx.data.sym.plan_values)


def _plan_choice(ctx: RoleContext[CobelQuestion], answer: PlanAnswer) -> str:
    """The first step of my plan, as the option list words it."""
    return normalised(answer.plan[0], ctx.data)


PREDICT_ZERO: Role[CobelQuestion, PlanAnswer] = Role(
    "cobel.predict_zero",
    "cobel_predict_zero",
    PlanAnswer,
    _my_plan,
    check_plan,
    _plan_schema,
    _plan_doubt,
    _plan_choice,
)
REPLAN: Role[CobelQuestion, PlanAnswer] = Role(
    "cobel.replan", "cobel_replan", PlanAnswer, _my_plan, check_plan, _plan_schema, _plan_doubt, _plan_choice
)


# --- adaptive collaboration, communication, action ---------------------------------------------------------------
def gate_verdict(q: CobelQuestion) -> GateAnswer:
    """The symbolic verdict on my plan against ``q.teammate``'s (the adaptive gate; without it, ``no_bbc``, the
    rule that tells a teammate what it lacks)."""
    assert q.plan is not None
    v = q.verdicts[q.teammate] = q.sym.verdict(q.teammate, q.plan)
    return GateAnswer(reasons=list(v.reasons), heavy=v.heavy, misaligned=[str(f) for f in v.misaligned])


def _gate(ctx: RoleContext[CobelQuestion]) -> GateAnswer:
    return gate_verdict(ctx.data)


def check_gate(answer: GateAnswer, ctx: RoleContext[CobelQuestion]) -> None:
    q = ctx.data
    if answer.heavy and answer.misaligned and not q.free_text_beliefs:
        parsed = parse_beliefs("\n".join(answer.misaligned), q.rules, q.kind_of)
        if not parsed.beliefs:
            raise ValueError(f"no misaligned statement is a belief the rules allow: {parsed.rejected[0]}")


def _message(ctx: RoleContext[CobelQuestion]) -> str:
    return ctx.data.note().text()


def _act(ctx: RoleContext[CobelQuestion]) -> ActAnswer:
    q = ctx.data
    if q.next_step is None:
        return ActAnswer(reasons=["every step of my sub-plan is done or no longer possible"], answer=SUBPLAN_DONE)
    return ActAnswer(reasons=["the next step of my sub-plan"], answer=q.next_step)


def check_act(answer: ActAnswer, ctx: RoleContext[CobelQuestion]) -> None:
    if answer.answer.strip().upper().rstrip(".") == SUBPLAN_DONE:
        return
    match_option(answer.answer, ctx.data.lettered)


def act_choice(answer: str, q: CobelQuestion) -> HighLevelAction | None:
    """The action an ACT answer means (None: the sub-plan is done)."""
    if answer.strip().upper().rstrip(".") == SUBPLAN_DONE:
        return None
    lettered = q.lettered
    key, _ = match_option(answer, lettered)
    text = lettered[key]
    return next(o.action for o in q.options if o.text == text)


def _gate_schema(ctx: RoleContext[CobelQuestion]) -> dict[str, Any]:
    """The misaligned facts are my zero-order belief statements about known entities."""
    q = ctx.data
    misaligned = {"type": "array", "items": _statements(q, q.sym.world.agent), "maxItems": ASKED_STATEMENTS}
    return narrow(model_schema(GateAnswer), replace={"misaligned": misaligned})


COLLABORATE: Role[CobelQuestion, GateAnswer] = Role(
    "cobel.collaborate", "cobel_collaborate", GateAnswer, _gate, check_gate, _gate_schema
)
COLLABORATE_PLAIN = replace(COLLABORATE, template="cobel_collaborate_plain")
MESSAGE = message_role("cobel.message", "cobel_message", _message)


def _act_schema(ctx: RoleContext[CobelQuestion]) -> dict[str, Any]:
    """The answer is a letter of the list, or that the sub-plan is done."""
    return narrow(model_schema(ActAnswer), replace={"answer": letter_schema(ctx.data.lettered, SUBPLAN_DONE)})


ACT: Role[CobelQuestion, ActAnswer] = Role("cobel.act", "cobel_act", ActAnswer, _act, check_act, _act_schema)
