"""PCE's symbolic backend: the Planner, Composer, Evaluator and Communication roles answered by deterministic
algorithms over the agent's belief state — no model, no network. Every number comes from the shared team value
model (:mod:`coteam.value.team`; formulas in docs/architecture.md):

* Planner: ranks the available actions by ``U = G − λ·C`` with no assumption made, and names the uncertain facts
  its choice rests on.
* Composer: branches on the belief's uncertain variables (most uncertain, then most impactful first) whose truth
  value changes the best action, up to depth D, and puts the best action under each scenario at the leaf. A
  scenario is the set of the value model's belief particles where its assumptions hold.
* Evaluator: likelihood from the belief's probabilities along the path; gain ``G`` and cost ``C`` of the leaf's
  action in that scenario from the value model (team rollouts of the benchmark's abstract model) — each on the
  1–5 scale.
* Communication: a message is an announcement of the action I take next, worth sending only when it changes a
  teammate's choice (the value model's :meth:`~coteam.value.team.ValueModel.announcement`); its text answers a
  teammate's question first, then gives my status and the announced action.

Scenarios condition on a set of (variable, truth value) pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import TeamStatus
from coteam.agent.options import ActionOption
from coteam.agent.progress import describe
from coteam.belief import BeliefState, UncertainVariable
from coteam.domain.actions import Verb, truncate_message
from coteam.domain.world import Benchmark
from coteam.methods.pce.scoring import Weights
from coteam.value.team import Announcement, Condition, ValueModel

Assumptions = Mapping[str, bool]  # variable text -> assumed truth value

TIE_MARGIN = 0.03  # utility within which a scenario's best action yields to the unconditional best
# Utility within which the rollouts' own next action for me (ValueModel.rollout_choice) ranks first: every option's
# rollout assumes I follow the default policy afterwards, so among equals that choice is the one whose plan is kept
# (a TDW-MAT robot valued "the item, then the basket" like "the basket, then the item", took the item, and with both
# hands full never took the basket). C-WAH team times are whole steps, so its ties are exact; a margin of 0.02 there
# is about 16 steps. Tuned on cwah seeds 101-110 (-0.5 steps) and tdwmat 101-130 (+0.010 transport rate).
ROLLOUT_CHOICE_TIE = {Benchmark.CWAH: 0.0, Benchmark.TDWMAT: 0.02}


@dataclass
class SymbolicContext:
    """Everything the symbolic roles read for one decision."""

    memory: AgentMemory
    belief: BeliefState
    options: Sequence[ActionOption]
    weights: Weights
    max_depth: int
    allow_messages: bool
    value: ValueModel
    _variables: list[UncertainVariable] | None = field(default=None, init=False, repr=False)
    _announcement: tuple[Announcement | None] | None = field(default=None, init=False, repr=False)
    _ranked: dict[frozenset, list[ActionOption]] = field(default_factory=dict, init=False, repr=False)
    _utility: dict[frozenset, dict[str, float]] = field(default_factory=dict, init=False, repr=False)
    _conditions: dict[frozenset, list[Condition]] = field(default_factory=dict, init=False, repr=False)

    # --- the value model ---------------------------------------------------------------------------------
    def conditions(self, assumptions: Assumptions) -> list[Condition]:
        """The assumptions the value model can condition on (those about the belief's own variables; memoised: every
        option is scored under the same few sets of assumptions)."""
        key = frozenset(assumptions.items())
        out = self._conditions.get(key)
        if out is None:
            out = self._conditions[key] = []
            for v in self.variables():
                if v.text in assumptions:
                    fact = (v.kind, v.item, v.object_id) if v.kind == "item_in_room" else (v.kind, v.object_id)
                    out.append((fact, assumptions[v.text]))
        return out

    def announcement(self) -> Announcement | None:
        """The announcement worth a message now (None when no message changes a teammate's choice)."""
        if self._announcement is None:
            advice = self.value.announcement(self.options) if self.allow_messages else None
            self._announcement = (advice,)
        return self._announcement[0]

    def intent_text(self) -> str | None:
        """The option the advised announcement names, in the benchmark's action grammar."""
        advice = self.announcement()
        if advice is None:
            return None
        return next((o.text for o in self.options if self.value.key(o) == advice.key), None)

    def _scores(self, option: ActionOption, assumptions: Assumptions) -> tuple[float, float] | None:
        """(G, C) in [0, 1] of an option under the assumptions; None for an option worth nothing (a message with
        nothing to announce, a move that can only waste time)."""
        if option.action.is_message:
            advice = self.announcement()
            if advice is None:
                return None
            outcome = self.value.outcome_of(advice.key, self.value.message_time, advice.others)
            return self.value.scores(outcome, self.conditions(assumptions), duration=self.value.message_time)
        outcome = self.value.outcome(option)
        return None if outcome is None else self.value.scores(outcome, self.conditions(assumptions))

    def gain(self, option: ActionOption, assumptions: Assumptions = {}) -> float:  # noqa: B006  (read-only)
        """G in [0, 1]: the team progress the action buys under ``assumptions`` (value model, point 5)."""
        scores = self._scores(option, assumptions)
        return 0.0 if scores is None else scores[0]

    def cost_penalty(self, option: ActionOption) -> float:
        """C on the 1–5 scale: the time the action takes, relative to the time left."""
        scores = self._scores(option, {})
        return 5.0 if scores is None else 1.0 + 4.0 * scores[1]

    def ranked(self, assumptions: Assumptions = {}) -> list[ActionOption]:  # noqa: B006  (read-only)
        """Options by utility ``G − λ·(α|β)·C`` under ``assumptions``, best first; options worth nothing last
        (memoised: the Composer asks many times)."""
        key = frozenset(assumptions.items())
        if key not in self._ranked:
            usable = [o for o in self.options if self.allow_messages or not o.action.is_message]
            w = self.weights
            utility: dict[str, float] = {}
            for o in usable:
                scores = self._scores(o, assumptions)
                if scores is not None:
                    weight = w.beta if o.action.is_message else w.alpha
                    utility[o.text] = scores[0] - w.lam * weight * scores[1]
            self._utility[key] = utility
            ranked = sorted(
                usable,
                key=lambda o: (o.text not in utility, -utility.get(o.text, 0.0), self._staleness(o, utility), o.text),
            )
            self._ranked[key] = self._rollout_choice_first(ranked, utility)
        return self._ranked[key]

    def _staleness(self, option: ActionOption, utility: Mapping[str, float]) -> float:
        """Among options worth nothing, rooms I was in longest ago first, then the rest: with nothing left to find,
        a robot looks again where it looked longest ago (by name, the room it had just left often came first, and
        it paced at a doorway between two rooms). 0 for every option worth something: their ties stay as they
        were."""
        if option.text in utility:
            return 0.0
        target = option.action.target
        if option.action.verb != Verb.EXPLORE or target is None:
            return math.inf
        return self.memory.last_visit(target.id)

    def _rollout_choice_first(self, ranked: list[ActionOption], utility: Mapping[str, float]) -> list[ActionOption]:
        """``ranked`` with the rollouts' own next action first when it is within :data:`ROLLOUT_CHOICE_TIE` of the
        best (ties otherwise go by option text)."""
        choice = self.value.rollout_choice
        if choice is None or not ranked or ranked[0].text not in utility or self.value.key(ranked[0]) == choice:
            return ranked
        floor = utility[ranked[0].text] - ROLLOUT_CHOICE_TIE[self.memory.benchmark]
        for i, o in enumerate(ranked):
            if o.text not in utility or utility[o.text] < floor:
                break
            if self.value.key(o) == choice:
                return [o, *ranked[:i], *ranked[i + 1 :]]
        return ranked

    def best(self, assumptions: Assumptions = {}) -> ActionOption:  # noqa: B006  (read-only)
        """The best option under ``assumptions``; the unconditional best when it is within :data:`TIE_MARGIN` of
        it (a scenario is judged on fewer particles: small differences there are noise, and an action good in
        every scenario must not lose to one that is slightly better in each)."""
        ranked = self.ranked(assumptions)
        default = self.ranked()[0]
        utility = self._utility[frozenset(assumptions.items())]
        if default.text in utility and utility[default.text] >= utility.get(ranked[0].text, 0.0) - TIE_MARGIN:
            return default
        return ranked[0]

    def variables(self) -> list[UncertainVariable]:
        if self._variables is None:
            self._variables = self.belief.uncertain_variables()
        return self._variables

    def probability(self, text: str) -> float:
        """P(assumption is true); 0.5 for an assumption the belief does not model (e.g. one an LLM wrote)."""
        for v in self.variables():
            if v.text == text:
                return v.probability
        return 0.5

    def path_likelihood(self, path: Sequence[tuple[str, bool]]) -> float:
        """P(every assumption on a root-to-leaf path has the given value), assuming independence."""
        likelihood = 1.0
        for text, value in path:
            p = self.probability(text)
            likelihood *= p if value else 1.0 - p
        return likelihood

    def status(self) -> TeamStatus:
        """My status, with the advised announcement as my next action."""
        return TeamStatus.of(self.memory, intent=self.intent_text())

    def message_text(self, incoming: Sequence[str] = ()) -> str:
        """Answer a teammate's question first, then my status and announced action (≤ 500 chars)."""
        m = self.memory
        answer = ""
        question = next((t for t in reversed(incoming) if "?" in t), None)
        if question is not None:
            asked = [v for v in m.items() if f"<{v.name}>" in question or v.name in question]
            if asked:
                answer = "Answer: " + "; ".join(f"{describe(v)} in the {m.room_name(v.room)}" for v in asked[:4]) + ". "
            else:
                answer = "Answer: I have not seen that. "
        return truncate_message(answer + self.status().text())
