"""The collaborative belief language: typed statements about the world and about what an agent believes of it.

A *fact* relates two entities or gives an entity's state::

    <apple> (52) IN <kitchen> (11)          ENTITY PREDICATE ENTITY   (IN, ON, HOLD, CONTAIN, AT)
    bob HOLD <apple> (52)
    <kitchen> (11) EXPLORED part            ENTITY ATTRIBUTE STATE    (EXPLORED none|part|all, STATE open|closed)
    <fridge> (31) STATE closed

Objects and rooms are written ``<name> (id)``; agents by their bare name. A *belief* nests a fact under at most
two believers: ``alice BELIEVE <apple> (52) IN <kitchen> (11)`` is one of alice's zero-order beliefs (what she
believes of the world), ``alice BELIEVE bob BELIEVE <kitchen> (11) EXPLORED all`` one of her first-order beliefs
(what she believes bob believes). Deeper nesting is rejected.

*Belief rules* say which facts may be stated at all, as patterns over entity kinds (``?object IN ?room``): the
fixed rule sets of the two suites (:data:`TDWMAT_RULES`, the set the paper's agents agreed on; :data:`CWAH_RULES`,
ours, with surfaces, opening and closing) or a set agents negotiate in LLM mode (:func:`parse_rules`).

Parsing never guesses: text that is not a statement, an unknown predicate or state, nesting deeper than two, or a
fact no rule allows raises :class:`BeliefError` with a one-line reason. :func:`parse_beliefs` reads an LLM's
answer line by line, keeps what parses and lists what it rejected, so a garbled line costs that line only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from coteam.domain.actions import ObjectRef

MAX_STATEMENT_CHARS = 400  # a longer line is not a statement (LLM prose); rejected unread
MAX_BELIEVERS = 2  # zero- and first-order beliefs only


class Predicate(StrEnum):
    IN = "IN"  # an object in a room or container, a container or surface in a room
    ON = "ON"  # an object on a surface
    HOLD = "HOLD"  # an agent holds an object or container
    CONTAIN = "CONTAIN"  # a container holds an object
    AT = "AT"  # an agent is in a room


class Attribute(StrEnum):
    EXPLORED = "EXPLORED"  # how much of a room has been seen: none, part, all
    STATE = "STATE"  # whether a container is open: open, closed


STATES: dict[Attribute, tuple[str, ...]] = {
    Attribute.EXPLORED: ("none", "part", "all"),
    Attribute.STATE: ("open", "closed"),
}
STATE_KINDS: dict[Attribute, str] = {Attribute.EXPLORED: "exploration_state", Attribute.STATE: "open_state"}


class EntityKind(StrEnum):
    """What an entity is, for the rules (``?agent``, ``?object``, ...)."""

    AGENT = "agent"
    OBJECT = "object"  # an item that can be picked up
    CONTAINER = "container"  # something items go into (a C-WAH fixture, a TDW-MAT carriable container)
    SURFACE = "surface"  # something items go onto
    BED = "bed"  # TDW-MAT: the goal location
    ROOM = "room"


class BeliefError(ValueError):
    """A statement that is not in the belief language, or that no belief rule allows."""


@dataclass(frozen=True, order=True)
class AgentRef:
    name: str

    def __str__(self) -> str:
        return self.name


Entity = AgentRef | ObjectRef


@dataclass(frozen=True)
class Fact:
    subject: Entity
    relation: Predicate | Attribute
    object: Entity | str  # an entity after a predicate, a state after an attribute

    def __str__(self) -> str:
        return f"{self.subject} {self.relation.value} {self.object}"


@dataclass(frozen=True)
class Belief:
    """``believers[0] BELIEVE believers[1] BELIEVE ... fact``; no believer: a plain fact."""

    believers: tuple[str, ...]
    fact: Fact

    @property
    def order(self) -> int:
        """0 for ``a BELIEVE fact`` (zero-order), 1 for ``a BELIEVE b BELIEVE fact`` (first-order); -1 for a
        plain fact."""
        return len(self.believers) - 1

    def __str__(self) -> str:
        return "".join(f"{b} BELIEVE " for b in self.believers) + str(self.fact)


# --- parsing ---------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:<(?P<name>[^<>()]+?)>\s*\(\s*(?P<id>-?\d+)\s*\)|(?P<word>[A-Za-z][\w-]*))")
_BULLET = re.compile(r"^\s*(?:(?:[-*•]|\d+[.)])\s*)+")
_KEYWORDS = {p.value for p in Predicate} | {a.value for a in Attribute} | {"BELIEVE", "BELIEVES"}


def _tokens(text: str) -> list[Entity | str]:
    out: list[Entity | str] = []
    pos, s = 0, text.rstrip().rstrip(".;")
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            raise BeliefError(f"unexpected text {s[pos:].strip()[:40]!r}")
        if m.group("word") is not None:
            out.append(m.group("word"))
        else:
            out.append(ObjectRef(m.group("name").strip(), int(m.group("id"))))
        pos = m.end()
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return out


def _entity(token: Entity | str, where: str) -> Entity:
    if isinstance(token, ObjectRef):
        return token
    if token.upper() in _KEYWORDS:
        raise BeliefError(f"expected an entity {where}, got the keyword {token!r}")
    return AgentRef(token.lower())


def parse_belief(text: str) -> Belief:
    """One statement (a plain fact, or a fact under one or two believers); :class:`BeliefError` otherwise."""
    if len(text) > MAX_STATEMENT_CHARS:
        raise BeliefError(f"statement longer than {MAX_STATEMENT_CHARS} characters")
    tokens = _tokens(_BULLET.sub("", text, count=1))
    believers: list[str] = []
    while len(tokens) >= 2 and isinstance(tokens[1], str) and tokens[1].upper() in ("BELIEVE", "BELIEVES"):
        who = tokens[0]
        if not isinstance(who, str) or who.upper() in _KEYWORDS:
            raise BeliefError(f"only an agent can believe, not {who}")
        believers.append(who.lower())
        tokens = tokens[2:]
    if len(believers) > MAX_BELIEVERS:
        raise BeliefError(f"beliefs nest at most {MAX_BELIEVERS} deep (zero- and first-order), got {len(believers)}")
    if len(tokens) != 3:
        raise BeliefError(f"a fact is ENTITY PREDICATE ENTITY or ENTITY ATTRIBUTE STATE, got {len(tokens)} terms")
    subject = _entity(tokens[0], "as the subject")
    word = tokens[1]
    if not isinstance(word, str):
        raise BeliefError(f"expected a predicate or attribute after {subject}, got {word}")
    key = word.upper()
    if key in Predicate.__members__:
        return Belief(tuple(believers), Fact(subject, Predicate(key), _entity(tokens[2], f"after {key}")))
    if key in Attribute.__members__:
        attribute = Attribute(key)
        state = tokens[2]
        if not isinstance(state, str) or state.lower() not in STATES[attribute]:
            raise BeliefError(f"{key} takes one of {'/'.join(STATES[attribute])}, got {state}")
        return Belief(tuple(believers), Fact(subject, attribute, state.lower()))
    raise BeliefError(f"unknown predicate or attribute {word!r}")


@dataclass
class ParsedBeliefs:
    """What :func:`parse_beliefs` kept and what it rejected (``"<line>: <reason>"``, one per rejected line)."""

    beliefs: list[Belief] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def parse_beliefs(
    text: str,
    rules: RuleSet | None = None,
    kind_of: Callable[[Entity], EntityKind | None] | None = None,
) -> ParsedBeliefs:
    """Every non-empty line of ``text`` as a belief; with ``rules`` (and ``kind_of``), also checked against them.
    Lines that do not parse or that no rule allows are rejected with their reason; headings (``...:``) and
    ``none`` lines are skipped."""
    out = ParsedBeliefs()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.endswith(":") or line.lower().rstrip(".") in ("none", "nothing"):
            continue
        try:
            belief = parse_belief(line)
            if rules is not None and kind_of is not None:
                rules.check(belief, kind_of)
        except BeliefError as exc:
            out.rejected.append(f"{line[:80]}: {exc}")
            continue
        out.beliefs.append(belief)
    return out


# --- rules -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BeliefRule:
    """A fact pattern over entity kinds: ``?subject RELATION ?object`` (the object may be a state kind)."""

    subject: EntityKind
    relation: Predicate | Attribute
    object: EntityKind | str  # a state kind (exploration_state, open_state) after an attribute

    def __str__(self) -> str:
        obj = self.object.value if isinstance(self.object, EntityKind) else self.object
        return f"?{self.subject.value} {self.relation.value} ?{obj}"


def _rule(text: str) -> BeliefRule:
    parts = text.split()
    if len(parts) != 3 or not all(p.startswith("?") for p in (parts[0], parts[2])):
        raise BeliefError(f"a rule is ?kind PREDICATE ?kind or ?kind ATTRIBUTE ?state_kind: {text!r}")
    subject, word, obj = parts[0][1:].lower(), parts[1].upper(), parts[2][1:].lower()
    if subject not in EntityKind.__members__.values():
        raise BeliefError(f"unknown entity kind ?{subject}")
    if word in Predicate.__members__:
        if obj not in EntityKind.__members__.values():
            raise BeliefError(f"unknown entity kind ?{obj}")
        return BeliefRule(EntityKind(subject), Predicate(word), EntityKind(obj))
    if word in Attribute.__members__:
        attribute = Attribute(word)
        if obj != STATE_KINDS[attribute]:
            raise BeliefError(f"{word} takes ?{STATE_KINDS[attribute]}, got ?{obj}")
        return BeliefRule(EntityKind(subject), attribute, obj)
    raise BeliefError(f"unknown predicate or attribute {parts[1]!r}")


_RULE_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*(?:\?agent\w*\s+BELIEVE\s+)*", re.IGNORECASE)


@dataclass(frozen=True)
class RuleSet:
    """Which facts may be stated, as zero-order and first-order fact patterns."""

    zero_order: tuple[BeliefRule, ...]
    first_order: tuple[BeliefRule, ...]

    @classmethod
    def symmetric(cls, patterns: Iterable[str]) -> RuleSet:
        """The same fact patterns at both orders."""
        rules = tuple(_rule(p) for p in patterns)
        return cls(rules, rules)

    def allows(self, belief: Belief, kind_of: Callable[[Entity], EntityKind | None]) -> bool:
        try:
            self.check(belief, kind_of)
        except BeliefError:
            return False
        return True

    def check(self, belief: Belief, kind_of: Callable[[Entity], EntityKind | None]) -> None:
        """:class:`BeliefError` unless a rule of the belief's order matches its fact (plain facts: zero-order)."""
        fact = belief.fact
        subject = kind_of(fact.subject)
        if subject is None:
            raise BeliefError(f"unknown entity {fact.subject}")
        if isinstance(fact.object, str):
            obj: EntityKind | str = STATE_KINDS[fact.relation]  # type: ignore[index]
        else:
            kind = kind_of(fact.object)
            if kind is None:
                raise BeliefError(f"unknown entity {fact.object}")
            obj = kind
        rules = self.first_order if belief.order >= 1 else self.zero_order
        if not any(r.subject == subject and r.relation == fact.relation and r.object == obj for r in rules):
            raise BeliefError(f"no belief rule allows ?{subject.value} {fact.relation.value} ?{_kind_text(obj)}")

    def text(self) -> str:
        """The rules as the paper writes them (one per line, under two headings)."""
        zero = [f"?agent BELIEVE {r}" for r in self.zero_order]
        first = [f"?agentA BELIEVE ?agentB BELIEVE {r}" for r in self.first_order]
        return "\n".join(["Zero-order belief rules:", *zero, "First-order belief rules:", *first])


