"""TDW output data written by ``coteam_sim.bridges.fake_tdw_output`` read back by tdw's own parsers
(``tdw.output_data``, ``ReplicantDynamic``, ``ReplicantStatic``, ``TDWUtils.get_bounds_dict``): every value
round-trips and every item carries its type id."""

from __future__ import annotations

import pytest

pytest.importorskip("tdw.output_data")

from tdw.output_data import (
    Bounds,
    Framerate,
    OutputData,
    Replicants,
    ReplicantSegmentationColors,
    StaticRigidbodies,
    Transforms,
    Version,
)
from tdw.replicant.action_status import ActionStatus
from tdw.replicant.arm import Arm
from tdw.replicant.replicant_body_part import ABLE_BODIED_BODY_PARTS, ReplicantBodyPart
from tdw.replicant.replicant_dynamic import ReplicantDynamic
from tdw.replicant.replicant_static import ReplicantStatic
from tdw.tdw_utils import TDWUtils

from coteam_sim.bridges import fake_tdw_output as out

N_PARTS = len(ABLE_BODIED_BODY_PARTS)


def _approx(values) -> pytest.approx:
    return pytest.approx(values, abs=1e-6)


def test_version() -> None:
    b = out.version("1.13.0.0", "2020.3.48f1")
    v = Version(b)
    assert OutputData.get_data_type_id(b) == "vers"
    assert (v.get_tdw_version(), v.get_unity_version()) == ("1.13.0.0", "2020.3.48f1")
    assert b[8] == 1 and out.version("1", "2", standalone=False)[8] == 0
    # tdw compares an int with b"\x01" here, so it never reads True whatever the build writes.
    assert v.get_standalone() is False


def test_transforms() -> None:
    rows = [
        (3, (1.0, 0.5, -2.0), (0.0, 0.7071, 0.0, 0.7071), (1.0, 0.0, 0.0)),
        (-7, (0, 0, 0), (0, 0, 0, 1), (0, 0, 1)),
    ]
    b = out.transforms(rows)
    t = Transforms(b)
    assert OutputData.get_data_type_id(b) == "tran"
    assert t.get_num() == 2
    for i, (object_id, position, rotation, forward) in enumerate(rows):
        assert t.get_id(i) == object_id
        assert list(t.get_position(i)) == _approx(position)
        assert list(t.get_rotation(i)) == _approx(rotation)
        assert list(t.get_forward(i)) == _approx(forward)
    assert Transforms(out.transforms([])).get_num() == 0


def test_bounds() -> None:
    b = out.bounds([(5, (1.0, 0.5, 2.0), (0.4, 1.0, 0.6)), (6, (0.0, 0.0, 0.0), (2.0, 2.0, 2.0))])
    bo = Bounds(b)
    assert OutputData.get_data_type_id(b) == "boun"
    assert [bo.get_id(i) for i in range(bo.get_num())] == [5, 6]
    d = TDWUtils.get_bounds_dict(bo, 0)
    expected = {
        "front": (1.0, 0.5, 2.3),
        "back": (1.0, 0.5, 1.7),
        "right": (1.2, 0.5, 2.0),
        "left": (0.8, 0.5, 2.0),
        "top": (1.0, 1.0, 2.0),
        "bottom": (1.0, 0.0, 2.0),
        "center": (1.0, 0.5, 2.0),
    }
    assert {k: list(v) for k, v in d.items()} == {k: _approx(v) for k, v in expected.items()}
    assert list(TDWUtils.get_bounds_extents(bo, 0)) == _approx([0.4, 1.0, 0.6])
    assert list(bo.get_top(1)) == _approx([0.0, 1.0, 0.0])


def test_framerate() -> None:
    b = out.framerate(30, 1 / 30, 0.01)
    f = Framerate(b)
    assert OutputData.get_data_type_id(b) == "fram"
    assert f.get_target_framerate() == 30
    assert f.get_frame_dt() == pytest.approx(1 / 30)
    assert f.get_physics_timestep() == pytest.approx(0.01)
    assert Framerate(out.framerate()).get_target_framerate() == 60


PARTS = tuple(range(100, 100 + N_PARTS))
OTHER_PARTS = tuple(range(200, 200 + N_PARTS))
PART_POSITIONS = tuple((float(i), 1.0, -float(i)) for i in range(N_PARTS))
ME = out.ReplicantRow(
    id=1,
    position=(1.0, 0.0, 2.0),
    rotation=(0.0, 0.3827, 0.0, 0.9239),
    forward=(0.7071, 0.0, 0.7071),
    body_part_ids=PARTS,
    body_part_positions=PART_POSITIONS,
    held_left=42,
    collisions={0: [7, 8], 13: [9]},
    status=ActionStatus.collision.value,
)
OTHER = out.ReplicantRow(
    id=2, position=(-1.0, 0.0, 0.0), rotation=(0, 0, 0, 1), forward=(0, 0, 1), body_part_ids=OTHER_PARTS, held_right=43
)


