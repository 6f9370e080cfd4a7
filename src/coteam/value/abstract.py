"""Abstract models of the two benchmarks: the simulator's rule book in miniature, for planning by simulation.

Shared by every symbolic planner: the ``mhp`` baseline searches them with UCT, the team value model
(:mod:`coteam.value.team`) rolls them out for a whole team. A model holds a root state built from one agent's
memory, samples *particles* (a guess of where every still-missing goal item is), lists the abstract actions
legal in a state, applies one (``step``: time passes, items are revealed, grabbed, delivered), and has a
rule-based default policy (the ``rhp`` rules) to complete a trajectory.

* :class:`CwahModel`: walk (steps of ``cwah_step_m``), open, grab, put; two hands; one goal target per item.
* :class:`TdwModel`: frame-costed moves, looking around, grasps, a carrier of capacity ``tdw_carrier_capacity``,
  transport to the bed within a time budget.

Things no goal names are options too (a robot can pick anything up): grabbing one has no abstract action (it
can only waste time), and one already in hand is :data:`JUNK`, which takes a hand until it is set down at a goal
place (C-WAH, with the next put) or at the bed (TDW-MAT, with the next transport), and counts nothing there.

A state mixes the world (what is where, what is still wanted) with *one* robot (its position, clock and hands).
The robot's fields are named by the model's ``ROBOT_FIELDS``: a team simulation swaps each robot's fields in
before stepping it (``robot`` / ``put_robot``), so the same transitions serve one robot or a team.

Particles come either from the models' own category priors over the places the agent has not searched
(``sample``, what ``mhp`` uses) or from a :class:`~coteam.belief.BeliefState` (``sample_belief``, which also
knows teammates' reports, known instances that may have been taken and the revisit of seen-empty places).
Rooted in a belief (``rebase``), the default policy searches where the most goal units per step are expected
(``search_weights``) rather than at the nearest place (the ``rhp`` rule ``mhp`` keeps). A belief particle
carries the binary *facts* it makes true (``("item_in_room", name, room)``,
``("container_has_needed", container)``, ``("teammate_took", item)``) so scenarios can condition on them.

The robot's constants come from the episode's :class:`~coteam.domain.physics.Physics`; the modelling choices are
:class:`ModelChoices` (the ``mhp`` config inherits them as its switches). This module imports
neither the simulator nor any method.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from coteam.agent.goals import goal_status
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import DecisionContext
from coteam.belief import BeliefState, Place, PlaceKind
from coteam.domain.actions import Verb
from coteam.domain.geometry import FULL_TURN_BINS
from coteam.domain.navigation import NavGrid
from coteam.domain.physics import Physics
from coteam.domain.priors import (
    GOAL_ROOM_FACTOR,
    container_weight,
    in_container_chance,
    item_category,
    room_weight,
)
from coteam.domain.world import ObjectKind, Relation, Vec2

UNREACHABLE_M = 1000.0  # path length used for places the grid cannot reach (keeps every return finite)
TDW_DELIVER_BEFORE_END = 700  # frames: the rule-based policy delivers what it holds when this little time is left
TDW_NO_CONTAINERS_BEFORE_END = 1400  # frames: ... and stops fetching carriers
TDW_DELIVER_SLACK = 400  # frames: rooted in a belief, it delivers when its trip to the bed + this is all that is left

SEARCH_OVERHEAD_STEPS = 3.0  # C-WAH: steps a search costs beyond the walk (opening, looking), for the rate
SEARCH_FLOOR = 1e-3  # expected units of a place the belief gives nothing: ties go to the nearer place
JUNK = ""  # in a robot's hands: a thing no goal wants (it takes a hand until set down; delivering it counts nothing)

Key = tuple  # an abstract action: (verb, argument)
Fact = tuple  # a binary fact a belief particle makes true (see the module docstring)


class ModelChoices(BaseModel):
    """The abstract models' modelling choices (not the robot's physics), with their defaults. The ``mhp`` method's
    config inherits them as switches; the team value model uses the defaults."""

    model_config = ConfigDict(frozen=True)

    cwah_action_steps: float = Field(1.0, ge=0, description="one open, grab or put")
    cwah_item_value: float = Field(30.0, ge=0, description="steps one delivered item is worth in a cut-off trajectory")
    cwah_search_extra_steps: float = Field(
        3.0, ge=0, description="finding an item in an unseen room's (unknown) containers"
    )
    tdw_reach_m: float = Field(1.2, ge=0, description="grasp navigation stops this close")
    tdw_lane_detour: float = Field(
        1.45, ge=0, description="4-connected lanes and their turns, per metre of 8-connected path"
    )
    tdw_turns_per_trip_deg: float = Field(
        45.0, ge=0, description="heading changes of one navigation beyond the per-metre share"
    )
    tdw_face_deg: float = Field(45.0, ge=0, description="turning to face an object before grasping")
    tdw_item_value: float = Field(400.0, ge=0, description="frames one delivered item is worth")
    tdw_budget_frames: float = Field(
        3000.0, ge=0, description="a simulated trajectory is scored on what it delivers in this time"
    )
    tdw_late_discount: float = Field(
        0.3, ge=0, description="a delivery at the end of the budget is worth this much less"
    )
    tdw_hidden_extra_m: float = Field(
        2.0, ge=0, description="an item revealed in a room is this far from its centre (on average)"
    )
    tdw_goto_reveal: float = Field(
        0.4, ge=0, description="chance that walking into a room already shows a given item there"
    )
    tdw_carrier_capacity: int = Field(3, ge=0, description="capacity of a carried container in the abstract model")
    prior_strength: float = Field(
        1.0, ge=0, description="prior weights are category prior ** strength: 1 = priors, 0 = uniform"
    )


MODEL_CHOICES = ModelChoices()


# --- cost model ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostModel:
    """Constants of the abstract model: the robot's from its physics, the modelling choices from
    :class:`ModelChoices` (e.g. the ``mhp`` config, which inherits them).

    Time costs come from the episode's :class:`~coteam.domain.physics.Physics`; the TDW-MAT navigation overheads
    (lane detour, turns per trip) were fitted to the frames the lane-following skill actually takes.
    """

    # The robot itself: filled from the episode's Physics by from_physics.
    cwah_step_m: float  # metres walked per C-WAH step
    cwah_reach_m: float  # open / grab / put from this close
    tdw_forward_m: float
    tdw_forward_frames: float
    tdw_turn_deg: float
    tdw_turn_frames: float
    tdw_grasp_frames: float
    tdw_put_in_frames: float
    tdw_drop_frames: float
    # The planner's own modelling choices (ModelChoices).
    cwah_action_steps: float
    cwah_item_value: float
    cwah_search_extra_steps: float
    tdw_reach_m: float
    tdw_lane_detour: float
    tdw_turns_per_trip_deg: float
    tdw_face_deg: float
    tdw_item_value: float
    tdw_budget_frames: float
    tdw_late_discount: float
    tdw_hidden_extra_m: float
    tdw_goto_reveal: float
    tdw_carrier_capacity: int
    prior_strength: float

    @classmethod
    def from_physics(cls, physics: Physics, choices: ModelChoices = MODEL_CHOICES) -> CostModel:
        """The robot's own constants from ``physics``, the modelling choices from ``choices`` (a
        :class:`ModelChoices`, or a config that inherits it)."""
        return cls(
            cwah_step_m=physics.cwah_walk_step_m,
            cwah_reach_m=physics.cwah_reach_m,
            tdw_forward_m=physics.tdw_forward_m,
            tdw_forward_frames=float(physics.tdw_frames["move_forward"]),
            tdw_turn_deg=float(physics.tdw_turn_deg),
            tdw_turn_frames=float(physics.tdw_frames["turn_left"]),
            tdw_grasp_frames=float(physics.tdw_frames["grasp"]),
            tdw_put_in_frames=float(physics.tdw_frames["put_in"]),
            tdw_drop_frames=float(physics.tdw_frames["drop"]),
            **{name: getattr(choices, name) for name in ModelChoices.model_fields},
        )

    def cwah_walk(self, metres: float, reach: float | None = None) -> float:
        r = self.cwah_reach_m if reach is None else reach
        if metres <= r:
            return 0.0
        return float(math.ceil((metres - r) / self.cwah_step_m - 1e-9))

    def tdw_move(self, metres: float) -> float:
        if metres <= 1e-9:
            return 0.0
        forward = metres * self.tdw_lane_detour / self.tdw_forward_m * self.tdw_forward_frames
        return forward + self.tdw_turns_per_trip_deg / self.tdw_turn_deg * self.tdw_turn_frames


# --- geometry --------------------------------------------------------------------------------------------
class Geometry:
    """Cached path lengths (metres) between positions, and room entry points (C-WAH explore)."""

    def __init__(self, nav: NavGrid):
        self.nav = nav
        self.cell_size = nav.floorplan.cell_size
        self._cells: dict[Vec2, tuple[int, int]] = {}
        self._dist: dict[tuple, float] = {}
        self._pairs: dict[tuple[Vec2, Vec2], float] = {}  # positions -> path length (rollouts ask the same pairs)
        self._entry: dict[tuple, tuple[float, Vec2]] = {}
        self._room_cells: dict[int, list[tuple[int, int]]] = {}
        fp = nav.floorplan
        for room in fp.rooms:
            self._room_cells[room.id] = [cell for cell in room.cells() if nav.is_free(cell)]

    def cell(self, pos: Vec2) -> tuple[int, int]:
        c = self._cells.get(pos)
        if c is None:
            c = self._cells[pos] = self.nav.nearest_free(pos)
        return c

    def dist(self, a: Vec2, b: Vec2) -> float:
        d = self._pairs.get((a, b))
        if d is not None:
            return d
        d = self._pairs[(a, b)] = self._cell_dist(a, b)
        return d

    def _cell_dist(self, a: Vec2, b: Vec2) -> float:
        ca, cb = self.cell(a), self.cell(b)
        if ca == cb:
            return math.dist(a, b)
        key = (ca, cb) if ca <= cb else (cb, ca)
        d = self._dist.get(key)
        if d is None:
            cells = self.nav.cell_distance(key[0], key[1])
            # Rounded: summed from either end, a path's length can differ in its last digit (ties stay ties).
            d = self._dist[key] = UNREACHABLE_M if cells is None else round(cells * self.cell_size, 9)
        return d

    def entry(self, pos: Vec2, room_id: int) -> tuple[float, Vec2]:
        """Distance to the closest cell of ``room_id`` and that cell's centre (where walking there enters it)."""
        start = self.cell(pos)
        key = (start, room_id)
        out = self._entry.get(key)
        if out is None:
            field = self.nav.distance_field(start)
            best, best_cell = math.inf, start
            for c in self._room_cells.get(room_id, ()):
                v = field.get(c)
                if v is not None and v < best:
                    best, best_cell = v, c
            metres = min(best * self.cell_size, UNREACHABLE_M)
            out = self._entry[key] = (metres, self.nav.floorplan.center_of(best_cell))
        return out


