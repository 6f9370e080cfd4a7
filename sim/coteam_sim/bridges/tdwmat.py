"""The TDW bridge: TDW-MAT's transport challenge played by ThreeDWorld (``tdw.controller.Controller``), each robot a
Replicant driven by TDW's own ``Replicant`` add-on, as the engine of
:class:`~coteam_sim.bridges.external.BridgedSimulator`.

* The house is the episode's (suite ``tdwmat-tdw``: the ``tdwmat-test`` episodes), built in an empty scene at the
  start: a floor and the walls of its floor plan as kinematic cubes (``load_primitive_from_resources``,
  ``scale_object``), the bed as TDW's ``bed01`` model and the other furniture as kinematic cubes, every item as a
  model of TDW's library (:data:`MODELS`; items on the same furniture spread over its top), each robot a Replicant
  where the episode starts it. Map (x, y) is TDW's (x, z). A build the controller launched quits at the episode's
  end; one started by hand keeps its session for the run's next episode.
* The primitives are TDW-MAT's, played by the Replicant: ``move_forward`` is ``move_by(0.5)``, the turns
  ``turn_by(∓15)``, ``grasp`` reaches for the object (``reach_for``, 1.5 m at most), grasps it and brings the arm
  back, ``put_in`` drops the held object into the container held in the other hand and parents it to that
  container (``parent_object_to_object``: it travels with it), ``drop`` drops it. Each runs frame by frame until
  the add-on says it ended; its ``ActionStatus`` becomes the simulator's failure reason (:func:`failure_reason`).
* TDW-MAT's own bookkeeping (one object per hand, no nesting, three items a container, nothing taken from a
  teammate's hand; a grasp only of what is in view) is the embedded simulator's (``Simulator.handling_refusal``,
  ``grasp_refusal``).
* After every primitive the session's state is mirrored: each Replicant's pose and what it holds (``Replicants``
  output data), where each item is (``Transforms``); an item that has not moved keeps its place (on its
  furniture), one that moved or fell lies on the floor where TDW put it. Goals are judged on it (within 3 m of the
  bed).

Not mapped: images (what a robot sees is the embedded simulator's view cone on TDW's poses), TDW-MAT's own
floor plans and object placements (the house is the episode's), physics beyond where TDW leaves things.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zmq
from tdw.add_ons.replicant import Replicant
from tdw.controller import Controller
from tdw.output_data import OutputData, Transforms
from tdw.replicant.action_status import ActionStatus
from tdw.replicant.arm import Arm
from tdw.replicant.image_frequency import ImageFrequency

from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, Placement, Relation, Scene, Vec2, WorldState
from coteam_sim.bridges.external import BridgeError, heading_from_yaw, unity_yaw
from coteam_sim.bridges.settings import TdwSettings
from coteam_sim.primitives import Primitive, PrimitiveKind

REPLICANT_IDS = 100_000  # a robot's Replicant id: this plus its index (object ids are the scene's)
WALL_IDS = 200_000  # the walls' cubes
FLOOR_ID = 199_999
FLOOR_M = 0.1  # the floor's thickness (its top at height 0)
SPREAD_M = 0.2  # items on the same furniture stand this far apart
WALL_HEIGHT_M = 2.5
FURNITURE_SIZE_M = (0.8, 0.75, 0.8)  # a stand-in cube for furniture other than the bed
SURFACE_HEIGHT_M = FURNITURE_SIZE_M[1]
ARRIVED_M = 0.02  # a step has ended this close to its 0.5 m
MAX_FRAMES = 500  # a primitive the add-on has not ended in this many frames: the build is not playing it
ARMS = (Arm.left, Arm.right)  # the simulator's hand 0 and 1
MODELS = {  # the scene's item names -> TDW's model library (models_core.json)
    "bread": "bread",
    "burger": "b03_burger",
    "loaf_bread": "b03_loafbread",
    "apple": "apple",
    "banana": "b04_banana",
    "orange": "orange",
    "bowl": "b04_bowl_smooth",
    "plate": "plate06",
    "tea_tray": "teatray",
    "plastic_basket": "basket_18inx18inx12iin_plastic_lattice",
    "wicker_basket": "basket_18inx18inx12iin_wicker",
    "wood_basket": "basket_18inx18inx12iin_bamboo",
    "iphone": "f10_apple_iphone_4",
    "pen": "b03_pen",
    "key": "key_brass",
    "ipod": "apple_ipod_touch_grey_vray",
    "lighter": "lighter",
    "purse": "purse",
    "calculator": "calculator",
    "pencil_bucket": "pencil_all",
    "mouse": "mouse_02_vray",
    "bed": "bed01",
}
_REASONS = {
    ActionStatus.success: "",
    ActionStatus.still_dropping: "",  # let go of; TDW had not yet seen it come to rest
    ActionStatus.collision: "blocked",
    ActionStatus.detected_obstacle: "blocked",
    ActionStatus.failed_to_move: "blocked",
    ActionStatus.failed_to_turn: "blocked",
    ActionStatus.cannot_reach: "too far",
    ActionStatus.failed_to_reach: "too far",
    ActionStatus.not_holding: "not holding",
    ActionStatus.already_holding: "hand full",
    ActionStatus.cannot_grasp: "not graspable",
}


def failure_reason(status: ActionStatus) -> str:
    """The simulator's reason for a Replicant action that ended with ``status`` ('' for success)."""
    return _REASONS.get(status, "failed")