def test_replicants() -> None:
    b = out.replicants([OTHER, ME])
    r = Replicants(b)
    assert OutputData.get_data_type_id(b) == "repl"
    assert r.get_num() == 2 and r.get_num_body_parts() == N_PARTS + 1 == 15
    assert (r.get_id(0), r.get_id(1)) == (2, 1)
    assert list(r.get_position(1)) == _approx(ME.position)
    assert list(r.get_rotation(1)) == _approx(ME.rotation)
    assert list(r.get_forward(1)) == _approx(ME.forward)
    assert [r.get_body_part_id(1, k) for k in range(N_PARTS)] == list(PARTS)
    assert [r.get_body_part_id(0, k) for k in range(N_PARTS)] == list(OTHER_PARTS)
    assert [list(r.get_body_part_position(1, k)) for k in range(N_PARTS)] == [_approx(p) for p in PART_POSITIONS]
    assert list(r.get_body_part_rotation(1, 5)) == _approx(ME.rotation)
    assert list(r.get_body_part_forward(0, 5)) == _approx(OTHER.forward)
    assert list(r.get_body_part_position(0, 13)) == _approx(OTHER.position)
    assert (r.get_is_holding_left(1), r.get_held_left(1), r.get_is_holding_right(1)) == (True, 42, False)
    assert (r.get_is_holding_left(0), r.get_is_holding_right(0), r.get_held_right(0)) == (False, True, 43)
    hits = {k: [r.get_collision_id(1, k, m) for m in range(10) if r.get_is_collision(1, k, m)] for k in range(N_PARTS)}
    assert hits == {k: {0: [7, 8], 13: [9]}.get(k, []) for k in range(N_PARTS)}
    assert not any(r.get_is_collision(0, k, m) for k in range(N_PARTS) for m in range(10))
    assert (r.get_status(1), r.get_status(0)) == (ActionStatus.collision, ActionStatus.ongoing)
    assert Replicants(out.replicants([])).get_num() == 0


def test_replicants_rejects_bad_rows() -> None:
    with pytest.raises(ValueError):
        out.replicants([ME, out.ReplicantRow(3, (0, 0, 0), (0, 0, 0, 1), (0, 0, 1), body_part_ids=(1, 2))])
    with pytest.raises(ValueError):
        out.replicants([out.ReplicantRow(3, (0, 0, 0), (0, 0, 0, 1), (0, 0, 1), PARTS, collisions={0: range(11)})])
    with pytest.raises(ValueError):
        out.replicants([out.ReplicantRow(3, (0, 0, 0), (0, 0, 0, 1), (0, 0, 1), PARTS, collisions={N_PARTS: [1]})])


def test_replicant_dynamic_and_static() -> None:
    resp = [out.replicants([OTHER, ME]), out.replicant_segmentation_colors([(2, (1, 2, 3)), (1, (10, 20, 30))])]
    dynamic = ReplicantDynamic(resp=[resp[0], out.framerate(), b"frame"], replicant_id=1, frame_count=0)
    assert dynamic.held_objects == {Arm.left: 42}
    assert list(dynamic.transform.position) == _approx(ME.position)
    assert list(dynamic.transform.forward) == _approx(ME.forward)
    assert sorted(dynamic.body_parts) == list(PARTS)
    assert list(dynamic.body_parts[PARTS[3]].position) == _approx(PART_POSITIONS[3])
    assert dynamic.collisions == {p: {PARTS[0]: [7, 8], PARTS[13]: [9]}.get(p, []) for p in PARTS}
    assert dynamic.output_data_status == ActionStatus.collision
    other = ReplicantDynamic(resp=[resp[0], b"frame"], replicant_id=2, frame_count=0)
    assert other.held_objects == {Arm.right: 43}
    static = ReplicantStatic(replicant_id=1, resp=[*resp, b"frame"], can_walk=True)
    assert static.body_parts == dict(zip(ABLE_BODIED_BODY_PARTS, PARTS, strict=True))
    assert static.hands == {Arm.left: PARTS[ReplicantBodyPart.hand_l], Arm.right: PARTS[ReplicantBodyPart.hand_r]}
    assert list(static.segmentation_color) == [10, 20, 30]


def test_static_rigidbodies() -> None:
    b = out.static_rigidbodies([4, 5], kinematic={5})
    s = StaticRigidbodies(b)
    assert OutputData.get_data_type_id(b) == "srig"
    assert [s.get_id(i) for i in range(s.get_num())] == [4, 5]
    assert [s.get_kinematic(i) for i in range(2)] == [False, True]
    assert s.get_mass(0) == pytest.approx(1.0)
    assert (s.get_dynamic_friction(1), s.get_static_friction(1), s.get_bounciness(1)) == _approx((0.6, 0.6, 0.0))
    assert StaticRigidbodies(out.static_rigidbodies([])).get_num() == 0


def test_replicant_segmentation_colors() -> None:
    b = out.replicant_segmentation_colors([(1, (10, 20, 30)), (2, (255, 0, 7))])
    s = ReplicantSegmentationColors(b)
    assert OutputData.get_data_type_id(b) == "rseg"
    assert [s.get_id(i) for i in range(s.get_num())] == [1, 2]
    assert [list(s.get_segmentation_color(i)) for i in range(2)] == [[10, 20, 30], [255, 0, 7]]
