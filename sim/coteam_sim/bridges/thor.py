"""The AI2-THOR bridge: a multi-agent AI2-THOR session (``ai2thor.controller.Controller`` with ``agentCount``) as
the engine of :class:`~coteam_sim.bridges.external.BridgedSimulator`.

* The scene comes from the session's own metadata: the free space is ``GetReachablePositions`` (one planning cell
  per reachable position), the room is the floor plan's (iTHOR floor plans are one room: kitchens 1-30, living
  rooms 201-230, bedrooms 301-330, bathrooms 401-430, by AI2-THOR's numbering), openable receptacles are containers
  and the others surfaces, pickupable objects are items (named by their type: ``bread``, ``tomato``), each where its
  ``parentReceptacles`` say, and each agent starts where the session put it. Fixtures no reachable position is
  within an arm's reach of are left out (with what is in them).
* Walking: a stride of the embedded navigator becomes ``TeleportFull`` to the reachable position nearest to it
  that no other agent stands on, facing the way it walked, and the agent then looks round on the spot (four
  quarter turns): what it saw is in view. Open, close, grab and put turn the agent to face the object
  (``TeleportFull`` on the spot), then ``OpenObject``, ``CloseObject``, ``PickupObject``, ``PutObject``; AI2-THOR
  decides, and its error messages become the simulator's failure reasons (``too far`` for an object not
  interactable, ...). An agent holds one object at a time, as in AI2-THOR.
* After every action the session's state is mirrored: poses, what each agent holds (``inventoryObjects``), where
  each item is (``parentReceptacles``), which containers are open; goals are judged on it. An agent sees the items
  AI2-THOR shows it and the furniture of its room (C-WAH's rule: a room shows its furniture on entering).

Not mapped: object states other than open (sliced, cooked, toggled, dirty), pickupable receptacles holding items
(an item in a bowl counts as on the floor where it lies), ProcTHOR houses (several rooms), and the robots' images.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, Container, Placement, Relation, Scene, Vec2, WorldState
from coteam.home.world_file import (
    WORLD_FORMAT,
    FixtureEntry,
    ItemEntry,
    OccupancyMap,
    RobotEntry,
    RoomEntry,
    TaskEntry,
    WorldFile,
    compile_world,
)
from coteam_sim.bridges.external import BridgeError, heading_from_yaw, unity_yaw
from coteam_sim.bridges.settings import ThorSettings
from coteam_sim.primitives import Primitive, PrimitiveKind

GRID_M = 0.25  # AI2-THOR's gridSize: one reachable position per planning cell
VISIBILITY_M = 1.5  # AI2-THOR's visibilityDistance: how far an agent sees and interacts
HORIZON_DEG = 30.0  # the camera looks this far down: counters, tables and shelves in view
# AI2-THOR's error messages -> the simulator's failure reasons (the first pattern found wins)
_REASONS = (
    (r"not the objectid on any object|invalid.*objectid", "unknown object"),
    (r"not interactable|too far|not visible|occluded", "too far"),
    (r"not an openable", "cannot be opened"),
    (r"isn't holding|not holding", "not holding"),
    (r"has something in it already|hand must be empty|already holding", "no free hand"),
    (r"canpickup", "not graspable"),
    (r"is closed", "container closed"),
    (r"not a receptacle", "not a container"),
    (r"no valid positions to place|cannot be placed|blocking held object", "container full"),
    (r"blocked|collid|not a reachable position", "blocked"),
)
_ACTIONS = {
    PrimitiveKind.OPEN: "OpenObject",
    PrimitiveKind.CLOSE: "CloseObject",
    PrimitiveKind.GRAB: "PickupObject",
    PrimitiveKind.PUT_IN: "PutObject",
    PrimitiveKind.PUT_ON: "PutObject",
}
_ROOMS = ((1, 30, "kitchen"), (201, 230, "livingroom"), (301, 330, "bedroom"), (401, 430, "bathroom"))


def failure_reason(error_message: str) -> str:
    """The simulator's reason for an AI2-THOR action that failed with ``error_message``."""
    text = error_message.lower()
    return next((reason for pattern, reason in _REASONS if re.search(pattern, text)), "failed")