# --- abstract models -------------------------------------------------------------------------------------
def _units(
    belief: BeliefState, rng: random.Random, facts: set[Fact], skip: Callable[[Place], bool] = lambda place: False
) -> Iterator[tuple[str, Place, bool]]:
    """Every goal unit a belief particle places, as (item name, place, known): the known instances still there
    (each with its probability ``p_still``; one that is not adds the fact ``teammate_took``; ``skip`` leaves some
    out) and, for each unit still missing, a place drawn from ``unseen_location`` (``NOWHERE`` included)."""
    for name in belief.needed_items():
        present = 0
        for place, p in belief.known_instance_places(name):
            if skip(place):
                continue
            if rng.random() < p:
                facts.add(("item_in_room", name, place.room))
                present += 1
                yield name, place, True
            else:
                facts.add(("teammate_took", place.id))
        unseen = list(belief.unseen_location(name).items())
        for _ in range(max(0, belief.missing(name) - present)):
            yield name, _draw(unseen, rng), False


def goal_units(hands: Iterable[str]) -> int:
    """How many of the things in a robot's hands some goal wants (not :data:`JUNK`)."""
    return sum(1 for n in hands if n != JUNK)


def _draw(places: list[tuple[Any, float]], rng: random.Random) -> Any:
    """One place of a distribution given as (place, probability) pairs (the last one on rounding)."""
    x = rng.random()
    for place, p in places:
        x -= p
        if x <= 0:
            return place
    return places[-1][0]


