"""CoBel-World's symbolic backend: exact belief bookkeeping, plan prediction by expected team value over the
believed world, and the adaptive-collaboration gate -- no model, no network.

* **Belief update** is the agent's :class:`~coteam.methods.cobel.belief_world.BeliefWorld`, re-read from memory every
  decision.
* **First-order prediction** (a teammate's top-3 plans): the teammate's believed memory
  (:meth:`~coteam.methods.cobel.belief_world.BeliefWorld.believed_memory`: what I believe it believes, not what I know)
  is read by the shared belief state and team value model as if it were the teammate's own; its best first actions,
  planning around the agents it believes in (and around the sub-plan I told it), each continued by the model's default
  policy into a plan of at most ``plan_length`` actions. A sub-plan the teammate stated, still fresh, is its plan.
* **Zero-order prediction and re-planning** (my plan): my best first action by expected team value over my own
  belief, with every teammate that stated a plan held to it and every teammate ranked before me held to its
  predicted plan -- on TDW-MAT to the first action the value model predicts for it from my own beliefs, which names
  its actions more often there (among near-equal first actions, the one the rollouts' default policy takes itself);
  continued into a sub-plan the same way. Re-planning around stated plans leaves the rooms, items and containers
  they start on to their teammates (plans complement), unless nothing else is left.
* **Adaptive collaboration** (per teammate): *heavy* miscoordination is (1) a plan conflict -- my plan starts on
  the room, item or container its predicted plan starts on, and I have not told it my plan -- or (2) a belief
  misalignment that matters: it lacks facts I could tell it (where goal items are, which rooms are explored,
  which containers are searched) *and* telling them changes its predicted plan; in both cases only when the
  message pays for itself in expected team value (my plan one message later, the teammate on its second-best or
  its corrected plan, against my plan now and the teammate on its predicted one). Only heavy miscoordination
  sends a message, holding what it lacks and my sub-plan.

Ablations: ``no_sbr`` drops the first-order model: teammates are predicted from my own beliefs, as if they knew
what I know, so no misalignment can be found and only plan conflicts make a message; ``no_bbc`` drops prediction
and gating: a message whenever a teammate lacks something I could tell it, and my plan ignores teammates that
stated nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import SEEN_LIST_LIMIT, ItemRef, Sighting, TeamStatus
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import DecisionContext
from coteam.domain.actions import MAX_MESSAGE_CHARS, format_action, parse_action
from coteam.domain.world import Benchmark, ObjectKind
from coteam.kit import rule_based_choice
from coteam.methods.cobel.belief_language import Attribute, Fact, Predicate
from coteam.methods.cobel.belief_world import BeliefWorld
from coteam.value.abstract import Key
from coteam.value.team import Robot, ValueModel

TOP_PLANS = 3  # candidate plans predicted per teammate
# Expected team value, as a share of the value model's score scale, within which my sub-plan starts with the rollouts'
# own next action for me (ValueModel.rollout_choice) rather than with the best by a hair: every candidate's rollout
# assumes I follow the default policy after its first step, so among near-equals that choice keeps the plan they were
# valued by. C-WAH's team times are whole steps: exact ties only. Tuned on the generators' seeds (docs/benchmarks.md).
ROLLOUT_CHOICE_MARGIN = {Benchmark.CWAH: 0.0, Benchmark.TDWMAT: 0.02}
# Whether my plan holds a teammate ranked before me (that stated nothing) to the first action the value model predicts
# for it from my own beliefs (ValueModel.leaders) rather than to its plan predicted from what I believe it believes.
# On TDW-MAT the former names the action the teammate is on or takes next more often (36% against 30% of bob's
# predictions of alice); on C-WAH the two are about as often right and the former made episodes longer. The gate's
# conflict and misalignment checks always read the first-order prediction. Chosen on the generators' seeds
# (bench/cobel.py's reading text).
LEADERS_FROM_MY_BELIEFS = {Benchmark.CWAH: False, Benchmark.TDWMAT: True}


@dataclass(frozen=True)
class Plan:
    """A sub-plan: abstract actions and their texts in the action grammar (those that can be named yet)."""

    steps: tuple[Key, ...]
    texts: tuple[str, ...]

    @property
    def first(self) -> Key | None:
        return self.steps[0] if self.steps else None


@dataclass(frozen=True)
class Prediction:
    """A teammate's predicted plans, best first; ``stated`` when it is the plan the teammate told me."""

    teammate: str
    plans: tuple[Plan, ...]
    stated: bool = False


