"""Seeded procedural apartments for both benchmarks.

A floor plan is a binary-space partition of a rectangle into rooms separated by one-cell walls, with a door
(two free cells) on every split so all rooms are connected. Fixtures stand at free cells; items are placed on
or in fixtures (or on the floor in TDW-MAT) according to the category priors of :mod:`coteam_sim.catalog`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from coteam.domain.world import (
    AGENT_NAMES,
    AgentStart,
    Benchmark,
    Container,
    FloorPlan,
    GoalPredicate,
    Item,
    Placement,
    Relation,
    Room,
    Scene,
    Surface,
    Task,
    Vec2,
)
from coteam_sim import catalog

CELL_SIZE = 0.5
MIN_ROOM_CELLS = 7  # interior side of a room, cells (3.5 m)
DOOR_CELLS = 2


@dataclass
class _Leaf:
    x0: int
    y0: int
    x1: int
    y1: int  # interior (free) rectangle, half-open


def _split(rng: random.Random, rect: _Leaf, n: int, grid: list[list[str]], doors: list) -> list[_Leaf]:
    """Partition ``rect`` into ``n`` leaves; carve interiors into ``grid`` and one door per split."""
    if n == 1:
        for y in range(rect.y0, rect.y1):
            for x in range(rect.x0, rect.x1):
                grid[y][x] = "."
        return [rect]
    w, h = rect.x1 - rect.x0, rect.y1 - rect.y0
    vertical = w >= h if abs(w - h) > 2 else rng.random() < 0.5
    span = w if vertical else h
    n_first = n // 2 if rng.random() < 0.5 else n - n // 2
    frac = n_first / n
    lo = max(MIN_ROOM_CELLS * n_first + (n_first - 1), int(span * (frac - 0.12)))
    hi = min(span - MIN_ROOM_CELLS * (n - n_first) - (n - n_first), int(span * (frac + 0.12)))
    if lo > hi:
        lo = hi = max(MIN_ROOM_CELLS, min(span - MIN_ROOM_CELLS - 1, int(span * frac)))
    cut = rng.randint(lo, hi)
    if vertical:
        a = _Leaf(rect.x0, rect.y0, rect.x0 + cut, rect.y1)
        b = _Leaf(rect.x0 + cut + 1, rect.y0, rect.x1, rect.y1)
    else:
        a = _Leaf(rect.x0, rect.y0, rect.x1, rect.y0 + cut)
        b = _Leaf(rect.x0, rect.y0 + cut + 1, rect.x1, rect.y1)
    leaves_a = _split(rng, a, n_first, grid, doors)
    leaves_b = _split(rng, b, n - n_first, grid, doors)
    wall = rect.x0 + cut if vertical else rect.y0 + cut
    # A door between one leaf on each side whose interiors share enough wall.
    pairs = []
    for la in leaves_a:
        for lb in leaves_b:
            if vertical and la.x1 == wall and lb.x0 == wall + 1:
                lo_, hi_ = max(la.y0, lb.y0), min(la.y1, lb.y1)
            elif not vertical and la.y1 == wall and lb.y0 == wall + 1:
                lo_, hi_ = max(la.x0, lb.x0), min(la.x1, lb.x1)
            else:
                continue
            if hi_ - lo_ >= DOOR_CELLS + 2:
                pairs.append((lo_, hi_))
    lo_, hi_ = rng.choice(pairs)
    start = rng.randint(lo_ + 1, hi_ - 1 - DOOR_CELLS)
    for k in range(start, start + DOOR_CELLS):
        if vertical:
            grid[k][wall] = "."
        else:
            grid[wall][k] = "."
        doors.append((wall, k) if vertical else (k, wall))
    return leaves_a + leaves_b


def generate_floorplan(rng: random.Random, room_names: list[str], width_m: float, height_m: float) -> FloorPlan:
    wc, hc = int(width_m / CELL_SIZE), int(height_m / CELL_SIZE)
    grid = [["#"] * wc for _ in range(hc)]
    doors: list[tuple[int, int]] = []
    leaves = _split(rng, _Leaf(1, 1, wc - 1, hc - 1), len(room_names), grid, doors)
    rooms = []
    for i, (leaf, name) in enumerate(zip(leaves, room_names, strict=True)):
        # A room claims its interior plus the wall on its right and bottom side (so door cells have a room).
        x1 = leaf.x1 + 1 if leaf.x1 < wc - 1 else leaf.x1
        y1 = leaf.y1 + 1 if leaf.y1 < hc - 1 else leaf.y1
        rooms.append(Room(i + 1, name, leaf.x0, leaf.y0, x1, y1))
    return FloorPlan(CELL_SIZE, tuple("".join(r) for r in grid), tuple(rooms))


class _Ids:
    def __init__(self, start: int):
        self.next = start

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def _interior_cells(fp: FloorPlan, room: Room, margin: int = 1) -> list[tuple[int, int]]:
    """Free cells of ``room`` at least ``margin`` cells away from any wall or door."""
    out = []
    for y in range(room.y0, room.y1):
        for x in range(room.x0, room.x1):
            if all(
                fp.is_free(x + dx, y + dy) and fp.room_of_cell(x + dx, y + dy) == room
                for dx in range(-margin, margin + 1)
                for dy in range(-margin, margin + 1)
            ):
                out.append((x, y))
    return out


def _place_fixture_positions(rng: random.Random, fp: FloorPlan, room: Room, n: int, taken: set) -> list[Vec2]:
    cells = [c for c in _interior_cells(fp, room) if c not in taken]
    rng.shuffle(cells)
    chosen: list[tuple[int, int]] = []
    for c in cells:
        if all(abs(c[0] - o[0]) + abs(c[1] - o[1]) >= 3 for o in chosen):
            chosen.append(c)
        if len(chosen) == n:
            break
    while len(chosen) < n:  # tiny rooms: allow closer spacing
        chosen.append(cells[len(chosen)])
    taken.update(chosen)
    return [fp.center_of(c) for c in chosen]


def _weighted(rng: random.Random, weights: dict[str, float]) -> str:
    names = sorted(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _agent_starts(rng: random.Random, fp: FloorPlan, rooms: list[Room], taken: set, heading_step: int) -> tuple:
    starts = []
    for name in AGENT_NAMES:
        room = rng.choice(rooms)
        cells = [c for c in _interior_cells(fp, room) if c not in taken]
        cell = rng.choice(cells)
        taken.add(cell)
        starts.append(AgentStart(name, fp.center_of(cell), heading_step * rng.randrange(360 // heading_step)))
    return tuple(starts)


# --- C-WAH -----------------------------------------------------------------------------------------------
def generate_cwah(seed: int | str, task_name: str, name: str = "") -> Scene:
    rng = random.Random(f"cwah-scene:{seed}:{task_name}")
    task_def = next((t for t in catalog.CWAH_TASKS if t.name == task_name), None)
    if task_def is None:
        raise ValueError(f"unknown C-WAH task {task_name!r}; known: {[t.name for t in catalog.CWAH_TASKS]}")
    names = list(catalog.CWAH_ROOMS)
    rng.shuffle(names)
    fp = generate_floorplan(rng, names, rng.uniform(13.0, 16.0), rng.uniform(10.0, 12.5))
    ids = _Ids(len(fp.rooms) + 1)
    containers, surfaces = [], []
    taken: set = set()
    for room in fp.rooms:
        fixtures = catalog.CWAH_FIXTURES[room.name]
        for (fname, is_container), pos in zip(
            fixtures, _place_fixture_positions(rng, fp, room, len(fixtures), taken), strict=True
        ):
            if is_container:
                containers.append(Container(ids.take(), fname, room.id, pos))
            else:
                surfaces.append(Surface(ids.take(), fname, room.id, pos))
    fixtures_by_name: dict[str, list] = {}
    for f in (*containers, *surfaces):
        fixtures_by_name.setdefault(f.name, []).append(f)
    target = fixtures_by_name[task_def.target][0]

    n_subgoals = rng.randint(*catalog.CWAH_SUBGOALS)
    counts: dict[str, int] = {}
    pool = list(task_def.items)
    rng.shuffle(pool)
    for k in range(n_subgoals):
        item = pool[k % len(pool)] if len(pool) >= n_subgoals else rng.choice(pool)
        counts[item] = counts.get(item, 0) + 1
    predicates = tuple(GoalPredicate(task_def.relation, item, target.id, c) for item, c in sorted(counts.items()))
    items, placements = [], {}
    container_ids = {c.id for c in containers}

    def place(item_name: str, prior: dict[str, float]) -> None:
        allowed = {k: v for k, v in prior.items() if k in fixtures_by_name and k != task_def.target}
        fixture = rng.choice(fixtures_by_name[_weighted(rng, allowed)])
        item = Item(ids.take(), item_name, catalog.CWAH_ITEM_CATEGORY.get(item_name, "misc"))
        items.append(item)
        rel = Relation.IN if fixture.id in container_ids else Relation.ON
        placements[item.id] = Placement(rel, fixture.id)

    for item_name, c in sorted(counts.items()):
        for _ in range(c + rng.choice((0, 0, 1))):  # sometimes a spare instance
            place(item_name, catalog.CWAH_ITEM_PRIORS[item_name])
    for _ in range(rng.randint(4, 7)):
        place(rng.choice(catalog.CWAH_DISTRACTORS), catalog._MISC_PRIOR)
    starts = _agent_starts(rng, fp, list(fp.rooms), taken, 30)
    task = Task(task_def.name, Benchmark.CWAH, predicates, "", catalog.CWAH_HORIZON)
    return Scene(
        name or f"cwah-{task_name}-{seed}",
        Benchmark.CWAH,
        _seed_int(seed),
        fp,
        tuple(containers),
        tuple(surfaces),
        tuple(items),
        placements,
        starts,
        task,
    )


# --- distractors ------------------------------------------------------------------------------------------
def add_distractors(scene: Scene, count: int) -> Scene:
    """``scene`` with ``count`` more task-irrelevant items (REVECA's noisy episodes): things no goal names, each
    on or in a piece of furniture that is no goal's destination (C-WAH), or on the floor or a surface of a room
    (TDW-MAT), drawn from the scene's name so that an episode is always the same. The goal is unchanged."""
    if count <= 0:
        return scene
    rng = random.Random(f"distractors:{scene.name}:{count}")
    wanted = {p.item for p in scene.task.predicates}
    targets = {p.target for p in scene.task.predicates}
    fixtures = [f for f in (*scene.containers, *scene.surfaces) if f.id not in targets]
    container_ids = {c.id for c in scene.containers}
    fp = scene.floorplan
    ids = _Ids(1 + max([r.id for r in fp.rooms] + [f.id for f in (*scene.containers, *scene.surfaces)] +
                       [i.id for i in scene.items]))  # fmt: skip
    items, placements = list(scene.items), dict(scene.placements)
    if scene.benchmark == Benchmark.CWAH:
        names = [n for n in catalog.CWAH_DISTRACTORS if n not in wanted]
        for _ in range(count):
            name = rng.choice(names)
            fixture = rng.choice(fixtures)
            item = Item(ids.take(), name, catalog.CWAH_ITEM_CATEGORY.get(name, "misc"))
            items.append(item)
            placements[item.id] = Placement(Relation.IN if fixture.id in container_ids else Relation.ON, fixture.id)
    else:
        names = [n for n in (*catalog.TDW_FOOD_OBJECTS, *catalog.TDW_STUFF_OBJECTS) if n not in wanted]
        floor = {r.id: _interior_cells(fp, r, 0) for r in fp.rooms}
        for _ in range(count):
            name = rng.choice(names)
            category = "food" if name in catalog.TDW_FOOD_OBJECTS else "stuff"
            item = Item(ids.take(), name, category)
            items.append(item)
            surfaces = [f for f in fixtures if f.id not in container_ids]
            if surfaces and rng.random() < catalog.TDW_ON_SURFACE_PROBABILITY:
                placements[item.id] = Placement(Relation.ON, rng.choice(surfaces).id)
            else:
                room = rng.choice([r for r in fp.rooms if floor[r.id]])
                placements[item.id] = Placement(
                    Relation.FLOOR, room.id, position=fp.center_of(rng.choice(floor[room.id]))
                )
    return replace(scene, items=tuple(items), placements=placements)


# --- TDW-MAT ---------------------------------------------------------------------------------------------
def generate_tdw_floorplan(floorplan_seed: int | str) -> FloorPlan:
    rng = random.Random(f"tdw-floorplan:{floorplan_seed}")
    n = rng.randint(6, 8)
    required = ["bedroom", "kitchen", "livingroom"]
    names = [*required, *rng.sample([r for r in catalog.TDW_ROOMS if r not in required], n - 3)]
    rng.shuffle(names)
    return generate_floorplan(rng, names, rng.uniform(20.0, 24.0), rng.uniform(14.0, 17.0))


def generate_tdwmat(
    floorplan_seed: int | str, layout: int | str, category: str, containers: str, name: str = ""
) -> Scene:
    if category not in ("food", "stuff"):
        raise ValueError(f"TDW-MAT task category must be 'food' or 'stuff', not {category!r}")
    if containers not in catalog.TDW_CONTAINER_COUNTS:
        raise ValueError(f"container setting must be one of {sorted(catalog.TDW_CONTAINER_COUNTS)}")
    fp = generate_tdw_floorplan(floorplan_seed)
    rng = random.Random(f"tdw-layout:{floorplan_seed}:{layout}:{category}:{containers}")
    ids = _Ids(len(fp.rooms) + 1)
    surfaces = []
    taken: set = set()
    for room in fp.rooms:
        fixtures = catalog.TDW_FIXTURES[room.name]
        for fname, pos in zip(fixtures, _place_fixture_positions(rng, fp, room, len(fixtures), taken), strict=True):
            surfaces.append(Surface(ids.take(), fname, room.id, pos))
    bed = next(s for s in surfaces if s.name == "bed")
    rooms_by_name = {r.name: r for r in fp.rooms}
    surfaces_by_room: dict[int, list[Surface]] = {}
    for s in surfaces:
        if s.name != "bed":
            surfaces_by_room.setdefault(s.room, []).append(s)
    free_by_room = {r.id: [c for c in _interior_cells(fp, r, 0) if c not in taken] for r in fp.rooms}

    items, placements = [], {}

    def place(item: Item, prior: dict[str, float], *, away_from_goal: bool) -> None:
        allowed = {k: v for k, v in prior.items() if k in rooms_by_name}
        room = rooms_by_name[_weighted(rng, allowed)]
        if room.id == bed.room and away_from_goal:  # targets and containers never start in the goal room
            room = rng.choice([r for r in fp.rooms if r.id != bed.room])
        items.append(item)
        if surfaces_by_room.get(room.id) and rng.random() < catalog.TDW_ON_SURFACE_PROBABILITY:
            placements[item.id] = Placement(Relation.ON, rng.choice(surfaces_by_room[room.id]).id)
        else:
            cell = rng.choice(free_by_room[room.id])
            placements[item.id] = Placement(Relation.FLOOR, room.id, position=fp.center_of(cell))

    objects = catalog.TDW_FOOD_OBJECTS if category == "food" else catalog.TDW_STUFF_OBJECTS
    carriers = catalog.TDW_FOOD_CONTAINERS if category == "food" else catalog.TDW_STUFF_CONTAINERS
    other = catalog.TDW_STUFF_OBJECTS if category == "food" else catalog.TDW_FOOD_OBJECTS
    counts: dict[str, int] = {}
    for _ in range(catalog.TDW_TARGETS):
        o = rng.choice(objects)
        counts[o] = counts.get(o, 0) + 1
    for o, c in sorted(counts.items()):
        for _ in range(c):
            place(Item(ids.take(), o, category), catalog.TDW_ROOM_PRIORS[category], away_from_goal=True)
    for _ in range(catalog.TDW_CONTAINER_COUNTS[containers]):
        place(
            Item(ids.take(), rng.choice(carriers), "container", catalog.TDW_CARRIER_CAPACITY),
            catalog.TDW_ROOM_PRIORS[category],
            away_from_goal=True,
        )
    other_category = "stuff" if category == "food" else "food"
    for _ in range(rng.randint(3, 5)):
        place(
            Item(ids.take(), rng.choice(other), other_category),
            catalog.TDW_ROOM_PRIORS[other_category],
            away_from_goal=False,
        )
    predicates = tuple(GoalPredicate(Relation.NEAR, o, bed.id, c) for o, c in sorted(counts.items()))
    start_room = rng.choice([r for r in fp.rooms if r.id != bed.room])
    starts = _agent_starts(rng, fp, [start_room], taken, 15)
    task = Task(f"transport_{category}", Benchmark.TDWMAT, predicates, category, catalog.TDW_HORIZON)
    return Scene(
        name or f"tdwmat-{floorplan_seed}-{layout}-{category}-{containers}",
        Benchmark.TDWMAT,
        _seed_int(f"{floorplan_seed}:{layout}"),
        fp,
        (),
        tuple(surfaces),
        tuple(items),
        placements,
        starts,
        task,
    )


def _seed_int(seed: int | str) -> int:
    if isinstance(seed, int):
        return seed
    return int.from_bytes(str(seed).encode()[:7].ljust(7, b"\0"), "big")