def search_weights(belief: BeliefState) -> dict[Key, float]:
    """Expected goal units per search: ``("check", container)`` and ``("explore", room)`` (a room's unseen part)
    -> Σ over needed items of missing units × the belief's probability of that place."""
    weight: dict[Key, float] = {}
    for name in belief.needed_items():
        units = belief.missing(name)
        for place, p in belief.unseen_location(name).items():
            if place.kind in (PlaceKind.CONTAINER, PlaceKind.ROOM):
                key = ("check" if place.kind == PlaceKind.CONTAINER else "explore", place.id)
                weight[key] = weight.get(key, 0.0) + units * p
    return weight


def _nearest(dist: Callable[[Vec2, Vec2], float], pos: Vec2, places: Iterable[tuple[Any, Vec2]]) -> Any:
    """The key of the place nearest to ``pos`` among ``(key, position)`` pairs, at least one (the first of equals)."""
    pairs = iter(places)
    best, p = next(pairs)
    best_d = dist(pos, p)
    for key, p in pairs:
        d = dist(pos, p)
        if d < best_d:
            best, best_d = key, d
    return best


class _CwahState:
    """A C-WAH model state: copying it copies its lists and dicts (one level), the rest is immutable (written out
    field by field: rollouts copy a state per particle and action)."""

    __slots__ = ("delivered", "held", "hidden", "items", "opened", "pos", "t", "unchecked", "unexplored", "want")

    def copy(self) -> _CwahState:
        s = object.__new__(_CwahState)
        s.delivered, s.pos, s.t = self.delivered, self.pos, self.t
        s.held, s.hidden, s.items = self.held.copy(), self.hidden.copy(), self.items.copy()
        s.opened, s.unchecked, s.unexplored, s.want = (
            self.opened.copy(),
            self.unchecked.copy(),
            self.unexplored.copy(),
            self.want.copy(),
        )
        return s


