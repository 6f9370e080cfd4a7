"""TDW output data as a fake TDW build writes it, for the real ``tdw.controller.Controller`` to read back.

Each function returns one output item in TDW's binary format: a FlatBuffer built with tdw's own generated
builders (``tdw.FBOutput``, ``tdw.flatbuffers.Builder``) whose 4-character type id sits at bytes 4..8, the bytes
that ``OutputData.get_data_type_id`` reads; the classes in ``tdw.output_data`` parse them. Every array field is
written, even empty, because the parsers reshape them without checking that they exist.

- ``version``: "vers", not a FlatBuffer (``tdw.output_data.Version`` slices raw bytes).
- ``transforms``: "tran", position, rotation and forward per object.
- ``bounds``: "boun", the face centres of an axis-aligned box.
- ``framerate``: "fram", target framerate, frame time and physics time step.
- ``replicants``: "repl", pose, body parts, held objects, collisions and action status per Replicant.
- ``static_rigidbodies``: "srig", mass, friction, bounciness and kinematic state per object.
- ``replicant_segmentation_colors``: "rseg", segmentation colour per Replicant.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tdw.FBOutput import (
    Bounds,
    Framerate,
    Replicants,
    ReplicantSegmentationColors,
    StaticRigidbodies,
    Transforms,
)
from tdw.flatbuffers import Builder
from tdw.replicant.replicant_body_part import ABLE_BODIED_BODY_PARTS

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]

MAX_COLLISIONS = 10  # collision slots per body part in "repl"


@dataclass(frozen=True)
class ReplicantRow:
    """One Replicant in "repl". Body part poses default to the Replicant's own pose; ``collisions`` maps an index
    into ``body_part_ids`` to the objects (at most ``MAX_COLLISIONS``) that body part collided with this frame;
    ``status`` is an ``ActionStatus`` value."""

    id: int
    position: Vec3
    rotation: Quat
    forward: Vec3
    body_part_ids: tuple[int, ...]  # one per body part, in the order of ABLE_BODIED_BODY_PARTS
    body_part_positions: tuple[Vec3, ...] | None = None
    body_part_rotations: tuple[Quat, ...] | None = None
    body_part_forwards: tuple[Vec3, ...] | None = None
    held_left: int | None = None
    held_right: int | None = None
    collisions: Mapping[int, Sequence[int]] = field(default_factory=dict)
    status: int = 0


def _finish(builder: Builder, root: int, type_id: bytes) -> bytes:
    """Finish the buffer with its root offset at bytes 0..4 and ``type_id`` at bytes 4..8."""
    builder.Prep(builder.minalign, 8)
    for byte in reversed(type_id):
        builder.PrependByte(byte)
    builder.PrependUOffsetTRelative(root)
    builder.finished = True
    return bytes(builder.Output())


def _vector(builder: Builder, start: Callable[[Builder, int], int], dtype: str, values: Sequence[Any]) -> int:
    """Write ``values`` as a vector of ``dtype`` (little-endian numpy type) in one copy, as newer FlatBuffers'
    ``CreateNumpyVector`` does (tdw's bundled builder has no such call, and one prepend per value made the fake
    build's frames slow), and return its offset."""
    data = np.asarray(values, dtype=dtype).tobytes()
    start(builder, len(values))  # makes room, aligned
    builder.head = builder.head - len(data)
    builder.Bytes[builder.head : builder.head + len(data)] = data
    return builder.EndVector(len(values))


def _floats(vectors: Sequence[Sequence[float]], width: int) -> list[float]:
    """Flatten vectors of ``width`` components into one float array."""
    if any(len(v) != width for v in vectors):
        raise ValueError(f"expected vectors of {width} components")
    return [float(c) for v in vectors for c in v]


def version(tdw_version: str, unity_version: str, standalone: bool = True) -> bytes:
    """``vers``: standalone flag, length of the TDW version, TDW version, Unity version, after the id."""
    tdw_bytes = tdw_version.encode()
    return bytes(4) + b"vers" + bytes([standalone, len(tdw_bytes)]) + tdw_bytes + unity_version.encode()


def transforms(rows: Sequence[tuple[int, Vec3, Quat, Vec3]]) -> bytes:
    """``tran``: (object id, position, rotation, forward) per object."""
    b = Builder(0)
    ids = _vector(b, Transforms.TransformsStartIdsVector, "<i4", [int(r[0]) for r in rows])
    pos = _vector(b, Transforms.TransformsStartPositionsVector, "<f4", _floats([r[1] for r in rows], 3))
    rot = _vector(b, Transforms.TransformsStartRotationsVector, "<f4", _floats([r[2] for r in rows], 4))
    fwd = _vector(b, Transforms.TransformsStartForwardsVector, "<f4", _floats([r[3] for r in rows], 3))
    Transforms.TransformsStart(b)
    Transforms.TransformsAddIds(b, ids)
    Transforms.TransformsAddPositions(b, pos)
    Transforms.TransformsAddRotations(b, rot)
    Transforms.TransformsAddForwards(b, fwd)
    return _finish(b, Transforms.TransformsEnd(b), b"tran")


def bounds(rows: Sequence[tuple[int, Vec3, Vec3]]) -> bytes:
    """``boun``: (object id, centre, size) per object, as the face centres of an axis-aligned box (front +z, back -z,
    right +x, left -x, top +y, bottom -y, as in TDW's model records), stored in the parser's order."""
    points: list[Vec3] = []
    for _, (x, y, z), (sx, sy, sz) in rows:
        hx, hy, hz = sx / 2, sy / 2, sz / 2
        # Bounds reads front, back, right, left, top, bottom, center at indices 0..6.
        points += [(x, y, z + hz), (x, y, z - hz), (x + hx, y, z), (x - hx, y, z), (x, y + hy, z), (x, y - hy, z)]
        points.append((x, y, z))
    b = Builder(0)
    ids = _vector(b, Bounds.BoundsStartIdsVector, "<i4", [int(r[0]) for r in rows])
    positions = _vector(b, Bounds.BoundsStartBoundPositionsVector, "<f4", _floats(points, 3))
    Bounds.BoundsStart(b)
    Bounds.BoundsAddIds(b, ids)
    Bounds.BoundsAddBoundPositions(b, positions)
    return _finish(b, Bounds.BoundsEnd(b), b"boun")


def framerate(target_framerate: int = 60, frame_dt: float = 1 / 60, physics_time_step: float = 0.02) -> bytes:
    """``fram``: target framerate, duration of the last frame and physics time step."""
    b = Builder(0)
    Framerate.FramerateStart(b)
    Framerate.FramerateAddTargetFramerate(b, int(target_framerate))
    Framerate.FramerateAddFrameDt(b, float(frame_dt))
    Framerate.FramerateAddPhysicsTimeStep(b, float(physics_time_step))
    return _finish(b, Framerate.FramerateEnd(b), b"fram")


def replicants(rows: Sequence[ReplicantRow]) -> bytes:
    """``repl``: per Replicant, rows of 1 + n body parts (the Replicant itself first; NumBodyParts = 1 + n), held
    objects as (is holding, id) for left then right, and MAX_COLLISIONS collision slots for each of the n parts."""
    parts = {len(r.body_part_ids) for r in rows} or {len(ABLE_BODIED_BODY_PARTS)}
    if len(parts) != 1:
        raise ValueError("every Replicant must have the same number of body parts")
    n = parts.pop()
    ids: list[int] = []
    positions: list[Vec3] = []
    rotations: list[Quat] = []
    forwards: list[Vec3] = []
    held: list[int] = []
    collision_ids: list[int] = []
    is_collisions: list[bool] = []
    for r in rows:
        ids += [r.id, *r.body_part_ids]
        positions += [r.position, *(r.body_part_positions or [r.position] * n)]
        rotations += [r.rotation, *(r.body_part_rotations or [r.rotation] * n)]
        forwards += [r.forward, *(r.body_part_forwards or [r.forward] * n)]
        held += [r.held_left is not None, r.held_left or 0, r.held_right is not None, r.held_right or 0]
        if any(not 0 <= k < n or len(v) > MAX_COLLISIONS for k, v in r.collisions.items()):
            raise ValueError(f"collisions: body part index out of range or more than {MAX_COLLISIONS} objects")
        for k in range(n):
            hits = [int(o) for o in r.collisions.get(k, ())]
            collision_ids += hits + [0] * (MAX_COLLISIONS - len(hits))
            is_collisions += [True] * len(hits) + [False] * (MAX_COLLISIONS - len(hits))
    if not len(positions) == len(rotations) == len(forwards) == len(ids):
        raise ValueError("body part poses must have one entry per body part")
    b = Builder(0)
    ids_v = _vector(b, Replicants.ReplicantsStartIdsVector, "<i4", [int(i) for i in ids])
    pos_v = _vector(b, Replicants.ReplicantsStartPositionsVector, "<f4", _floats(positions, 3))
    rot_v = _vector(b, Replicants.ReplicantsStartRotationsVector, "<f4", _floats(rotations, 4))
    fwd_v = _vector(b, Replicants.ReplicantsStartForwardsVector, "<f4", _floats(forwards, 3))
    held_v = _vector(b, Replicants.ReplicantsStartHeldVector, "<i4", [int(h) for h in held])
    col_v = _vector(b, Replicants.ReplicantsStartCollisionIdsVector, "<i4", collision_ids)
    is_col_v = _vector(b, Replicants.ReplicantsStartIsCollisionsVector, "?", is_collisions)
    status_v = _vector(b, Replicants.ReplicantsStartStatusesVector, "u1", [int(r.status) for r in rows])
    Replicants.ReplicantsStart(b)
    Replicants.ReplicantsAddNumBodyParts(b, n + 1)
    Replicants.ReplicantsAddIds(b, ids_v)
    Replicants.ReplicantsAddPositions(b, pos_v)
    Replicants.ReplicantsAddRotations(b, rot_v)
    Replicants.ReplicantsAddForwards(b, fwd_v)
    Replicants.ReplicantsAddHeld(b, held_v)
    Replicants.ReplicantsAddCollisionIds(b, col_v)
    Replicants.ReplicantsAddIsCollisions(b, is_col_v)
    Replicants.ReplicantsAddStatuses(b, status_v)
    return _finish(b, Replicants.ReplicantsEnd(b), b"repl")


def static_rigidbodies(object_ids: Sequence[int], *, kinematic: Collection[int] = ()) -> bytes:
    """``srig``: mass 1, dynamic and static friction 0.6, bounciness 0 per object; those in ``kinematic`` kinematic."""
    srig = StaticRigidbodies
    physics = [1.0, 0.6, 0.6, 0.0] * len(object_ids)  # mass, dynamic friction, static friction, bounciness
    b = Builder(0)
    ids = _vector(b, srig.StaticRigidbodiesStartIdsVector, "<i4", [int(i) for i in object_ids])
    values = _vector(b, srig.StaticRigidbodiesStartPhysicsValuesVector, "<f4", physics)
    kin = _vector(b, srig.StaticRigidbodiesStartKinematicVector, "?", [i in kinematic for i in object_ids])
    srig.StaticRigidbodiesStart(b)
    srig.StaticRigidbodiesAddIds(b, ids)
    srig.StaticRigidbodiesAddPhysicsValues(b, values)
    srig.StaticRigidbodiesAddKinematic(b, kin)
    return _finish(b, srig.StaticRigidbodiesEnd(b), b"srig")


def replicant_segmentation_colors(rows: Sequence[tuple[int, tuple[int, int, int]]]) -> bytes:
    """``rseg``: (Replicant id, (r, g, b) in 0..255) per Replicant."""
    rseg = ReplicantSegmentationColors
    colors = [int(c) for _, rgb in rows for c in rgb]
    if len(colors) != 3 * len(rows):
        raise ValueError("expected (r, g, b) colours")
    b = Builder(0)
    ids = _vector(b, rseg.ReplicantSegmentationColorsStartIdsVector, "<i4", [int(r[0]) for r in rows])
    colors_v = _vector(b, rseg.ReplicantSegmentationColorsStartColorsVector, "<i4", colors)
    rseg.ReplicantSegmentationColorsStart(b)
    rseg.ReplicantSegmentationColorsAddIds(b, ids)
    rseg.ReplicantSegmentationColorsAddColors(b, colors_v)
    return _finish(b, rseg.ReplicantSegmentationColorsEnd(b), b"rseg")
