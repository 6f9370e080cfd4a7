"""A world file: your own home and task, in the map frame of your robots, compiled to a
:class:`~coteam.domain.world.Scene`.

The robots' nodes read it (``task: {world: FILE}`` in a team file) and so does the twin, the simulated robot that
offers a real robot's interfaces. The format (YAML, ``format: coteam-world/1``; docs/hardware.md has an example)::

    format: coteam-world/1
    name: our-flat
    map: flat.map.yaml          # optional: the robots' Nav2 map (map_server YAML); without it the free space is
                                #   the rooms' insides and the grid is laid round them
    cell_size: 0.25             # the planning grid, metres (default 0.25)
    rooms:                      # polygons in the map frame (metres), corners in order; at least one
      - {name: kitchen, polygon: [[0, 0], [4, 0], [4, 3], [0, 3]]}
    room_map:                   # or, instead of rooms: a labelled region image painted over the map's image (same
      image: flat.rooms.png     #   size, one channel): each room is the one region of its pixel value
      rooms: {kitchen: 1, livingroom: 2}
    fixtures:                   # furniture: containers hold items (openable ones start closed), surfaces carry them;
                                #   position: where the arm reaches in or onto it (the front of a big bed)
      - {name: fridge, kind: container, position: [0.4, 2.6], openable: true, open: false, capacity: 20}
      - {name: kitchentable, kind: surface, position: [2.0, 1.5]}
    items:                      # the objects the robots may meet: their class, how many, and where they are
      - {name: apple, category: food, count: 2, where: on kitchentable}  # on SURFACE | in CONTAINER | floor X Y
    robots:                     # start poses (x, y metres, heading degrees); the twin starts them there
      - {name: robot1, start: [1.0, 1.0, 0]}
      - name: robot2            # optional capabilities (coteam.domain.capabilities; defaults: two grippers, doors
        start: [2.0, 1.0, 0]    #   opened with full hands, 0.5 m/s); a team file may give them instead
        capabilities: {grippers: 1, open_needs_free_gripper: true, speed_mps: 0.3}
    task:
      name: put the apples in the fridge
      goal: ["in(apple, fridge): 2"]   # RELATION(ITEM, TARGET): COUNT -- on / in (C-WAH rules), near (TDW-MAT rules)
      horizon: 250              # optional: the benchmark's clock (C-WAH steps, TDW-MAT frames)
      time_limit_s: 600         # optional: the robots give up after this many seconds (default 600)
    safety:                     # optional: the home's safety policy (coteam.home.safety), which no decision crosses
      no_go: [bathroom]         # rooms no robot enters; also no_go_zones, never_touch, ask_before, approval_timeout_s
      max_speed_mps: 0.3        # passed to Nav2 as its speed limit

The rules follow the goal: ``on`` / ``in`` goals are C-WAH's (open, grab, put, put in), ``near`` goals TDW-MAT's
(carry to the target's room, carriers allowed; ``category`` names the task: food or stuff). Every error is one
line naming the file and the place (:class:`WorldFileError`); nothing is guessed.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Literal

import cv2
import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coteam.domain.capabilities import RobotCapabilities
from coteam.domain.navigation import nearest_free_cell
from coteam.domain.physics import Physics
from coteam.domain.validation import first_problem, read_yaml
from coteam.domain.world import (
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
    point_in_polygon,
)
from coteam.home.safety import (
    SafetyGate,
    SafetyPolicy,
    SafetyPolicyError,
    parse_policy,
    policy_of_file,
    policy_summary,
)

WORLD_FORMAT = "coteam-world/1"
DEFAULT_HORIZON = {Benchmark.CWAH: 250, Benchmark.TDWMAT: 3000}
DEFAULT_TIME_LIMIT_S = 600.0
GOAL_PATTERN = re.compile(r"^\s*(on|in|near)\s*\(\s*([\w-]+)\s*,\s*([\w-]+)\s*\)\s*:\s*(\d+)\s*$", re.IGNORECASE)

WHERE_PATTERN = re.compile(r"^(on|in) [\w-]+$|^floor -?\d+(\.\d+)? -?\d+(\.\d+)?$")
Point2 = Annotated[list[float], Field(min_length=2, max_length=2)]


class WorldFileError(ValueError):
    """A world file that cannot be used: one line naming the file and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoomEntry(_Strict):
    name: str = Field(min_length=1)
    polygon: list[Point2] = Field(min_length=3)


