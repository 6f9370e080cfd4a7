"""The perception stage: object detections fused into a robot's semantic map.

A :class:`Detection` is one object seen in one observation, in the shape the ROS interface carries it
(``coteam_interfaces/DetectedObject``: rooms and containers by name). :class:`SemanticMapFusion` keeps, per
object id, the latest accepted sighting as a :class:`SemanticObject`, plus the rooms the robot has explored.

Fusion rules (one :meth:`SemanticMapFusion.update` per observation):

* A detection below ``min_confidence`` is ignored.
* A detection without an identity (``object_id < 0``: a detector that knows the class, not the instance) is
  associated with the nearest remembered object of its category within ``association_radius_m``, or becomes a
  new object with an id of its own (negative: -1, -2, ..., never a scene's id). Such a new object is
  **tentative**, as a tracker's new track is: a learned detector's false detection lasts a frame, a real object is
  seen again. It joins the map once detected ``confirm_hits`` times, each sighting within ``confirm_within``
  steps of the one before; a tentative object not seen again in time is dropped. Until then it is neither in the
  map nor among the objects an update returns (so one false detection near the fridge never shows a goal item in
  place). A detector that gives ids is trusted at once.
* A new object id is added; a re-detected one takes the newest detection's position, room, container and holder
  (**newest wins**). Its confidence grows with each sighting at the same place (within
  ``association_radius_m``): ``c <- 1 - (1 - c)(1 - d)`` for a detection of confidence ``d``; a sighting
  elsewhere (the object moved) starts over at ``d``. Detections are ordered by their ``step``, not by arrival, so
  a late detection from an older step never overwrites a newer sighting. Within one batch, a duplicate id keeps
  the most confident detection (the later one on a tie).
  Positions are not averaged: household objects move (picked up, carried, put away), so an average would place an
  object between where it was and where it is.
* :meth:`SemanticMapFusion.seen_empty`: a camera looked at where an object was and saw past it (the caller decides,
  e.g. with :func:`coteam.senses.vision.places_seen_empty`): its confidence is multiplied by ``empty_decay``, and the
  object is forgotten when it falls below ``drop_below``.
* An object the robot does not see although it is in the robot's room is **kept** with its
  ``last_seen_step``; ``unconfirmed_since`` records the first step it was missed there (reset on the next
  sighting). Unlike :class:`coteam.agent.memory.AgentMemory`, which drops such objects using the camera geometry of
  the raw observation, this stage cannot tell "moved" from "hidden" or "outside the field of view", so it
  reports the miss and leaves the conclusion to the planner. Objects held by a robot are never marked: they
  move with the holder.
* ``forget_after_steps`` (default ``None``: keep forever) drops objects not seen for more than that many
  steps.

:func:`detection_from_view` maps the core observation model (:class:`coteam.domain.observation.ObjectView`) onto a
:class:`Detection`, so the in-process memory and a detector publishing over ROS describe the same sighting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from coteam.domain.observation import ObjectView, Observation
from coteam.domain.world import Container, ObjectKind, Relation, Scene, Vec2, distance

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
    height_m: float | None = None  # height of the object's centre above the floor (map z); None when unknown


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
    height_m: float | None = None  # height of its centre above the floor at the last sighting; None when unknown

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
            height_m=detection.height_m,
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

    def __init__(
        self,
        min_confidence: float = 0.0,
        forget_after_steps: int | None = None,
        association_radius_m: float = 0.5,
        empty_decay: float = 0.5,
        drop_below: float = 0.05,
        confirm_hits: int = 2,
        confirm_within: int = 12,
    ) -> None:
        if forget_after_steps is not None and forget_after_steps < 0:
            raise ValueError(f"forget_after_steps must be >= 0 or None, not {forget_after_steps}")
        if confirm_hits < 1 or confirm_within < 1:
            raise ValueError(f"confirm_hits and confirm_within must be >= 1, not {confirm_hits}, {confirm_within}")
        if not 0 <= empty_decay < 1:
            raise ValueError(f"empty_decay must be in [0, 1), not {empty_decay}")
        self.min_confidence = min_confidence
        self.forget_after_steps = forget_after_steps
        self.association_radius_m = association_radius_m
        self.empty_decay = empty_decay
        self.drop_below = drop_below
        self.confirm_hits = confirm_hits
        self.confirm_within = confirm_within
        self._next_anonymous = -1
        self.step = -1  # step of the last update
        self._objects: dict[int, SemanticObject] = {}
        # anonymous objects seen fewer than confirm_hits times: their latest sighting and how many there were
        self._tentative: dict[int, tuple[SemanticObject, int]] = {}
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
            if det.object_id < 0:  # one observation's detections are distinct objects: one map object each
                det = replace(det, object_id=self._associate(det, taken=best))
            seen = best.get(det.object_id)
            if seen is None or det.confidence >= seen.confidence:
                best[det.object_id] = det
        changed = []
        for oid, det in best.items():
            known = self._objects.get(oid)
            old, hits = (known, 0) if known is not None else self._tentative.pop(oid, (None, 0))
            if old is not None and det.step < old.last_seen_step:  # a late detection from an older observation
                if known is None:
                    self._tentative[oid] = (old, hits)  # still tentative, as it was
                continue
            new = SemanticObject.from_detection(det)
            if old is not None and distance(old.position, det.position) <= self.association_radius_m:
                new = replace(new, confidence=1 - (1 - old.confidence) * (1 - det.confidence))
            if known is None and oid < 0 and hits + 1 < self.confirm_hits:
                self._tentative[oid] = (new, hits + 1)  # not in the map until seen again
                continue
            self._objects[oid] = new
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
        self._tentative = {
            oid: seen for oid, seen in self._tentative.items() if seen[0].last_seen_step >= step - self.confirm_within
        }
        return sorted(changed)

    def rooms_seen(self, detections: Iterable[Detection]) -> list[str]:
        """The rooms in which ``detections`` include one this map accepts (explored, for a detector that does not
        say which rooms it explored)."""
        return sorted({d.room for d in detections if d.room and d.confidence >= self.min_confidence})

    def _associate(self, det: Detection, taken: Collection[int] = ()) -> int:
        """The remembered object of ``det``'s category nearest to it within the radius that no other detection of
        the same observation stands for (``taken``), else such a tentative one, else a new anonymous id: two cups side
        by side in one frame are two objects, however close."""
        for objects in (self._objects, {oid: obj for oid, (obj, _) in self._tentative.items()}):
            near = [
                (distance(o.position, det.position), oid)
                for oid, o in objects.items()
                if oid not in taken
                and o.category == det.category
                and distance(o.position, det.position) <= self.association_radius_m
            ]
            if near:
                return min(near)[1]
        self._next_anonymous -= 1
        return self._next_anonymous + 1

    def seen_empty(self, object_ids: Iterable[int], step: int) -> list[int]:
        """The places of ``object_ids`` were seen empty at ``step``: their confidence decays; returns the ids
        forgotten because it fell below ``drop_below``."""
        dropped = []
        for oid in object_ids:
            obj = self._objects.get(oid)
            if obj is None or obj.holder or obj.last_seen_step >= step:
                continue
            confidence = obj.confidence * self.empty_decay
            if confidence < self.drop_below:
                del self._objects[oid]
                dropped.append(oid)
            else:
                self._objects[oid] = replace(obj, confidence=confidence)
        return sorted(dropped)

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
        """The map as JSON data; tentative objects (seen once, not yet in the map) are left out."""
        return {
            "format": JSON_FORMAT,
            "min_confidence": self.min_confidence,
            "forget_after_steps": self.forget_after_steps,
            "association_radius_m": self.association_radius_m,
            "empty_decay": self.empty_decay,
            "drop_below": self.drop_below,
            "confirm_hits": self.confirm_hits,
            "confirm_within": self.confirm_within,
            "next_anonymous": self._next_anonymous,
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
        known = ("association_radius_m", "empty_decay", "drop_below", "confirm_hits", "confirm_within")
        settings = {k: data[k] for k in known if k in data}
        fusion = cls(data["min_confidence"], data["forget_after_steps"], **settings)
        fusion._next_anonymous = data.get("next_anonymous", -1)
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


class ObservationAssembler:
    """Builds a robot's :class:`Observation` from its pose and its detections, with the task's catalogue for the
    object kinds and the fixtures' names. ROS-free, so it is tested without DDS."""

    def __init__(self, robot: str, scene: Scene, hands: int = 2) -> None:
        self.robot = robot
        self.floorplan = scene.floorplan
        self.hands = hands
        self.fixtures = {f.id: f for f in (*scene.containers, *scene.surfaces)}
        self.fixtures_named: dict[str, list[int]] = {}
        for f in self.fixtures.values():
            self.fixtures_named.setdefault(f.name, []).append(f.id)
        self.items = {i.id: i for i in scene.items}
        self.containers = {c.id for c in scene.containers}
        self.initially_open = scene.initially_open
        self.room_ids = {r.name: r.id for r in self.floorplan.rooms}
        # the containers whose state as the task starts the robot knows: its goal's (from the task) and those an
        # observation has shown
        self.described: set[int] = {p.target for p in scene.task.predicates}

    def view(self, det: Any) -> ObjectView | None:
        """The observation's view of one detection; None for ids outside the catalogue."""
        room = self.room_ids.get(det.room, -1)
        if room < 0 and (at := self.floorplan.room_at(det.position)) is not None:
            room = at.id
        if det.object_id in self.fixtures:
            fixture = self.fixtures[det.object_id]
            if isinstance(fixture, Container):
                return ObjectView(
                    fixture.id,
                    fixture.name,
                    ObjectKind.CONTAINER,
                    room,
                    det.position,
                    is_open=getattr(det, "is_open", None),
                )
            return ObjectView(fixture.id, fixture.name, ObjectKind.SURFACE, room, det.position)
        item = self.items.get(det.object_id)
        if item is None:
            return None
        holder = self.fixture_named(det.container, det.position)
        if det.holder:
            location = Relation.HELD
        elif holder >= 0:
            location = Relation.IN if isinstance(self.fixtures[holder], Container) else Relation.ON
        else:
            location = Relation.FLOOR
        # an item in or on a fixture is where the fixture is (as the simulator has it: skills walk to the fixture)
        position = self.fixtures[holder].position if location in (Relation.IN, Relation.ON) else det.position
        return ObjectView(
            item.id,
            item.name,
            ObjectKind.ITEM,
            room,
            position,
            item.category,
            location=location,
            holder=holder if location in (Relation.IN, Relation.ON) else -1,
            held_by=det.holder,
            capacity=item.capacity,
        )

    def category(self, name: str, object_id: int) -> str:
        """The category the semantic map gives a detection: the item's (by id, else of the first item of its
        class), "container" or "surface" for a fixture; "" for what the task does not know."""
        if object_id in self.fixtures or (object_id < 0 and name in self.fixtures_named):
            fixture = self.fixtures[object_id if object_id >= 0 else self.fixtures_named[name][0]]
            return ObjectKind.CONTAINER.value if isinstance(fixture, Container) else ObjectKind.SURFACE.value
        if object_id in self.items:
            return self.items[object_id].category
        return next((i.category for i in self.items.values() if i.name == name), "")

    def instances(self, name: str) -> list[int]:
        """The ids of the task's objects of class ``name``, lowest first."""
        return sorted(i for i, item in self.items.items() if item.name == name)

    def fixture_near(self, position: tuple[float, float], reach_m: float) -> str:
        """The name of the fixture nearest to ``position`` within ``reach_m`` (what an item seen there stands on or
        in); "" for none."""
        near = [(math.dist(f.position, position), f.name) for f in self.fixtures.values()]
        distance, name = min(near, default=(math.inf, ""))
        return name if distance <= reach_m else ""

    def fixture_named(self, name: str, near: tuple[float, float]) -> int:
        """The id of the fixture called ``name`` (the nearest to ``near`` when several are); -1 for none."""
        ids = self.fixtures_named.get(name, [])
        if not ids:
            return -1
        return min(ids, key=lambda i: math.dist(self.fixtures[i].position, near))

    def placed_view(self, item_id: int, fixture_id: int, into: bool) -> ObjectView | None:
        """The task's item as an arm left it in (``into``) or on the fixture; None for an unknown item or fixture."""
        fixture = self.fixtures.get(fixture_id)
        item = self.items.get(item_id)
        if item is None or fixture is None:
            return None
        return ObjectView(
            item.id,
            item.name,
            ObjectKind.ITEM,
            fixture.room,
            fixture.position,
            item.category,
            location=Relation.IN if into else Relation.ON,
            holder=fixture.id,
            capacity=item.capacity,
        )

    def observation(
        self,
        step: int,
        position: tuple[float, float],
        heading: float,
        detections: Iterable[Any],
        holding: Sequence[int] = (),
        container_open: Mapping[int, bool] | None = None,
        placed: Mapping[int, tuple[int, bool]] | None = None,
    ) -> Observation:
        """A real robot's observation: its pose; the fixtures of its room as the task describes them (furniture is
        on the map; a container is open as the robot's own arm last left it, ``container_open``, else as the task
        starts); the items ``detections`` show, the latest sighting of each; the items its arm just put down
        (``placed``: object -> (fixture, into a container), the arm's word, as a camera may not see into what it
        works at); the items in its grippers (``holding``, object ids per hand, -1 empty: the arm's word, as no
        camera sees into a gripper), held by it where it is. As through a camera, no fixture is shown completely:
        an item remembered and not detected now is not taken for gone (a grasp that finds nothing says so)."""
        # a container's state: as the robot's own arm last left it, else, the first time the robot learns of it, as
        # the task starts; after that unknown (None): no camera sees a door's state, and a teammate may have changed
        # it (the robot's memory keeps what it knows: coteam.agent.memory.AgentMemory.teammate_opened)
        opened: dict[int, bool | None] = {
            c: None if c in self.described else c in self.initially_open for c in self.containers
        }
        opened.update(container_open or {})
        room = self.floorplan.room_at(position)
        room_id = room.id if room else -1
        by_hand = (list(holding) + [-1] * self.hands)[: self.hands]  # the arm's word, hand by hand
        held = [h for h in by_hand if h in self.items]
        put_down = tuple(sorted(i for i in (placed or {}) if i in self.items and i not in held))
        views: dict[int, ObjectView] = {}
        for fixture in self.fixtures.values():
            if fixture.room != room_id:
                continue
            if fixture.id in self.containers:
                kind, is_open = ObjectKind.CONTAINER, opened[fixture.id]
                self.described.add(fixture.id)
            else:
                kind, is_open = ObjectKind.SURFACE, None
            views[fixture.id] = ObjectView(fixture.id, fixture.name, kind, room_id, fixture.position, is_open=is_open)
        for det in detections:  # the latest sighting of each object wins
            view = self.view(det)
            if view is not None and view.kind == ObjectKind.ITEM and view.id not in held:
                views[view.id] = view
        for item_id, (fixture_id, into) in (placed or {}).items():  # newer than any sighting of it
            view = self.placed_view(item_id, fixture_id, into)
            if view is not None and item_id not in held:
                views[item_id] = view
        for item_id in held:  # in my gripper, as the arm says
            item = self.items[item_id]
            views[item_id] = ObjectView(
                item.id,
                item.name,
                ObjectKind.ITEM,
                room_id,
                position,
                item.category,
                location=Relation.HELD,
                held_by=self.robot,
                capacity=item.capacity,
            )
        return Observation(
            agent=self.robot,
            step=step,
            frames=step,
            position=position,
            heading=round(heading) % 360,
            room=room_id,
            holding=tuple(h if h in self.items else None for h in by_hand),
            visible=tuple(views[k] for k in sorted(views)),
            view_headings=(round(heading) % 360,),
            complete_fixtures=(),
            put_down=put_down,
        )