def room_name(floor_plan: str) -> str:
    """The room of an iTHOR floor plan (``FloorPlan1`` is a kitchen), by AI2-THOR's numbering."""
    number = int(re.sub(r"\D", "", floor_plan) or 0)
    return next((name for low, high, name in _ROOMS if low <= number <= high), "room")


@dataclass(frozen=True)
class ThorTask:
    """A MAP-THOR-style task: put items in or on fixtures of an iTHOR floor plan, by name (``in(bread, fridge): 1``,
    C-WAH's rules)."""

    name: str
    floor_plan: str
    goal: tuple[str, ...]
    horizon: int = 250


def controller_factory(settings: ThorSettings) -> Callable[..., Any]:
    """A function making ``ai2thor.controller.Controller`` sessions with ``settings``; one line when the package
    is missing."""
    try:
        from ai2thor.controller import Controller
    except ImportError as exc:
        raise BridgeError(
            f"the AI2-THOR bridge cannot import ai2thor's controller ({exc}): pip install -e '.[ai2thor]'"
        ) from None
    options: dict[str, Any] = {"server_timeout": settings.timeout_s}
    if settings.executable:
        options["local_executable_path"] = settings.executable
    if settings.platform:
        from ai2thor import platform as platforms

        platform = getattr(platforms, settings.platform, None)
        if not isinstance(platform, type):
            raise BridgeError(f"--thor-platform {settings.platform}: not an ai2thor platform (CloudRendering, Linux64)")
        options["platform"] = platform

    def make(**kwargs: Any) -> Any:
        return Controller(**options, **kwargs)

    return make