class RoomMapEntry(_Strict):
    image: str = Field(min_length=1)
    rooms: dict[str, int] = Field(min_length=1)


class FixtureEntry(_Strict):
    name: str = Field(min_length=1)
    kind: Literal["container", "surface"]
    position: Point2
    openable: bool = True  # containers only
    open: bool = False  # containers only: open at the start
    capacity: int = Field(20, ge=1)  # containers only


class ItemEntry(_Strict):
    name: str = Field(min_length=1)
    category: str = ""
    count: int = Field(1, ge=1)
    capacity: int = Field(0, ge=0)  # > 0: a carrier (TDW-MAT bowls and baskets)
    where: str = Field(pattern=WHERE_PATTERN.pattern)  # "on SURFACE", "in CONTAINER" or "floor X Y" (metres)


class RobotEntry(_Strict):
    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    start: list[float] = Field(min_length=2, max_length=3)
    capabilities: RobotCapabilities | None = None  # the robot's body (coteam.domain.capabilities); None: the defaults
    rest: str | None = Field(None, min_length=1)  # a room a serving team's robot returns to between tasks


class TaskEntry(_Strict):
    name: str = Field(min_length=1)
    goal: list[str] = Field(min_length=1)
    category: str = ""
    horizon: int | None = Field(None, ge=1)
    time_limit_s: float = Field(DEFAULT_TIME_LIMIT_S, gt=0)


class WorldFile(_Strict):
    format: Literal["coteam-world/1"]
    name: str = Field(min_length=1)
    map: str | None = None
    cell_size: float = Field(0.25, gt=0, le=2.0)
    rooms: list[RoomEntry] = []
    room_map: RoomMapEntry | None = None
    fixtures: list[FixtureEntry] = Field(min_length=1)
    items: list[ItemEntry] = []
    robots: list[RobotEntry] = Field(min_length=1)
    task: TaskEntry
    safety: SafetyPolicy | None = None