def _kind_text(kind: EntityKind | str) -> str:
    return kind.value if isinstance(kind, EntityKind) else kind


def parse_rules(zero_order: str, first_order: str) -> tuple[RuleSet, list[str]]:
    """A rule set from two lists of rule lines (``?agent BELIEVE`` prefixes optional), and the lines rejected.
    :class:`BeliefError` when no valid rule is left at either order."""
    rejected: list[str] = []

    def read(text: str) -> tuple[BeliefRule, ...]:
        rules: list[BeliefRule] = []
        for line in text.splitlines():
            body = _RULE_PREFIX.sub("", line.strip(), count=1).strip()
            if not body:
                continue
            try:
                rule = _rule(body)
            except BeliefError as exc:
                rejected.append(f"{line.strip()[:80]}: {exc}")
                continue
            if rule not in rules:
                rules.append(rule)
        return tuple(rules)

    zero, first = read(zero_order), read(first_order)
    if not zero or not first:
        raise BeliefError("a rule set needs at least one valid zero-order and one valid first-order rule")
    return RuleSet(zero, first), rejected


TDWMAT_RULES = RuleSet.symmetric(
    [
        "?object IN ?room",
        "?bed IN ?room",
        "?container IN ?room",
        "?agent HOLD ?object",
        "?agent HOLD ?container",
        "?container CONTAIN ?object",
        "?room EXPLORED ?exploration_state",
        "?agent AT ?room",
    ]
)

CWAH_RULES = RuleSet.symmetric(
    [
        "?object IN ?room",
        "?object IN ?container",
        "?object ON ?surface",
        "?container IN ?room",
        "?surface IN ?room",
        "?container STATE ?open_state",
        "?agent HOLD ?object",
        "?agent AT ?room",
        "?room EXPLORED ?exploration_state",
    ]
)
