"""One agent's collaborative belief world: what I believe (zero-order) and, per teammate, what I believe it believes
(first-order), in the belief language (:mod:`coteam.methods.cobel.belief_language`), kept exactly from the agent's
memory.

* **Zero-order** facts are my memory rendered as statements: where every object I know of is (in a room, in a
  container, on a surface, held by someone), which containers are open, how much of each room I have seen, and
  where my teammates and I are; rooms a teammate told me it explored and containers it searched count as
  explored and open. Only facts the rule set allows are kept.
* **First-order** facts, per teammate, come from four sources: what the teammate saw with me (it was in my room
  when I saw something: it saw it too), what it told me (its messages: it believes what it said), what I told it
  (my messages: after sending, it believes what I said, so nothing is said twice), and what it knows of itself
  (its own position and holdings, as far as I know them).
* Facts are keyed by what they are about (an object's location, a room's exploration, a container's state, an
  agent's room), so a newer fact about the same thing replaces the older one.
* A teammate's **stated plan** is the last plan it told me.

Every agent knows from the task where the goal targets are, and starts believing every room unexplored. What a
teammate *lacks* (:meth:`BeliefWorld.lacks`) is every zero-order fact its first-order facts do not match.
The world works for any number of agents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from coteam.agent.memory import AgentMemory, TeammateSighting
from coteam.agent.messages import TeamStatus
from coteam.domain.actions import ObjectRef
from coteam.domain.geometry import FULL_TURN_BINS
from coteam.domain.observation import ObjectView
from coteam.domain.world import Benchmark, ObjectKind, Relation
from coteam.kit import regex_literal
from coteam.methods.cobel.belief_language import (
    CWAH_RULES,
    STATES,
    TDWMAT_RULES,
    AgentRef,
    Attribute,
    Belief,
    Entity,
    EntityKind,
    Fact,
    Predicate,
    RuleSet,
)

PART_EXPLORED_BINS = FULL_TURN_BINS // 2  # heading sectors a room "part" explored stands for

FactKey = tuple  # what a fact is about: ("where", entity), ("explored", room), ("state", container), ("at", agent)


def fact_key(fact: Fact) -> FactKey:
    """What ``fact`` is about: two facts with the same key cannot both hold."""
    if fact.relation in (Predicate.IN, Predicate.ON):
        return ("where", fact.subject)
    if fact.relation in (Predicate.HOLD, Predicate.CONTAIN):
        return ("where", fact.object)
    if fact.relation == Predicate.AT:
        return ("at", fact.subject)
    if fact.relation == Attribute.EXPLORED:
        return ("explored", fact.subject)
    return ("state", fact.subject)


def rules_for(benchmark: Benchmark) -> RuleSet:
    """The fixed rule set of a suite (the symbolic backend's)."""
    return CWAH_RULES if benchmark == Benchmark.CWAH else TDWMAT_RULES


def kind_resolver(memory: AgentMemory, agents: Iterable[str]) -> Callable[[Entity], EntityKind | None]:
    """What each entity is, from the agent's memory (None for an entity it has never known, or a name that does not
    match the id). An object the memory has forgotten since (seen gone from where it was) keeps its kind: what a
    teammate believes about it is still a belief about a known thing."""
    names = set(agents)
    rooms = {r.id: r.name for r in memory.floorplan.rooms}
    goal_targets = {p.target for p in memory.task.predicates}
    tdw = memory.benchmark == Benchmark.TDWMAT
    known: dict[tuple[int, str], EntityKind] = {}  # objects resolved so far

    def kind_of(entity: Entity) -> EntityKind | None:
        if isinstance(entity, AgentRef):
            return EntityKind.AGENT if entity.name in names else None
        if rooms.get(entity.id) == entity.name:
            return EntityKind.ROOM
        view = memory.objects.get(entity.id)
        if view is None or view.name != entity.name:
            return known.get((entity.id, entity.name))
        if view.kind == ObjectKind.ITEM:
            kind = EntityKind.CONTAINER if view.capacity > 0 else EntityKind.OBJECT
        elif view.kind == ObjectKind.CONTAINER:
            kind = EntityKind.CONTAINER
        else:
            kind = EntityKind.BED if tdw and view.id in goal_targets else EntityKind.SURFACE
        known[(entity.id, entity.name)] = kind
        return kind

    return kind_of


def statement_pattern(
    memory: AgentMemory,
    agents: Iterable[str],
    believers: Sequence[Iterable[str]],
    rules: RuleSet,
    kind_of: Callable[[Entity], EntityKind | None],
) -> str:
    """A regular expression (anchored, in the small dialect grammar converters read) of the statements ``rules``
    allow about entities ``memory`` knows (``agents``, the rooms, every object seen or heard of): one alternative per
    rule, each naming only entities of the rule's kinds. ``believers[i]`` lists who may stand before the i-th
    ``BELIEVE`` (``[["alice"], ["bob"]]``: alice's first-order beliefs about bob; two or more levels use the
    first-order rules). A constrained model can then write nothing the parser would reject."""
    entities: list[Entity] = [AgentRef(a) for a in agents]
    entities += [ObjectRef(n, i) for i, n in memory.known_names().items()]
    by_kind: dict[EntityKind, list[str]] = {}
    for entity in dict.fromkeys(entities):
        kind = kind_of(entity)
        if kind is not None:
            by_kind.setdefault(kind, []).append(regex_literal(str(entity)))
    facts = []
    for rule in rules.first_order if len(believers) > 1 else rules.zero_order:
        subjects = by_kind.get(rule.subject)
        objects = by_kind.get(rule.object) if isinstance(rule.object, EntityKind) else STATES[rule.relation]  # type: ignore[index]
        if subjects and objects:
            facts.append(f"({'|'.join(subjects)}) {rule.relation.value} ({'|'.join(objects)})")
    prefix = "".join("(" + "|".join(regex_literal(b) for b in who) + ") BELIEVE " for who in believers)
    return f"^{prefix}({'|'.join(facts)})$"


def room_ref(memory: AgentMemory, room_id: int) -> ObjectRef:
    return ObjectRef(memory.room_name(room_id), room_id)


def _ref(view: ObjectView) -> ObjectRef:
    return ObjectRef(view.name, view.id)


def exploration(memory: AgentMemory, room_id: int) -> str:
    seen = len(memory.room_coverage.get(room_id, ()))
    return "none" if seen == 0 else "all" if seen >= FULL_TURN_BINS else "part"


def object_facts(memory: AgentMemory, view: ObjectView) -> list[Fact]:
    """Where one object is, and a container's state, as my memory has it."""
    ref = _ref(view)
    out: list[Fact] = []
    holder = memory.objects.get(view.holder)
    if view.held_by:
        out.append(Fact(AgentRef(view.held_by), Predicate.HOLD, ref))
    elif view.location == Relation.IN and holder is not None and holder.kind == ObjectKind.ITEM:
        out.append(Fact(_ref(holder), Predicate.CONTAIN, ref))  # in a carriable container
    elif view.location == Relation.IN and holder is not None:
        out.append(Fact(ref, Predicate.IN, _ref(holder)))
    elif view.location == Relation.ON and holder is not None:
        out.append(Fact(ref, Predicate.ON, _ref(holder)))
    elif view.room >= 0:
        out.append(Fact(ref, Predicate.IN, room_ref(memory, view.room)))
    if view.kind == ObjectKind.CONTAINER and view.is_open is not None:
        out.append(Fact(ref, Attribute.STATE, "open" if view.is_open else "closed"))
    return out


def status_facts(memory: AgentMemory, status: TeamStatus) -> list[Fact]:
    """The facts a status message states (rooms and objects the receiver cannot place are left out)."""
    room_ids = {r.name: r.id for r in memory.floorplan.rooms}
    speaker = AgentRef(status.agent)
    out: list[Fact] = []
    if status.room in room_ids:
        out.append(Fact(speaker, Predicate.AT, ObjectRef(status.room, room_ids[status.room])))  # type: ignore[index]
    out += [Fact(speaker, Predicate.HOLD, ObjectRef(h.name, h.id)) for h in status.holding]
    for s in status.seen:
        if s.room not in room_ids:
            continue
        view = memory.objects.get(s.id)
        if view is not None and view.name == s.name and view.room == room_ids[s.room]:
            out += object_facts(memory, view)[:1]  # where in the room, as this memory places it
        else:
            out.append(Fact(ObjectRef(s.name, s.id), Predicate.IN, ObjectRef(s.room, room_ids[s.room])))
    out += [Fact(ObjectRef(r, room_ids[r]), Attribute.EXPLORED, "all") for r in status.explored if r in room_ids]
    out += [Fact(ObjectRef(c.name, c.id), Attribute.STATE, "open") for c in status.checked]
    return out


@dataclass
class BeliefWorld:
    """One agent's zero-order facts and its first-order facts about each teammate (module docstring)."""

    agent: str
    teammates: tuple[str, ...]
    rules: RuleSet
    kind_of: Callable[[Entity], EntityKind | None]
    zero: dict[FactKey, Fact] = field(default_factory=dict)
    first: dict[str, dict[FactKey, Fact]] = field(default_factory=dict)
    stated_plan: dict[str, tuple[str, ...]] = field(default_factory=dict)  # each teammate's last stated sub-plan
    stated_at: dict[str, int] = field(default_factory=dict)  # the step (C-WAH) or frame it was stated at
    told_plan: tuple[str, ...] = ()  # the sub-plan I last stated to the team
    told_at: int = -1
    _read: tuple[int, int] = (0, 0)  # messages received / sent already absorbed
    _reported: dict[FactKey, Fact] = field(default_factory=dict)  # rooms explored, containers searched, as told

    @classmethod
    def of(cls, memory: AgentMemory, agents: Sequence[str], rules: RuleSet | None = None) -> BeliefWorld:
        mates = tuple(a for a in agents if a != memory.agent)
        world = cls(
            memory.agent,
            mates,
            rules or rules_for(memory.benchmark),
            kind_resolver(memory, agents),
            first={m: {} for m in mates},
        )
        world.update(memory)
        return world

    # --- updating ----------------------------------------------------------------------------------------
    def _allowed(self, fact: Fact, order: int) -> bool:
        """Whether the rules let ``fact`` be stated at ``order`` (facts they leave out are not kept)."""
        believers = (self.agent,) if order == 0 else (self.agent, "_")
        return self.rules.allows(Belief(believers, fact), self.kind_of)

    def update(self, memory: AgentMemory) -> None:
        """Re-read my memory (zero-order), credit teammates in my room with what I see there, and absorb the
        messages received and sent since the last update."""
        zero: dict[FactKey, Fact] = {}
        facts = [f for view in memory.objects.values() for f in object_facts(memory, view)]
        facts += [
            Fact(room_ref(memory, r.id), Attribute.EXPLORED, exploration(memory, r.id)) for r in memory.floorplan.rooms
        ]
        if memory.room >= 0:
            facts.append(Fact(AgentRef(self.agent), Predicate.AT, room_ref(memory, memory.room)))
        for name, sighting in memory.teammates.items():
            if sighting.room >= 0:
                facts.append(Fact(AgentRef(name), Predicate.AT, room_ref(memory, sighting.room)))
        for fact in facts:
            if self.kind_of(fact.subject) is not None and self._allowed(fact, 0):
                zero[fact_key(fact)] = fact
        received = memory.messages[self._read[0] :]
        for message in received:
            if message.sender in self.first and isinstance(message.payload, TeamStatus):
                for fact in status_facts(memory, message.payload):
                    if fact.relation in (Attribute.EXPLORED, Attribute.STATE):
                        self._reported[fact_key(fact)] = fact
        for key, fact in self._reported.items():  # a room a teammate explored is explored, for me too
            if key in zero and self._allowed(fact, 0):
                zero[key] = fact
        self.zero = zero
        # What a teammate in my room sees now: everything in the room, me, and itself.
        for name, sighting in memory.teammates.items():
            if name in self.first and sighting.step == memory.step and sighting.room == memory.room:
                here = [f for f in zero.values() if self._in_room(memory, f, memory.room)]
                self._credit(name, here)
        # What a teammate knows of itself, and what every agent knows from the task: where the goal targets are.
        targets = {p.target for p in memory.task.predicates}
        common = [f for f in zero.values() if isinstance(f.subject, ObjectRef) and f.subject.id in targets]
        for name in self.first:
            own = [f for f in zero.values() if AgentRef(name) in (f.subject, f.object)]
            self._credit(name, own + common)
        received, sent = self._read
        for message in memory.messages[received:]:
            status = message.payload
            if message.sender in self.first and isinstance(status, TeamStatus):
                self.told(message.sender, status_facts(memory, status), status.plan, message.step)
        for message in memory.sent[sent:]:
            status = message.payload
            if isinstance(status, TeamStatus):
                for name in self.first:
                    self.tell(name, status_facts(memory, status))
                if status.plan:
                    self.told_plan, self.told_at = status.plan, message.step
        self._read = (len(memory.messages), len(memory.sent))

    def _in_room(self, memory: AgentMemory, fact: Fact, room: int) -> bool:
        if fact.relation == Attribute.EXPLORED:
            return fact.subject == room_ref(memory, room)
        if fact.relation == Predicate.AT:
            return fact.object == room_ref(memory, room)  # it sees who is here
        about = fact.object if fact.relation in (Predicate.HOLD, Predicate.CONTAIN) else fact.subject
        view = memory.objects.get(about.id) if isinstance(about, ObjectRef) else None
        return view is not None and view.room == room

    def _credit(self, teammate: str, facts: Iterable[Fact]) -> None:
        """``teammate`` now believes ``facts`` (those the rules allow at first order)."""
        known = self.first.setdefault(teammate, {})
        for fact in facts:
            if self._allowed(fact, 1):
                known[fact_key(fact)] = fact

    def told(self, teammate: str, facts: Iterable[Fact], plan: Sequence[str] = (), at: int = 0) -> None:
        """A teammate told me ``facts`` (and its plan, at step or frame ``at``): it believes them; my own facts stay
        my observations."""
        self._credit(teammate, facts)
        if plan:
            self.stated_plan[teammate] = tuple(plan)
            self.stated_at[teammate] = at

    def tell(self, teammate: str, facts: Iterable[Fact]) -> None:
        """I told ``teammate`` ``facts``: from now on I believe it believes them."""
        self._credit(teammate, facts)

    # --- reading -----------------------------------------------------------------------------------------
    def lacks(self, teammate: str, relevant: Callable[[Fact], bool] = lambda fact: True) -> list[Fact]:
        """My zero-order facts (those ``relevant`` selects) that ``teammate`` does not believe, in reading order. A
        room nobody told it about is one it believes unexplored."""
        known = self.first.get(teammate, {})

        def believed(key: FactKey, fact: Fact) -> Fact | None:
            if key in known or fact.relation != Attribute.EXPLORED:
                return known.get(key)
            return Fact(fact.subject, Attribute.EXPLORED, "none")

        return sorted((f for k, f in self.zero.items() if relevant(f) and believed(k, f) != f), key=str)

    def beliefs(self) -> list[Belief]:
        """Every belief in the language: mine (``me BELIEVE ...``), then each teammate's (``me BELIEVE mate BELIEVE
        ...``), each group in reading order."""
        mine = [Belief((self.agent,), f) for f in sorted(self.zero.values(), key=str)]
        theirs = [
            Belief((self.agent, name), f)
            for name in sorted(self.first)
            for f in sorted(self.first[name].values(), key=str)
        ]
        return mine + theirs

    # --- a teammate's believed memory ---------------------------------------------------------------------
    def believed_memory(self, memory: AgentMemory, teammate: str) -> AgentMemory | None:
        """What I believe ``teammate``'s memory holds, as a memory the shared belief and value machinery can read
        (so its plans are predicted from what it believes, not from what I know): the objects it believes in,
        where it believes them, the containers it believes open (searched) and the rooms it believes explored;
        it stands where I last knew it to be, and the other agents stand in the rooms it believes them in. None when
        I do not know where it is."""
        known = self.first.get(teammate, {})
        me = AgentRef(teammate)
        at = known.get(("at", me))
        sighting = memory.teammates.get(teammate)
        if sighting is not None and (at is None or getattr(at.object, "id", None) == sighting.room):
            position, room = sighting.position, sighting.room
        elif at is not None and isinstance(at.object, ObjectRef):
            room = at.object.id
            position = memory.floorplan.room_center(room)
        else:
            return None
        objects: dict[int, ObjectView] = {}
        for key, fact in known.items():
            about = key[1]
            if key[0] == "where" and isinstance(about, ObjectRef) and about.id in memory.objects:
                objects[about.id] = _placed(memory, memory.objects[about.id], fact)
        checked: set[int] = set()
        for key, fact in known.items():
            about = key[1]
            if key[0] == "state" and isinstance(about, ObjectRef) and about.id in objects:
                objects[about.id] = replace(objects[about.id], is_open=fact.object == "open")
                if fact.object == "open":
                    checked.add(about.id)
        coverage: dict[int, set[int]] = {}
        for key, fact in known.items():
            if key[0] == "explored" and fact.object != "none" and isinstance(fact.subject, ObjectRef):
                bins = FULL_TURN_BINS if fact.object == "all" else PART_EXPLORED_BINS
                coverage[fact.subject.id] = set(range(bins))

        def held_by(agent: Entity) -> tuple[int, ...]:
            return tuple(f.object.id for f in known.values() if f.relation == Predicate.HOLD and f.subject == agent)  # type: ignore[union-attr]

        held = held_by(me)[:2]
        holding = tuple([*held, *[None] * (2 - len(held))])
        others: dict[str, TeammateSighting] = {}  # the agents it believes in a room, at the room's centre
        for fact in known.values():
            other = fact.subject
            if fact.relation == Predicate.AT and other != me and isinstance(fact.object, ObjectRef):
                center = memory.floorplan.room_center(fact.object.id)
                others[str(other)] = TeammateSighting(memory.step, center, fact.object.id, held_by(other))
        return AgentMemory(
            agent=teammate,
            benchmark=memory.benchmark,
            floorplan=memory.floorplan,
            task=memory.task,
            step=memory.step,
            frames=memory.frames,
            position=position,
            room=room,
            holding=holding,
            objects=objects,
            last_seen={i: memory.step for i in objects},
            room_coverage=coverage,
            checked=checked,
            teammates=others,
        )


def _placed(memory: AgentMemory, view: ObjectView, fact: Fact) -> ObjectView:
    """My view of an object moved to where ``fact`` puts it."""
    if fact in object_facts(memory, view):
        return view
    if fact.relation == Predicate.HOLD:
        return replace(view, location=Relation.HELD, holder=-1, held_by=str(fact.subject))
    if fact.relation == Predicate.CONTAIN and isinstance(fact.subject, ObjectRef):
        return replace(view, location=Relation.IN, holder=fact.subject.id, held_by="")
    target = fact.object
    if not isinstance(target, ObjectRef):
        return view
    if any(r.id == target.id and r.name == target.name for r in memory.floorplan.rooms):
        center = memory.floorplan.room_center(target.id)
        return replace(view, room=target.id, position=center, location=Relation.FLOOR, holder=-1, held_by="")
    holder = memory.objects.get(target.id)
    if holder is None:
        return view
    relation = Relation.ON if fact.relation == Predicate.ON else Relation.IN
    return replace(view, room=holder.room, position=holder.position, location=relation, holder=holder.id, held_by="")