LookedThrough = Callable[[Mapping[int, tuple[float, float, float]]], list[int]]


@dataclass(frozen=True)
class FusedFrame:
    """One camera frame fused into the semantic map (:meth:`CameraPerception.frame`)."""

    detections: list[Detection]  # as placed on their fixtures
    confirmed: list[int]  # map objects the frame added or confirmed
    seen_empty: list[int]  # map objects whose place the frame saw past


class CameraPerception:
    """What a robot's head camera adds to its observations, the same in process (the visual suites) and in the
    perception node: each frame's detections are put on the fixture they stand on or in (within ``fixture_reach_m``)
    and fused into the robot's semantic map (:class:`SemanticMapFusion`); the map's objects that a step's frames
    confirmed become the item views of that step's observation (:meth:`merged`). So the planner reads the fused map,
    not the detector's raw output: an item is where the map has it, with the fused confidence deciding whether it is
    there at all (``min_confidence``). A frame that sees past a remembered place (its depth image, e.g.
    :func:`coteam.senses.vision.places_seen_empty`) lowers the map's confidence in what was there and lists it in the
    observation's ``seen_empty``: the memory forgets such items, and keeps those a frame merely missed.

    A class-only detector (``color``, ``onnx``) gives the map anonymous objects; the planner acts on the task's
    object instances, so each anonymous object is bound, once and for good, to an instance of its class that no
    other map object stands for (the lowest such id). The binding is a label: when two objects of a class look alike
    it can swap them, and the robot finds out at the fixture (the hand camera shows which one is there) -- a real
    robot's gripper takes the object at the place, whatever its label. A map object unseen where it should be seen
    for ``release_after`` frames (a false detection, or one moved since) gives its label up to the next one of
    its class. The robot's own arm also tells which instance is where: an anonymous object first seen on a fixture
    where the arm put an item of its class down takes that item's label, so the item the arm just left in the
    fridge is not counted a second time under the next free label.

    The map's steps count the frames fused (0, 1, ...): frames, not simulation steps, order its sightings."""

    def __init__(
        self,
        assembler: ObservationAssembler,
        fusion: SemanticMapFusion | None = None,
        fixture_reach_m: float = 0.6,
        release_after: int = 20,
    ) -> None:
        self.assembler = assembler
        self.fusion = fusion if fusion is not None else SemanticMapFusion()
        self.fixture_reach_m = fixture_reach_m
        self.release_after = release_after
        self.frames = 0
        self.bound: dict[int, int] = {}  # anonymous map id -> the task's object id it stands for
        self.arm_placed: dict[int, int] = {}  # the task's item -> the fixture my arm last put it on or in

    def frame(
        self, detections: Iterable[Detection], room: str, looked_through: LookedThrough | None = None
    ) -> FusedFrame:
        """Fuse one frame's detections (map frame, in their rooms) seen from ``room``. ``looked_through`` (given the
        frame's depth image, e.g. :func:`coteam.senses.vision.places_seen_empty`) says which remembered places, id ->
        map point, the frame saw past: their objects were not there (:meth:`SemanticMapFusion.seen_empty`)."""
        step = self.frames
        self.frames += 1
        placed = [
            replace(
                d, step=step, container=d.container or self.assembler.fixture_near(d.position, self.fixture_reach_m)
            )
            for d in detections
        ]
        confirmed = self.fusion.update(placed, step, robot_room=room, explored_rooms=self.fusion.rooms_seen(placed))
        emptied: list[int] = []
        if looked_through is not None:
            places = {
                o.object_id: (o.position[0], o.position[1], o.height_m)
                for o in self.fusion.objects()
                if o.height_m is not None and not o.holder and o.object_id not in confirmed
            }
            emptied = looked_through(places) if places else []
            self.fusion.seen_empty(emptied, step)
        return FusedFrame(placed, confirmed, emptied)

    def merged(self, obs: Observation, confirmed: Iterable[int], emptied: Iterable[int] = ()) -> Observation:
        """``obs`` with the items of the map objects ``confirmed`` (ids from :meth:`frame`) that it does not already
        show (the hand camera's, held items), and the task's objects of the map objects ``emptied`` as seen empty."""
        shown = {v.id for v in obs.visible}
        self.arm_placed.update({v.id: v.holder for v in obs.visible if v.id in obs.put_down and v.holder >= 0})
        for held in obs.holding:
            if held is not None:
                self.arm_placed.pop(held, None)
        added: dict[int, ObjectView] = {}
        for object_id in confirmed:
            obj = self.fusion.get(object_id)
            if obj is None:
                continue
            if obj.object_id < 0 and (here := self._shown_there(obj, obs)) is not None:
                self._bind(obj.object_id, here)  # the hand camera tells which instance it is
                continue
            instance = self.instance(obj)
            view = None if instance is None else self.assembler.view(replace(obj, object_id=instance))
            if view is not None and view.kind == ObjectKind.ITEM and view.id not in shown:
                added[view.id] = view
        gone = {self.bound.get(i, i) for i in emptied} - shown - set(added)
        gone = sorted(i for i in gone if i >= 0 and i not in obs.seen_empty)
        if not added and not gone:
            return obs
        return replace(
            obs,
            visible=tuple(sorted((*obs.visible, *added.values()), key=lambda v: v.id)),
            seen_empty=(*obs.seen_empty, *gone),
        )

    def instance(self, obj: SemanticObject) -> int | None:
        """The task's object id ``obj`` stands for (its own, or the binding of an anonymous object); None when every
        instance of its class is taken by other map objects."""
        if obj.object_id >= 0 or obj.object_id in self.bound:
            return self.bound.get(obj.object_id, obj.object_id)
        placed = self._placed_there(obj)
        if placed is not None:
            self._bind(obj.object_id, placed)
            return placed
        standing = {a: i for a, i in self.bound.items() if not self._stale(a)}
        taken = set(standing.values()) | {o.object_id for o in self.fusion.objects() if o.object_id >= 0}
        free = [i for i in self.assembler.instances(obj.name) if i not in taken]
        if not free:
            return None
        self._bind(obj.object_id, free[0])
        return free[0]

    def _placed_there(self, obj: SemanticObject) -> int | None:
        """An item of ``obj``'s class that my arm put on or in the fixture the map has ``obj`` at, for which no other
        map object on that fixture stands (None for none): the arm's word on which instance is there."""
        holder = self.assembler.fixture_named(obj.container, obj.position) if obj.container else -1
        if holder < 0:
            return None
        there = {
            instance
            for anonymous, instance in self.bound.items()
            if (other := self.fusion.get(anonymous)) is not None
            and other.container
            and self.assembler.fixture_named(other.container, other.position) == holder
        }
        return next(
            (
                item
                for item, fixture in sorted(self.arm_placed.items())
                if fixture == holder and item not in there and self.assembler.items[item].name == obj.name
            ),
            None,
        )

    def _stale(self, anonymous: int) -> bool:
        """Whether the map object ``anonymous`` has gone unseen where it should be seen for ``release_after``
        frames (a false detection, or an object since moved): its label is free for another."""
        obj = self.fusion.get(anonymous)
        return obj is None or 0 <= obj.unconfirmed_since <= self.frames - self.release_after

    def _bind(self, anonymous: int, instance: int) -> None:
        """``anonymous`` stands for ``instance`` from now on (and no other anonymous object does)."""
        self.bound = {a: i for a, i in self.bound.items() if i != instance}
        self.bound[anonymous] = instance

    def _shown_there(self, obj: SemanticObject, obs: Observation) -> int | None:
        """The id of an item of ``obj``'s class that ``obs`` already shows where the map has ``obj`` (on the same
        fixture, or within the association radius)."""
        holder = self.assembler.fixture_named(obj.container, obj.position) if obj.container else -1
        for v in obs.visible:
            if v.kind != ObjectKind.ITEM or v.name != obj.name:
                continue
            if (holder >= 0 and v.holder == holder) or distance(
                v.position, obj.position
            ) <= self.fusion.association_radius_m:
                return v.id
        return None