class CwahModel:
    """C-WAH in miniature: walk (steps of ``cwah_step_m``), open, grab, put; two hands; one goal target."""

    ROBOT_FIELDS = ("pos", "t", "held")  # the robot's part of a state (team rollouts swap robots in and out)

    @staticmethod
    def robot(s: _CwahState) -> tuple:
        return (s.pos, s.t, s.held)

    @staticmethod
    def put_robot(s: _CwahState, robot: tuple) -> None:
        s.pos, s.t, s.held = robot

    def __init__(self, ctx: DecisionContext, geo: Geometry, cost: CostModel):
        m = ctx.memory
        self.geo, self.cost = geo, cost
        self.floorplan = m.floorplan
        # Expected goal units per search action; when set (by rebase), the default policy searches where the most
        # units per step are expected instead of the nearest place (the rhp rule mhp keeps).
        self.search_weight: dict[Key, float] | None = None
        self.target_of: dict[str, int] = {}
        self.target_pos: dict[int, Vec2] = {}
        self._walks: dict[tuple[Vec2, Vec2], float] = {}  # see _walk
        self._entries: dict[tuple[Vec2, int], tuple[int, Vec2]] = {}  # see _entry
        s = _CwahState()
        s.pos, s.t, s.delivered = m.position, 0.0, 0
        s.held, s.want, s.items, s.hidden, s.opened = [], {}, [], [], []
        unseen: dict[str, int] = {}
        for st in goal_status(m):
            name, tid = st.predicate.item, st.predicate.target
            self.target_of[name] = tid
            target = m.objects.get(tid)
            self.target_pos[tid] = target.position if target is not None else m.position
            is_open = target is not None and (target.kind != ObjectKind.CONTAINER or bool(target.is_open))
            if is_open and tid not in s.opened:
                s.opened.append(tid)
            s.held.extend([name] * len(st.held_by_me))
            s.want[name] = s.want.get(name, 0) + st.missing
            if st.missing > 0:
                for i in st.candidates:
                    s.items.append((i, name, m.objects[i].position))
                unseen[name] = unseen.get(name, 0) + max(0, st.missing - len(st.candidates))
        if any(v.name not in self.target_of for v in m.held_items()) and self.target_pos:
            s.held.extend([JUNK] * sum(1 for v in m.held_items() if v.name not in self.target_of))
            self.target_of[JUNK] = min(self.target_pos, key=lambda t: geo.dist(m.position, self.target_pos[t]))
        goal_targets = set(self.target_of.values())
        s.unchecked = [
            (c.id, c.position) for c in sorted(m.unchecked_containers(), key=lambda v: v.id) if c.id not in goal_targets
        ]
        s.unexplored = list(m.unexplored_rooms())
        self.root = s
        self.room_center = {r.id: m.floorplan.room_center(r.id) for r in m.floorplan.rooms}
        # Where each object I know of was last seen: a check or a grab walks there even when a particle's or a
        # teammate's action has left nothing to find.
        self.seen_at = {v.id: v.position for v in m.objects.values()}
        # Where each unseen unit may be: (cumulative weights, places) per category.
        self.unseen = [name for name in sorted(unseen) for _ in range(unseen[name])]
        names = {c.id: c.name for c in m.unchecked_containers()}
        self._places: dict[str, tuple[list[float], list[tuple]]] = {}
        self._category = {name: m.item_category(name) for name in unseen}
        for name in self.unseen:
            cat = self._category[name]
            if cat in self._places:
                continue
            places: list[tuple] = []
            weights: list[float] = []
            for cid, _pos in s.unchecked:
                places.append(("c", cid, False))
                weights.append(container_weight(cat, names[cid]) ** cost.prior_strength)
            for rid in s.unexplored:
                rname = m.room_name(rid)
                places.append(("r", rid, in_container_chance(cat, rname)))
                weights.append(room_weight(cat, rname) ** cost.prior_strength)
            cum, acc = [], 0.0
            for w in weights:
                acc += w
                cum.append(acc)
            self._places[cat] = (cum, places)

    # particles
    def sample(self, rng: random.Random) -> _CwahState:
        s = self.root.copy()
        for name in self.unseen:
            cum, places = self._places[self._category[name]]
            if not places:
                continue  # nowhere left to look: the unit is out of this agent's reach
            x = rng.random() * cum[-1]
            k = 0
            while cum[k] < x:
                k += 1
            kind, where, p_in = places[k]
            if kind == "c":
                s.hidden.append((name, "c", where))
            else:
                s.hidden.append((name, "r", where, rng.random() < p_in))
        return s

    def rebase(self, belief: BeliefState) -> None:
        """Root the model in ``belief`` for :meth:`sample_belief`: what is still wanted counts teammates' holdings
        and deliveries, containers a teammate searched are searched, and known instances (mine and reported) are
        drawn per particle."""
        r = self.root
        r.want = {name: belief.missing(name) for name in r.want}
        checked = set(belief.checked_containers())
        r.unchecked = [(k, p) for k, p in r.unchecked if k not in checked]
        r.items = []
        self.search_weight = search_weights(belief)

    def start(self, position: Vec2, held: list[str], carrier: bool = False) -> tuple:
        """A robot's fields at the start of a rollout (C-WAH has no carriers)."""
        return (position, 0.0, list(held))

    def sample_belief(self, belief: BeliefState, rng: random.Random) -> tuple[_CwahState, frozenset[Fact]]:
        """A particle drawn from ``belief`` (after :meth:`rebase`) and the facts it makes true.

        Each known instance is still there with its probability (else a teammate took it); each unit nobody has
        seen is put at a place drawn from :meth:`BeliefState.unseen_location`: a container, the open part or
        the unknown containers of an unexplored room (:meth:`BeliefState.hidden_share`), or a room already seen
        (a teammate brought it there since: the room is to be searched again in this particle).
        """
        s = self.root.copy()
        facts: set[Fact] = set()
        for name, place, known in _units(belief, rng, facts):
            if known:
                s.items.append((place.id, name, place.position))
            elif place.kind == PlaceKind.CONTAINER:
                s.hidden.append((name, "c", place.id))
                facts.update({("container_has_needed", place.id), ("item_in_room", name, place.room)})
            elif place.kind == PlaceKind.ROOM:
                if place.id not in self.root.unexplored and place.id not in s.unexplored:
                    s.unexplored.append(place.id)
                inside = rng.random() < belief.hidden_share(name, place.id)
                s.hidden.append((name, "r", place.id, inside))
                facts.add(("item_in_room", name, place.id))
        return s, frozenset(facts)

    # transitions
    def key_of(self, option: ActionOption) -> Key | None:
        """The abstract action of an option; None for options that can only waste time (walking into a room
        that was already explored, opening the goal container before there is anything to put in it)."""
        a = option.action
        if a.target is None:
            return None
        if a.verb == Verb.EXPLORE and a.target.id not in self.root.unexplored:
            return None
        if a.verb == Verb.CHECK and all(a.target.id != k for k, _ in self.root.unchecked):
            return None
        if a.verb == Verb.GRAB and a.target.name not in self.target_of:
            return None  # a thing no goal wants
        return (a.verb.value, a.target.id)

    def terminal(self, s: _CwahState) -> bool:
        return not s.held and not any(v > 0 for v in s.want.values())

    def stuck(self, s: _CwahState) -> bool:
        """Nothing this agent knows of is left to do or to search (the rest is up to its teammates)."""
        if s.held:
            return False
        if self.terminal(s):
            return True
        wanted = any(s.want.get(name, 0) > 0 for _, name, _ in s.items)
        return not wanted and not s.unchecked and not s.unexplored

    def legal(self, s: _CwahState) -> list[Key]:
        out: list[Key] = []
        if len(s.held) < 2:
            out += [("grab", k) for k, name, _ in s.items if s.want.get(name, 0) > 0]
            out += [("check", k) for k, _ in s.unchecked]
        out += [("explore", r) for r in s.unexplored]
        targets = []
        for name in s.held:
            t = self.target_of[name]
            if t not in targets:
                targets.append(t)
        out += [("put", t) for t in targets]
        return out

    def default(self, s: _CwahState) -> Key | None:
        """The ``rhp`` rules on the abstract state."""
        geo = self.geo
        free = len(s.held) < 2
        grabs = [(k, p) for k, name, p in s.items if s.want.get(name, 0) > 0] if free else []
        if s.held and (not free or not grabs):
            t = min({self.target_of[n] for n in s.held}, key=lambda t: geo.dist(s.pos, self.target_pos[t]))
            return ("put", t)
        if grabs:
            k, _ = min(grabs, key=lambda kp: geo.dist(s.pos, kp[1]))
            return ("grab", k)
        if self.search_weight is not None:
            return self._likeliest_search(s, free)
        best: Key | None = None
        best_d = math.inf
        if free:
            for k, p in s.unchecked:
                d = geo.dist(s.pos, p)
                if d < best_d:
                    best, best_d = ("check", k), d
        for r in s.unexplored:
            d = geo.entry(s.pos, r)[0]
            if d < best_d:
                best, best_d = ("explore", r), d
        return best

    def _likeliest_search(self, s: _CwahState, free: bool) -> Key | None:
        """The search with the most expected units per step (``search_weight`` / (steps + SEARCH_OVERHEAD_STEPS))."""
        weight = self.search_weight or {}
        best: Key | None = None
        best_rate = -math.inf
        if free:
            for k, p in s.unchecked:
                w = weight.get(("explore", k[1]) if isinstance(k, tuple) else ("check", k), 0.0)
                rate = (w + SEARCH_FLOOR) / (self._walk(s.pos, p) + SEARCH_OVERHEAD_STEPS)
                if rate > best_rate:
                    best, best_rate = ("check", k), rate
        for r in s.unexplored:
            steps = self._entry(s.pos, r)[0]
            rate = (weight.get(("explore", r), 0.0) + SEARCH_FLOOR) / (steps + SEARCH_OVERHEAD_STEPS)
            if rate > best_rate:
                best, best_rate = ("explore", r), rate
        return best

    def step(self, s: _CwahState, key: Key) -> None:
        verb, arg = key
        cost = self.cost
        if verb == "grab":
            for i, (k, name, p) in enumerate(s.items):
                if k == arg:
                    s.t += self._walk(s.pos, p) + cost.cwah_action_steps
                    s.pos = p
                    del s.items[i]
                    if s.want.get(name, 0) > 0 and len(s.held) < 2:
                        s.held.append(name)
                        s.want[name] -= 1
                    return
            p = self.seen_at.get(arg)  # a teammate took it first: the walk is wasted (the grab is not tried)
            if p is not None:
                s.t += self._walk(s.pos, p)
                s.pos = p
            return
        if verb == "check":
            for i, (k, p) in enumerate(s.unchecked):
                if k == arg:
                    virtual = isinstance(k, tuple)
                    s.t += self._walk(s.pos, p) + cost.cwah_action_steps
                    if virtual:
                        s.t += cost.cwah_search_extra_steps
                    s.pos = p
                    del s.unchecked[i]
                    self._reveal(s, lambda h, k=k: h[1] == "c" and h[2] == k, p)
                    return
            p = self.seen_at.get(arg, s.pos)  # e.g. opening the goal container: costs, reveals nothing
            s.t += self._walk(s.pos, p) + cost.cwah_action_steps
            s.pos = p
            if arg in self.target_pos and arg not in s.opened:
                s.opened.append(arg)
            return
        if verb == "explore":
            steps, entry = self._entry(s.pos, arg)
            s.t += steps
            s.pos = entry
            if arg in s.unexplored:
                s.unexplored.remove(arg)
                center = self.room_center[arg]
                inside = [h for h in s.hidden if h[1] == "r" and h[2] == arg and h[3]]
                if inside:
                    vkey = ("v", arg)
                    s.unchecked.append((vkey, center))
                    s.hidden = [h for h in s.hidden if not (h[1] == "r" and h[2] == arg and h[3])]
                    s.hidden += [(h[0], "c", vkey) for h in inside]
                self._reveal(s, lambda h: h[1] == "r" and h[2] == arg, center)
            return
        if verb == "put":
            p = self.target_pos[arg]
            mine = [n for n in s.held if n != JUNK and self.target_of[n] == arg]
            junk = s.held.count(JUNK)  # set down wherever the robot puts
            if not mine and not junk:
                return
            s.t += self._walk(s.pos, p) + cost.cwah_action_steps * (len(mine) + junk)
            if arg not in s.opened:
                s.t += cost.cwah_action_steps
                s.opened.append(arg)
            s.pos = p
            s.held = [n for n in s.held if n != JUNK and self.target_of[n] != arg]
            s.delivered += len(mine)

    def _walk(self, a: Vec2, b: Vec2) -> float:
        """Steps to walk from ``a`` to within reach of ``b`` (remembered: the rollouts walk between the same few
        places)."""
        steps = self._walks.get((a, b))
        if steps is None:
            steps = self._walks[(a, b)] = self.cost.cwah_walk(self.geo.dist(a, b))
        return steps

    def _entry(self, pos: Vec2, room: int) -> tuple[int, Vec2]:
        """Steps to walk from ``pos`` into ``room``, and where that enters it (remembered like :meth:`_walk`)."""
        out = self._entries.get((pos, room))
        if out is None:
            d, entry = self.geo.entry(pos, room)
            out = self._entries[(pos, room)] = (math.ceil(d / self.cost.cwah_step_m - 1e-9), entry)
        return out

    @staticmethod
    def _reveal(s: _CwahState, match, pos: Vec2) -> None:
        keep = []
        for h in s.hidden:
            if match(h):
                s.items.append((("h", h[0], len(s.items), pos), h[0], pos))
            else:
                keep.append(h)
        s.hidden = keep

    def value(self, s: _CwahState) -> float:
        v = self.cost.cwah_item_value
        return v * s.delivered + 0.5 * v * goal_units(s.held) - s.t


