"""Typed domain model shared by every reasoner, the simulator and the ROS adapters.

A :class:`Scene` is a complete, immutable episode definition (floor plan, objects, initial placements, agent
starts, task). A :class:`WorldState` is the mutable ground truth the simulator evolves; reasoners never see it
except through observations (the oracle is the one documented exception: it is given full observability).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any

Vec2 = tuple[float, float]

GOAL_RADIUS_M = 3.0  # TDW-MAT: an object within 3 m of the bed (and in its room) counts as transported
AGENT_NAMES = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi")
MAX_AGENTS = len(AGENT_NAMES)
HANDS = 2


class Benchmark(StrEnum):
    CWAH = "cwah"
    TDWMAT = "tdwmat"


class Relation(StrEnum):
    ON = "on"  # on a surface
    IN = "in"  # inside a container (a fixture, or a carriable container item in TDW-MAT)
    HELD = "held"  # in an agent's hand
    FLOOR = "floor"  # lying on the floor of a room at an explicit position
    NEAR = "near"  # goal relation only: not held, in the target's room, within the goal radius (TDW-MAT bed)


class ObjectKind(StrEnum):
    ROOM = "room"
    CONTAINER = "container"
    SURFACE = "surface"
    ITEM = "item"


def distance(a: Vec2, b: Vec2) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


@dataclass(frozen=True)
class Room:
    id: int
    name: str
    # Axis-aligned rectangle in grid cells: columns [x0, x1), rows [y0, y1); a polygonal room's bounding box.
    x0: int
    y0: int
    x1: int
    y1: int
    # A polygonal room (a world file's): its corners in grid units (cell (i, j) spans [i, i + 1) x [j, j + 1)); the
    # room holds the cells of its box whose centre is inside. Empty: the whole rectangle.
    polygon: tuple[Vec2, ...] = ()

    def contains_cell(self, cx: int, cy: int) -> bool:
        if not (self.x0 <= cx < self.x1 and self.y0 <= cy < self.y1):
            return False
        return not self.polygon or point_in_polygon((cx + 0.5, cy + 0.5), self.polygon)

    def cells(self) -> list[tuple[int, int]]:
        return [(x, y) for y in range(self.y0, self.y1) for x in range(self.x0, self.x1) if self.contains_cell(x, y)]


def point_in_polygon(point: Vec2, polygon: tuple[Vec2, ...]) -> bool:
    """Even-odd rule: whether ``point`` lies inside the closed ``polygon`` (corners in order, either direction)."""
    x, y = point
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, (*polygon[1:], polygon[0]), strict=True):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


@lru_cache(maxsize=256)
def _polygon_room_center(floorplan: FloorPlan, room: Room) -> tuple[int, int]:
    """The room's free cell nearest its corners' mean (the mean of an L-shaped room may lie outside it, and
    furniture may stand on it)."""
    mx = sum(p[0] for p in room.polygon) / len(room.polygon)
    my = sum(p[1] for p in room.polygon) / len(room.polygon)
    cells = [c for c in room.cells() if floorplan.is_free(*c)] or room.cells()
    if not cells:
        raise ValueError(f"room {room.name!r} holds no cell of the grid")
    return min(cells, key=lambda c: ((c[0] + 0.5 - mx) ** 2 + (c[1] + 0.5 - my) ** 2, c))


@dataclass(frozen=True)
class Container:
    """A fixed piece of furniture that holds items (fridge, dishwasher, cabinet)."""

    id: int
    name: str
    room: int
    position: Vec2
    capacity: int = 20
    openable: bool = True


@dataclass(frozen=True)
class Surface:
    """A fixed piece of furniture items are put on (coffeetable, kitchentable, bed)."""

    id: int
    name: str
    room: int
    position: Vec2


HANDLING_FACTS = ("verb", "item", "place", "robot", "held", "hands_in_use")  # what a handling constraint reads
HANDLED_VERBS = ("grab",)  # the primitives the handling limits are checked on


@dataclass(frozen=True)
class HandlingConstraint:
    """One limit of a home's handling: when every fact named in ``when`` has one of its values, the action fails
    with ``fails``. Facts (:data:`HANDLING_FACTS`): the ``verb``; the ``item``'s class; the ``place`` (the class of
    the fixture the item is in or on, '' elsewhere); the ``robot``; ``held``, a class of what its hands hold (any one
    of them); ``hands_in_use`` ("0", "1", "2")."""

    when: tuple[tuple[str, frozenset[str]], ...]
    fails: str

    def holds(self, facts: Mapping[str, str | tuple[str, ...]]) -> bool:
        for fact, allowed in self.when:
            have = facts[fact]
            if not (allowed.intersection(have) if isinstance(have, tuple) else have in allowed):
                return False
        return True


@dataclass(frozen=True)
class HandlingLimits:
    """Physical limits of a home's objects and robots that nobody tells the robots (the strict suites, a handling
    file: :mod:`coteam.domain.handling_file`; a real home has its own): the first constraint that holds says why an
    action fails."""

    constraints: tuple[HandlingConstraint, ...] = ()

    def failure(self, verb: str, robot: str, item: str, place: str | None, held: Sequence[str]) -> str:
        """Why ``robot`` cannot ``verb`` an ``item`` lying in or on the fixture ``place`` (None: not in or on one)
        with ``held`` in its hands ('' when it can)."""
        facts = {
            "verb": verb,
            "item": item,
            "place": place or "",
            "robot": robot,
            "held": tuple(held),
            "hands_in_use": str(len(held)),
        }
        return next((c.fails for c in self.constraints if c.holds(facts)), "")


@dataclass(frozen=True)
class Item:
    """A graspable object. ``capacity > 0`` makes it a carriable container (TDW-MAT bowls and baskets)."""

    id: int
    name: str
    category: str
    capacity: int = 0

    @property
    def is_carrier(self) -> bool:
        return self.capacity > 0


@dataclass(frozen=True)
class Placement:
    """Where an item is: ``relation`` to ``target`` (a fixture id, carrier item id, room id for FLOOR).

    For HELD the target is unused (-1) and ``agent``/``hand`` say who holds it; FLOOR carries a position.
    """

    relation: Relation
    target: int = -1
    agent: str = ""
    hand: int = -1
    position: Vec2 | None = None

    @staticmethod
    def held(agent: str, hand: int) -> Placement:
        return Placement(Relation.HELD, agent=agent, hand=hand)


@dataclass(frozen=True)
class GoalPredicate:
    """``count`` items named ``item`` must be ``relation`` the object ``target``."""

    relation: Relation
    item: str
    target: int
    count: int


@dataclass(frozen=True)
class Task:
    name: str
    benchmark: Benchmark
    predicates: tuple[GoalPredicate, ...]
    # TDW-MAT: "food" or "stuff"; C-WAH: empty.
    category: str = ""
    horizon: int = 250

    @property
    def total_count(self) -> int:
        return sum(p.count for p in self.predicates)

    def needed_names(self) -> set[str]:
        return {p.item for p in self.predicates}


@dataclass(frozen=True)
class FloorPlan:
    """A 2-D occupancy grid (row strings, ``#`` wall, ``.`` free) with its rooms. Positions are in the map frame:
    cell (0, 0) starts at ``origin`` (metres), as a Nav2 map's does; the benchmarks' grids start at (0, 0)."""

    cell_size: float
    rows: tuple[str, ...]
    rooms: tuple[Room, ...]
    origin: Vec2 = (0.0, 0.0)

    @property
    def width(self) -> int:
        return len(self.rows[0])

    @property
    def height(self) -> int:
        return len(self.rows)

    def in_bounds(self, cx: int, cy: int) -> bool:
        return 0 <= cx < self.width and 0 <= cy < self.height

    def is_free(self, cx: int, cy: int) -> bool:
        return self.in_bounds(cx, cy) and self.rows[cy][cx] != "#"

    def cell_of(self, pos: Vec2) -> tuple[int, int]:
        return int((pos[0] - self.origin[0]) // self.cell_size), int((pos[1] - self.origin[1]) // self.cell_size)

    def center_of(self, cell: tuple[int, int]) -> Vec2:
        return (
            self.origin[0] + (cell[0] + 0.5) * self.cell_size,
            self.origin[1] + (cell[1] + 0.5) * self.cell_size,
        )

    def corner_of(self, cx: float, cy: float) -> Vec2:
        """The map position of grid coordinates (cells, fractional allowed): (0, 0) is ``origin``."""
        return (self.origin[0] + cx * self.cell_size, self.origin[1] + cy * self.cell_size)

    def room_of_cell(self, cx: int, cy: int) -> Room | None:
        for room in self.rooms:
            if room.contains_cell(cx, cy):
                return room
        return None

    def room_at(self, pos: Vec2) -> Room | None:
        return self.room_of_cell(*self.cell_of(pos))

    def room(self, room_id: int) -> Room:
        for room in self.rooms:
            if room.id == room_id:
                return room
        raise KeyError(f"no room with id {room_id}")

    def room_center(self, room_id: int) -> Vec2:
        r = self.room(room_id)
        if r.polygon:
            return self.center_of(_polygon_room_center(self, r))
        return self.corner_of((r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2)


@dataclass(frozen=True)
class AgentStart:
    name: str
    position: Vec2
    heading: int = 0


@dataclass(frozen=True)
class Scene:
    """A complete episode definition; serialisable to JSON and back without loss."""

    name: str
    benchmark: Benchmark
    seed: int
    floorplan: FloorPlan
    containers: tuple[Container, ...]
    surfaces: tuple[Surface, ...]
    items: tuple[Item, ...]
    placements: dict[int, Placement]
    agent_starts: tuple[AgentStart, ...]
    task: Task
    # Fixtures whose door is open at the start (others are closed).
    initially_open: frozenset[int] = frozenset()
    handling: HandlingLimits = HandlingLimits()

    def fixture(self, object_id: int) -> Container | Surface:
        for f in (*self.containers, *self.surfaces):
            if f.id == object_id:
                return f
        raise KeyError(f"no fixture with id {object_id}")

    def item(self, item_id: int) -> Item:
        for it in self.items:
            if it.id == item_id:
                return it
        raise KeyError(f"no item with id {item_id}")

    def object_name(self, object_id: int) -> str:
        return self.names()[object_id]

    def names(self) -> dict[int, str]:
        names = {r.id: r.name for r in self.floorplan.rooms}
        names.update({c.id: c.name for c in self.containers})
        names.update({s.id: s.name for s in self.surfaces})
        names.update({i.id: i.name for i in self.items})
        return names


@dataclass
class AgentState:
    name: str
    position: Vec2
    heading: int = 0  # degrees, multiple of the benchmark's turn increment, 0 = +x, counter-clockwise
    hands: list[int | None] = field(default_factory=lambda: [None] * HANDS)

    def holding(self) -> list[int]:
        return [h for h in self.hands if h is not None]

    def free_hand(self) -> int | None:
        for i, h in enumerate(self.hands):
            if h is None:
                return i
        return None


class WorldState:
    """Ground truth of one running episode. Every item has exactly one placement (a dict keyed by item)."""

    def __init__(self, scene: Scene, agent_names: tuple[str, ...]):
        self.scene = scene
        self.placements: dict[int, Placement] = dict(scene.placements)
        self.is_open: dict[int, bool] = {
            c.id: (c.id in scene.initially_open or not c.openable) for c in scene.containers
        }
        starts = {s.name: s for s in scene.agent_starts}
        self.agents: dict[str, AgentState] = {
            n: AgentState(n, starts[n].position, starts[n].heading) for n in agent_names
        }
        self._items = {i.id: i for i in scene.items}
        self._fixtures = {f.id: f for f in (*scene.containers, *scene.surfaces)}

    # --- queries -------------------------------------------------------------------------------------------
    def item(self, item_id: int) -> Item:
        return self._items[item_id]

    def fixture(self, fixture_id: int) -> Container | Surface:
        return self._fixtures[fixture_id]

    def is_item(self, object_id: int) -> bool:
        return object_id in self._items

    def is_fixture(self, object_id: int) -> bool:
        return object_id in self._fixtures

    def contents(self, holder_id: int) -> list[int]:
        return sorted(
            i for i, p in self.placements.items() if p.relation in (Relation.IN, Relation.ON) and p.target == holder_id
        )

    def holder_chain(self, item_id: int) -> list[Placement]:
        """Placements from the item outwards (item in basket, basket on floor → two entries)."""
        chain = [self.placements[item_id]]
        while chain[-1].relation == Relation.IN and chain[-1].target in self._items:
            chain.append(self.placements[chain[-1].target])
        return chain

    def hidden_in_closed(self, item_id: int) -> bool:
        return any(
            p.relation == Relation.IN and p.target in self.is_open and not self.is_open[p.target]
            for p in self.holder_chain(item_id)
        )

    def held_by(self, item_id: int) -> str | None:
        root = self.holder_chain(item_id)[-1]
        return root.agent if root.relation == Relation.HELD else None

    def position_of(self, object_id: int) -> Vec2:
        if object_id in self._fixtures:
            return self._fixtures[object_id].position
        if object_id not in self._items:
            return self.scene.floorplan.room_center(object_id)
        root = self.holder_chain(object_id)[-1]
        if root.relation == Relation.HELD:
            return self.agents[root.agent].position
        if root.relation == Relation.FLOOR:
            assert root.position is not None
            return root.position
        return self._fixtures[root.target].position

    def room_of(self, object_id: int) -> int:
        room = self.scene.floorplan.room_at(self.position_of(object_id))
        assert room is not None, f"object {object_id} is outside every room"
        return room.id

    def satisfying_items(self, predicate: GoalPredicate, goal_radius: float = GOAL_RADIUS_M) -> list[int]:
        """Ids of the items named ``predicate.item`` that currently satisfy the predicate."""
        out = []
        for item_id, placement in sorted(self.placements.items()):
            if self._items[item_id].name != predicate.item:
                continue
            if predicate.relation == Relation.NEAR:
                if self.held_by(item_id) is None:
                    pos = self.position_of(item_id)
                    target = self._fixtures[predicate.target]
                    room = self.scene.floorplan.room_at(pos)
                    if room is not None and room.id == target.room and distance(pos, target.position) <= goal_radius:
                        out.append(item_id)
            elif placement.relation == predicate.relation and placement.target == predicate.target:
                out.append(item_id)
        return out

    def satisfied(self, predicate: GoalPredicate) -> int:
        """How many items satisfy the predicate (capped at its count)."""
        return min(len(self.satisfying_items(predicate)), predicate.count)

    def progress(self) -> tuple[int, int]:
        task = self.scene.task
        return sum(self.satisfied(p) for p in task.predicates), task.total_count

    def goal_done(self) -> bool:
        done, total = self.progress()
        return done == total

    def to_snapshot(self) -> dict[str, Any]:
        """A JSON-ready snapshot of the mutable state (used by traces and replay checks)."""
        return {
            "placements": {str(k): placement_to_json(v) for k, v in sorted(self.placements.items())},
            "open": {str(k): v for k, v in sorted(self.is_open.items())},
            "agents": {
                n: {"position": list(a.position), "heading": a.heading, "hands": list(a.hands)}
                for n, a in self.agents.items()
            },
        }


def placement_to_json(p: Placement) -> dict[str, Any]:
    out: dict[str, Any] = {"relation": p.relation.value, "target": p.target}
    if p.relation == Relation.HELD:
        out.update(agent=p.agent, hand=p.hand)
    if p.position is not None:
        out["position"] = list(p.position)
    return out


def placement_from_json(d: dict[str, Any]) -> Placement:
    pos = d.get("position")
    return Placement(
        Relation(d["relation"]),
        target=int(d.get("target", -1)),
        agent=d.get("agent", ""),
        hand=int(d.get("hand", -1)),
        position=(float(pos[0]), float(pos[1])) if pos is not None else None,
    )
