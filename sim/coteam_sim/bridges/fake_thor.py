"""A stand-in for AI2-THOR's ``Controller`` that needs no Unity: small kitchens held in Python, answered in
AI2-THOR's own metadata format (``ai2thor.server.Event`` / ``MultiAgentEvent`` built from metadata dicts with the
documented keys: ``objects`` with ``objectId``, ``objectType``, ``position``, ``visible``, ``isInteractable``,
``receptacle``, ``receptacleObjectIds``, ``parentReceptacles``, ``openable``, ``isOpen``, ``pickupable``,
``isPickedUp``; ``agent`` with ``position`` and ``rotation``; ``inventoryObjects``, ``lastAction``,
``lastActionSuccess``, ``errorMessage``, ``actionReturn``, ``sceneBounds``, ``agentId``).

It plays the actions the bridge sends (``GetReachablePositions``, ``TeleportFull``, ``OpenObject``,
``CloseObject``, ``PickupObject``, ``PutObject``) by AI2-THOR's rules as documented: an object is visible
within ``visibilityDistance`` of the agent and inside its 90-degree view, not shut in a closed receptacle; only a
visible object is interactable; one object in the hand; a put needs an open receptacle. Failures carry AI2-THOR's
error messages. ``faults`` makes it fail the way a real build does: ``{"timeout_at": n}`` times out the n-th step
(``TimeoutError``, as the controller raises it), ``{"refuse": {"PickupObject": 1}}`` fails that many of an action.

The kitchens are not AI2-THOR's floor plans, only named after them: the same kinds of objects in a 4 x 5 m room.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from coteam_sim.bridges.external import BridgeError

GRID_M = 0.25
FOOTPRINT_M = 0.4  # no reachable position this close to a fixture's centre


@dataclass
class _Object:
    object_id: str
    object_type: str
    position: tuple[float, float, float]  # x, y (up), z
    receptacle: bool = False
    openable: bool = False
    pickupable: bool = False
    is_open: bool = False
    parent: str | None = None  # the receptacle it is in or on
    held_by: int | None = None


@dataclass(frozen=True)
class Kitchen:
    """A fake floor plan: fixtures (type, x, z, openable) along the walls, items (type, on or in which fixture
    type), and the agents' start cells."""

    fixtures: tuple[tuple[str, float, float, bool], ...]
    items: tuple[tuple[str, str], ...]
    starts: tuple[tuple[float, float], ...] = ((1.0, 1.0), (3.0, 1.0), (1.0, 2.0), (3.0, 2.0))
    size: tuple[float, float] = (4.0, 5.0)


_FIXTURES = (
    ("Fridge", 0.3, 4.6, True),
    ("CounterTop", 2.0, 4.7, False),
    ("Cabinet", 3.7, 4.6, True),
    ("Microwave", 3.7, 2.5, True),
    ("DiningTable", 2.0, 2.5, False),
    ("SinkBasin", 0.3, 2.5, False),
)
KITCHENS: dict[str, Kitchen] = {
    "FloorPlan1": Kitchen(
        _FIXTURES, (("Bread", "CounterTop"), ("Lettuce", "DiningTable"), ("Tomato", "SinkBasin"), ("Apple", "Cabinet"))
    ),
    "FloorPlan2": Kitchen(
        _FIXTURES, (("Bread", "DiningTable"), ("Lettuce", "CounterTop"), ("Tomato", "Cabinet"), ("Egg", "Fridge"))
    ),
    "FloorPlan3": Kitchen(
        _FIXTURES, (("Bread", "Cabinet"), ("Lettuce", "SinkBasin"), ("Tomato", "DiningTable"), ("Potato", "Microwave"))
    ),
    "FloorPlan4": Kitchen(
        _FIXTURES, (("Bread", "Microwave"), ("Lettuce", "DiningTable"), ("Tomato", "CounterTop"), ("Mug", "SinkBasin"))
    ),
    "FloorPlan5": Kitchen(
        _FIXTURES, (("Bread", "SinkBasin"), ("Lettuce", "Cabinet"), ("Tomato", "CounterTop"), ("Apple", "DiningTable"))
    ),
}


def _object_id(kind: str, x: float, y: float, z: float) -> str:
    """AI2-THOR's form of an object id: its type and the position it started at."""
    return f"{kind}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"