def controller_factory(settings: TdwSettings) -> Callable[[], Any]:
    """A function making ``tdw.controller.Controller`` sessions with ``settings``."""

    def make() -> Any:
        return Controller(port=settings.port, check_version=settings.launch_build, launch_build=settings.launch_build)

    return make


_KEPT: dict[int, Any] = {}  # a build started by hand: its session (by port), kept for the run's next episode


def _connect(make_controller: Callable[[], Any], settings: TdwSettings) -> Any:
    """The controller, once a build has connected to it (a build started by hand: the session its last episode
    left); a one-line error when none connects within ``settings.connect_timeout_s`` (the controller itself waits
    for ever)."""
    if not settings.launch_build and settings.port in _KEPT:
        return _KEPT.pop(settings.port)
    made: dict[str, Any] = {}

    def connect() -> None:
        try:
            made["controller"] = make_controller()
        except BaseException as exc:
            made["error"] = exc

    thread = threading.Thread(target=connect, name="tdw-connect", daemon=True)
    thread.start()
    thread.join(settings.connect_timeout_s)
    if "error" in made:
        error = made["error"]
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise BridgeError(f"TDW could not start ({first})")
    if "controller" not in made:
        raise BridgeError(
            f"no TDW build connected on port {settings.port} within {settings.connect_timeout_s:g} s: it needs "
            "TDW's Unity build (downloaded by tdw, or started by hand with --tdw-no-launch) and a display (or xvfb-run)"
        )
    controller = made["controller"]
    controller.socket.setsockopt(zmq.RCVTIMEO, round(settings.timeout_s * 1000))
    return controller


