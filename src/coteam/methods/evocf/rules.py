"""EvoCF's symbolic rules: what a robot's action looked like (:class:`ActionFacts`), a rule that predicts its failure
(:class:`Rule`, typed by the paper's six kinds), and the symbolic inductor that learns a rule with variables from the
team's recorded actions and outcomes (:func:`induce`).

A rule reads ``verb ?x [if condition and ...] -> fails "reason"``; its conditions come from a small vocabulary
(:data:`CONDITIONS`) that a planner can check on any candidate action before it is tried:

=================  =============================================================
``robot``          the robot that acts
``item``           the class (name) of the action's target object
``place``          the fixture class the target lies in or on ('' on the floor)
``holding``        how full the robot's hands are: ``none``, ``some`` or ``full``
``held``           the class of an object in the robot's hands
``shared``         ``yes`` when a teammate acts on the same object at the same time
``episode``        the episode (for a rule about one home's layout, not a class)
``target``         the target object's id (with ``episode`` only)
=================  =============================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class RuleKind(StrEnum):
    """The paper's six constraint kinds; the first three are one robot's execution (``dep``), the others the
    team's coordination (``coord``)."""

    ACTION_VALIDITY = "ActionValidity"
    OBJECT_REACHABILITY = "ObjectReachability"
    SPATIAL_FEASIBILITY = "SpatialFeasibility"
    TEMPORAL_CONSISTENCY = "TemporalConsistency"
    LOAD_BALANCE = "LoadBalance"
    GOAL_ALIGNMENT = "GoalAlignment"

    @property
    def family(self) -> str:
        return "dep" if self in DEP_KINDS else "coord"


DEP_KINDS = (RuleKind.ACTION_VALIDITY, RuleKind.OBJECT_REACHABILITY, RuleKind.SPATIAL_FEASIBILITY)
CONDITIONS = ("robot", "item", "place", "holding", "held", "shared", "episode", "target")


def hands(held: int) -> str:
    """The ``holding`` condition's value for a robot with ``held`` objects in its two hands."""
    return "none" if held == 0 else ("full" if held >= 2 else "some")


@dataclass(frozen=True)
class ActionFacts:
    """One robot's action in a joint plan, as rules see it (module docstring)."""

    robot: str
    verb: str
    action: str  # the action's text
    item: str = ""
    place: str = ""
    holding: str = "none"
    held: tuple[str, ...] = ()
    shared: str = "no"
    episode: str = ""
    target: str = ""

    def value(self, condition: str) -> str | tuple[str, ...]:
        return getattr(self, condition)

    def text(self) -> str:
        """The facts in words (what retrieval embeds)."""
        where = f" in or on {self.place}" if self.place else ""
        carrying = f" holding {', '.join(self.held)}" if self.held else " with empty hands"
        return f"{self.robot} {self.verb} {self.item}{where}{carrying}".replace("  ", " ")

    def same_attempt(self, other: ActionFacts) -> bool:
        """Whether ``other`` is this action again by the same robot with the same things in its hands."""
        return (self.robot, self.action, self.held) == (other.robot, other.action, other.held)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ActionFacts:
        d = json.loads(text)
        return cls(**{**d, "held": tuple(d.get("held", ()))})


@dataclass(frozen=True)
class Rule:
    """``verb`` with every condition true is expected to fail with ``reason``. ``support`` counts the failures
    it was induced from, ``contradictions`` the actions it matched that did not fail."""

    kind: RuleKind
    verb: str
    conditions: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""
    support: int = 1
    contradictions: int = 0

    @property
    def key(self) -> str:
        """The rule's formula: the same for two inductions of one rule (de-duplication)."""
        parts = [f"{c}(?x)={self.conditions[c]}" for c in CONDITIONS if c in self.conditions]
        body = f" if {' and '.join(parts)}" if parts else ""
        return f"{self.verb} ?x{body} -> fails {self.reason!r}"

    @property
    def confidence(self) -> float:
        return self.support / (self.support + self.contradictions)

    def text(self) -> str:
        """The rule in words (what retrieval embeds and explain shows)."""
        said = " and ".join(f"{c} {v}" for c, v in self.conditions.items())
        return f"{self.kind.value}: {self.verb} {said} fails: {self.reason}"

    def matches(self, facts: ActionFacts) -> bool:
        if facts.verb != self.verb:
            return False
        for condition, wanted in self.conditions.items():
            have = facts.value(condition)
            if (wanted not in have) if isinstance(have, tuple) else (have != wanted):
                return False
        return True