@dataclass
class FakeThorController:
    """``ai2thor.controller.Controller(scene=..., agentCount=..., gridSize=..., visibilityDistance=...)`` over a
    fake kitchen (see the module docstring)."""

    scene: str = "FloorPlan1"
    agentCount: int = 1
    gridSize: float = GRID_M
    visibilityDistance: float = 1.5
    faults: dict[str, Any] = field(default_factory=dict)
    width: int = 300
    height: int = 300
    steps: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)  # every step's action and arguments

    def __post_init__(self) -> None:
        if self.scene not in KITCHENS:
            raise ValueError(f"Scene '{self.scene}' not contained in build (fake: {', '.join(KITCHENS)})")
        kitchen = KITCHENS[self.scene]
        self.kitchen = kitchen
        self.objects: dict[str, _Object] = {}
        by_type: dict[str, str] = {}
        for kind, x, z, openable in kitchen.fixtures:
            oid = _object_id(kind, x, 0.9, z)
            self.objects[oid] = _Object(oid, kind, (x, 0.9, z), receptacle=True, openable=openable)
            by_type[kind] = oid
        for kind, where in kitchen.items:
            parent = self.objects[by_type[where]]
            x, _, z = parent.position
            oid = _object_id(kind, x + 0.1, 1.0, z - 0.1)
            self.objects[oid] = _Object(oid, kind, (x + 0.1, 1.0, z - 0.1), pickupable=True, parent=parent.object_id)
        self.reachable = [  # the floor a grid cell from the walls, not under the furniture
            (x * GRID_M, z * GRID_M)
            for x in range(2, round(kitchen.size[0] / GRID_M) - 1)
            for z in range(2, round(kitchen.size[1] / GRID_M) - 1)
            if all(math.hypot(x * GRID_M - fx, z * GRID_M - fz) >= FOOTPRINT_M for _, fx, fz, _ in kitchen.fixtures)
        ]
        self.poses = [[x, z, 0.0] for x, z in kitchen.starts[: self.agentCount]]  # x, z, yaw (degrees)
        self.hands: list[str | None] = [None] * self.agentCount
        self.refused = dict(self.faults.get("refuse", {}))
        self.last_event = self._event(0, "Initialize", "", None)

    # --- the Controller's API -------------------------------------------------------------------------------
    def step(self, action: str | dict[str, Any] | None = None, **kwargs: Any) -> Any:
        if isinstance(action, dict):
            kwargs, action = {**action, **kwargs}, action["action"]
        kwargs.pop("action", None)
        agent = int(kwargs.pop("agentId", 0))
        self.steps += 1
        self.calls.append({"action": action, "agentId": agent, **kwargs})
        if self.steps == self.faults.get("timeout_at"):
            raise TimeoutError(f"Error encountered when running action {action} in scene {self.scene}.")
        if not 0 <= agent < self.agentCount:
            raise ValueError(f"Invalid agentId {agent}: there are {self.agentCount} agents")
        handler = getattr(self, f"_do_{action}", None)
        if handler is None:
            raise ValueError(f"Invalid action: {action}")
        if self.refused.get(action, 0) > 0:
            self.refused[action] -= 1
            error, answer = f"{action} failed: the fake build refused it", None
        else:
            error, answer = handler(agent, **kwargs)
        self.last_event = self._event(agent, action, error, answer)
        return self.last_event

    def _event(self, agent: int, action: str, error: str, answer: Any) -> Any:
        """What ``Controller.step`` returns: one event per agent (each its own view), in agent order."""
        try:
            from ai2thor.server import Event, MultiAgentEvent
        except ImportError as exc:
            raise BridgeError(
                f"the fake AI2-THOR answers with ai2thor's event classes ({exc}): pip install ai2thor"
            ) from None

        events = [
            Event(self._metadata(a, action, error, answer if a == agent else None)) for a in range(self.agentCount)
        ]
        return MultiAgentEvent(agent, events) if self.agentCount > 1 else events[0]

    def stop(self) -> None:
        return None

    # --- actions (each: error message or "", the action's return) --------------------------------------------
    def _do_GetReachablePositions(self, agent: int) -> tuple[str, Any]:
        return "", [{"x": x, "y": 0.9, "z": z} for x, z in self.reachable]

    def _do_TeleportFull(
        self, agent: int, position: dict, rotation: dict, horizon: float = 0.0, standing: bool = True
    ) -> tuple[str, Any]:
        x, z = position["x"], position["z"]
        if not any(
            math.isclose(x, rx, abs_tol=1e-3) and math.isclose(z, rz, abs_tol=1e-3) for rx, rz in self.reachable
        ):
            return f"Teleport failed: ({x:.2f}, {z:.2f}) is not a reachable position", None
        others = [p for a, p in enumerate(self.poses) if a != agent]
        if any(math.isclose(x, p[0], abs_tol=1e-3) and math.isclose(z, p[1], abs_tol=1e-3) for p in others):
            return f"Agent {agent} is blocked from moving: another agent stands at ({x:.2f}, {z:.2f})", None
        self.poses[agent] = [x, z, float(rotation["y"]) % 360]
        return "", None

    def _do_OpenObject(self, agent: int, objectId: str, forceAction: bool = False) -> tuple[str, Any]:
        return self._open(agent, objectId, True)

    def _do_CloseObject(self, agent: int, objectId: str, forceAction: bool = False) -> tuple[str, Any]:
        return self._open(agent, objectId, False)

    def _open(self, agent: int, object_id: str, state: bool) -> tuple[str, Any]:
        error = self._reach(agent, object_id)
        if error:
            return error, None
        obj = self.objects[object_id]
        if not obj.openable:
            return f"{object_id} is not an Openable object", None
        obj.is_open = state
        return "", None

    def _do_PickupObject(self, agent: int, objectId: str, forceAction: bool = False) -> tuple[str, Any]:
        error = self._reach(agent, objectId)
        if error:
            return error, None
        obj = self.objects[objectId]
        if not obj.pickupable:
            return f"{objectId} must have the property CanPickup to be picked up.", None
        if self.hands[agent] is not None:
            return "Agent hand has something in it already! Can't pick up anything else", None
        obj.parent, obj.held_by, self.hands[agent] = None, agent, objectId
        return "", None

    def _do_PutObject(
        self, agent: int, objectId: str, forceAction: bool = False, placeStationary: bool = True
    ) -> tuple[str, Any]:
        held = self.hands[agent]
        if held is None:
            return "Can't place an object if Agent isn't holding anything", None
        error = self._reach(agent, objectId)
        if error:
            return error, None
        target = self.objects[objectId]
        if not target.receptacle:
            return "This target object is NOT a receptacle!", None
        if target.openable and not target.is_open:
            return f"{objectId} is closed: no valid positions to place object found", None
        obj = self.objects[held]
        obj.parent, obj.held_by, self.hands[agent] = objectId, None, None
        x, _, z = target.position
        obj.position = (x, 1.0, z)
        return "", None

    # --- rules ------------------------------------------------------------------------------------------------
    def _reach(self, agent: int, object_id: str) -> str:
        if object_id not in self.objects:
            return f"objectId: {object_id} is not the objectId on any object in the scene!"
        if not self._visible(agent, self.objects[object_id]):
            return f"{object_id} is not interactable and (perhaps it is occluded by something)."
        return ""

    def _shut_in(self, obj: _Object) -> bool:
        parent = self.objects.get(obj.parent) if obj.parent else None
        return parent is not None and parent.openable and not parent.is_open

    def _visible(self, agent: int, obj: _Object) -> bool:
        if obj.held_by is not None:
            return obj.held_by == agent
        x, z, yaw = self.poses[agent]
        dx, dz = obj.position[0] - x, obj.position[2] - z
        if math.hypot(dx, dz) > self.visibilityDistance or self._shut_in(obj):
            return False
        bearing = math.degrees(math.atan2(dx, dz)) % 360  # AI2-THOR's yaw: 0 faces +z, clockwise from above
        return abs((bearing - yaw + 180) % 360 - 180) <= 45

    def _position(self, agent: int, obj: _Object) -> dict[str, float]:
        if obj.held_by is not None:
            x, z, _ = self.poses[obj.held_by]
            return {"x": x, "y": 1.2, "z": z}
        return {"x": obj.position[0], "y": obj.position[1], "z": obj.position[2]}

    def _metadata(self, agent: int, action: str, error: str, answer: Any) -> dict[str, Any]:
        x, z, yaw = self.poses[agent]
        objects = []
        for obj in self.objects.values():
            seen = self._visible(agent, obj)
            position = self._position(agent, obj)
            objects.append(
                {
                    "objectId": obj.object_id,
                    "objectType": obj.object_type,
                    "name": obj.object_type + "_" + format(abs(hash(obj.object_id)) % 16**8, "08x"),
                    "position": position,
                    "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
                    "distance": math.hypot(position["x"] - x, position["z"] - z),
                    "visible": seen,
                    "isInteractable": seen,
                    "receptacle": obj.receptacle,
                    "receptacleObjectIds": [o.object_id for o in self.objects.values() if o.parent == obj.object_id]
                    if obj.receptacle
                    else None,
                    "parentReceptacles": [obj.parent] if obj.parent else None,
                    "openable": obj.openable,
                    "isOpen": obj.is_open,
                    "pickupable": obj.pickupable,
                    "isPickedUp": obj.held_by is not None,
                    "moveable": False,
                }
            )
        held = self.hands[agent]
        return {
            "objects": objects,
            "agent": {
                "name": f"agent{agent}",
                "position": {"x": x, "y": 0.9, "z": z},
                "rotation": {"x": 0.0, "y": yaw, "z": 0.0},
                "cameraHorizon": 30.0,
                "isStanding": True,
            },
            "inventoryObjects": [{"objectId": held, "objectType": self.objects[held].object_type}] if held else [],
            "sceneName": self.scene,
            "lastAction": action,
            "lastActionSuccess": not error,
            "errorMessage": error,
            "actionReturn": answer,
            "agentId": agent,
            "screenWidth": self.width,
            "screenHeight": self.height,
            "sceneBounds": {
                "center": {"x": self.kitchen.size[0] / 2, "y": 1.5, "z": self.kitchen.size[1] / 2},
                "size": {"x": self.kitchen.size[0], "y": 3.0, "z": self.kitchen.size[1]},
            },
        }