class ThorEngine:
    """One AI2-THOR session for the agents ``agents`` (see the module docstring)."""

    def __init__(self, task: ThorTask, agents: tuple[str, ...], make_controller: Callable[..., Any]) -> None:
        self.task = task
        self.agents = agents
        try:
            self.controller = make_controller(
                scene=task.floor_plan,
                agentCount=len(agents),
                gridSize=GRID_M,
                visibilityDistance=VISIBILITY_M,
                width=300,
                height=300,
            )
        except BridgeError:
            raise
        except Exception as exc:  # whatever the package raises: one line naming what is missing
            first = _first_line(exc)
            hint = (
                ""
                if "not contained in build" in first
                else "; it needs its Unity build (downloaded by ai2thor, or --thor-executable) and an X display, or "
                "--thor-platform CloudRendering with Vulkan"
            )
            raise BridgeError(f"AI2-THOR could not start {task.floor_plan} ({first}){hint}") from None
        self.metadata: list[Mapping[str, Any]] = self._events(self.controller.last_event)
        self.in_view: list[set[str]] = [set() for _ in agents]  # what each agent saw since its last action began
        self.thor_of: dict[int, str] = {}
        self.ours: dict[str, int] = {}
        try:
            reachable = self._step(0, "GetReachablePositions")[0]["actionReturn"] or []
            self.reachable = np.array([(p["x"], p["z"]) for p in reachable], dtype=float)
            if not len(self.reachable):
                raise BridgeError(f"AI2-THOR: {task.floor_plan} has no reachable position")
            self.scene = self._scene()
            for index, md in enumerate(self.metadata):
                self._look_round(index, heading_from_yaw(md["agent"]["rotation"]["y"]))
        except BaseException:
            self.close()  # a session that cannot be used is not left running
            raise

    # --- the session ----------------------------------------------------------------------------------------
    @staticmethod
    def _events(event: Any) -> list[Mapping[str, Any]]:
        return [e.metadata for e in getattr(event, "events", [event])]

    def _step(self, agent: int, action: str, **kwargs: Any) -> list[Mapping[str, Any]]:
        """Run ``action`` for agent number ``agent``; every agent's metadata after it."""
        try:
            event = self.controller.step(action=action, agentId=agent, **kwargs)
        except TimeoutError as exc:
            where = f"{action} in {self.task.floor_plan}"
            raise BridgeError(f"AI2-THOR did not answer {where}: {_first_line(exc)}") from None
        except (RuntimeError, ValueError) as exc:
            raise BridgeError(f"AI2-THOR refused {action} in {self.task.floor_plan}: {_first_line(exc)}") from None
        self.metadata = self._events(event)
        self.in_view[agent] |= {o["objectId"] for o in self.metadata[agent]["objects"] if o["visible"]}
        return self.metadata

    def close(self) -> None:
        self.controller.stop()

    # --- the scene from the session's metadata ---------------------------------------------------------------
    def _scene(self) -> Scene:
        objects = sorted(self.metadata[0]["objects"], key=lambda o: o["objectId"])
        physics = Physics()
        fixtures = [
            o
            for o in objects
            if o["receptacle"] and not o["pickupable"] and self._nearest_free(_xz(o)) <= physics.cwah_reach_m
        ]
        fixture_names = _names([o["objectType"] for o in fixtures])
        named = {o["objectId"]: name for o, name in zip(fixtures, fixture_names, strict=True)}
        furniture = {o["objectId"] for o in objects if o["receptacle"] and not o["pickupable"]}
        items = []
        for o in objects:
            if not o["pickupable"]:
                continue
            parents = o.get("parentReceptacles") or ()
            parent = next((p for p in parents if p in named), None)
            if parent is None and any(p in furniture for p in parents):
                continue  # in or on furniture left out: out of reach
            where = f"floor {_xz(o)[0]:.3f} {_xz(o)[1]:.3f}"
            if parent is not None:
                holder = next(f for f in fixtures if f["objectId"] == parent)
                where = f"{'in' if holder['openable'] else 'on'} {named[parent]}"
            items.append((o, ItemEntry(name=o["objectType"].lower(), where=where)))
        xs, zs = self.reachable[:, 0], self.reachable[:, 1]
        x0, x1 = float(xs.min()) - 2 * GRID_M, float(xs.max()) + 2 * GRID_M
        z0, z1 = float(zs.min()) - 2 * GRID_M, float(zs.max()) + 2 * GRID_M
        lying = [o for o, entry in items if entry.where.startswith("floor")]
        for o in [*fixtures, *lying]:  # the room holds every fixture and every item on the floor
            x0, x1 = min(x0, _xz(o)[0] - GRID_M), max(x1, _xz(o)[0] + GRID_M)
            z0, z1 = min(z0, _xz(o)[1] - GRID_M), max(z1, _xz(o)[1] + GRID_M)
        spec = WorldFile(
            format=WORLD_FORMAT,
            name=f"{self.task.floor_plan}: {self.task.name}",
            cell_size=GRID_M,
            rooms=[RoomEntry(name=room_name(self.task.floor_plan), polygon=[[x0, z0], [x1, z0], [x1, z1], [x0, z1]])],
            fixtures=[
                FixtureEntry(
                    name=named[o["objectId"]],
                    kind="container" if o["openable"] else "surface",
                    position=list(_xz(o)),
                    openable=bool(o["openable"]),
                    open=bool(o["isOpen"]),
                )
                for o in fixtures
            ],
            items=[entry for _, entry in items],
            robots=[
                RobotEntry(name=agent, start=[*_xz(md["agent"]), heading_from_yaw(md["agent"]["rotation"]["y"])])
                for agent, md in zip(self.agents, self.metadata, strict=True)
            ],
            task=TaskEntry(name=self.task.name, goal=list(self.task.goal), horizon=self.task.horizon),
        )
        try:
            scene = compile_world(spec, self._occupancy())
        except ValueError as exc:
            raise BridgeError(f"AI2-THOR {self.task.floor_plan}: {exc}") from None
        next_id = len(scene.floorplan.rooms) + 1  # the world file's numbering: rooms, fixtures, items
        for o in [*fixtures, *(o for o, _ in items)]:
            self.thor_of[next_id], self.ours[o["objectId"]] = o["objectId"], next_id
            next_id += 1
        return scene

    def _nearest_free(self, point: Vec2) -> float:
        return float(np.min(np.hypot(self.reachable[:, 0] - point[0], self.reachable[:, 1] - point[1])))

    def _occupancy(self) -> OccupancyMap:
        """The reachable positions as a map: one free pixel per position, a grid cell each."""
        xs, zs = self.reachable[:, 0], self.reachable[:, 1]
        origin = (float(xs.min()) - 2.5 * GRID_M, float(zs.min()) - 2.5 * GRID_M)
        columns = round((xs.max() - origin[0]) / GRID_M) + 3
        rows = round((zs.max() - origin[1]) / GRID_M) + 3
        free = np.zeros((rows, columns), dtype=bool)
        for x, z in self.reachable:
            free[rows - 1 - math.floor((z - origin[1]) / GRID_M), math.floor((x - origin[0]) / GRID_M)] = True
        return OccupancyMap(~free, free, GRID_M, origin)

    # --- ExternalEngine -------------------------------------------------------------------------------------
    def move(self, agent: str, position: Vec2, heading: int) -> str:
        """To the reachable position nearest to ``position`` that no other agent stands on (AI2-THOR's agents
        block each other; the embedded navigator does not know where they stand, so the stride steps aside)."""
        index = self.agents.index(agent)
        distance = np.hypot(*(self.reachable - np.array(position)).T)
        nearest = int(np.argmin(distance))
        for i, md in enumerate(self.metadata):
            if i != index:
                distance[np.hypot(*(self.reachable - np.array(_xz(md["agent"]))).T) < GRID_M / 2] = np.inf
        free = int(np.argmin(distance))
        spot = (float(self.reachable[free][0]), float(self.reachable[free][1]))
        if math.dist(spot, _xz(self.metadata[index]["agent"])) < GRID_M / 2:
            # another agent stands in the way; or no reachable position is nearer to where the stride went
            return "blocked" if free != nearest else "not reachable"
        self.in_view[index] = set()
        failure = self._teleport(index, spot, heading)
        if not failure:
            self._look_round(index, heading)
        return failure

    def _look_round(self, index: int, heading: float) -> None:
        """Turn on the spot a quarter at a time, back to ``heading``: what the camera saw on the way is in view (a
        robot's head scans as it goes; AI2-THOR shows only what is in front of the agent)."""
        spot = _xz(self.metadata[index]["agent"])
        for quarter in (90, 180, 270, 0):
            self._teleport(index, spot, heading + quarter)

    def _teleport(self, index: int, spot: Vec2, heading: float) -> str:
        md = self._step(
            index,
            "TeleportFull",
            position={"x": spot[0], "y": self.metadata[index]["agent"]["position"]["y"], "z": spot[1]},
            rotation={"x": 0.0, "y": unity_yaw(heading), "z": 0.0},
            horizon=HORIZON_DEG,
            standing=True,
        )[index]
        return _outcome(md)

    def act(self, agent: str, prim: Primitive) -> str:
        kind, target = prim.kind, prim.args[0]
        dest = prim.args[1] if len(prim.args) > 1 else None
        index = self.agents.index(agent)
        held = [o["objectId"] for o in self.metadata[index].get("inventoryObjects") or ()]
        if kind in (PrimitiveKind.PUT_IN, PrimitiveKind.PUT_ON):
            if self.thor_of.get(target) not in held:
                return "not holding"
            target = dest if dest is not None else -1
        action = _ACTIONS.get(kind)
        if action is None:
            return f"AI2-THOR has no action for {kind.value}"
        thor_id = self.thor_of.get(target)
        obj = next((o for o in self.metadata[index]["objects"] if o["objectId"] == thor_id), None)
        if obj is None:
            return "unknown object"
        self.in_view[index] = set()
        here = _xz(self.metadata[index]["agent"])
        there = _xz(obj)
        facing = math.degrees(math.atan2(there[1] - here[1], there[0] - here[0])) % 360
        self._teleport(index, here, facing)  # face it: AI2-THOR interacts with what the agent sees
        return _outcome(self._step(index, action, objectId=thor_id, forceAction=False)[index])

    def mirror(self, world: WorldState) -> None:
        holder: dict[str, str] = {}
        for agent, md in zip(self.agents, self.metadata, strict=True):
            state = world.agents[agent]
            state.position = _xz(md["agent"])
            state.heading = heading_from_yaw(md["agent"]["rotation"]["y"])
            inventory = [self.ours.get(o["objectId"]) for o in md.get("inventoryObjects") or ()]
            state.hands = inventory[:1] or [None]  # an AI2-THOR agent holds one object at a time
            holder.update({o["objectId"]: agent for o in md.get("inventoryObjects") or ()})
        for obj in self.metadata[0]["objects"]:
            ours = self.ours.get(obj["objectId"])
            if ours is None:
                continue
            if world.is_fixture(ours):
                if isinstance(world.fixture(ours), Container) and world.fixture(ours).openable:
                    world.is_open[ours] = bool(obj["isOpen"])
                continue
            if obj["objectId"] in holder:
                agent = holder[obj["objectId"]]
                world.placements[ours] = Placement.held(agent, world.agents[agent].hands.index(ours))
                continue
            parent = next((self.ours[p] for p in obj.get("parentReceptacles") or () if p in self.ours), None)
            if parent is not None and world.is_fixture(parent):
                relation = Relation.IN if isinstance(world.fixture(parent), Container) else Relation.ON
                world.placements[ours] = Placement(relation, parent)
            else:
                room = world.scene.floorplan.room_at(_xz(obj))
                world.placements[ours] = Placement(
                    Relation.FLOOR, room.id if room else world.scene.floorplan.rooms[0].id, position=_xz(obj)
                )

    def visible_ids(self, agent: str) -> list[int]:
        """What AI2-THOR shows the agent, and the furniture of the room it stands in (as C-WAH's rules have it: a
        room shows its furniture on entering; items only by AI2-THOR's own visibility)."""
        index = self.agents.index(agent)
        md = self.metadata[index]
        shown = self.in_view[index] | {o["objectId"] for o in md["objects"] if o["visible"]}
        seen = {self.ours[oid] for oid in shown if oid in self.ours}
        room = self.scene.floorplan.room_at(_xz(md["agent"]))
        furniture = {f.id for f in (*self.scene.containers, *self.scene.surfaces) if room and f.room == room.id}
        return sorted(seen | furniture)