@dataclass(frozen=True)
class Outcome:
    """An action the team took and how it ended: ``reason`` is the failure's ('' when it succeeded)."""

    facts: ActionFacts
    reason: str = ""


DELIVERIES = ("put", "put_in", "transport")  # verbs whose rules on the hands are about what is delivered
INDUCTION_CONFIDENCE = 0.9  # a generalisation stands while at least this share of the actions it covers failed so


def literals(facts: ActionFacts) -> list[tuple[str, str]]:
    """The action's facts as ``(condition, value)`` literals, in :data:`CONDITIONS` order (one per held class)."""
    found = []
    for condition in CONDITIONS:
        value = facts.value(condition)
        found += [(condition, v) for v in (value if isinstance(value, tuple) else (value,)) if v]
    return [lit for lit in found if lit != ("shared", "no")]  # a teammate on another object is no condition


def _holds(literal: tuple[str, str], facts: ActionFacts) -> bool:
    condition, wanted = literal
    have = facts.value(condition)
    return (wanted in have) if isinstance(have, tuple) else (have == wanted)


def induce(facts: ActionFacts, reason: str, history: Sequence[Outcome] = ()) -> Rule:
    """The rule the symbolic inductor learns from ``facts``'s action failing with ``reason``, given the team's
    recorded ``history`` of actions and outcomes: the most general conjunction of this action's facts that the data
    support and that still separates failures from successes. It starts from all of the action's facts and
    generalises over the earlier failures of that verb and reason, the most alike first: a fact on which such a
    failure differs is dropped (it was no cause there), unless the conjunction left would cover so many successes
    that fewer than :data:`INDUCTION_CONFIDENCE` of the actions it covers failed with ``reason`` (then that failure
    had another cause, and is skipped). A fact no failure has varied stays: without that evidence a condition is
    kept rather than guessed away (a rule too general would forbid what works, and the robots, kept from it, would
    never learn otherwise). Support and contradictions are the failures and successes the rule covers. What the
    reason says is never read: only which actions failed with it."""
    same_verb = [o for o in history if o.facts.verb == facts.verb]
    failed = [o.facts for o in same_verb if o.reason == reason]

    def coverage(conjunction: Sequence[tuple[str, str]]) -> tuple[int, int]:
        covered = [o for o in same_verb if all(_holds(lit, o.facts) for lit in conjunction)]
        support = sum(o.reason == reason for o in covered) + (facts not in failed)  # this failure, not yet recorded
        return support, sum(not o.reason for o in covered)

    conjunction = literals(facts)
    for other in sorted(failed, key=lambda f: -sum(_holds(lit, f) for lit in conjunction)):
        general = [lit for lit in conjunction if _holds(lit, other)]
        if general and len(general) < len(conjunction):
            support, contradictions = coverage(general)
            if support >= INDUCTION_CONFIDENCE * (support + contradictions):
                conjunction = general
    conditions: dict[str, str] = {}
    for condition, value in conjunction:  # two held classes left: the rule names the first
        conditions.setdefault(condition, value)
    support, contradictions = coverage(list(conditions.items()))
    return Rule(kind_of(facts.verb, conditions), facts.verb, conditions, reason, support, contradictions)


def kind_of(verb: str, conditions: Mapping[str, str]) -> RuleKind:
    """The paper's kind of a rule, from what its conditions are about: a teammate on the same object (temporal
    consistency), only one robot in one home (spatial feasibility: a path, a spot), a robot and a place but no kind
    of object (object reachability), the robot's hands but no kind of object (goal alignment for a delivery, load
    balance otherwise), else the action on that kind of object (action validity)."""
    if conditions.get("shared") == "yes":
        return RuleKind.TEMPORAL_CONSISTENCY
    about = set(conditions) - {"shared"}
    if about and about <= {"robot", "episode", "target"}:
        return RuleKind.SPATIAL_FEASIBILITY
    if "item" not in about and "robot" in about and "place" in about:
        return RuleKind.OBJECT_REACHABILITY
    if "item" not in about and about & {"holding", "held"}:
        return RuleKind.GOAL_ALIGNMENT if verb in DELIVERIES else RuleKind.LOAD_BALANCE
    return RuleKind.ACTION_VALIDITY
