"""One agent's belief about the hidden part of the world, rebuilt from its :class:`AgentMemory` at every decision.

Shared by every reasoning method. It answers: where may the next still-missing goal item be (a distribution
over typed :class:`Place` s), how uncertain is that, which binary facts are worth branching on, what did each
teammate probably do since I last saw it, and how far along is each sub-goal.

Model and assumptions (all constants below are module-level and documented where they are defined):

* **Category priors** (:mod:`coteam.domain.priors`): an unseen item of category ``c`` is in room ``r`` with weight
  ``room_weight(c, r)`` (TDW-MAT: times ``GOAL_ROOM_FACTOR`` in the goal's room); inside it, in a closed
  container with chance ``in_container_chance(c, r)`` (C-WAH only; TDW-MAT has no closed containers), split
  over that room's containers by ``container_weight``.
* **My own observations**: the part of a room I have seen (C-WAH: all of it once entered; TDW-MAT: the share
  of its 24 heading sectors in ``AgentMemory.room_coverage``) keeps only ``SEEN_EMPTY_EPS`` of its weight — a
  teammate may have brought an item there since. An opened container keeps nothing. A known, unheld instance
  takes the mass of "the next missing instance" with the probability that it is still there.
* **Teammates' status reports** (the :class:`coteam.agent.messages.TeamStatus` payload of their messages): ``holding``
  moves the item to the teammate (it is no longer at its old place); a later message or sighting without it
  means it was put down — for a goal item, probably delivered. A sighting of ``<x> (id)`` in a room adds a known
  instance there. An explored room lowers the open part of that room to
  ``TEAMMATE_EXPLORED_FACTOR`` for every goal item, on the assumption that teammates share the task and so
  mention the goal items they saw (a report lists at most ``SEEN_LIST_LIMIT`` sightings: an incomplete list
  only lowers it to ``TEAMMATE_EXPLORED_TRUNCATED_FACTOR``). A container a teammate reported searching counts as
  searched, like one I opened. The latest piece of evidence about an item wins, mine on ties.
* **Teammates taking known items**: a teammate that was in the item's room after my last sighting took it
  with ``P_TAKE_AFTER_VISIT``; otherwise with up to ``P_TAKE_UNOBSERVED``, growing with the time since. Only
  teammates I have seen or heard from count, plus those named by ``teammates=`` (pass ``EpisodeInfo.agents``).
  Items inside a carrier (TDW-MAT) go wherever the carrier went.

Message clocks are C-WAH steps / TDW-MAT frames, memory records are steps: TDW-MAT message times are mapped to
steps with the episode's mean frames per step (an approximation that only orders evidence).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from coteam.agent.goals import goal_status
from coteam.agent.memory import AgentMemory
from coteam.agent.messages import TeamStatus
from coteam.domain.geometry import FULL_TURN_BINS
from coteam.domain.observation import ObjectView
from coteam.domain.priors import (
    GOAL_ROOM_FACTOR,
    container_weight,
    in_container_chance,
    room_weight,
)
from coteam.domain.world import Benchmark, GoalPredicate, ObjectKind, Relation, Vec2

SEEN_EMPTY_EPS = 0.01  # weight kept by a seen-empty part of a room: a teammate may have brought one there since
HINT_FACTOR = 1000.0  # a place a person said holds an item class: its unseen instances are all but certain there
TEAMMATE_EXPLORED_FACTOR = 0.1  # weight kept by the open part of a room a teammate reported explored
TEAMMATE_EXPLORED_TRUNCATED_FACTOR = 0.5  # ... when its list of sightings was full (may have been cut)
P_TAKE_AFTER_VISIT = 0.4  # a teammate was in a known item's room after my last sighting: it took the item
P_TAKE_UNOBSERVED = 0.1  # a teammate not known to have been there took it (reached after TAKE_TIME_SCALE)
TAKE_TIME_SCALE = 0.2  # fraction of the horizon after which P_TAKE_UNOBSERVED is reached
MIN_VARIABLE_P = 1e-3  # binary facts with p (or 1 - p) below this are treated as settled
ENTROPY_SORT_DECIMALS = 2  # uncertain variables: entropy buckets of 0.01 bit, then impact


# --- places ----------------------------------------------------------------------------------------------
class PlaceKind(StrEnum):
    ITEM = "item"  # a known instance (its last known position)
    ROOM = "room"  # the not-yet-seen part of a room (or a seen-empty room: SEEN_EMPTY_EPS)
    CONTAINER = "container"  # an unchecked closed container
    NOWHERE = "nowhere"  # every place has been searched: explicitly nowhere left to look


@dataclass(frozen=True)
class Place:
    kind: PlaceKind
    id: int  # item, room or container id (-1 for NOWHERE)
    room: int  # the room it is in (-1 for NOWHERE)
    name: str = field(default="", compare=False)
    position: Vec2 = field(default=(0.0, 0.0), compare=False)

    def text(self) -> str:
        if self.kind == PlaceKind.ROOM:
            return f"the {self.name}"
        if self.kind == PlaceKind.NOWHERE:
            return "nowhere left to look"
        return f"<{self.name}> ({self.id})"


NOWHERE = Place(PlaceKind.NOWHERE, -1, -1, "nowhere")


# --- teammates -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TeammateSnapshot:
    """One piece of evidence about a teammate: my sighting of it, or one of its status messages."""

    step: float  # in memory steps
    source: str  # "sighting" or "message"
    room: int  # -1 when not stated
    holding: tuple[int, ...] | None  # None when not stated
    explored: tuple[int, ...] = ()  # rooms it reported explored
    seen: tuple[tuple[int, str, int], ...] = ()  # (item id, name, room id) it reported seeing
    seen_complete: bool = True
    checked: tuple[int, ...] = ()  # containers it reported searching


@dataclass(frozen=True)
class TeammateBelief:
    name: str
    last_seen_step: int | None = None  # my last sighting
    last_seen_room: int | None = None
    last_report_step: float | None = None  # its last status message (memory steps)
    room: int = -1  # latest known room (sighting or message)
    position: Vec2 | None = None  # last sighting, or the centre of a more recently reported room
    holding: tuple[int, ...] = ()  # items it holds according to the latest evidence
    explored_rooms: frozenset[int] = frozenset()  # rooms it has probably seen
    took: dict[int, float] = field(default_factory=dict)  # item id -> P(it took the item since I saw it)
    released: tuple[int, ...] = ()  # items it held and no longer holds (goal items: probably delivered)
    history: tuple[TeammateSnapshot, ...] = ()

    def probably_took(self, threshold: float = 0.5) -> list[int]:
        return sorted(i for i, p in self.took.items() if p >= threshold)


# --- sub-goals and uncertain variables -------------------------------------------------------------------
@dataclass(frozen=True)
class SubgoalBelief:
    predicate: GoalPredicate
    target_name: str
    done: tuple[int, ...]  # seen in place
    held_by_me: tuple[int, ...]
    held_by_others: tuple[tuple[int, str], ...]  # (item id, teammate): seen or reported held
    probably_done: tuple[int, ...]  # a teammate held it and put it down since (probably delivered)
    candidates: tuple[int, ...]  # known, unheld, not in place (may have been taken since: see location())

    @property
    def item(self) -> str:
        return self.predicate.item

    @property
    def missing(self) -> int:
        """Units nobody is known to have found: still to be searched for."""
        have = len(self.done) + len(self.held_by_me) + len(self.held_by_others) + len(self.probably_done)
        return max(0, self.predicate.count - have)

    def unit_status(self) -> tuple[str, ...]:
        """One entry per required unit: "done", "probably done", "held by me", "held by <mate>", "missing"."""
        out = ["done"] * len(self.done) + ["probably done"] * len(self.probably_done)
        out += ["held by me"] * len(self.held_by_me) + [f"held by {who}" for _, who in self.held_by_others]
        out = out[: self.predicate.count]
        return tuple(out + ["missing"] * (self.predicate.count - len(out)))


def binary_entropy(p: float) -> float:
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


@dataclass(frozen=True)
class UncertainVariable:
    """A binary fact the agent is unsure about, e.g. ``<apple> is in the kitchen``."""

    kind: str  # "item_in_room" | "container_has_needed" | "teammate_took"
    text: str
    probability: float
    entropy: float  # bits
    impact: float  # goal units depending on it x metres of travel it could save
    item: str = ""  # goal item name (empty for containers)
    object_id: int = -1  # the room, container or item id
    teammate: str = ""

    def sort_key(self) -> tuple:
        return (-round(self.entropy, ENTROPY_SORT_DECIMALS), -self.impact, self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "p": round(self.probability, 4),
            "entropy": round(self.entropy, 4),
            "impact": round(self.impact, 2),
        }


@dataclass
class _Instance:
    """A known (or reported) unheld instance of a needed item."""

    id: int
    name: str
    room: int
    since: float  # step of the latest evidence that it was there
    place: Place
    p_still: float = 1.0
    took: dict[str, float] = field(default_factory=dict)


# --- the belief state ------------------------------------------------------------------------------------
class BeliefState:
    """Beliefs derived from one agent's memory. Build a new one after every memory update (it is cheap): the
    evidence is collected at construction, but locations are computed lazily (and cached) from the memory.

    ``teammates`` names team members the memory may not mention yet; ``distance`` measures travel for the impact
    of uncertain variables (default: straight line; pass ``nav.path_length`` for path lengths).
    """

    def __init__(
        self,
        memory: AgentMemory,
        *,
        teammates: Iterable[str] = (),
        distance: Callable[[Vec2, Vec2], float] | None = None,
    ):
        self.memory = memory
        m = memory
        self._distance = distance or math.dist
        self._fp = m.floorplan
        self._rooms = {r.id: r for r in m.floorplan.rooms}
        self._room_ids = {r.name: r.id for r in m.floorplan.rooms}
        self._cwah = m.benchmark == Benchmark.CWAH
        # Message times (TDW-MAT frames) -> memory steps.
        self._ratio = 1.0 if self._cwah or m.frames <= 0 else m.step / m.frames
        self._horizon_steps = max(1.0, m.task.horizon * self._ratio)
        self._goal_targets = {p.target for p in m.task.predicates}
        bed = m.objects.get(m.task.predicates[0].target) if m.task.predicates else None
        self._goal_room = bed.room if (bed is not None and not self._cwah) else -1
        self._loc_cache: dict[str, dict[Place, float]] = {}
        self._unseen_cache: dict[str, dict[Place, float]] = {}
        self._names: dict[int, str] = {}  # item names from messages
        self._snaps = self._collect_snapshots(set(teammates) - {m.agent})
        self._resolve_holdings()
        self._subgoals = self._build_subgoals()
        self._instances = self._build_instances()
        self._team_explored = self._teammate_explored()
        self._checked = set(m.checked).union(*(s.checked for snaps in self._snaps.values() for s in snaps))
        # what a lost teammate saw still counts; what it may do next does not (memory.lost)
        self._teammates = {name: self._teammate_belief(name) for name in sorted(self._snaps) if name not in m.lost}

    # --- evidence ------------------------------------------------------------------------------------------
    def _collect_snapshots(self, extra: set[str]) -> dict[str, list[TeammateSnapshot]]:
        m = self.memory
        snaps: dict[str, list[TeammateSnapshot]] = {n: [] for n in extra | set(m.teammates)}
        for msg in m.messages:
            if msg.sender == m.agent:
                continue
            snaps.setdefault(msg.sender, [])
            rep = msg.payload
            if not isinstance(rep, TeamStatus):
                continue
            holding = tuple(h.id for h in rep.holding)
            self._names.update({h.id: h.name for h in rep.holding})
            seen = []
            for sight in rep.seen:
                self._names.setdefault(sight.id, sight.name)
                if sight.room in self._room_ids:
                    seen.append((sight.id, sight.name, self._room_ids[sight.room]))
            snaps[msg.sender].append(
                TeammateSnapshot(
                    msg.step * self._ratio,
                    "message",
                    self._room_ids.get(rep.room or "", -1),
                    holding,
                    tuple(self._room_ids[n] for n in rep.explored if n in self._room_ids),
                    tuple(seen),
                    rep.seen_complete,
                    tuple(c.id for c in rep.checked),
                )
            )
        for name, s in m.teammates.items():
            snaps.setdefault(name, []).append(
                TeammateSnapshot(float(s.step), "sighting", s.room, tuple(h for h in s.holding if h is not None))
            )
        for lst in snaps.values():
            lst.sort(key=lambda s: (s.step, s.source == "sighting"))
        return snaps

    def _resolve_holdings(self) -> None:
        """Per item a teammate held at some point: who holds it now, by the latest evidence (mine wins ties).

        Evidence: "held by <mate>" (its messages, my sightings of it, my memory's view of the item), "released
        by <mate>" (a later message or sighting of that mate without it), and my own last sighting of the item.
        """
        m = self.memory
        held: dict[int, dict[str, float]] = {}  # id -> mate -> latest step it was known to hold the item
        for mate, snaps in self._snaps.items():
            for s in snaps:
                for x in s.holding or ():
                    held.setdefault(x, {})[mate] = max(held.get(x, {}).get(mate, -1.0), s.step)
        for v in m.items():
            if v.held_by and v.held_by != m.agent and v.id in m.last_seen:
                step = float(m.last_seen[v.id])
                held.setdefault(v.id, {})[v.held_by] = max(held.get(v.id, {}).get(v.held_by, -1.0), step)
        self.reported_held: dict[int, str] = {}  # item id -> teammate holding it (newer than my own sighting)
        self.released: dict[int, str] = {}  # item id -> teammate that put it down since
        for x, by_mate in held.items():
            view = m.objects.get(x)
            if view is not None and view.kind != ObjectKind.ITEM:
                continue
            events: list[tuple[float, int, str, str]] = []  # (step, priority on ties, kind, mate)
            if x in m.last_seen:
                events.append((float(m.last_seen[x]), 2, "mine", ""))
            for mate, h in by_mate.items():
                events.append((h, 1, "held", mate))
                later = [s.step for s in self._snaps.get(mate, ()) if s.holding is not None and s.step > h]
                if later:
                    events.append((min(later), 0, "released", mate))
            _, _, kind, mate = max(events)
            if kind == "held" and not (view is not None and view.held_by == mate):
                self.reported_held[x] = mate  # my memory does not know yet
            elif kind == "released":
                self.released[x] = mate
        # Items inside a carrier go wherever the carrier went.
        moved_carriers = self.reported_held.keys() | self.released.keys()
        for v in m.items():
            if v.location != Relation.IN or v.holder not in moved_carriers or v.id in moved_carriers:
                continue
            if v.holder in self.reported_held:
                self.reported_held[v.id] = self.reported_held[v.holder]
            else:
                self.released[v.id] = self.released[v.holder]

    @property
    def message_step_ratio(self) -> float:
        """Memory steps per message clock unit (1 in C-WAH; TDW-MAT messages are stamped in frames)."""
        return self._ratio

    def item_name(self, item_id: int) -> str:
        """The name of an item I saw or a teammate mentioned ("" when unknown)."""
        return self._item_name(item_id)

    def _item_name(self, item_id: int) -> str:
        v = self.memory.objects.get(item_id)
        return v.name if v is not None else self._names.get(item_id, "")

    def _build_subgoals(self) -> list[SubgoalBelief]:
        m = self.memory
        out = []
        claimed: set[int] = set()
        for st in goal_status(m):
            name = st.predicate.item
            moved = self.reported_held.keys() | self.released.keys()
            others = {i: m.objects[i].held_by for i in st.held_by_others if i not in moved}
            for x, who in self.reported_held.items():
                if self._item_name(x) == name and x not in claimed:
                    others[x] = who
            probably_done = [
                x for x in self.released if self._item_name(x) == name and x not in claimed and x not in st.done
            ]
            done = [i for i in st.done if i not in self.reported_held]
            cands = [i for i in st.candidates if i not in moved]
            claimed.update(others, probably_done, done)
            out.append(
                SubgoalBelief(
                    st.predicate,
                    st.target_name,
                    tuple(done),
                    tuple(i for i in st.held_by_me if i not in self.reported_held),
                    tuple(sorted(others.items())),
                    tuple(sorted(probably_done)),
                    tuple(cands),
                )
            )
        return out

    def _build_instances(self) -> dict[str, list[_Instance]]:
        """Known unheld instances per needed name (mine and teammates' reports), with P(still there)."""
        m = self.memory
        out: dict[str, list[_Instance]] = {}
        reported_seen: dict[int, tuple[float, int]] = {}  # id -> (step, room) of the latest report
        for snaps in self._snaps.values():
            for s in snaps:
                for k, _n, room in s.seen:
                    if k not in reported_seen or reported_seen[k][0] < s.step:
                        reported_seen[k] = (s.step, room)
        for st in self._subgoals:
            lst = out.setdefault(st.item, [])
            for i in st.candidates:
                if any(x.id == i for x in lst):
                    continue
                v = m.objects[i]
                since = float(m.last_seen.get(i, 0))
                if i in reported_seen and reported_seen[i][0] > since and reported_seen[i][1] == v.room:
                    since = reported_seen[i][0]
                place = Place(PlaceKind.ITEM, i, v.room, v.name, v.position)
                lst.append(_Instance(i, v.name, v.room, since, place))
        moved = self.reported_held.keys() | self.released.keys()
        for k, (step, room) in sorted(reported_seen.items()):
            name = self._names.get(k, "")
            if name not in out or k in m.objects or k in moved:
                continue
            # I was in that room after the report and saw every part of it without seeing the item: it is gone.
            if m.last_visit(room) > step and m.is_explored(room):
                continue
            place = self._room_place(room)
            out[name].append(_Instance(k, name, room, step, place))
        for lst in out.values():
            for inst in lst:
                self._take_chances(inst)
        return out

    def _take_chances(self, inst: _Instance) -> None:
        elapsed = max(0.0, self.memory.step - inst.since)
        base = P_TAKE_UNOBSERVED * min(1.0, elapsed / (TAKE_TIME_SCALE * self._horizon_steps))
        p_still = 1.0
        for mate, snaps in self._snaps.items():
            visited = any(s.room == inst.room and s.step > inst.since for s in snaps)
            p = P_TAKE_AFTER_VISIT if visited else base
            if p > 0:
                inst.took[mate] = p
                p_still *= 1.0 - p
        inst.p_still = p_still

    def _teammate_explored(self) -> dict[int, float]:
        """Room -> factor left on its open part by teammates' reports newer than my own last visit."""
        m = self.memory
        out: dict[int, float] = {}
        for snaps in self._snaps.values():
            for s in snaps:
                if s.source != "message":
                    continue
                rooms = set(s.explored)
                if self._cwah and s.room >= 0:
                    rooms.add(s.room)  # entering a C-WAH room shows all of it
                factor = TEAMMATE_EXPLORED_FACTOR if s.seen_complete else TEAMMATE_EXPLORED_TRUNCATED_FACTOR
                for r in rooms:
                    if m.last_visit(r) > s.step and m.is_explored(r):
                        continue
                    out[r] = min(out.get(r, 1.0), factor)
        return out

    def _teammate_belief(self, name: str) -> TeammateBelief:
        m = self.memory
        snaps = self._snaps.get(name, [])
        sighting = m.teammates.get(name)
        messages = [s for s in snaps if s.source == "message"]
        located = [s for s in snaps if s.room >= 0]
        latest = located[-1] if located else None
        position = None
        if latest is not None:
            position = (
                sighting.position if latest.source == "sighting" and sighting else self._fp.room_center(latest.room)
            )
        explored: set[int] = set()
        for s in snaps:
            explored.update(s.explored)
            if self._cwah and s.room >= 0:
                explored.add(s.room)
        holding = tuple(sorted(x for x, who in self.reported_held.items() if who == name))
        seen_held = tuple(
            sorted(v.id for v in m.items() if v.held_by == name and v.id not in self.reported_held | self.released)
        )
        took = dict.fromkeys(holding + seen_held, 1.0)
        for lst in self._instances.values():
            for inst in lst:
                if name in inst.took:
                    took[inst.id] = inst.took[name]
        return TeammateBelief(
            name,
            sighting.step if sighting else None,
            sighting.room if sighting else None,
            messages[-1].step if messages else None,
            latest.room if latest else -1,
            position,
            tuple(sorted(set(holding + seen_held))),
            frozenset(explored),
            took,
            tuple(sorted(x for x, who in self.released.items() if who == name)),
            tuple(snaps),
        )

    # --- rooms and containers (one place to ask) -----------------------------------------------------------
    def coverage(self, room_id: int) -> float:
        """Share of the room I have seen (C-WAH: 0 or 1; TDW-MAT: heading sectors in view / 24)."""
        return min(1.0, len(self.memory.room_coverage.get(room_id, ())) / FULL_TURN_BINS)

    def explored_rooms(self) -> list[int]:
        return [r for r in self._rooms if self.memory.is_explored(r)]

    def unexplored_rooms(self) -> list[int]:
        """Rooms not fully seen yet (including partly explored ones)."""
        return self.memory.unexplored_rooms()

    def partly_explored_rooms(self) -> list[int]:
        return [r for r in self._rooms if self.memory.is_partly_explored(r) and not self.memory.is_explored(r)]

    def checked_containers(self) -> list[int]:
        """Containers I or a teammate (by its status reports) searched."""
        return sorted(self._checked)

    def unchecked_containers(self) -> list[ObjectView]:
        """Closed containers I know of that nobody in the team has searched yet."""
        return sorted((c for c in self.memory.unchecked_containers() if c.id not in self._checked), key=lambda v: v.id)

    def teammate_explored_rooms(self) -> dict[int, float]:
        """Rooms teammates reported seeing after my last visit -> weight factor left on their open part."""
        return dict(self._team_explored)

    @property
    def places(self) -> list[Place]:
        """Where to search: known instances of needed items, rooms not fully seen, unchecked containers."""
        out = [
            inst.place
            for name in self.needed_items()
            for inst in self._instances.get(name, ())
            if inst.place.kind == PlaceKind.ITEM
        ]
        out += [self._room_place(r) for r in self.unexplored_rooms()]
        out += [self._container_place(c) for c in self._search_containers()]
        return list(dict.fromkeys(out))

    def _room_place(self, room_id: int) -> Place:
        return Place(PlaceKind.ROOM, room_id, room_id, self._rooms[room_id].name, self._fp.room_center(room_id))

    @staticmethod
    def _container_place(c: ObjectView) -> Place:
        return Place(PlaceKind.CONTAINER, c.id, c.room, c.name, c.position)

    def _search_containers(self) -> list[ObjectView]:
        """Unchecked closed containers that may hold a missing goal item (goal targets would count as done)."""
        return [c for c in self.unchecked_containers() if c.id not in self._goal_targets]

    # --- goals -------------------------------------------------------------------------------------------
    def subgoals(self) -> list[SubgoalBelief]:
        return list(self._subgoals)

    def missing(self, item_name: str) -> int:
        """Units of ``item_name`` nobody is known to have found (0 for items the task does not need)."""
        return sum(st.missing for st in self._subgoals if st.item == item_name)

    def needed_items(self) -> list[str]:
        """Goal item names with units still missing."""
        return sorted({st.item for st in self._subgoals if st.missing > 0})

    # --- locations ---------------------------------------------------------------------------------------
    def known_instances(self, item_name: str) -> dict[int, float]:
        """Known unheld instances (mine and reported) -> probability that each is still where it was seen."""
        return {inst.id: inst.p_still for inst in self._instances.get(item_name, ())}

    def known_instance_places(self, item_name: str) -> list[tuple[Place, float]]:
        """Known unheld instances as places (a reported one: the centre of the room it was reported in), each with
        the probability that it is still there."""
        return [(inst.place, inst.p_still) for inst in self._instances.get(item_name, ())]

    def hidden_share(self, item_name: str, room_id: int) -> float:
        """Of the weight :meth:`unseen_location` gives a room's place, the share inside its closed containers
        (C-WAH: a room nobody explored has containers I do not know yet; 0 in TDW-MAT and in explored rooms)."""
        if not self._cwah or self.coverage(room_id) >= 1.0:
            return 0.0
        cat = self.memory.item_category(item_name, goal=True)
        q = in_container_chance(cat, self._rooms[room_id].name)
        open_part = (1.0 - q) * self._team_explored.get(room_id, 1.0)
        return q / (open_part + q) if open_part + q > 0 else 0.0

    def unseen_location(self, item_name: str) -> dict[Place, float]:
        """Where an instance nobody has seen yet may be: sums to 1, or ``{NOWHERE: 1.0}``."""
        if item_name in self._unseen_cache:
            return self._unseen_cache[item_name]
        m = self.memory
        needed = item_name in m.task.needed_names()
        cat = m.item_category(item_name, goal=needed)
        by_room: dict[int, list[ObjectView]] = {}
        for c in m.objects.values():
            if c.kind == ObjectKind.CONTAINER and c.id not in self._goal_targets:
                by_room.setdefault(c.room, []).append(c)
        weights: dict[Place, float] = {}
        real = 0.0  # weight that is not just the seen-empty epsilon
        for rid, room in self._rooms.items():
            pi = room_weight(cat, room.name) * (GOAL_ROOM_FACTOR if rid == self._goal_room else 1.0)
            q = in_container_chance(cat, room.name) if self._cwah else 0.0
            cover = self.coverage(rid)
            # Teammates' status messages only mention needed items: their reports say nothing about others.
            unseen = (1.0 - cover) * (self._team_explored.get(rid, 1.0) if needed else 1.0)
            w_room = pi * (1.0 - q) * (unseen + cover * SEEN_EMPTY_EPS)
            real += pi * (1.0 - q) * unseen
            if q > 0:
                if cover >= 1.0:
                    containers = sorted(by_room.get(rid, []), key=lambda v: v.id)
                    total = sum(container_weight(cat, c.name) for c in containers)
                    for c in containers:
                        share = pi * q * container_weight(cat, c.name) / total
                        if c.id not in self._checked and not c.is_open:
                            weights[self._container_place(c)] = share
                            real += share
                    if total <= 0:
                        w_room += pi * q * SEEN_EMPTY_EPS
                    else:
                        checked = sum(
                            container_weight(cat, c.name) for c in containers if c.id in self._checked or c.is_open
                        )
                        w_room += pi * q * checked / total * SEEN_EMPTY_EPS
                else:
                    w_room += pi * q  # its containers are not known yet
                    real += pi * q
            if w_room > 0:
                weights[self._room_place(rid)] = w_room
        if real <= 0:
            out = {NOWHERE: 1.0}
        else:
            self._weigh_hints(item_name, weights)
            total = sum(weights.values())
            out = {p: w / total for p, w in weights.items()}
        self._unseen_cache[item_name] = out
        return out

    def _weigh_hints(self, item_name: str, weights: dict[Place, float]) -> None:
        """A person said items called ``item_name`` are in or on some fixtures: the place each one stands for -- a
        closed, unchecked container (or its room while the room's containers are not known), the unseen part of a
        surface's room -- weighs :data:`HINT_FACTOR` times more. A place searched since keeps its small weight:
        the word was wrong, or the item has gone."""
        for fixture in sorted(self.memory.hints.get(item_name, ())):
            view = self.memory.objects.get(fixture)
            if view is None:
                continue
            if view.kind == ObjectKind.CONTAINER and (view.id in self._checked or view.is_open):
                continue  # searched: the word was wrong, or the item has gone
            place = self._container_place(view) if view.kind == ObjectKind.CONTAINER else None
            if place not in weights and view.room in self._rooms:  # a room not seen whole holds its containers
                if self.coverage(view.room) >= 1.0 and view.kind != ObjectKind.CONTAINER:
                    continue  # the surface's room is seen whole: the thing is not on it
                place = self._room_place(view.room)
            if place in weights:
                weights[place] *= HINT_FACTOR

    def nowhere_left(self, item_name: str) -> bool:
        """True when every place an unseen instance could be has been searched."""
        return NOWHERE in self.unseen_location(item_name)

    def location(self, item_name: str) -> dict[Place, float]:
        """Where the next still-missing instance of ``item_name`` may be (sums to 1).

        Known instances share the probability that at least one of them is still there; the rest follows
        :meth:`unseen_location`. ``{}`` when no unit is missing; ``{NOWHERE: 1.0}`` when nothing is known and
        everything has been searched. Items the task does not need are treated as one wanted unit.
        """
        if item_name in self._loc_cache:
            return self._loc_cache[item_name]
        needed = any(st.item == item_name for st in self._subgoals)
        instances = self._instances.get(item_name, [])
        if not needed:
            instances = [
                _Instance(v.id, v.name, v.room, float(self.memory.last_seen.get(v.id, 0)), self._item_place(v))
                for v in self.memory.items()
                if v.name == item_name and not v.held_by and v.id not in self.reported_held
            ]
            for inst in instances:
                self._take_chances(inst)
        elif self.missing(item_name) == 0:
            self._loc_cache[item_name] = {}
            return {}
        unseen = self.unseen_location(item_name)
        live = [inst for inst in instances if inst.p_still > 0]
        if not live:
            out = dict(unseen)
        else:
            # At least one known instance is still there, else the next one is an unseen one.
            p_none = 0.0 if NOWHERE in unseen else math.prod(1.0 - inst.p_still for inst in live)
            total_still = sum(inst.p_still for inst in live)
            out = {}
            for inst in live:
                out[inst.place] = out.get(inst.place, 0.0) + (1.0 - p_none) * inst.p_still / total_still
            if p_none > 0:
                for place, p in unseen.items():
                    out[place] = out.get(place, 0.0) + p_none * p
        self._loc_cache[item_name] = out
        return out

    @staticmethod
    def _item_place(v: ObjectView) -> Place:
        return Place(PlaceKind.ITEM, v.id, v.room, v.name, v.position)

    def p_in_room(self, item_name: str, room_id: int) -> float:
        return sum(p for place, p in self.location(item_name).items() if place.room == room_id)

    def p_in_container(self, item_name: str, container_id: int) -> float:
        """Mass on the container itself plus known instances last seen inside it."""
        objects = self.memory.objects
        total = 0.0
        for place, p in self.location(item_name).items():
            if place.kind == PlaceKind.CONTAINER and place.id == container_id:
                total += p
            elif place.kind == PlaceKind.ITEM:
                v = objects.get(place.id)
                if v is not None and v.location == Relation.IN and v.holder == container_id:
                    total += p
        return total

    def entropy(self, item_name: str) -> float:
        """Shannon entropy (bits) of :meth:`location`."""
        return -sum(p * math.log2(p) for p in self.location(item_name).values() if p > 0)

    # --- teammates ---------------------------------------------------------------------------------------
    def teammate(self, name: str) -> TeammateBelief:
        """What I believe about ``name`` (an empty belief for a teammate I know nothing about)."""
        return self._teammates.get(name) or TeammateBelief(name)

    def teammates(self) -> dict[str, TeammateBelief]:
        return dict(self._teammates)

    # --- what to branch on -------------------------------------------------------------------------------
    def uncertain_variables(self) -> list[UncertainVariable]:
        """Binary facts worth branching on, most uncertain first (entropy in 0.01-bit buckets), then by impact
        (goal units depending on the fact x straight-line or path metres from me to the place it is about)."""
        m = self.memory
        dist = self._distance
        out: list[UncertainVariable] = []

        def add(kind: str, text: str, p: float, impact: float, **kw: Any) -> None:
            if MIN_VARIABLE_P <= p <= 1.0 - MIN_VARIABLE_P:
                out.append(UncertainVariable(kind, text, p, binary_entropy(p), impact, **kw))

        expected_unseen: dict[str, float] = {}
        for name in self.needed_items():
            units = self.missing(name)
            for rid, room in self._rooms.items():
                p = self.p_in_room(name, rid)
                travel = dist(m.position, self._fp.room_center(rid))
                add("item_in_room", f"<{name}> is in the {room.name}", p, units * travel, item=name, object_id=rid)
            known = sum(inst.p_still for inst in self._instances.get(name, ()))
            if not self.nowhere_left(name):
                expected_unseen[name] = max(0.0, units - known)
            for inst in self._instances.get(name, ()):
                travel = dist(m.position, inst.place.position)
                for mate, p in sorted(inst.took.items()):
                    text = f"{mate} already took <{inst.name}> ({inst.id})"
                    add("teammate_took", text, p, travel, item=name, object_id=inst.id, teammate=mate)
        for c in self._search_containers():
            place = self._container_place(c)
            p_empty, units = 1.0, 0.0
            for name, n in expected_unseen.items():
                u = self.unseen_location(name).get(place, 0.0)
                if u > 0 and n > 0:
                    p_empty *= (1.0 - u) ** n
                    units += n
            travel = dist(m.position, c.position)
            text = f"<{c.name}> ({c.id}) contains a needed item"
            add("container_has_needed", text, 1.0 - p_empty, units * travel, object_id=c.id)
        out.sort(key=UncertainVariable.sort_key)
        return out

    # --- summaries ---------------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """A JSON-ready digest for rationales and logs."""
        return {
            "subgoals": {st.item: list(st.unit_status()) for st in self._subgoals},
            "location": {
                name: {p.text(): round(v, 3) for p, v in sorted(self.location(name).items(), key=lambda kv: -kv[1])[:5]}
                for name in self.needed_items()
            },
            "teammates": {
                n: {"room": t.room, "holding": list(t.holding), "explored": sorted(t.explored_rooms)}
                for n, t in self._teammates.items()
            },
        }