@dataclass(frozen=True)
class Verdict:
    """The adaptive-collaboration gate's judgement about one teammate."""

    teammate: str
    heavy: bool
    reasons: tuple[str, ...]
    misaligned: tuple[Fact, ...] = ()  # what it lacks and should be told


def target(key: Key | None) -> tuple | None:
    """What an abstract action claims (a room to search, an item, a container); None for delivering."""
    if key is None:
        return None
    verb, arg = key
    if verb in ("explore", "goto"):
        return ("room", arg)
    if verb in ("grab", "carrier"):
        return ("object", arg)
    if verb == "check":
        return ("container", arg)
    return None


def goal_relevant(memory: AgentMemory) -> Callable[[Fact], bool]:
    """Which facts a teammate's plan depends on: where goal items are, how much of each room is explored, which
    containers are open (searched) or closed."""
    wanted = memory.task.needed_names()

    def relevant(fact: Fact) -> bool:
        if fact.relation in (Attribute.EXPLORED, Attribute.STATE):
            return True
        about = fact.object if fact.relation in (Predicate.HOLD, Predicate.CONTAIN) else fact.subject
        return fact.relation != Predicate.AT and getattr(about, "name", None) in wanted

    return relevant


def sayable(memory: AgentMemory) -> Callable[[Fact], bool]:
    """The facts a message tells (:meth:`CobelSymbolic.note`): where goal items lie, rooms explored in full,
    containers searched."""
    wanted = memory.task.needed_names()

    def says(fact: Fact) -> bool:
        if fact.relation == Attribute.EXPLORED:
            return fact.object == "all"
        if fact.relation == Attribute.STATE:
            return fact.object == "open"
        return fact.relation in (Predicate.IN, Predicate.ON) and getattr(fact.subject, "name", None) in wanted

    return says


