"""EvoCF's symbolic rules: what a robot's action looked like (:class:`ActionFacts`), a rule that predicts its failure
(:class:`Rule`, typed by the paper's six kinds), and the symbolic inductor that turns one failed action into a rule
with variables (:func:`induce`).

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
from collections.abc import Mapping
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


# The symbolic inductor's templates: a failure reason -> the rule's kind and the facts that become its conditions
# (``name=value``: that value whatever the facts say). Reasons of one home's layout (a path, a container) carry the
# episode and the object; the others generalise to every object of the class.
TEMPLATES: dict[str, tuple[RuleKind, tuple[str, ...]]] = {
    "needs both hands": (RuleKind.ACTION_VALIDITY, ("item", "holding")),
    "hands busy with a heavy object": (RuleKind.ACTION_VALIDITY, ("held",)),
    "out of reach": (RuleKind.OBJECT_REACHABILITY, ("robot", "place")),
    "not reachable": (RuleKind.SPATIAL_FEASIBILITY, ("robot", "episode", "target")),
    "blocked": (RuleKind.SPATIAL_FEASIBILITY, ("robot", "episode", "target")),
    "timeout": (RuleKind.SPATIAL_FEASIBILITY, ("robot", "episode", "target")),
    "container full": (RuleKind.SPATIAL_FEASIBILITY, ("episode", "target")),
    "object taken": (RuleKind.TEMPORAL_CONSISTENCY, ("shared=yes",)),
    "no free hand": (RuleKind.LOAD_BALANCE, ("holding",)),
    "hand full": (RuleKind.LOAD_BALANCE, ("holding",)),
    "not holding": (RuleKind.GOAL_ALIGNMENT, ("holding",)),
    "not holding anything for this target": (RuleKind.GOAL_ALIGNMENT, ("held", "item")),
}
DEFAULT_TEMPLATE = (RuleKind.ACTION_VALIDITY, ("robot", "item", "place", "episode"))


def induce(facts: ActionFacts, reason: str) -> Rule:
    """The rule the symbolic inductor draws from ``facts``'s action failing with ``reason`` (:data:`TEMPLATES`;
    another reason: the same action of the same robot on the same class in the same place and home)."""
    kind, used = TEMPLATES.get(reason, DEFAULT_TEMPLATE)
    conditions: dict[str, str] = {}
    for condition in used:
        condition, fixed, given = condition.partition("=")
        if fixed:
            conditions[condition] = given
            continue
        value = facts.value(condition)
        if isinstance(value, tuple):
            if not value:
                continue
            value = value[0]
        conditions[condition] = value
    return Rule(kind, facts.verb, conditions, reason)