class _TdwState:
    """A TDW-MAT model state (copied like :class:`_CwahState`)."""

    __slots__ = (
        "carrier",
        "carriers",
        "cover",
        "dead",
        "delivered",
        "hand",
        "hidden",
        "items",
        "load",
        "pos",
        "room",
        "t",
        "want",
    )

    def copy(self) -> _TdwState:
        s = object.__new__(_TdwState)
        s.carrier, s.dead, s.delivered, s.load, s.pos, s.room, s.t = (
            self.carrier,
            self.dead,
            self.delivered,
            self.load,
            self.pos,
            self.room,
            self.t,
        )
        s.carriers, s.cover, s.hand = self.carriers.copy(), self.cover.copy(), self.hand.copy()
        s.hidden, s.items, s.want = self.hidden.copy(), self.items.copy(), self.want.copy()
        return s


class TdwModel:
    """TDW-MAT in miniature: frame-costed moves, looking around, grasps, a carrier of capacity 3, transport."""

    ROBOT_FIELDS = ("pos", "room", "t", "carrier", "load", "hand", "dead")  # the robot's part of a state

    @staticmethod
    def robot(s: _TdwState) -> tuple:
        return (s.pos, s.room, s.t, s.carrier, s.load, s.hand, s.dead)

    @staticmethod
    def put_robot(s: _TdwState, robot: tuple) -> None:
        s.pos, s.room, s.t, s.carrier, s.load, s.hand, s.dead = robot

    def __init__(self, ctx: DecisionContext, geo: Geometry, cost: CostModel):
        m = ctx.memory
        self.geo, self.cost = geo, cost
        self.floorplan = m.floorplan
        self.search_weight: dict[Key, float] | None = None  # see CwahModel
        self.left = m.task.horizon - m.frames
        self.budget = min(float(self.left), cost.tdw_budget_frames)
        bed_id = m.task.predicates[0].target
        bed = m.objects.get(bed_id)
        self.bed_pos: Vec2 = bed.position if bed is not None else m.position
        self.bed_room = bed.room if bed is not None else -1
        self.room_center = {r.id: m.floorplan.room_center(r.id) for r in m.floorplan.rooms}
        self._walks: dict[tuple[Vec2, Vec2], float] = {}  # see _walk
        self._approaches: dict[tuple[Vec2, Vec2, bool], float] = {}  # see _approach
        self._look_frames = 360.0 / cost.tdw_turn_deg * cost.tdw_turn_frames  # a look around a whole room
        self._face_frames = cost.tdw_face_deg / cost.tdw_turn_deg * cost.tdw_turn_frames  # turning to face an object
        self.seen_at = {v.id: (v.position, v.room) for v in m.objects.values()}  # see CwahModel
        self.carrier_ids = {v.id for v in m.items() if v.capacity > 0}
        s = _TdwState()
        s.pos, s.room, s.t, s.dead, s.delivered = m.position, m.room, 0.0, False, 0.0
        held = m.held_items()
        s.carrier = any(v.capacity > 0 for v in held)
        carrier_ids = {v.id for v in held if v.capacity > 0}
        s.load = sum(  # what it will deliver: things no goal wants take room, and count nothing
            1
            for v in m.items()
            if v.holder in carrier_ids and v.location == Relation.IN and v.name in m.task.needed_names()
        )
        wanted = m.task.needed_names()
        s.hand = [v.name if v.name in wanted else JUNK for v in held if v.capacity == 0]
        s.want, s.items, s.hidden = {}, [], []
        unseen: dict[str, int] = {}
        for st in goal_status(m):
            name = st.predicate.item
            s.want[name] = s.want.get(name, 0) + st.missing
            loose = [i for i in st.candidates if m.objects[i].location != Relation.IN]
            if st.missing > 0:
                for i in loose:
                    v = m.objects[i]
                    s.items.append((i, name, v.position, v.room))
            unseen[name] = unseen.get(name, 0) + max(0, st.missing - len(st.candidates))
        s.carriers = []
        for o in ctx.options:
            a = o.action
            if a.verb == Verb.GRAB and a.target is not None:
                v = m.objects[a.target.id]
                if v.capacity > 0:
                    s.carriers.append((v.id, v.position, v.room))
        s.cover = {r.id: len(m.room_coverage.get(r.id, ())) / FULL_TURN_BINS for r in m.floorplan.rooms}
        self.root = s
        self.unseen = [name for name in sorted(unseen) for _ in range(unseen[name])]
        cat = m.task.category or "misc"
        self._places: dict[str, tuple[list[float], list[int]]] = {}
        for name in self.unseen:
            c = item_category(name, cat) if cat == "misc" else cat
            if c in self._places:
                continue
            cum, places, acc = [], [], 0.0
            for r in m.floorplan.rooms:
                unseen_part = 1.0 - min(1.0, s.cover[r.id])
                if unseen_part <= 0:
                    continue
                w = room_weight(c, r.name) * (GOAL_ROOM_FACTOR if r.id == self.bed_room else 1.0)
                w = w**cost.prior_strength * unseen_part
                acc += w
                cum.append(acc)
                places.append(r.id)
            self._places[c] = (cum, places)
        self._cat = cat

    def sample(self, rng: random.Random) -> _TdwState:
        s = self.root.copy()
        for name in self.unseen:
            c = item_category(name, self._cat) if self._cat == "misc" else self._cat
            cum, places = self._places[c]
            if not places:
                continue
            x = rng.random() * cum[-1]
            k = 0
            while cum[k] < x:
                k += 1
            s.hidden.append((name, places[k], rng.random() < self.cost.tdw_goto_reveal))
        return s

    def rebase(self, belief: BeliefState) -> None:
        """Root the model in ``belief`` for :meth:`sample_belief` (what is still wanted counts teammates' holdings
        and deliveries; known loose instances are drawn per particle; the default policy searches by weight)."""
        self.root.want = {name: belief.missing(name) for name in self.root.want}
        self.root.items = []
        self.search_weight = search_weights(belief)

    def start(self, position: Vec2, held: list[str], carrier: bool = False) -> tuple:
        """A robot's fields at the start of a rollout."""
        room = self.floorplan.room_at(position)
        return (position, room.id if room is not None else -1, 0.0, carrier, 0, list(held), False)

    def sample_belief(self, belief: BeliefState, rng: random.Random) -> tuple[_TdwState, frozenset[Fact]]:
        """A particle drawn from ``belief`` (after :meth:`rebase`) and the facts it makes true: known loose
        instances are still there with their probability; each unseen unit is in a room drawn from
        :meth:`BeliefState.unseen_location` (a fully seen room is then looked at again in this particle)."""
        s = self.root.copy()
        facts: set[Fact] = set()
        objects = belief.memory.objects

        def in_carrier(place: Place) -> bool:  # inside a carriable container: it travels with it
            view = objects.get(place.id)
            return view is not None and view.location == Relation.IN

        for name, place, known in _units(belief, rng, facts, skip=in_carrier):
            if known:
                s.items.append((place.id, name, place.position, place.room))
            elif place.kind == PlaceKind.ROOM:
                if s.cover.get(place.id, 0.0) >= 1.0:
                    s.cover[place.id] = 0.5
                s.hidden.append((name, place.id, rng.random() < self.cost.tdw_goto_reveal))
                facts.add(("item_in_room", name, place.id))
        return s, frozenset(facts)

    def key_of(self, option: ActionOption) -> Key | None:
        a = option.action
        if a.verb == Verb.TRANSPORT:
            return ("transport", 0)
        if a.target is None:
            return None
        if a.verb in (Verb.EXPLORE, Verb.GOTO) and self.root.cover.get(a.target.id, 0.0) >= 1.0:
            return None  # looking around, or walking into, an explored room can only waste time
        if a.verb == Verb.GRAB and a.target.id in {c[0] for c in self.root.carriers}:
            return ("carrier", a.target.id)
        if a.verb == Verb.GRAB and a.target.name not in self.root.want and a.target.id not in self.carrier_ids:
            return None  # a thing no goal wants
        return (a.verb.value, a.target.id)

    def terminal(self, s: _TdwState) -> bool:
        return s.dead or (not s.hand and not s.load and not any(v > 0 for v in s.want.values()))

    def stuck(self, s: _TdwState) -> bool:
        """Nothing this agent knows of is left to deliver, grab or search (the rest is up to its teammates)."""
        if s.hand or s.load:
            return False
        if self.terminal(s):
            return True
        wanted = any(s.want.get(name, 0) > 0 for _, name, _, _ in s.items)
        return not wanted and all(c >= 1.0 for c in s.cover.values())

    def free_hands(self, s: _TdwState) -> int:
        return 2 - len(s.hand) - (1 if s.carrier else 0)

    def legal(self, s: _TdwState) -> list[Key]:
        out: list[Key] = []
        free = self.free_hands(s)
        if s.carrier and s.hand and s.load < self.cost.tdw_carrier_capacity:
            out.append(("put_in", 0))
        if s.hand or s.carrier:
            out.append(("transport", 0))
        if free > 0:
            out += [("grab", k) for k, name, _, _ in s.items if s.want.get(name, 0) > 0]
            if not s.carrier:
                out += [("carrier", k) for k, _, _ in s.carriers]
        if s.cover.get(s.room, 1.0) < 1.0:
            out.append(("explore", s.room))
        out += [("goto", r) for r, c in s.cover.items() if c < 1.0 and r != s.room]
        return out

    def default(self, s: _TdwState) -> Key | None:
        """The ``rhp`` rules on the abstract state."""
        dist, pos = self.geo.dist, s.pos
        left = self.left - s.t
        free = self.free_hands(s)
        holding = bool(s.hand) or s.carrier
        if s.carrier and s.hand and s.load < self.cost.tdw_carrier_capacity:
            return ("put_in", 0)
        if holding and (left < TDW_DELIVER_BEFORE_END or free == 0 or self._last_trip(s, left)):
            return ("transport", 0)
        if free > 0 and not s.carrier and s.carriers and left > TDW_NO_CONTAINERS_BEFORE_END:
            return ("carrier", _nearest(dist, pos, ((k, p) for k, p, _ in s.carriers)))
        if free > 0:
            want = s.want
            grabs = [(k, p) for k, name, p, _ in s.items if want.get(name, 0) > 0]
            if grabs:
                return ("grab", _nearest(dist, pos, grabs))
        if s.cover.get(s.room, 1.0) < 1.0:
            return ("explore", s.room)
        if self.search_weight is not None:
            best = self._likeliest_room(s)
            if best is not None:
                return best
        best: Key | None = None
        best_d = math.inf
        for r, c in s.cover.items():
            if c < 1.0 and r != s.room:
                d = dist(pos, self.room_center[r])
                if d < best_d:
                    best, best_d = ("goto", r), d
        if best is not None:
            return best
        if holding:
            return ("transport", 0)
        return None

    def _last_trip(self, s: _TdwState, left: float) -> bool:
        """Rooted in a belief: whether the time left is down to the trip to the bed plus ``TDW_DELIVER_SLACK`` (one
        more action), so that what the robot holds must go now. A far room needs more than the fixed
        ``TDW_DELIVER_BEFORE_END`` the rhp rule keeps; a robot still out there at the end delivers nothing."""
        if self.search_weight is None:
            return False
        trip = self._walk(s.pos, self.bed_pos)
        return left < trip + self.cost.tdw_drop_frames * (len(s.hand) + s.carrier) + TDW_DELIVER_SLACK

    def _likeliest_room(self, s: _TdwState) -> Key | None:
        """The room with the most expected units per frame (``search_weight`` of the room's unseen part / (frames
        to get there + a look around its unseen part)); the current room is looked around first (the rhp rule)."""
        weight = self.search_weight or {}
        look = self._look_frames
        best: Key | None = None
        best_rate = -math.inf
        for r, c in s.cover.items():
            if c >= 1.0:
                continue
            frames = look * (1.0 - c) + (0.0 if r == s.room else self._walk(s.pos, self.room_center[r]))
            rate = (weight.get(("explore", r), 0.0) + SEARCH_FLOOR) / frames
            if rate > best_rate:
                best, best_rate = ("explore" if r == s.room else "goto", r), rate
        return best

    def _walk(self, a: Vec2, b: Vec2) -> float:
        """Frames to walk from ``a`` to ``b`` (remembered: the rollouts walk between the same few places)."""
        frames = self._walks.get((a, b))
        if frames is None:
            frames = self._walks[(a, b)] = self.cost.tdw_move(self.geo.dist(a, b))
        return frames

    def _approach(self, a: Vec2, b: Vec2, hidden: bool = False) -> float:
        """Frames to walk from ``a`` to within reach of an object at ``b`` (``hidden``: an item revealed in a room,
        about ``tdw_hidden_extra_m`` further; remembered like :meth:`_walk`)."""
        frames = self._approaches.get((a, b, hidden))
        if frames is None:
            cost = self.cost
            d = self.geo.dist(a, b) + (cost.tdw_hidden_extra_m if hidden else 0.0)
            frames = self._approaches[(a, b, hidden)] = cost.tdw_move(max(0.0, d - cost.tdw_reach_m))
        return frames

    def step(self, s: _TdwState, key: Key) -> None:
        verb, arg = key
        cost, geo = self.cost, self.geo
        if verb == "goto":
            center = self.room_center[arg]
            s.t += self._walk(s.pos, center)
            s.pos, s.room = center, arg
            s.cover[arg] = max(s.cover.get(arg, 0.0), 0.3)
            self._reveal(s, arg, at_entry=True)
        elif verb == "explore":
            center = self.room_center[arg]
            if geo.dist(s.pos, center) > 1.0:
                s.t += self._walk(s.pos, center)
                s.pos = center
            # Looking around an already explored room is a wasted decision: at least one turn.
            turns = max(1.0, (1.0 - s.cover.get(arg, 0.0)) * 360.0 / cost.tdw_turn_deg)
            s.t += turns * cost.tdw_turn_frames
            s.cover[arg] = 1.0
            self._reveal(s, arg, at_entry=False)
        elif verb in ("grab", "carrier"):
            pool = s.items if verb == "grab" else s.carriers
            i = -1
            for j, entry in enumerate(pool):
                if entry[0] == arg:
                    i = j
                    break
            if i < 0:  # a teammate took it first: the walk there is wasted (the grasp is not tried)
                if arg in self.seen_at:
                    p, room = self.seen_at[arg]
                    s.t += self._approach(s.pos, p)
                    s.pos, s.room = p, room
            else:
                entry = pool.pop(i)
                p, room = entry[-2], entry[-1]
                s.t += self._approach(s.pos, p, isinstance(arg, tuple)) + self._face_frames + cost.tdw_grasp_frames
                s.pos, s.room = p, room
                if self.free_hands(s) > 0:
                    if verb == "carrier":
                        if not s.carrier:
                            s.carrier, s.load = True, 0
                    elif s.want.get(entry[1], 0) > 0:
                        s.hand.append(entry[1])
                        s.want[entry[1]] -= 1
        elif verb == "put_in":
            if s.carrier and s.hand and s.load < cost.tdw_carrier_capacity:
                if s.hand.pop() != JUNK:
                    s.load += 1
                s.t += cost.tdw_put_in_frames
        elif verb == "transport" and (s.hand or s.carrier):
            s.t += self._walk(s.pos, self.bed_pos) + cost.tdw_drop_frames * (len(s.hand) + (1 if s.carrier else 0))
            s.pos, s.room = self.bed_pos, self.bed_room
            if s.t <= self.budget:
                s.delivered += (goal_units(s.hand) + s.load) * (1.0 - cost.tdw_late_discount * s.t / self.budget)
            s.hand, s.carrier, s.load = [], False, 0
        if s.t >= self.budget:
            s.dead = True

    def _reveal(self, s: _TdwState, room: int, at_entry: bool) -> None:
        """The hidden units of ``room`` become items at its centre: all of them (a look around), or those a walk in
        already shows (``at_entry``)."""
        if not s.hidden:
            return
        keep = []
        center = self.room_center[room]
        for h in s.hidden:
            if h[1] == room and (h[2] or not at_entry):
                s.items.append((("h", h[0], len(s.items)), h[0], center, room))
            else:
                keep.append(h)
        s.hidden = keep

    def value(self, s: _TdwState) -> float:
        """What the trajectory achieves within the time budget; finishing everything early saves the rest."""
        v = self.cost.tdw_item_value
        if self.budget >= self.left or self.terminal(s):
            return v * s.delivered
        return v * (s.delivered + 0.5 * (1.0 - self.cost.tdw_late_discount) * (goal_units(s.hand) + s.load))
