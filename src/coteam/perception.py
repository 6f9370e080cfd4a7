"""The perception stage: object detections fused into a robot's semantic map.

A :class:`Detection` is one object seen in one observation, in the shape the ROS interface carries it
(``coteam_interfaces/DetectedObject``: rooms and containers by name). :class:`SemanticMapFusion` keeps, per
object id, the latest accepted sighting as a :class:`SemanticObject`, plus the rooms the robot has explored.

Fusion rules (one :meth:`SemanticMapFusion.update` per observation):

* A detection below ``min_confidence`` is ignored.
* A new object id is added; a re-detected one takes the newest detection's position, room, container, holder
  and confidence (**newest wins**). Detections are ordered by their ``step``, not by arrival, so a late
  detection from an older step never overwrites a newer sighting. Within one batch, a duplicate id keeps the
  most confident detection (the later one on a tie).
  Positions are not averaged: the detector is the simulator's oracle (exact positions, confidence 1.0), and
  household objects move (picked up, carried, put away), so an average would place an object between where it
  was and where it is. Averaging would only pay off for a noisy detector observing a static object.
* An object the robot does not see although it is in the robot's room is **kept** with its
  ``last_seen_step``; ``unconfirmed_since`` records the first step it was missed there (reset on the next
  sighting). Unlike :class:`coteam.memory.AgentMemory`, which drops such objects using the camera geometry of
  the raw observation, this stage cannot tell "moved" from "hidden" or "outside the field of view", so it
  reports the miss and leaves the conclusion to the planner. Objects held by a robot are never marked: they
  move with the holder.
* ``forget_after_steps`` (default ``None``: keep forever) drops objects not seen for more than that many
  steps.

:func:`detection_from_view` maps the core observation model (:class:`coteam.observation.ObjectView`) onto a
:class:`Detection`, so the in-process memory and a detector publishing over ROS describe the same sighting.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from coteam.observation import ObjectView
from coteam.world import ObjectKind, Relation, Vec2

JSON_FORMAT = 1


@dataclass(frozen=True)
class Detection:
    """One object seen in one observation (``coteam_interfaces/DetectedObject`` plus the step)."""

    name: str
    object_id: int
    category: str
    room: str  # room name, e.g. "kitchen"
    container: str  # container or surface holding the object; "" when it lies free
    position: Vec2  # map frame, metres
    confidence: float  # detector confidence in [0, 1]
    step: int  # simulation step of the observation
    holder: str = ""  # robot holding the object ("" when none); ObjectView.held_by
    is_open: bool | None = None  # containers: open or closed; None when not a container or unknown


@dataclass(frozen=True)
class SemanticObject:
    """An object as remembered in the semantic map: its latest accepted sighting."""

    name: str
    object_id: int
    category: str
    room: str
    container: str
    position: Vec2
    last_seen_step: int
    holder: str  # robot holding the object at the last sighting; "" when none
    confidence: float  # confidence of the last accepted detection
    # First step at which the robot was in ``room`` after ``last_seen_step`` without detecting the object;
    # -1 while the last sighting is unchallenged.
    unconfirmed_since: int = -1

    @classmethod
    def from_detection(cls, detection: Detection) -> SemanticObject:
        return cls(
            name=detection.name,
            object_id=detection.object_id,
            category=detection.category,
            room=detection.room,
            container=detection.container,
            position=detection.position,
            last_seen_step=detection.step,
            holder=detection.holder,
            confidence=detection.confidence,
        )


def detection_from_view(view: ObjectView, step: int, names: Mapping[int, str], confidence: float = 1.0) -> Detection:
    """The detection an oracle detector reports for ``view``; ``names`` maps room and fixture ids to names.

    A fixture's category is its kind ("container" / "surface") when it has none of its own.
    """
    container = ""
    if view.location in (Relation.IN, Relation.ON) and view.holder >= 0:
        container = names.get(view.holder, "")
    category = view.category or (view.kind.value if view.kind != ObjectKind.ITEM else "")
    return Detection(
        name=view.name,
        object_id=view.id,
        category=category,
        room=names.get(view.room, ""),
        container=container,
        position=(float(view.position[0]), float(view.position[1])),
        confidence=confidence,
        step=step,
        holder=view.held_by,
        is_open=view.is_open,
    )


class SemanticMapFusion:
    """A robot's semantic map, built from batches of detections (see the module docstring for the rules)."""

    def __init__(self, min_confidence: float = 0.0, forget_after_steps: int | None = None) -> None:
        if forget_after_steps is not None and forget_after_steps < 0:
            raise ValueError(f"forget_after_steps must be >= 0 or None, not {forget_after_steps}")
        self.min_confidence = min_confidence
        self.forget_after_steps = forget_after_steps
        self.step = -1  # step of the last update
        self._objects: dict[int, SemanticObject] = {}
        self._explored: dict[str, None] = {}  # insertion-ordered set

    # --- updating ----------------------------------------------------------------------------------------
    def update(
        self,
        detections: Iterable[Detection],
        step: int,
        robot_room: str = "",
        explored_rooms: Iterable[str] = (),
    ) -> list[int]:
        """Fuse one observation's detections; returns the ids of the objects added or updated, sorted.

        ``robot_room`` is the room the robot observed from ("" when unknown: no object is marked unconfirmed);
        ``explored_rooms`` are added to the explored rooms.
        """
        self.step = max(self.step, step)
        best: dict[int, Detection] = {}
        for det in detections:
            if det.confidence < self.min_confidence:
                continue
            seen = best.get(det.object_id)
            if seen is None or det.confidence >= seen.confidence:
                best[det.object_id] = det
        changed = []
        for oid, det in best.items():
            old = self._objects.get(oid)
            if old is not None and det.step < old.last_seen_step:
                continue  # a late detection from an older observation
            self._objects[oid] = SemanticObject.from_detection(det)
            changed.append(oid)
        if robot_room:
            for oid, obj in self._objects.items():
                if (
                    oid not in best
                    and obj.room == robot_room
                    and not obj.holder
                    and obj.unconfirmed_since < 0
                    and obj.last_seen_step < step
                ):
                    self._objects[oid] = replace(obj, unconfirmed_since=step)
        for room in explored_rooms:
            self._explored.setdefault(room, None)
        if self.forget_after_steps is not None:
            horizon = step - self.forget_after_steps
            for oid in [oid for oid, obj in self._objects.items() if obj.last_seen_step < horizon]:
                del self._objects[oid]
        return sorted(changed)

    # --- queries -----------------------------------------------------------------------------------------
    def objects(self) -> list[SemanticObject]:
        """Every remembered object, sorted by id."""
        return [self._objects[oid] for oid in sorted(self._objects)]

    def get(self, object_id: int) -> SemanticObject | None:
        return self._objects.get(object_id)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, object_id: object) -> bool:
        return object_id in self._objects

    @property
    def explored_rooms(self) -> list[str]:
        """Explored rooms in the order they were first reported."""
        return list(self._explored)

    # --- persistence -------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": JSON_FORMAT,
            "min_confidence": self.min_confidence,
            "forget_after_steps": self.forget_after_steps,
            "step": self.step,
            "explored_rooms": self.explored_rooms,
            "objects": [asdict(obj) for obj in self.objects()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SemanticMapFusion:
        if data.get("format") != JSON_FORMAT:
            raise ValueError(f"unsupported semantic map format {data.get('format')!r} (expected {JSON_FORMAT})")
        fusion = cls(data["min_confidence"], data["forget_after_steps"])
        fusion.step = data["step"]
        fusion._explored = dict.fromkeys(data["explored_rooms"])
        for raw in data["objects"]:
            x, y = raw["position"]
            obj = SemanticObject(**{**raw, "position": (float(x), float(y))})
            fusion._objects[obj.object_id] = obj
        return fusion

    @classmethod
    def from_json(cls, text: str) -> SemanticMapFusion:
        return cls.from_dict(json.loads(text))
