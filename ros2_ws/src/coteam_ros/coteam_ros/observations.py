"""Observations from detections: what a robot's detector reports, as the planners' :class:`Observation` s.

:class:`ObservationAssembler` turns detections (object ids of the task's catalogue, the holding fixture by name) into
object views and observations (the robot_state node on real robots); :class:`CameraSightings` collects the
detections of the camera frames a sim-bridge status announces and adds them to that status's observation (the
perception node in the visual suites). ROS-free, so both are tested without DDS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from coteam.observation import ObjectView, Observation
from coteam.perception import Detection
from coteam.world import Container, ObjectKind, Relation, Scene

KEPT_FRAMES = 256  # frames whose detections are kept while their status is awaited


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
        self.room_ids = {r.name: r.id for r in self.floorplan.rooms}

    def view(self, det: Any) -> ObjectView | None:
        """The observation's view of one detection; None for ids outside the catalogue."""
        room = self.room_ids.get(det.room, -1)
        if room < 0 and (at := self.floorplan.room_at(det.position)) is not None:
            room = at.id
        if det.object_id in self.fixtures:
            fixture = self.fixtures[det.object_id]
            if isinstance(fixture, Container):
                return ObjectView(
                    fixture.id, fixture.name, ObjectKind.CONTAINER, room, det.position, is_open=det.is_open
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

    def observation(self, step: int, position: tuple[float, float], heading: float, detections: list) -> Observation:
        views: dict[int, ObjectView] = {}
        for det in detections:  # the latest sighting of each object wins
            view = self.view(det)
            if view is not None:
                views[view.id] = view
        held = sorted(v.id for v in views.values() if v.held_by == self.robot)[: self.hands]
        holding = tuple(held) + (None,) * (self.hands - len(held))
        room = self.floorplan.room_at(position)
        return Observation(
            agent=self.robot,
            step=step,
            frames=step,
            position=position,
            heading=round(heading) % 360,
            room=room.id if room else -1,
            holding=holding,
            visible=tuple(views[k] for k in sorted(views)),
            view_headings=(round(heading) % 360,),
        )


class CameraSightings:
    """The detections of the camera frames one status announces (by stamp, in nanoseconds), added to its
    observation. Frames no status asked for are kept (a status can arrive after its frames' detections), the
    newest :data:`KEPT_FRAMES` of them."""

    def __init__(self, assembler: ObservationAssembler) -> None:
        self.assembler = assembler
        self.frames: dict[int, list[Detection]] = {}
        self.expected: tuple[int, ...] = ()

    def add(self, stamp_ns: int, detections: list[Detection]) -> None:
        self.frames[stamp_ns] = detections
        if len(self.frames) > KEPT_FRAMES:
            for old in sorted(self.frames)[: len(self.frames) - KEPT_FRAMES]:
                if old not in self.expected:
                    del self.frames[old]

    def expect(self, stamps_ns: Iterable[int]) -> None:
        self.expected = tuple(stamps_ns)

    def missing(self) -> list[int]:
        return [t for t in self.expected if t not in self.frames]

    def merged(self, obs: Observation) -> Observation:
        """``obs`` with the items detected in the expected frames that it does not already show; the frames are
        then forgotten."""
        shown = {v.id for v in obs.visible}
        added: dict[int, ObjectView] = {}
        for t in self.expected:
            for det in self.frames.pop(t, []):
                view = self.assembler.view(det)
                if view is not None and view.kind == ObjectKind.ITEM and view.id not in shown:
                    added[view.id] = view
        self.frames = {t: d for t, d in self.frames.items() if t > max(self.expected, default=-1)}
        self.expected = ()
        if not added:
            return obs
        return replace(obs, visible=tuple(sorted((*obs.visible, *added.values()), key=lambda v: v.id)))