def _outcome(metadata: Mapping[str, Any]) -> str:
    """'' when the agent's last action succeeded, else the simulator's reason for its error message."""
    return "" if metadata["lastActionSuccess"] else failure_reason(metadata["errorMessage"])


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _xz(thing: Mapping[str, Any]) -> Vec2:
    """An AI2-THOR position (y up) on the floor plan's plane: (x, z)."""
    return (float(thing["position"]["x"]), float(thing["position"]["z"]))


def _names(kinds: list[str]) -> list[str]:
    """Fixture names: the type in lower case, numbered when the floor plan has more than one."""
    counts = {k: kinds.count(k) for k in kinds}
    seen: dict[str, int] = {}
    out = []
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
        out.append(kind.lower() if counts[kind] == 1 else f"{kind.lower()}_{seen[kind]}")
    return out


@dataclass(frozen=True)
class ThorBridge:
    """An episode of ``task`` on AI2-THOR: each start opens a session with ``make_controller`` (the real
    ``Controller``: :func:`controller_factory`; in tests and benches ``FakeThorController``)."""

    task: ThorTask
    make_controller: Callable[..., Any]
    benchmark: Benchmark = Benchmark.CWAH  # MAP-THOR's goals are C-WAH's: in and on

    @property
    def title(self) -> str:
        return self.task.name

    @property
    def horizon(self) -> int:
        return self.task.horizon

    @property
    def known_scene(self) -> None:
        """Unknown until a session is open: the scene is read from AI2-THOR's metadata."""
        return None

    def start(self, agents: tuple[str, ...], seed: int) -> tuple[Scene, ThorEngine]:
        engine = ThorEngine(self.task, agents, self.make_controller)
        return engine.scene, engine


# MAP-THOR's "put bread, lettuce and tomato in the fridge", on the kitchens it uses (iTHOR FloorPlan1-5)
MAP_THOR_TASKS = tuple(
    ThorTask(
        "put bread, lettuce and tomato in the fridge",
        f"FloorPlan{n}",
        ("in(bread, fridge): 1", "in(lettuce, fridge): 1", "in(tomato, fridge): 1"),
    )
    for n in range(1, 6)
)
