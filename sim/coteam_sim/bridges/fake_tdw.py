"""A stand-in for TDW's Unity build where Unity is not installed (tests, benches): it connects to the real
``tdw.controller.Controller`` over ZMQ as a build does, takes the commands the bridge and TDW's own ``Replicant``
add-on send, plays them by the simple rules below, and answers every frame with output data in TDW's FlatBuffer
format (:mod:`.fake_tdw_output`), which ``tdw.output_data`` and the add-on read as they read the real build's.

* Objects (``add_object``, ``load_primitive_from_resources``) are boxes: 0.3 m wide unless ``scale_object`` says
  otherwise; kinematic ones (``set_kinematic_state``) that rise above the floor and are not attached to another
  object are obstacles, except to a Replicant told to pass through them (``ignore_collisions``). ``load_scene``
  empties the world. ``teleport_object`` moves one,
  ``parent_object_to_object`` makes one follow another.
* A Replicant (``add_replicant``) turns on the spot (``rotate_object_by``, yaw) and, while a walk animation plays
  (``play_replicant_animation`` until ``stop_replicant_animation``), steps :data:`WALK_M_PER_FRAME` a frame; a step
  into an obstacle or another Replicant is not taken, and the obstacle is reported as a collision of its body.
* Arm motions (``replicant_reach_for_object``, ``replicant_reset_arm``) take :data:`ARM_FRAMES` frames;
  a target beyond the command's ``max_distance`` ends the reach as ``cannot_reach`` at once. ``replicant_grasp_object``
  puts the object in the hand (it follows the hand), ``replicant_drop_object`` lets it fall at the Replicant's feet,
  ``offset_distance`` ahead.
* The status a Replicant reports (``ActionStatus``) is ``ongoing`` from the command that starts a motion until the
  motion ends.

Faults, for the tests: ``stall_after`` (the build stops answering after that many frames: a hung build),
``refuse`` (command types whose motion fails: a reach that does not arrive ends as ``failed_to_reach``).
Commands it has no rule for are recorded in :attr:`FakeTdwBuild.ignored` and change nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import zmq
from tdw.replicant.action_status import ActionStatus
from tdw.replicant.replicant_body_part import ABLE_BODIED_BODY_PARTS, ReplicantBodyPart

from coteam_sim.bridges import fake_tdw_output as out

WALK_M_PER_FRAME = 0.125
ARM_FRAMES = 2
DEFAULT_SIZE_M = 0.3
REPLICANT_RADIUS_M = 0.2
HAND_HEIGHT_M = 1.0
FLOOR_TOP_M = 0.05  # what rises no higher is floor, not an obstacle
TDW_VERSION = "1.13.0.0"


@dataclass
class _Body:
    position: np.ndarray
    size: np.ndarray = field(default_factory=lambda: np.full(3, DEFAULT_SIZE_M))
    kinematic: bool = False
    parent: int | None = None  # an object it follows


@dataclass
class _Replicant:
    position: np.ndarray
    yaw: float  # degrees, clockwise from +z seen from above (Unity's)
    body_parts: tuple[int, ...]
    held: dict[str, int] = field(default_factory=dict)  # "left" / "right" -> object id
    status: ActionStatus = ActionStatus.ongoing
    walking: int = 0  # +1 forwards, -1 backwards, 0 standing
    motion_frames: int = 0  # frames left of an arm motion
    motion_result: ActionStatus = ActionStatus.success
    collisions: list[int] = field(default_factory=list)  # what blocked its last step

    @property
    def forward(self) -> np.ndarray:
        rad = math.radians(self.yaw)
        return np.array([math.sin(rad), 0.0, math.cos(rad)])

    @property
    def rotation(self) -> tuple[float, float, float, float]:
        half = math.radians(self.yaw) / 2
        return (0.0, math.sin(half), 0.0, math.cos(half))


class FakeTdwBuild:
    """The fake build on ``port`` (see the module docstring); :meth:`start` connects it in a thread."""

    def __init__(self, port: int, *, stall_after: int | None = None, refuse: Iterable[str] = ()) -> None:
        self.port = port
        self.stall_after = stall_after
        self.refuse = frozenset(refuse)
        self.bodies: dict[int, _Body] = {}
        self.replicants: dict[int, _Replicant] = {}
        self.frame = 0
        self.ignored: set[str] = set()
        self.unfelt: set[frozenset[int]] = set()  # pairs of objects (Replicants) that pass through each other
        self.scenes_loaded = 0
        self.commands_seen: list[str] = []
        self._always: set[str] = set()
        self._once: set[str] = set()
        self._terminated = False
        self._thread = threading.Thread(target=self._serve, name=f"fake-tdw-{port}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # --- the wire -------------------------------------------------------------------------------------------
    def _serve(self) -> None:
        context = zmq.Context()
        sock = context.socket(zmq.REQ)
        sock.connect(f"tcp://localhost:{self.port}")
        sock.send(b"0")  # a build says it is there; the controller answers with its first commands
        try:
            while not self._terminated:
                commands = json.loads(sock.recv_multipart()[0])
                if self.stall_after is not None and self.frame >= self.stall_after:
                    break  # hung: it never answers again
                sock.send_multipart(self.play(commands))
        finally:
            sock.close(linger=1000)  # the answer to terminate still goes out
            context.term()

    def play(self, commands: list[dict[str, Any]]) -> list[bytes]:
        """One frame: run ``commands``, advance the world, and answer with the output data asked for."""
        for command in commands:
            kind = command["$type"]
            self.commands_seen.append(kind)
            handler: Callable[[dict[str, Any]], None] | None = getattr(self, f"_do_{kind}", None)
            if handler is None:
                self.ignored.add(kind)
            else:
                handler(command)
        self._advance()
        self.frame += 1
        return [*self._output(), self.frame.to_bytes(4, "little")]

    # --- commands -------------------------------------------------------------------------------------------
    def _do_terminate(self, command: dict[str, Any]) -> None:
        self._terminated = True

    def _do_load_scene(self, command: dict[str, Any]) -> None:
        """A new, empty scene: every object and Replicant gone."""
        self.bodies.clear()
        self.replicants.clear()
        self.unfelt.clear()
        self.scenes_loaded += 1

    def _do_send_version(self, command: dict[str, Any]) -> None:
        self._once.add("vers")

    def _request(self, kind: str, command: dict[str, Any]) -> None:
        (self._always if command.get("frequency", "once") == "always" else self._once).add(kind)

    def _do_send_replicants(self, command: dict[str, Any]) -> None:
        self._request("repl", command)

    def _do_send_transforms(self, command: dict[str, Any]) -> None:
        self._request("tran", command)

    def _do_send_bounds(self, command: dict[str, Any]) -> None:
        self._request("boun", command)

    def _do_send_framerate(self, command: dict[str, Any]) -> None:
        self._request("fram", command)

    def _do_send_static_rigidbodies(self, command: dict[str, Any]) -> None:
        self._request("srig", command)

    def _do_send_replicant_segmentation_colors(self, command: dict[str, Any]) -> None:
        self._request("rseg", command)

    def _do_add_object(self, command: dict[str, Any]) -> None:
        self.bodies[command["id"]] = _Body(_vector(command.get("position")))

    def _do_load_primitive_from_resources(self, command: dict[str, Any]) -> None:
        self.bodies[command["id"]] = _Body(_vector(command.get("position")), size=np.ones(3))

    def _do_scale_object(self, command: dict[str, Any]) -> None:
        if (body := self.bodies.get(command["id"])) is not None:
            body.size = body.size * _vector(command.get("scale_factor"), default=1.0)

    def _do_set_kinematic_state(self, command: dict[str, Any]) -> None:
        if (body := self.bodies.get(command["id"])) is not None:
            body.kinematic = bool(command.get("is_kinematic", False))

    def _do_teleport_object(self, command: dict[str, Any]) -> None:
        if (body := self.bodies.get(command["id"])) is not None:
            self._move_body(command["id"], _vector(command["position"]) - body.position)

    def _do_parent_object_to_object(self, command: dict[str, Any]) -> None:
        if (body := self.bodies.get(command["id"])) is not None:
            body.parent = command["parent_id"]

    def _do_ignore_collisions(self, command: dict[str, Any]) -> None:
        pair = frozenset((command["id"], command["other_id"]))
        if command.get("ignore", True):
            self.unfelt.add(pair)
        else:
            self.unfelt.discard(pair)

    def _do_add_replicant(self, command: dict[str, Any]) -> None:
        rid = command["id"]
        parts = tuple(1_000_000 + 100 * rid + int(part) for part in ABLE_BODIED_BODY_PARTS)
        yaw = float((command.get("rotation") or {}).get("y", 0.0))
        self.replicants[rid] = _Replicant(_vector(command.get("position")), yaw, parts)

    def _do_rotate_object_by(self, command: dict[str, Any]) -> None:
        if (rep := self.replicants.get(command["id"])) is not None and command.get("axis", "yaw") == "yaw":
            rep.yaw = (rep.yaw + float(command["angle"])) % 360.0

    def _do_play_replicant_animation(self, command: dict[str, Any]) -> None:
        rep = self.replicants[command["id"]]
        rep.walking, rep.status = (1 if command.get("forward", True) else -1), ActionStatus.ongoing

    def _do_stop_replicant_animation(self, command: dict[str, Any]) -> None:
        self.replicants[command["id"]].walking = 0

    def _start_motion(self, rep: _Replicant, kind: str, target: np.ndarray | None, max_distance: float) -> None:
        rep.status = ActionStatus.ongoing
        if target is not None and _flat_distance(rep.position, target) > max_distance:
            rep.status = ActionStatus.cannot_reach
            return
        rep.motion_frames = ARM_FRAMES
        rep.motion_result = ActionStatus.failed_to_reach if kind in self.refuse else ActionStatus.success

    def _do_replicant_reach_for_object(self, command: dict[str, Any]) -> None:
        body = self.bodies.get(command["object_id"])
        rep = self.replicants[command["id"]]
        if body is None:
            rep.status = ActionStatus.failure
            return
        self._start_motion(rep, command["$type"], body.position, float(command.get("max_distance", 1.5)))

    def _do_replicant_reset_arm(self, command: dict[str, Any]) -> None:
        if command.get("set_status", True):
            self._start_motion(self.replicants[command["id"]], command["$type"], None, math.inf)

    def _do_replicant_grasp_object(self, command: dict[str, Any]) -> None:
        rep = self.replicants[command["id"]]
        rep.status = ActionStatus.ongoing
        if command["object_id"] in self.bodies:
            rep.held[command["arm"]] = command["object_id"]

    def _do_replicant_drop_object(self, command: dict[str, Any]) -> None:
        rep = self.replicants[command["id"]]
        rep.status = ActionStatus.ongoing
        held = rep.held.pop(command["arm"], None)
        if held is not None:
            spot = rep.position + rep.forward * float(command.get("offset_distance", 0.1))
            self._move_body(held, np.array([spot[0], 0.0, spot[2]]) - self.bodies[held].position)

    # --- the world ------------------------------------------------------------------------------------------
    def _move_body(self, oid: int, delta: np.ndarray) -> None:
        """Move an object by ``delta``, with the objects that follow it."""
        self.bodies[oid].position = self.bodies[oid].position + delta
        for child, body in self.bodies.items():
            if body.parent == oid and child != oid:
                self._move_body(child, delta)

    def _blocker(self, rid: int, spot: np.ndarray) -> int | None:
        held = set(self.replicants[rid].held.values())
        while extra := {oid for oid, body in self.bodies.items() if body.parent in held} - held:
            held |= extra  # and what is in what it holds
        for oid, body in self.bodies.items():
            felt = oid not in held and frozenset((rid, oid)) not in self.unfelt
            standing = body.kinematic and body.parent is None and body.position[1] + body.size[1] / 2 > FLOOR_TOP_M
            if felt and standing and _boxes_meet(spot, REPLICANT_RADIUS_M, body.position, body.size):
                return oid
        for other, rep in self.replicants.items():
            felt = other != rid and frozenset((rid, other)) not in self.unfelt
            if felt and _flat_distance(rep.position, spot) < 2 * REPLICANT_RADIUS_M:
                return other
        return None

    def _advance(self) -> None:
        for rid, rep in self.replicants.items():
            rep.collisions = []
            if rep.walking:
                spot = rep.position + rep.forward * (WALK_M_PER_FRAME * rep.walking)
                blocker = self._blocker(rid, spot)
                if blocker is None:
                    rep.position = spot
                else:
                    rep.collisions = [blocker]
            if rep.motion_frames:
                rep.motion_frames -= 1
                if not rep.motion_frames:
                    rep.status = rep.motion_result
            hand = rep.position + rep.forward * 0.3 + np.array([0.0, HAND_HEIGHT_M, 0.0])
            for oid in rep.held.values():
                self._move_body(oid, hand - self.bodies[oid].position)

    def _output(self) -> list[bytes]:
        wanted = self._always | self._once
        self._once = set()
        items: list[bytes] = []
        if "vers" in wanted:
            items.append(out.version(TDW_VERSION, "2020.3"))
        if "repl" in wanted and self.replicants:
            items.append(out.replicants([self._row(rid, rep) for rid, rep in self.replicants.items()]))
        if "tran" in wanted:
            items.append(
                out.transforms(
                    [(oid, tuple(b.position), (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0)) for oid, b in self.bodies.items()]
                )
            )
        if "boun" in wanted:
            items.append(out.bounds([(oid, tuple(b.position), tuple(b.size)) for oid, b in self.bodies.items()]))
        if "fram" in wanted:
            items.append(out.framerate())
        if "srig" in wanted:
            kinematic = [oid for oid, b in self.bodies.items() if b.kinematic]
            items.append(out.static_rigidbodies(list(self.bodies), kinematic=kinematic))
        if "rseg" in wanted:
            items.append(out.replicant_segmentation_colors([(rid, (rid % 255, 0, 0)) for rid in self.replicants]))
        return items

    @staticmethod
    def _row(rid: int, rep: _Replicant) -> out.ReplicantRow:
        return out.ReplicantRow(
            id=rid,
            position=tuple(rep.position),
            rotation=rep.rotation,
            forward=tuple(rep.forward),
            body_part_ids=rep.body_parts,
            held_left=rep.held.get("left"),
            held_right=rep.held.get("right"),
            collisions={ABLE_BODIED_BODY_PARTS.index(ReplicantBodyPart.spine_01): rep.collisions}
            if rep.collisions
            else {},
            status=rep.status.value,
        )


def _vector(value: dict[str, float] | None, default: float = 0.0) -> np.ndarray:
    value = value or {}
    return np.array([float(value.get(axis, default)) for axis in "xyz"])


def _flat_distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(math.hypot(a[0] - b[0], a[2] - b[2]))


def _boxes_meet(point: np.ndarray, radius: float, centre: np.ndarray, size: np.ndarray) -> bool:
    """Whether a circle of ``radius`` round ``point`` meets the footprint of a box (seen from above)."""
    return abs(point[0] - centre[0]) < size[0] / 2 + radius and abs(point[2] - centre[2]) < size[2] / 2 + radius


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


class FakeTdwController:
    """Makes a real ``tdw.controller.Controller`` talking to a :class:`FakeTdwBuild` on a free port (the bridge's
    ``make_controller``); the build of the last session is :attr:`build`."""

    def __init__(self, *, stall_after: int | None = None, refuse: Iterable[str] = ()) -> None:
        self.stall_after = stall_after
        self.refuse = tuple(refuse)
        self.build: FakeTdwBuild | None = None

    def __call__(self) -> Any:
        from tdw.controller import Controller

        port = free_port()
        self.build = FakeTdwBuild(port, stall_after=self.stall_after, refuse=self.refuse)
        self.build.start()
        with contextlib.redirect_stdout(io.StringIO()):  # "You need to launch your own build": the stand-in is it
            return Controller(port=port, check_version=False, launch_build=False)