class World:
    """A loaded world file: the scene the robots and the twin use, the time limit, and the map it was laid on."""

    def __init__(
        self,
        path: Path,
        scene: Scene,
        time_limit_s: float,
        map_path: Path | None,
        occupancy: OccupancyMap | None,
        safety: SafetyPolicy | None = None,
        capabilities: dict[str, RobotCapabilities] | None = None,
        rest_rooms: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.scene = scene
        self.time_limit_s = time_limit_s
        self.map_path = map_path
        self.occupancy = occupancy
        self.safety = safety  # the home's safety policy, if the file has one
        self.capabilities = capabilities or {}  # the robots whose bodies the file describes
        self.rest_rooms = rest_rooms or {}  # robot -> the room it returns to between a serving team's tasks


class OccupancyMap:
    """A Nav2 map_server map: occupancy per pixel (row 0 is the image's top, which is the map's largest y)."""

    def __init__(self, occupied: np.ndarray, free: np.ndarray, resolution: float, origin: Vec2) -> None:
        self.occupied, self.free, self.resolution, self.origin = occupied, free, resolution, origin

    @property
    def size_m(self) -> Vec2:
        return (self.free.shape[1] * self.resolution, self.free.shape[0] * self.resolution)


def load_map_yaml(path: Path) -> OccupancyMap:
    """Read a map_server map (its YAML and the image it names, ``trinary`` or ``scale`` mode)."""
    try:
        meta = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ValueError(f"map {path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError:
        raise ValueError(f"map {path}: not YAML") from None
    if not isinstance(meta, dict) or not {"image", "resolution", "origin"} <= meta.keys():
        raise ValueError(f"map {path}: a map_server YAML needs image, resolution and origin")
    if meta.get("mode", "trinary") not in ("trinary", "scale"):
        raise ValueError(f"map {path}: mode {meta['mode']!r} is not supported (trinary or scale)")
    origin = meta["origin"]
    if not isinstance(meta["image"], str) or not isinstance(meta["resolution"], int | float):
        raise ValueError(f"map {path}: image must be a file name and resolution a number")
    if not isinstance(origin, list) or len(origin) != 3 or not all(isinstance(v, int | float) for v in origin):
        raise ValueError(f"map {path}: origin must be [x, y, yaw]")
    if abs(float(origin[2])) > 1e-9:
        raise ValueError(f"map {path}: origin must be [x, y, 0] (a rotated map is not supported)")
    image = cv2.imread(str(path.parent / meta["image"]), cv2.IMREAD_GRAYSCALE)
    if image is None:
        raise ValueError(f"map {path}: cannot read the image {meta['image']!r}")
    value = image.astype(float) / 255.0
    occupancy = value if int(meta.get("negate", 0)) else 1.0 - value
    occupied = occupancy >= float(meta.get("occupied_thresh", 0.65))  # map_server's comparisons
    free = occupancy <= float(meta.get("free_thresh", 0.25))
    return OccupancyMap(occupied, free, float(meta["resolution"]), (float(origin[0]), float(origin[1])))


def load_world(path: str | Path) -> World:
    """Read, validate and compile a world file; a :class:`WorldFileError` of one line when it cannot be used."""
    path = Path(path)
    data = read_yaml(path, WorldFileError)
    try:
        spec = WorldFile.model_validate(data)
    except ValidationError as exc:
        raise WorldFileError(f"{path}: {first_problem(exc, schema=WorldFile)}") from None
    map_path = path.parent / spec.map if spec.map else None
    try:
        occupancy = load_map_yaml(map_path) if map_path else None
        if spec.room_map is not None:
            spec = spec.model_copy(update={"rooms": rooms_from_region_map(path.parent, spec, occupancy)})
        if not spec.rooms:
            raise ValueError("rooms: give at least one room (or a room_map)")
        scene = compile_world(spec, occupancy)
        if spec.safety is not None:
            SafetyGate(spec.safety, scene.floorplan)  # its rooms are the home's
    except ValueError as exc:  # a SafetyPolicyError too
        raise WorldFileError(f"{path}: {exc}") from None
    bodies = {r.name: r.capabilities for r in spec.robots if r.capabilities is not None}
    rest_rooms = {r.name: r.rest for r in spec.robots if r.rest is not None}
    return World(path, scene, spec.task.time_limit_s, map_path, occupancy, spec.safety, bodies, rest_rooms)


def load_safety_policy(path: str | Path) -> SafetyPolicy:
    """A home's safety policy: a policy file's (``format: coteam-safety/1``), or the ``safety:`` section of a world
    file, which holds its own (:mod:`coteam.home.safety` knows policies, not world files)."""
    path = Path(path)
    data = read_yaml(path, SafetyPolicyError)
    if isinstance(data, dict) and data.get("format") == WORLD_FORMAT and "safety" in data:
        return parse_policy(data["safety"], str(path))
    return policy_of_file(data, path, or_else=f", or the `safety:` section of a world file ({WORLD_FORMAT})")


def parse_goal(text: str) -> tuple[Relation, str, str, int]:
    """``"in(apple, fridge): 2"`` as (relation, item, target, count)."""
    match = GOAL_PATTERN.match(text)
    if match is None:
        raise ValueError(f"goal {text!r}: write RELATION(ITEM, TARGET): COUNT with on, in or near")
    relation, item, target, count = match.groups()
    if int(count) < 1:
        raise ValueError(f"goal {text!r}: the count must be at least 1")
    return Relation(relation.lower()), item, target, int(count)


def goal_rules(goal: list[str]) -> Benchmark:
    """The rules a goal's lines call for: TDW-MAT's for ``near`` goals, C-WAH's for ``on`` / ``in``."""
    relations = {parse_goal(g)[0] for g in goal}
    if Relation.NEAR in relations and relations != {Relation.NEAR}:
        raise ValueError("the goal mixes near (TDW-MAT rules) with on / in (C-WAH rules)")
    return Benchmark.TDWMAT if Relation.NEAR in relations else Benchmark.CWAH


def goal_task(scene: Scene, name: str, goal: list[str], *, horizon: int | None = None, category: str = "") -> Task:
    """A task in ``scene``'s home from goal lines (``"in(apple, fridge): 2"``): every name checked against its
    fixtures and items, and the rules its lines call for the home's own (a one-line ``ValueError`` otherwise)."""
    if not goal:
        raise ValueError("the goal has no line")
    benchmark = goal_rules(goal)
    if benchmark != scene.benchmark:
        raise ValueError(
            f"{'near' if benchmark == Benchmark.TDWMAT else 'on / in'} goals call for {benchmark.value} rules; this "
            f"home's robots work by {scene.benchmark.value} rules ({_RELATIONS[scene.benchmark]} goals)"
        )
    fixtures = {f.name: f for f in (*scene.containers, *scene.surfaces)}
    containers = {c.id for c in scene.containers}
    names = {i.name for i in scene.items}
    predicates = []
    for text in goal:
        relation, item, target, count = parse_goal(text)
        if target not in fixtures:
            raise ValueError(f"goal {relation.value}({item}, {target}): no fixture is named {target!r}")
        kind = "container" if fixtures[target].id in containers else "surface"
        if (relation, kind) in ((Relation.IN, "surface"), (Relation.ON, "container")):
            raise ValueError(f"goal {relation.value}({item}, {target}): {target} is a {kind}")
        if item not in names:
            known = ", ".join(sorted(names)) or "none"
            raise ValueError(f"goal {relation.value}({item}, {target}): no item is named {item!r} (items: {known})")
        available = sum(1 for i in scene.items if i.name == item)
        if available < count:
            raise ValueError(f"goal {relation.value}({item}, {target}): {count} wanted, {available} in items:")
        predicates.append(GoalPredicate(relation, item, fixtures[target].id, count))
    return Task(name, benchmark, tuple(predicates), category, horizon or DEFAULT_HORIZON[benchmark])


_RELATIONS = {Benchmark.CWAH: "on / in", Benchmark.TDWMAT: "near"}


def compile_world(spec: WorldFile, occupancy: OccupancyMap | None) -> Scene:
    benchmark = goal_rules(spec.task.goal)
    _unique("room", [r.name for r in spec.rooms])
    floorplan = _floorplan(spec, occupancy)
    _unique("fixture", [f.name for f in spec.fixtures])
    _unique("robot", [r.name for r in spec.robots])

    next_id = len(floorplan.rooms) + 1
    containers: list[Container] = []
    surfaces: list[Surface] = []
    fixture_ids: dict[str, int] = {}
    initially_open: set[int] = set()
    for entry in spec.fixtures:
        position = (float(entry.position[0]), float(entry.position[1]))
        room = _room_at(floorplan, position, f"fixture {entry.name!r}")
        fixture_ids[entry.name] = next_id
        if entry.kind == "container":
            containers.append(Container(next_id, entry.name, room, position, entry.capacity, entry.openable))
            if entry.open or not entry.openable:
                initially_open.add(next_id)
        else:
            surfaces.append(Surface(next_id, entry.name, room, position))
        next_id += 1

    items: list[Item] = []
    placements: dict[int, Placement] = {}
    for entry in spec.items:
        placement = _placement(entry, fixture_ids, containers, floorplan)
        for _ in range(entry.count):
            items.append(Item(next_id, entry.name, entry.category, entry.capacity))
            placements[next_id] = placement
            next_id += 1

    physics = Physics()
    reach = physics.cwah_reach_m if benchmark == Benchmark.CWAH else physics.tdw_reach_m
    for fixture in (*containers, *surfaces):
        free = floorplan.center_of(nearest_free_cell(floorplan, fixture.position))
        if math.dist(free, fixture.position) > reach:
            raise ValueError(
                f"fixture {fixture.name!r} at {list(fixture.position)} is {math.dist(free, fixture.position):.2f} m "
                f"from free space, beyond an arm's reach ({reach} m): give the place on it a robot reaches"
            )

    starts = []
    for robot in spec.robots:
        position = (float(robot.start[0]), float(robot.start[1]))
        _room_at(floorplan, position, f"robot {robot.name!r}")
        if not floorplan.is_free(*floorplan.cell_of(position)):
            raise ValueError(f"robot {robot.name!r} starts at {list(position)}, which is not free space")
        heading = round(robot.start[2]) % 360 if len(robot.start) == 3 else 0
        rooms = [room.name for room in floorplan.rooms]
        if robot.rest is not None and robot.rest not in rooms:
            raise ValueError(f"robot {robot.name!r} rests in {robot.rest!r}, which is not a room ({', '.join(rooms)})")
        starts.append(AgentStart(robot.name, position, heading))

    home = Scene(
        spec.name,
        benchmark,
        0,
        floorplan,
        tuple(containers),
        tuple(surfaces),
        tuple(items),
        placements,
        tuple(starts),
        Task(spec.task.name, benchmark, (), spec.task.category, 1),
        frozenset(initially_open),
    )
    task = goal_task(home, spec.task.name, spec.task.goal, horizon=spec.task.horizon, category=spec.task.category)
    return replace(home, task=task)


def _unique(what: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"two {what}s are named {name!r}")
        seen.add(name)


def _room_at(floorplan: FloorPlan, position: Vec2, what: str) -> int:
    cell = floorplan.cell_of(position)
    room = floorplan.room_of_cell(*cell) if floorplan.in_bounds(*cell) else None
    if room is None:
        raise ValueError(f"{what} at {list(position)} is in no room")
    return room.id


def _placement(
    entry: ItemEntry,
    fixture_ids: dict[str, int],
    containers: list[Container],
    floorplan: FloorPlan,
) -> Placement:
    word, *rest = entry.where.split()
    if word == "floor":
        position = (float(rest[0]), float(rest[1]))
        return Placement(Relation.FLOOR, _room_at(floorplan, position, f"item {entry.name!r}"), position=position)
    relation, holder = Relation(word), rest[0]
    if holder not in fixture_ids:
        raise ValueError(f"item {entry.name!r} is {entry.where!r}: no fixture is named {holder!r}")
    is_container = fixture_ids[holder] in {c.id for c in containers}
    if is_container != (relation == Relation.IN):
        raise ValueError(
            f"item {entry.name!r} is {entry.where!r}: {holder} is a {'container' if is_container else 'surface'}"
        )
    return Placement(relation, fixture_ids[holder])


def rooms_from_region_map(folder: Path, spec: WorldFile, occupancy: OccupancyMap | None) -> list[RoomEntry]:
    """The rooms of a labelled region image (``room_map``): each room the outline of the one region of its pixel
    value, in the map frame. The image lies over the map's image pixel for pixel."""
    assert spec.room_map is not None
    if spec.rooms:
        raise ValueError("give rooms or room_map, not both")
    if occupancy is None:
        raise ValueError("room_map: a labelled region image lies over the map: give map too")
    image = cv2.imread(str(folder / spec.room_map.image), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f"room_map: cannot read the image {spec.room_map.image!r}")
    if image.ndim != 2:
        raise ValueError(f"room_map: {spec.room_map.image!r} has colour channels; paint the rooms in one channel")
    if image.shape != occupancy.free.shape:
        raise ValueError(
            f"room_map: {spec.room_map.image!r} is {image.shape[1]} x {image.shape[0]} pixels, the map "
            f"{occupancy.free.shape[1]} x {occupancy.free.shape[0]}: paint it over the map's image"
        )
    rooms = []
    for name, label in spec.room_map.rooms.items():
        mask = (image == label).astype(np.uint8)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        if not contours:
            raise ValueError(f"room_map: room {name!r}: no pixel has the value {label}")
        if len(contours) > 1:
            raise ValueError(
                f"room_map: room {name!r}: the value {label} paints {len(contours)} separate regions; a room is one"
            )
        corners = _outline(contours[0][:, 0, :].astype(float))
        if len(corners) < 3:
            raise ValueError(f"room_map: room {name!r}: its region is too thin to be a room")
        res, (ox, oy), rows = occupancy.resolution, occupancy.origin, image.shape[0]
        polygon = [[ox + col * res, oy + (rows - row) * res] for col, row in corners]
        rooms.append(RoomEntry(name=name, polygon=polygon))
    return rooms


def _outline(centres: np.ndarray) -> list[tuple[float, float]]:
    """The outline of a region along its pixels' outer edges, from OpenCV's contour through its boundary pixels'
    centres (``(col, row)``, in order): each corner moved half a pixel outwards, so that neighbouring rooms meet
    without a gap. Coordinates are pixel corners (``col`` to the right, ``row`` down)."""
    n = len(centres)
    if n < 3:
        return []
    area = sum(centres[i, 0] * centres[(i + 1) % n, 1] - centres[(i + 1) % n, 0] * centres[i, 1] for i in range(n))
    sign = 1.0 if area > 0 else -1.0
    corners = []
    for i in range(n):
        before, here, after = centres[i - 1], centres[i], centres[(i + 1) % n]
        offset = np.zeros(2)
        for a, b in ((before, here), (here, after)):
            d = b - a
            offset += sign * np.array([d[1], -d[0]]) / max(float(np.hypot(*d)), 1e-9)
        offset = np.clip(offset, -1.0, 1.0) * 0.5
        corners.append((float(here[0] + 0.5 + offset[0]), float(here[1] + 0.5 + offset[1])))
    return corners


def _floorplan(spec: WorldFile, occupancy: OccupancyMap | None) -> FloorPlan:
    cs = spec.cell_size
    corners = [(float(x), float(y)) for room in spec.rooms for x, y in room.polygon]
    if occupancy is not None:
        origin = occupancy.origin
        width = max(1, math.floor(occupancy.size_m[0] / cs))
        height = max(1, math.floor(occupancy.size_m[1] / cs))
    else:  # a one-cell border round the rooms
        origin = (
            math.floor(min(x for x, _ in corners) / cs) * cs - cs,
            math.floor(min(y for _, y in corners) / cs) * cs - cs,
        )
        width = math.ceil((max(x for x, _ in corners) - origin[0]) / cs) + 1
        height = math.ceil((max(y for _, y in corners) - origin[1]) / cs) + 1
    rooms = []
    for room_id, entry in enumerate(spec.rooms, start=1):
        polygon = tuple(((x - origin[0]) / cs, (y - origin[1]) / cs) for x, y in entry.polygon)
        x0 = max(0, math.floor(min(p[0] for p in polygon)))
        y0 = max(0, math.floor(min(p[1] for p in polygon)))
        x1 = min(width, math.ceil(max(p[0] for p in polygon)))
        y1 = min(height, math.ceil(max(p[1] for p in polygon)))
        room = Room(room_id, entry.name, x0, y0, max(x0, x1), max(y0, y1), polygon)
        if not room.cells():
            raise ValueError(f"room {entry.name!r} holds no cell of the {cs} m grid (outside the map, or too small)")
        rooms.append(room)
    _no_overlap(rooms, origin, cs)
    rows = []
    for cy in range(height):
        row = []
        for cx in range(width):
            if occupancy is not None:
                free = _cell_free_on_map(occupancy, origin, cs, cx, cy)
            else:
                centre = (cx + 0.5, cy + 0.5)
                free = any(point_in_polygon(centre, r.polygon) for r in rooms)
            row.append("." if free else "#")
        rows.append("".join(row))
    return FloorPlan(cs, tuple(rows), tuple(rooms), origin)


def _no_overlap(rooms: list[Room], origin: Vec2, cs: float) -> None:
    """Every grid cell belongs to one room at most: a robot in two rooms at once would search, and count, both."""
    owner: dict[tuple[int, int], Room] = {}
    for room in rooms:
        for cell in room.cells():
            other = owner.setdefault(cell, room)
            if other is not room:
                where = [round(origin[0] + (cell[0] + 0.5) * cs, 2), round(origin[1] + (cell[1] + 0.5) * cs, 2)]
                raise ValueError(f"rooms {other.name!r} and {room.name!r} overlap (at {where}): a place is in one room")


def _cell_free_on_map(occupancy: OccupancyMap, origin: Vec2, cs: float, cx: int, cy: int) -> bool:
    """A grid cell is free when no pixel of the map under it is occupied and most are free (unknown space is not
    driven through); so a doorway needs at least two cells of width to stay open."""
    res = occupancy.resolution
    rows = occupancy.free.shape[0]
    x0 = round(cx * cs / res)
    x1 = max(x0 + 1, round((cx + 1) * cs / res))
    r1 = rows - round(cy * cs / res)  # image row 0 is the map's top: map y grows upwards
    r0 = min(r1 - 1, rows - round((cy + 1) * cs / res))
    window = (slice(max(0, r0), max(0, r1)), slice(x0, x1))
    free = occupancy.free[window]
    return free.size > 0 and not occupancy.occupied[window].any() and float(free.mean()) > 0.5


def world_summary(world: World) -> list[tuple[str, str]]:
    """What ``coteam world check`` prints: one (what, value) row per part of the file."""
    scene, fp = world.scene, world.scene.floorplan
    free = sum(row.count(".") for row in fp.rows)
    outside = sum(
        1
        for cy, row in enumerate(fp.rows)
        for cx, ch in enumerate(row)
        if ch == "." and fp.room_of_cell(cx, cy) is None
    )
    names = scene.names()
    fixtures = [f"{f.name} ({names[f.room]})" for f in (*scene.containers, *scene.surfaces)]
    counts: dict[str, int] = {}
    for item in scene.items:
        counts[item.name] = counts.get(item.name, 0) + 1
    goal = [f"{p.relation.value}({p.item}, {names[p.target]}): {p.count}" for p in scene.task.predicates]
    return [
        ("rules", f"{scene.benchmark.value} (horizon {scene.task.horizon}, time limit {world.time_limit_s:g} s)"),
        (
            "grid",
            f"{fp.width} x {fp.height} cells of {fp.cell_size} m from {list(fp.origin)}; {free} free"
            + (f", {outside} of them in no room" if outside else ""),
        ),
        ("map", str(world.map_path) if world.map_path else "none: the free space is the rooms' insides"),
        ("rooms", ", ".join(r.name for r in fp.rooms)),
        ("fixtures", ", ".join(fixtures)),
        ("items", ", ".join(f"{n} x{c}" for n, c in counts.items()) or "none"),
        (
            "robots",
            ", ".join(
                f"{a.name} at {list(a.position)}"
                + (f", rests in the {world.rest_rooms[a.name]}" if a.name in world.rest_rooms else "")
                for a in scene.agent_starts
            ),
        ),
        ("task", f"{scene.task.name}: " + ", ".join(goal)),
        ("safety", policy_summary(world.safety) if world.safety is not None else "no policy"),
    ]
