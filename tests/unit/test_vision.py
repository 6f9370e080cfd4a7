"""Cameras and markers: pinhole intrinsics, the camera pose from the robot's pose and mounting (transforms3d), the
simulated RGB-D camera (geometry, occlusion by walls and closed containers, determinism) and the ArUco detector
(finds the markers of the items in view, names them, places them within centimetres)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from coteam.domain.navigation import NavGrid
from coteam.domain.world import Placement, Relation, WorldState
from coteam.senses.perception import SemanticMapFusion
from coteam.senses.vision import (
    CameraIntrinsics,
    CameraMount,
    CameraPose,
    CatalogueEntry,
    ImageDetection,
    MarkerCatalogue,
    OracleDetector,
    RGBDFrame,
    detections_on_map,
    places_seen_empty,
)
from coteam_sim.camera import (
    KIND_ITEM,
    NOISE_LEVELS,
    CameraNoise,
    CameraSpec,
    colour_detector,
    item_detector,
    render,
    scene_boxes,
    stand_facing,
    with_noise,
)
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite


@pytest.fixture
def world() -> WorldState:
    scene = get_suite("cwah-test").episodes()[0].build()
    return Simulator(scene, ("alice", "bob")).world


def _contents(world: WorldState) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for item, p in world.placements.items():
        if p.relation in (Relation.ON, Relation.IN) and world.is_fixture(p.target):
            out.setdefault(p.target, []).append(item)
    return out


def _stand_before(world: WorldState, fixture_id: int, distance_m: float) -> None:
    assert stand_facing(world, "alice", fixture_id, distance_m), f"no place {distance_m} m from {fixture_id}"


def test_intrinsics_from_the_field_of_view():
    k = CameraIntrinsics.from_fov(640, 480, 90.0)
    assert (k.fx, k.fy, k.cx, k.cy) == (pytest.approx(320.0), pytest.approx(320.0), 320.0, 240.0)
    assert np.allclose(k.ray(320.0, 240.0), [0, 0, 1]) and np.allclose(k.ray(640.0, 240.0), [1, 0, 1])
    assert k.rays().shape == (480, 640, 3)
    with pytest.raises(ValueError, match="field of view"):
        CameraIntrinsics.from_fov(640, 480, 180.0)


@pytest.mark.parametrize(("heading", "forward"), [(0, (1, 0)), (90, (0, 1)), (180, (-1, 0)), (270, (0, -1))])
def test_the_camera_looks_along_the_heading_and_down_by_its_pitch(heading: int, forward: tuple[int, int]):
    level = CameraPose.of_robot((2.0, 3.0), heading, CameraMount(x=0.1, z=1.2, pitch_deg=0.0))
    optical_z, optical_x, optical_y = level.rotation[:, 2], level.rotation[:, 0], level.rotation[:, 1]
    assert np.allclose(optical_z, [*forward, 0], atol=1e-9)
    assert np.allclose(optical_y, [0, 0, -1], atol=1e-9)  # image down is world down
    assert np.allclose(np.cross(optical_z, optical_x), [0, 0, -1], atol=1e-9)  # image right is the robot's right
    assert np.allclose(level.origin, [2.0 + 0.1 * forward[0], 3.0 + 0.1 * forward[1], 1.2])
    tilted = CameraPose.of_robot((2.0, 3.0), heading, CameraMount(pitch_deg=15.0))
    assert tilted.rotation[2, 2] == pytest.approx(-math.sin(math.radians(15.0)))


def test_depth_is_the_distance_to_the_wall_ahead(world: WorldState):
    fp = world.scene.floorplan
    cs = fp.cell_size
    fixtures = [f.position for f in (*world.scene.containers, *world.scene.surfaces)]

    def clear(cy: int, x0: float, x1: float) -> bool:  # no fixture within a metre of the sight line
        return all(not (x0 - 1 <= fx <= x1 + 1 and abs(fy - (cy + 0.5) * cs) < 1.0) for fx, fy in fixtures)

    runs = [
        (cy, cx, row.index("#", cx))
        for cy, row in enumerate(fp.rows)
        for cx in range(1, fp.width - 3)
        if row[cx - 1] == "#" and row[cx : cx + 3] == "..." and "#" in row[cx:]
    ]
    cy, cx, end = next(r for r in runs if clear(r[0], r[1] * cs, r[2] * cs))
    world.agents["alice"].position = ((cx + 0.5) * cs, (cy + 0.5) * cs)
    world.agents["alice"].heading = 0
    del world.agents["bob"]
    mount = CameraMount(x=0.1, z=1.2, pitch_deg=0.0)
    frame = render(world, "alice", CameraSpec(width=64, height=48, mount=mount))
    expected = end * cs - ((cx + 0.5) * cs + 0.1)
    assert np.allclose(frame.depth[23:25, 31:33], expected, atol=1e-4)
    assert frame.depth.dtype == np.float32 and (frame.depth[-1] > 0).all()  # the floor is measured too
    assert np.array_equal(frame.rgb, render(world, "alice", CameraSpec(width=64, height=48, mount=mount)).rgb)


def test_closed_containers_hide_their_items_and_open_ones_show_them(world: WorldState):
    contents = _contents(world)
    container = next(c for c in world.scene.containers if c.id in contents and c.openable)
    _stand_before(world, container.id, 2.0)
    world.is_open[container.id] = False
    closed = render(world, "alice", CameraSpec())
    assert not set(contents[container.id]) & set(np.unique(closed.labels))
    assert container.id in np.unique(closed.labels)
    world.is_open[container.id] = True
    opened = render(world, "alice", CameraSpec())
    assert set(contents[container.id]) <= set(np.unique(opened.labels))


def test_walls_hide_what_is_behind_them(world: WorldState):
    contents = _contents(world)
    surface = next(s for s in world.scene.surfaces if s.id in contents)
    _stand_before(world, surface.id, 2.0)
    seen = render(world, "alice", CameraSpec())
    assert set(contents[surface.id]) <= set(np.unique(seen.labels))
    # from a free cell of another room whose every sight line to the surface's top crosses a wall cell
    fp = world.scene.floorplan
    nav = NavGrid(fp)
    sx, sy = surface.position
    corners = [(sx + dx, sy + dy) for dx in (-0.4, 0.0, 0.4) for dy in (-0.4, 0.0, 0.4)]
    spots = [
        fp.center_of((cx, cy))
        for cy in range(fp.height)
        for cx in range(fp.width)
        if fp.is_free(cx, cy) and fp.room_of_cell(cx, cy) not in (None, fp.room(surface.room))
    ]
    hidden_spots = [
        p
        for p in spots
        if 2.0 < math.dist(p, surface.position) < 6.0 and not any(nav.line_of_sight(p, c) for c in corners)
    ]
    assert hidden_spots
    x, y = hidden_spots[0]
    world.agents["alice"].position = (x, y)
    world.agents["alice"].heading = round(math.degrees(math.atan2(sy - y, sx - x))) % 360
    hidden = render(world, "alice", CameraSpec())
    assert not set(contents[surface.id]) & set(np.unique(hidden.labels))
    assert (hidden.labels == -1).mean() > 0.5, "it looks at a wall"


def test_aruco_finds_the_items_in_view_and_places_them_on_the_map(world: WorldState):
    names = {i.id: i.name for i in world.scene.items}
    detector = item_detector(world)
    for c in world.scene.containers:
        world.is_open[c.id] = True
    boxes = scene_boxes(world, "alice")
    centre = {
        oid: (np.array(lo) + np.array(hi)) / 2
        for lo, hi, oid, kind in zip(boxes.lo, boxes.hi, boxes.object_id, boxes.kind, strict=True)
        if kind == KIND_ITEM
    }
    found_total = expected_total = 0
    errors: list[float] = []
    for fixture_id, items in sorted(_contents(world).items()):
        _stand_before(world, fixture_id, 2.0)
        frame = render(world, "alice", CameraSpec())
        found = detector.detect(frame)
        assert {d.object_id for d in found} <= set(items), "only the markers in view, each named right"
        assert all(d.name == names[d.object_id] for d in found)
        for d in found:  # the centre of the cube behind the marker's face
            errors.append(np.linalg.norm(frame.pose.to_map(np.array(d.point)) - centre[d.object_id]))
        found_total += len(found)
        expected_total += len(items)
    assert found_total >= 0.8 * expected_total
    assert np.median(errors) < 0.03 and max(errors) < 0.1, errors


def test_coteam_camera_writes_the_images_and_lists_the_markers(world: WorldState, tmp_path, capsys):
    from coteam.cli import main

    fixture_id, items = min(_contents(world).items())
    out = str(tmp_path / "f")
    assert main(["camera", "--open-all", "--facing", str(fixture_id), "2", "--out", out]) == 0
    printed = capsys.readouterr().out
    assert all(f"({i})" in printed for i in items)
    import cv2

    rgb, depth = (
        cv2.imread(str(tmp_path / "f-rgb.png")),
        cv2.imread(str(tmp_path / "f-depth.png"), cv2.IMREAD_UNCHANGED),
    )
    assert rgb.shape == (480, 640, 3) and depth.dtype == np.uint16 and depth.max() > 1000
    drawn = cv2.imread(str(tmp_path / "f-detections.png"))
    assert drawn.shape == rgb.shape and (drawn != rgb).any(), "the detections are drawn on the colour image"
    _stand_before(world, fixture_id, 2.0)  # the same view from a pose
    (x, y), heading = world.agents["alice"].position, world.agents["alice"].heading
    assert main(["camera", "--open-all", "--pose", str(x), str(y), str(heading), "--out", out]) == 0
    assert capsys.readouterr().out == printed
    assert main(["camera", "--pose", "0", "0", "0", "--out", out]) == 2
    assert "not on a free cell" in capsys.readouterr().err
    assert main(["camera", "--facing", "9999", "2", "--out", out]) == 2
    assert "9999 is not a fixture" in capsys.readouterr().err


def test_noise_is_reproducible_grows_with_distance_and_loses_frames(world: WorldState):
    frame = render(world, "alice", CameraSpec(width=160, height=120))
    clean = with_noise(frame, NOISE_LEVELS["clean"], np.random.default_rng(1))
    assert clean is not None and np.array_equal(clean.rgb, frame.rgb) and np.array_equal(clean.depth, frame.depth)
    noise = CameraNoise(pixel_sigma=5.0, depth_sigma_1m=0.01, blur_sigma_px=1.0)
    a, b = (with_noise(frame, noise, np.random.default_rng(7)) for _ in range(2))
    assert a is not None and b is not None and np.array_equal(a.rgb, b.rgb) and np.array_equal(a.depth, b.depth)
    assert not np.array_equal(a.rgb, frame.rgb)
    measured = frame.depth > 0
    assert (a.depth[~measured] == 0).all(), "no depth appears where nothing was measured"
    error = np.abs(a.depth - frame.depth)[measured]
    far = frame.depth[measured] > 2.5
    near = frame.depth[measured] < 1.5
    assert far.sum() > 100 and near.sum() > 100
    assert error[far].mean() > 2 * error[near].mean()  # sigma grows with the square of the distance
    lost = sum(with_noise(frame, CameraNoise(missed_frames=0.5), np.random.default_rng(s)) is None for s in range(200))
    assert 70 < lost < 130


def test_camera_detections_build_the_semantic_map_and_an_emptied_place_fades(world: WorldState):
    contents = _contents(world)
    surface = next(s for s in world.scene.surfaces if len(contents.get(s.id, [])) >= 1)
    items = contents[surface.id]
    _stand_before(world, surface.id, 2.0)
    detector = item_detector(world)
    categories = {i.name: i.category for i in world.scene.items}
    fusion = SemanticMapFusion(empty_decay=0.5, drop_below=0.2)
    frame = render(world, "alice", CameraSpec())
    found = detector.detect(frame)
    on_map = detections_on_map(found, frame.pose, world.scene.floorplan, 0, categories)
    fusion.update(on_map, 0)
    room = world.scene.floorplan.room(surface.room).name
    assert {o.object_id for o in fusion.objects()} == set(items) and all(o.room == room for o in fusion.objects())
    places = {d.object_id: tuple(frame.pose.to_map(np.array(d.point))) for d in found}
    # Someone takes the items away; the robot looks again from where it stands.
    for item in items:
        world.placements[item] = Placement.held("bob", items.index(item) % 2)
    for step in (1, 2, 3):
        frame = render(world, "alice", CameraSpec())
        assert not detector.detect(frame)
        empty = places_seen_empty(places, frame.pose, frame.intrinsics, frame.depth)
        assert set(empty) == set(items), "the camera sees the table top where they stood"
        fusion.seen_empty(empty, step)
    assert len(fusion) == 0, "three looks at the empty table: forgotten"


def test_the_colour_detector_finds_each_untagged_item_by_its_class(world: WorldState):
    names = {i.id: i.name for i in world.scene.items}
    detector = colour_detector(world)
    for c in world.scene.containers:
        world.is_open[c.id] = True
    for fixture_id, items in sorted(_contents(world).items()):
        _stand_before(world, fixture_id, 2.0)
        frame = render(world, "alice", CameraSpec())
        found = detector.detect(frame)
        assert sorted(d.name for d in found) == sorted(names[i] for i in items)
        assert all(d.object_id == -1 and 0 < d.confidence <= 1 and d.depth_m > 0 for d in found)
    world.placements.update({i: Placement.held("bob", 0) for i in names})  # nothing left in view
    frame = render(world, "alice", CameraSpec())
    assert detector.detect(frame) == []


def test_the_oracle_reports_what_the_frame_shows_and_needs_a_simulated_frame(world: WorldState):
    names = {i.id: i.name for i in world.scene.items}
    fixture_id, items = min(_contents(world).items())
    for c in world.scene.containers:
        world.is_open[c.id] = True
    _stand_before(world, fixture_id, 2.0)
    frame = render(world, "alice", CameraSpec())
    found = OracleDetector(names, min_pixels=20).detect(frame)
    ids, counts = np.unique(frame.labels, return_counts=True)
    shown = {int(i) for i, n in zip(ids, counts, strict=True) if int(i) in names and n >= 20}
    assert {d.object_id for d in found} == shown and set(items) <= shown
    assert all(d.confidence == 1.0 and d.name == names[d.object_id] and d.depth_m > 0 for d in found)
    with pytest.raises(ValueError, match="real camera"):
        OracleDetector(names).detect(RGBDFrame(frame.rgb, frame.depth, frame.intrinsics, None))


def test_a_marker_catalogue_file_names_the_printed_markers(tmp_path):
    (tmp_path / "markers.yaml").write_text("12: apple\n13: mug\n")
    catalogue = MarkerCatalogue.from_file(tmp_path / "markers.yaml")
    assert catalogue.get(12) == CatalogueEntry(12, "apple") and catalogue.get(14) is None
    for text in ("apple: 12\n", "- 12\n", "12: [apple]\n", "1000: apple\n"):
        (tmp_path / "bad.yaml").write_text(text)
        with pytest.raises(ValueError, match=r"bad\.yaml|0-999"):
            MarkerCatalogue.from_file(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="cannot read"):
        MarkerCatalogue.from_file(tmp_path / "missing.yaml")


def test_a_detection_without_a_finite_position_is_left_out(world: WorldState):
    """A degenerate marker pose or depth gives a NaN point: it is not put on the map (nor does it stop the frame)."""
    pose = CameraPose.of_robot(world.agents["alice"].position, 0.0, CameraSpec().mount)
    good = ImageDetection(1, "apple", (320.0, 240.0), 1.0, (0.0, 0.0, 1.0), 1.0, "aruco")
    bad = ImageDetection(2, "apple", (320.0, 240.0), 1.0, (float("nan"), 0.0, 1.0), 1.0, "aruco")
    on_map = detections_on_map([bad, good], pose, world.scene.floorplan, 0)
    assert [d.object_id for d in on_map] == [1] and on_map[0].height_m is not None


def test_the_detector_registry_makes_each_detector_from_its_settings(tmp_path: Path) -> None:
    """``perception: {detector: ...}`` names a detector of :data:`DETECTORS`; its settings (a team file's keys, the
    perception node's parameters) make it, unset ones giving the simulator's markers and colours."""
    from coteam.senses.vision import DETECTORS, ArucoDetector, ColorDetector, make_detector

    items = {10: "apple", 11: "cup"}
    assert set(DETECTORS) == {"aruco", "color", "onnx"}
    aruco = make_detector("aruco", {"markers": "", "marker_size_m": 0.0, "object_depth_m": 0.0}, items)
    assert isinstance(aruco, ArucoDetector) and aruco.catalogue.entries[10].name == "apple"
    colours = tmp_path / "colours.yaml"
    colours.write_text("apple: [200, 30, 30]\n")
    painted = make_detector("color", {"colours": str(colours)}, items)
    assert isinstance(painted, ColorDetector) and [c for c, _ in painted.classes] == ["apple"]
    assert [c for c, _ in make_detector("color", {}, items).classes] == ["apple", "cup"]
    with pytest.raises(ValueError, match="detector onnx needs model"):
        make_detector("onnx", {"model": "", "classes": None}, items)
    with pytest.raises(ValueError, match="detector must be one of aruco, color, onnx, not 'sonar'"):
        make_detector("sonar", {}, items)