class TdwEngine:
    """One TDW session playing ``scene`` for ``agents`` (see the module docstring)."""

    def __init__(
        self, scene: Scene, agents: tuple[str, ...], make_controller: Callable[[], Any], settings: TdwSettings
    ) -> None:
        self.scene = scene
        self.agents = agents
        self.settings = settings
        self.physics = Physics()  # TDW-MAT's step, turn and reach
        self.resp: list[bytes] = []
        self.carried: dict[int, int] = {}  # item -> the container it was put in
        start = WorldState(scene, agents)
        self.moved: set[int] = set()
        self.replicants = {
            name: Replicant(
                replicant_id=REPLICANT_IDS + index,
                position={"x": s.position[0], "y": 0.0, "z": s.position[1]},
                rotation={"x": 0.0, "y": unity_yaw(s.heading), "z": 0.0},
                image_frequency=ImageFrequency.never,
            )
            for index, (name, s) in enumerate(zip(agents, (start.agents[a] for a in agents), strict=True))
        }
        self.controller = _connect(make_controller, settings)
        for replicant in self.replicants.values():
            # no look-ahead for obstacles (its box, wider than a robot, stops it in doorways the planner's paths
            # cross): a Replicant stops when it touches a wall; items are no obstacle (as in the benchmark's rules)
            replicant.collision_detection.avoid = False
            replicant.collision_detection.exclude_objects.extend(i.id for i in scene.items)
        try:
            self.controller.add_ons.clear()  # (a kept session: the last episode's Replicants)
            self.controller.add_ons.extend(self.replicants.values())
            self._communicate(self._house(start), "building the house")
            self._communicate([], "adding the robots")  # the add-ons read their Replicants' static data
        except BaseException:
            self.close()
            raise

    # --- the session ----------------------------------------------------------------------------------------
    def _communicate(self, commands: list[dict[str, Any]], what: str) -> list[bytes]:
        try:
            self.resp = self.controller.communicate(commands)
        except zmq.Again:
            raise BridgeError(f"TDW did not answer within {self.settings.timeout_s:g} s ({what})") from None
        except zmq.ZMQError as exc:
            raise BridgeError(f"TDW's connection failed ({what}): {exc}") from None
        return self.resp

    def _house(self, start: WorldState) -> list[dict[str, Any]]:
        """The commands that build ``start``'s house in TDW (see the module docstring)."""
        fp = self.scene.floorplan
        (x0, y0), (x1, y1) = fp.corner_of(0, 0), fp.corner_of(fp.width, fp.height)
        commands: list[dict[str, Any]] = [
            {"$type": "load_scene", "scene_name": "ProcGenScene"},  # empty (a kept session: of the last episode)
            *_cube(FLOOR_ID, ((x0 + x1) / 2, (y0 + y1) / 2), (x1 - x0, FLOOR_M, y1 - y0), base=-FLOOR_M),
        ]
        for index, (x0, y0, x1, y1) in enumerate(_wall_runs(fp.rows)):
            (ax, ay), (bx, by) = fp.corner_of(x0, y0), fp.corner_of(x1, y1)
            commands += _cube(WALL_IDS + index, ((ax + bx) / 2, (ay + by) / 2), (bx - ax, WALL_HEIGHT_M, by - ay))
        for fixture in (*self.scene.containers, *self.scene.surfaces):
            if fixture.name == "bed":
                commands.append(Controller.get_add_object(MODELS["bed"], fixture.id, _position(fixture.position)))
                commands.append({"$type": "set_kinematic_state", "id": fixture.id, "is_kinematic": True})
            else:
                commands += _cube(fixture.id, fixture.position, FURNITURE_SIZE_M)
        # furniture has no footprint in the floor plan and robots pass each other there: in TDW neither blocks one
        robots = [r.replicant_id for r in self.replicants.values()]
        furniture = [f.id for f in (*self.scene.containers, *self.scene.surfaces)]
        commands += [
            {"$type": "ignore_collisions", "id": robot, "other_id": other, "ignore": True}
            for i, robot in enumerate(robots)
            for other in [*furniture, *robots[i + 1 :]]
        ]
        on_each: dict[int, int] = {}  # items placed on each piece of furniture so far
        for item in self.scene.items:
            placement = start.placements[item.id]
            x, y = start.position_of(item.id)
            height = 0.0
            if placement.relation == Relation.ON:  # spread over the furniture's top, a grid of 3 x 3 places
                k = on_each[placement.target] = on_each.get(placement.target, -1) + 1
                x, y, height = x + SPREAD_M * (k % 3 - 1), y + SPREAD_M * (k // 3 % 3 - 1), SURFACE_HEIGHT_M
            commands.append(Controller.get_add_object(model_name(item.name), item.id, _position((x, y), height)))
        return commands

    def _play(self, agent: str, start: Callable[[Replicant], None], what: str) -> str:
        """Start an action of ``agent``'s Replicant and run frames until it ends; '' or the failure reason."""
        replicant = self.replicants[agent]
        start(replicant)
        for _ in range(MAX_FRAMES):
            self._communicate([], what)
            if replicant.action.status != ActionStatus.ongoing:
                return failure_reason(replicant.action.status)
        raise BridgeError(f"TDW did not end {what} of {agent} in {MAX_FRAMES} frames")

    def close(self) -> None:
        """The end of the episode: a build the controller launched quits; one started by hand stays connected for
        the run's next episode (it cannot connect to another controller)."""
        if not self.settings.launch_build:
            _KEPT[self.settings.port] = self.controller
            return
        with contextlib.suppress(zmq.ZMQError, BridgeError):
            self.controller.socket.setsockopt(zmq.RCVTIMEO, 2000)
            self.controller.communicate({"$type": "terminate"})
        self.controller.socket.close(linger=0)
        self.controller.socket.context.term()

    # --- ExternalEngine -------------------------------------------------------------------------------------
    def move(self, agent: str, position: Vec2, heading: int) -> str:
        return f"TDW-MAT robots walk by {PrimitiveKind.MOVE_FORWARD.value}"

    def act(self, agent: str, prim: Primitive) -> str:
        k = prim.kind
        physics = self.physics
        if k == PrimitiveKind.MOVE_FORWARD:
            failure = self._play(agent, lambda r: r.move_by(physics.tdw_forward_m, arrived_at=ARRIVED_M), "a step")
            # the walk cycle loops until stopped: it would carry the robot on while its teammates act
            self._communicate(
                [{"$type": "stop_replicant_animation", "id": self.replicants[agent].replicant_id}], "a step"
            )
            return failure
        if k in (PrimitiveKind.TURN_LEFT, PrimitiveKind.TURN_RIGHT):
            angle = -physics.tdw_turn_deg if k == PrimitiveKind.TURN_LEFT else physics.tdw_turn_deg
            return self._play(agent, lambda r: r.turn_by(angle), "a turn")
        if k == PrimitiveKind.GRASP:
            target, arm = prim.args
            reached = self._play(
                agent, lambda r: r.reach_for(target, ARMS[arm], max_distance=physics.tdw_reach_m), "a reach"
            )
            failure = reached or self._play(agent, lambda r: r.grasp(target, ARMS[arm]), "a grasp")
            self._play(agent, lambda r: r.reset_arm(ARMS[arm]), "bringing the arm back")
            if not failure:
                self.moved.add(target)
            return failure
        if k == PrimitiveKind.PUT_INTO_CARRIER:
            (arm,) = prim.args
            held = self.replicants[agent].dynamic.held_objects
            item, carrier = held.get(ARMS[arm]), held.get(ARMS[1 - arm])
            if item is None or carrier is None:  # TDW's hands, which the world model mirrors: not expected
                return "not holding"
            inside = self._position_of(carrier)
            failure = self._play(agent, lambda r: r.drop(ARMS[arm], offset=inside), "putting it in")
            if not failure:
                self._communicate(
                    [
                        {"$type": "parent_object_to_object", "parent_id": carrier, "id": item},
                        {"$type": "set_kinematic_state", "id": item, "is_kinematic": True, "use_gravity": False},
                    ],
                    "putting it in",
                )
                self.carried[item] = carrier
            return failure
        if k == PrimitiveKind.DROP:
            (arm,) = prim.args
            return self._play(agent, lambda r: r.drop(ARMS[arm]), "a drop")
        return f"[{k.value}] is not a TDW-MAT primitive"

    def _transforms(self) -> Iterator[tuple[int, np.ndarray]]:
        for data in self.resp[:-1]:
            if OutputData.get_data_type_id(data) == "tran":
                transforms = Transforms(data)
                for j in range(transforms.get_num()):
                    yield transforms.get_id(j), transforms.get_position(j)

    def _position_of(self, object_id: int) -> dict[str, float]:
        position = next((p for oid, p in self._transforms() if oid == object_id), None)
        if position is None:
            raise BridgeError(f"TDW sent no position of object {object_id}")
        return {"x": float(position[0]), "y": float(position[1]), "z": float(position[2])}

    def mirror(self, world: WorldState) -> None:
        holder: dict[int, tuple[str, int]] = {}
        for agent, replicant in self.replicants.items():
            state = world.agents[agent]
            position, forward = replicant.dynamic.transform.position, replicant.dynamic.transform.forward
            state.position = (float(position[0]), float(position[2]))
            state.heading = heading_from_yaw(math.degrees(math.atan2(forward[0], forward[2])))
            held = replicant.dynamic.held_objects
            state.hands = [held.get(arm) for arm in ARMS]
            holder.update({oid: (agent, hand) for hand, oid in enumerate(state.hands) if oid is not None})
        where = dict(self._transforms())
        for item in self.scene.items:
            if item.id in holder:
                agent, hand = holder[item.id]
                world.placements[item.id] = Placement.held(agent, hand)
            elif item.id in self.carried:
                world.placements[item.id] = Placement(Relation.IN, self.carried[item.id])
            elif item.id in where and (item.id in self.moved or self._fell(item.id, where[item.id])):
                xz = (float(where[item.id][0]), float(where[item.id][2]))
                room = world.scene.floorplan.room_at(xz)
                world.placements[item.id] = Placement(Relation.FLOOR, room.id if room else -1, position=xz)
            else:
                world.placements[item.id] = self.scene.placements[item.id]

    def _fell(self, item: int, position: np.ndarray) -> bool:
        """Whether an item that started on furniture is now down on the floor (knocked off it)."""
        return self.scene.placements[item].relation == Relation.ON and float(position[1]) < SURFACE_HEIGHT_M / 2

    def visible_ids(self, agent: str) -> None:
        """No camera in the bridge: what a robot sees is the embedded simulator's view on TDW's poses."""
        return None


def model_name(item: str) -> str:
    """TDW's model for an item of the scene (one line when it has none)."""
    try:
        return MODELS[item]
    except KeyError:
        raise BridgeError(f"the TDW bridge has no model for {item!r}; known: {', '.join(sorted(MODELS))}") from None


def _position(xy: Vec2, height: float = 0.0) -> dict[str, float]:
    return {"x": float(xy[0]), "y": height, "z": float(xy[1])}


def _cube(object_id: int, xy: Vec2, size: tuple[float, float, float], base: float = 0.0) -> list[dict[str, Any]]:
    """A kinematic cube of ``size`` (x, height, z) at ``xy``, its bottom at height ``base``."""
    return [
        {
            "$type": "load_primitive_from_resources",
            "primitive_type": "Cube",
            "id": object_id,
            "position": _position(xy, base + size[1] / 2),
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0},
        },
        {"$type": "scale_object", "id": object_id, "scale_factor": {"x": size[0], "y": size[1], "z": size[2]}},
        {"$type": "set_kinematic_state", "id": object_id, "is_kinematic": True, "use_gravity": False},
    ]