@dataclass
class CobelSymbolic:
    """One decision's symbolic reasoning for one agent (see the module docstring); everything is computed on
    demand and cached."""

    ctx: DecisionContext
    world: BeliefWorld
    agents: Sequence[str]
    value: ValueModel  # the team value model over my own belief
    model_of: Callable[[AgentMemory], ValueModel]  # the team value model over a believed memory (a teammate's)
    plan_length: int
    first_order: bool = True  # False: no_sbr
    gating: bool = True  # False: no_bbc
    _predictions: dict[str, Prediction | None] = field(default_factory=dict, init=False, repr=False)
    # my_plan's candidates: the first step's text -> its expected team value (empty when the rules chose)
    plan_values: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    # --- models ------------------------------------------------------------------------------------------
    @property
    def memory(self) -> AgentMemory:
        return self.ctx.memory

    @property
    def teammates(self) -> list[str]:
        return [a for a in self.agents if a != self.memory.agent]

    def _plan(self, model: ValueModel, key: Key, others: Sequence[tuple[Robot, Key | None]]) -> Plan:
        return self._named(model, model.plan(key, others, self.plan_length))

    def _named(self, model: ValueModel, steps: Sequence[Key]) -> Plan:
        """A plan of ``steps``, with the texts of the prefix that can be named yet."""
        texts: list[str] = []
        for k in steps:
            action = model.action_of(k)
            if action is None:
                break
            texts.append(format_action(action, self.memory.benchmark))
        return Plan(tuple(steps), tuple(texts))

    def step_texts(self, options: Sequence[ActionOption]) -> list[str]:
        """The plan steps a role may name now: my physical options, then every action the team value model sees
        open to any robot of the team, as the action grammar words them."""
        texts = [o.text for o in options if not o.action.is_message]
        for robot in (self.value.me, *self.value.teammates):
            for key in self.value.choices(robot):
                texts += self._named(self.value, (key,)).texts
        return list(dict.fromkeys(texts))

    # --- stated plans ------------------------------------------------------------------------------------
    def _fresh(self, at: int) -> bool:
        """Whether a sub-plan stated at ``at`` (a message's step or frame) still binds: for as long as an announced
        action binds in the value model (``intent_ttl_steps``)."""
        age = self.memory.step - at * self.value.belief.message_step_ratio
        return at >= 0 and age <= self.value.config.intent_ttl_steps

    def stated(self, teammate: str) -> Plan | None:
        """The open remainder of the sub-plan ``teammate`` stated, while it is fresh."""
        texts = self.world.stated_plan.get(teammate)
        if not texts or not self._fresh(self.world.stated_at.get(teammate, -1)):
            return None
        return self._open_plan(texts, self.value)

    def _open_plan(self, texts: Sequence[str], model: ValueModel) -> Plan | None:
        steps, kept = [], []
        for text in texts:
            try:
                action = parse_action(text, self.memory.benchmark)
            except ValueError:
                continue
            key = model.model.key_of(ActionOption(action, text, 0.0))
            if key is not None and model.key_open(key):
                steps.append(key)
                kept.append(text)
        return Plan(tuple(steps), tuple(kept)) if steps else None

    def told(self) -> Plan | None:
        """The open remainder of the sub-plan I told the team, while it is fresh."""
        if not self.world.told_plan or not self._fresh(self.world.told_at):
            return None
        return self._open_plan(self.world.told_plan, self.value)

    # --- first-order prediction ----------------------------------------------------------------------------
    def predict(self, teammate: str) -> Prediction | None:
        """``teammate``'s top plans (None when I do not know where it is)."""
        if teammate not in self._predictions:
            stated = self.stated(teammate)
            if stated is not None:
                self._predictions[teammate] = Prediction(teammate, (stated,), stated=True)
            else:
                plans = self._predicted_plans(teammate, ())
                self._predictions[teammate] = Prediction(teammate, tuple(plans)) if plans else None
        return self._predictions[teammate]

    def _predicted_plans(self, teammate: str, told: Sequence[Fact]) -> list[Plan]:
        """Its best plans from what I believe it believes (plus ``told``); from my own beliefs without a first-order
        model."""
        if not self.first_order:
            robot = next((r for r in self.value.teammates if r.name == teammate), None)
            if robot is None:
                return []
            before = [(r, k) for r, k in self.value.leaders() if r.name < teammate]
            mine = self.told()
            if mine is not None:
                before.append((self.value.me, mine.first))
            keys = self.value.choices(robot, before)[:TOP_PLANS]
            return [self._named(self.value, (k,)) for k in keys]
        world = self.world
        if told:
            world = replace(world, first={**world.first, teammate: dict(world.first[teammate])})
            world.tell(teammate, told)
        memory = world.believed_memory(self.memory, teammate)
        if memory is None:
            return []
        model = self.model_of(memory)
        me = self.memory.agent
        mine = self.told()
        robot = next((r for r in model.teammates if r.name == me), None)
        told_me = mine is not None and robot is not None  # it knows my sub-plan: it plans around it
        before = [(r, k) for r, k in model.leaders() if r.name != me or not told_me]
        if told_me:
            before.append((robot, mine.first))  # type: ignore[arg-type, union-attr]
        keys = model.choices(model.me, before)[:TOP_PLANS]
        return [self._plan(model, k, before) for k in keys]

    # --- zero-order prediction and re-planning ---------------------------------------------------------------
    def others(self) -> list[tuple[Robot, Key | None]]:
        """The teammates my plan is made around: those that stated a plan (held to it) and, with prediction on,
        those ranked before me (held to their predicted plan; on TDW-MAT to the first action the value model predicts
        for them from my own beliefs, :data:`LEADERS_FROM_MY_BELIEFS`)."""
        me = self.memory.agent
        out: list[tuple[Robot, Key | None]] = []
        for robot in self.value.teammates:
            stated = self.stated(robot.name)
            if stated is not None:
                out.append((robot, stated.first))
            elif self.gating and robot.name < me and LEADERS_FROM_MY_BELIEFS[self.memory.benchmark]:
                led = next((k for r, k in self.value.leaders() if r.name == robot.name), None)
                if led is not None:
                    out.append((robot, led))
            elif self.gating and robot.name < me:
                prediction = self.predict(robot.name)
                if prediction is not None:
                    out.append((robot, prediction.plans[0].first))
        return out

    def my_plan(self, options: Sequence[ActionOption]) -> Plan:
        """My best sub-plan among ``options`` (the rollouts' own next action for me when it is within
        :data:`ROLLOUT_CHOICE_MARGIN` of the best); when the value model finds none worth anything (nothing I know
        of is left to do or search), the rule-based helper's choice."""
        value = self.value
        others = self.others()
        keys = {k for k in (value.key(o) for o in options) if k is not None}
        claimed = {target(p.first) for p in map(self.stated, self.teammates) if p is not None} - {None}
        keys = {k for k in keys if target(k) not in claimed} or keys  # complement stated plans: other targets
        if not keys:
            choice, _ = rule_based_choice(replace(self.ctx, options=list(options)))
            return Plan((), (choice.text,))
        scored = {k: value.value(value.outcome_of(k, 0.0, others)) for k in keys}
        self.plan_values = {o.text: scored[k] for o in options if (k := value.key(o)) in scored}
        best = max(sorted(scored, key=str), key=lambda k: scored[k])
        kept = value.rollout_choice
        if kept in scored and scored[kept] >= scored[best] - ROLLOUT_CHOICE_MARGIN[self.memory.benchmark] * value.scale:
            best = kept
        plan = self._plan(value, best, others)
        option = next(o for o in options if value.key(o) == best)
        return Plan(plan.steps, (option.text, *plan.texts[1:]))  # the first step as the option list words it

    # --- beliefs as the roles show them ---------------------------------------------------------------------
    def relevant_zero(self) -> list[Fact]:
        """My zero-order facts a plan depends on (module docstring), and where every agent is."""
        relevant = goal_relevant(self.memory)
        return sorted((f for f in self.world.zero.values() if relevant(f) or f.relation == Predicate.AT), key=str)

    def relevant_first(self, teammate: str) -> list[Fact]:
        """What I believe ``teammate`` believes of the same."""
        relevant = goal_relevant(self.memory)
        facts = self.world.first.get(teammate, {}).values()
        return sorted((f for f in facts if relevant(f) or f.relation == Predicate.AT), key=str)

    # --- adaptive collaboration --------------------------------------------------------------------------------
    def lacking(self, teammate: str) -> list[Fact]:
        """The facts I could tell ``teammate`` that it does not believe."""
        return self.world.lacks(teammate, sayable(self.memory))

    def verdict(self, teammate: str, plan: Plan) -> Verdict:
        """Whether miscoordination with ``teammate`` is heavy enough for a message (module docstring)."""
        lacking = self.lacking(teammate)
        if not self.gating:
            reasons = (f"it lacks {len(lacking)} fact(s) I hold",) if lacking else ("it lacks nothing I hold",)
            return Verdict(teammate, bool(lacking), reasons, tuple(lacking))
        prediction = self.predict(teammate)
        if prediction is None:
            return Verdict(teammate, False, ("I do not know where it is: no plan to predict",))
        theirs = prediction.plans[0]
        told = self.told()
        reasons: list[str] = []
        heavy = False
        mine = target(plan.first)
        if (
            mine is not None
            and not prediction.stated
            and mine == target(theirs.first)
            and (told is None or told.first != plan.first)
        ):
            second = prediction.plans[1].first if len(prediction.plans) > 1 else None
            if self._pays(teammate, plan, theirs.first, second):
                heavy = True
                reasons.append(f"conflict: we both start on {_name(plan)}")
            else:
                reasons.append(f"conflict on {_name(plan)}, but a message would cost the team more than it saves")
        misaligned: tuple[Fact, ...] = ()
        if lacking and not prediction.stated:
            changed = self._predicted_plans(teammate, lacking)
            if (
                changed
                and changed[0].first != theirs.first
                and self._pays(teammate, plan, theirs.first, changed[0].first)
            ):
                heavy = True
                misaligned = tuple(lacking)
                reasons.append(
                    f"it lacks {len(lacking)} fact(s) that change its plan from {_name(theirs)} to {_name(changed[0])}"
                )
            elif changed and changed[0].first != theirs.first:
                reasons.append(f"it lacks {len(lacking)} fact(s) that change its plan, not enough to pay for a message")
            else:
                reasons.append(f"it lacks {len(lacking)} fact(s), none that changes its plan")
        if not reasons:
            reasons.append("its plan and beliefs agree with mine")
        return Verdict(teammate, heavy, tuple(reasons), misaligned)

    def _pays(self, teammate: str, plan: Plan, now: Key | None, then: Key | None) -> bool:
        """Whether a message pays for itself in expected team value (my value model): my plan delayed by the message
        with the teammate starting on ``then``, against my plan now with the teammate starting on ``now``. True when
        I cannot place the teammate or my plan in the model (the gate's rule stands alone then)."""
        value = self.value
        robot = next((r for r in value.teammates if r.name == teammate), None)
        if robot is None or plan.first is None:
            return True
        rest = [(r, k) for r, k in self.others() if r.name != teammate]
        without = value.value(value.outcome_of(plan.first, 0.0, [*rest, (robot, now)]))
        told = value.value(value.outcome_of(plan.first, value.message_time, [*rest, (robot, then)]))
        return told > without

    # --- the message -----------------------------------------------------------------------------------------
    def note(self, facts: Sequence[Fact], plan: Plan) -> TeamStatus:
        """A message holding ``facts`` (goal items' places, rooms explored, containers searched) and my sub-plan,
        with where I am and what I hold."""
        m = self.memory
        rooms = {r.id for r in m.floorplan.rooms}
        seen, explored, checked = [], [], []
        for f in facts:
            about = getattr(f.subject, "id", None)
            if f.relation == Attribute.EXPLORED and f.object == "all" and about in rooms:
                explored.append(m.room_name(about))  # type: ignore[arg-type]
            elif f.relation == Attribute.STATE and f.object == "open" and about in m.objects:
                checked.append(ItemRef(id=about, name=m.objects[about].name))  # type: ignore[index]
            elif f.relation in (Predicate.IN, Predicate.ON) and about in m.objects:
                view = m.objects[about]  # type: ignore[index]
                if view.kind == ObjectKind.ITEM and view.room >= 0 and not view.held_by:
                    seen.append(Sighting(id=view.id, name=view.name, room=m.room_name(view.room)))
        mine = TeamStatus.of(m).model_dump(include={"agent", "room", "holding"})
        status = TeamStatus.model_validate(
            {
                **mine,
                "seen": seen[:SEEN_LIST_LIMIT],
                "seen_complete": False,
                "explored": list(dict.fromkeys(explored)),
                "checked": checked,
                "plan": plan.texts,
            }
        )
        return status.fitted(MAX_MESSAGE_CHARS)


def _name(plan: Plan) -> str:
    return plan.texts[0] if plan.texts else str(plan.first)