def _wall_runs(rows: tuple[str, ...]) -> list[tuple[int, int, int, int]]:
    """The wall cells of a floor plan's grid as rectangles (x0, y0, x1, y1 in cells, exclusive ends): each row's
    runs of walls, merged with the same run of the rows below."""
    runs: dict[tuple[int, int], list[int]] = {}  # (x0, x1) -> [y0, y1] of the open rectangle
    done: list[tuple[int, int, int, int]] = []
    for y, row in enumerate(rows):
        here = set()
        x = 0
        while x < len(row):
            if row[x] != "#":
                x += 1
                continue
            end = x
            while end < len(row) and row[end] == "#":
                end += 1
            here.add((x, end))
            x = end
        for span in list(runs):
            if span not in here:
                y0, y1 = runs.pop(span)
                done.append((span[0], y0, span[1], y1))
        for span in here:
            if span in runs:
                runs[span][1] = y + 1
            else:
                runs[span] = [y, y + 1]
    done += [(span[0], y0, span[1], y1) for span, (y0, y1) in runs.items()]
    return sorted(done)


@dataclass(frozen=True)
class TdwBridge:
    """An episode of ``scene`` (a TDW-MAT episode of the embedded generator) on TDW: each start opens a session
    with ``make_controller`` (the real ``Controller``: :func:`controller_factory`; in tests and benches
    ``FakeTdwController``)."""

    scene: Scene
    make_controller: Callable[[], Any]
    settings: TdwSettings = field(default_factory=TdwSettings)
    benchmark: Benchmark = Benchmark.TDWMAT

    @property
    def title(self) -> str:
        return self.scene.task.name

    @property
    def horizon(self) -> int:
        return self.scene.task.horizon

    @property
    def known_scene(self) -> Scene:
        """The episode's house, known before any session (TDW is given it)."""
        return self.scene

    def start(self, agents: tuple[str, ...], seed: int) -> tuple[Scene, TdwEngine]:
        engine = TdwEngine(self.scene, agents, self.make_controller, self.settings)
        return self.scene, engine
