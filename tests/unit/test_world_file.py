"""World files (coteam.home.world_file): your own home and task, compiled to the scene the robots and the twin use; one
line for every error; `coteam world check` / `coteam world draw`."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from coteam.agent.reasoning import EpisodeInfo
from coteam.cli import main as coteam_main
from coteam.domain.navigation import NavGrid
from coteam.domain.scene_io import load_scene, save_scene
from coteam.domain.world import Benchmark, Relation
from coteam.home.safety import SafetyPolicy, SafetyPolicyError
from coteam.home.world_draw import draw_world
from coteam.home.world_file import WorldFileError, load_safety_policy, load_world, parse_goal

FLAT = Path(__file__).resolve().parents[2] / "config" / "flat.world.yaml"

# An L-shaped hall and a square study, without a map: the free space is the rooms' insides.
SMALL = {
    "format": "coteam-world/1",
    "name": "small",
    "cell_size": 0.5,
    "rooms": [
        {"name": "hall", "polygon": [[0, 0], [6, 0], [6, 2], [2, 2], [2, 6], [0, 6]]},
        {"name": "study", "polygon": [[2, 2], [6, 2], [6, 6], [2, 6]]},
    ],
    "fixtures": [
        {"name": "shelf", "kind": "surface", "position": [5.0, 5.0]},
        {"name": "box", "kind": "container", "position": [1.0, 5.0], "openable": False},
    ],
    "items": [{"name": "book", "count": 2, "where": "on shelf"}, {"name": "pen", "where": "floor 5.0 1.0"}],
    "robots": [{"name": "r1", "start": [1.0, 1.0, 90]}, {"name": "r2", "start": [3.0, 1.0]}],
    "task": {"name": "tidy up", "goal": ["in(book, box): 2"], "time_limit_s": 60},
}


def _write(tmp_path: Path, doc: dict, name: str = "home.world.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_example_flat() -> None:
    world = load_world(FLAT)
    scene = world.scene
    fp = scene.floorplan
    assert scene.benchmark == Benchmark.CWAH and world.time_limit_s == 300
    assert fp.origin == (-1.0, -1.0) and fp.cell_size == 0.25  # the Nav2 map's origin: positions are map positions
    rooms = {r.id: r.name for r in fp.rooms}
    fixture_rooms = {f.name: rooms[f.room] for f in (*scene.containers, *scene.surfaces)}
    assert fixture_rooms["fridge"] == "kitchen" and fixture_rooms["bed"] == "bedroom"
    assert fixture_rooms["coffeetable"] == "livingroom" and fixture_rooms["bathroomcabinet"] == "bathroom"
    fridge = next(c for c in scene.containers if c.name == "fridge")
    goal = {(p.relation, p.item, p.target, p.count) for p in scene.task.predicates}
    assert goal == {(Relation.IN, "apple", fridge.id, 2), (Relation.IN, "cupcake", fridge.id, 1)}
    assert [a.name for a in scene.agent_starts] == ["robot1", "robot2"]
    assert scene.agent_starts[1].heading == 180
    # the map's walls and doors made it to the planning grid: every fixture is reachable from each start
    nav = NavGrid(fp)
    for start in scene.agent_starts:
        for fixture in (*scene.containers, *scene.surfaces):
            assert nav.path_length(start.position, fixture.position) < 20, (start.name, fixture.name)
    wall_between_kitchen_and_bedroom = fp.cell_of((0.5, 3.5))
    assert not fp.is_free(*wall_between_kitchen_and_bedroom)
    door = fp.cell_of((1.95, 3.5))
    assert fp.is_free(*door)
    # the robots' nodes build the same episode info from it as from a suite scene
    info = EpisodeInfo.for_scene(scene, ("robot1", "robot2"), 0)
    assert {v.name for v in info.landmarks} == {"fridge"}


def test_polygon_rooms_without_a_map(tmp_path: Path) -> None:
    scene = load_world(_write(tmp_path, SMALL)).scene
    fp = scene.floorplan
    hall, study = fp.rooms
    assert fp.room_at((1.0, 5.0)) == hall and fp.room_at((5.0, 1.0)) == hall and fp.room_at((4.0, 4.0)) == study
    assert fp.room_at(fp.room_center(hall.id)) == hall  # inside the L, not at its corners' mean
    flat = load_world(FLAT).scene.floorplan  # furniture stands where the kitchen's corners' mean is
    assert all(flat.is_free(*flat.cell_of(flat.room_center(r.id))) for r in flat.rooms)
    assert fp.is_free(*fp.cell_of((1.0, 1.0))) and not fp.is_free(*fp.cell_of((-0.25, 1.0)))
    box = next(c for c in scene.containers if c.name == "box")
    assert box.id in scene.initially_open  # not openable: always open
    pen = next(i for i in scene.items if i.name == "pen")
    assert scene.placements[pen.id].relation == Relation.FLOOR and scene.placements[pen.id].position == (5.0, 1.0)
    assert sum(1 for i in scene.items if i.name == "book") == 2
    assert scene.agent_starts[0].heading == 90 and scene.agent_starts[1].heading == 0


ROOM_LABELS = {"kitchen": 1, "livingroom": 2, "bedroom": 3, "bathroom": 4}  # config/flat.rooms.png's values


def _flat_with_room_map(tmp_path: Path, image: np.ndarray | None = None, **room_map) -> Path:
    """The example flat with its rooms given as a labelled region image (config/flat.rooms.png or ``image``)."""
    doc = yaml.safe_load(FLAT.read_text())
    doc["map"] = str(FLAT.parent / doc["map"])
    del doc["rooms"]
    if image is not None:
        cv2.imwrite(str(tmp_path / "rooms.png"), image)
    where = str(tmp_path / "rooms.png") if image is not None else str(FLAT.parent / "flat.rooms.png")
    doc["room_map"] = {"image": where, "rooms": ROOM_LABELS, **room_map}
    return _write(tmp_path, doc)


def test_rooms_from_a_labelled_region_map_are_the_polygons_rooms(tmp_path: Path) -> None:
    """config/flat.rooms.png paints the example flat's four rooms over its map: the same rooms, cell for cell, in
    the order the file names them (neighbouring regions meet without a gap between their outlines)."""
    polygons = load_world(FLAT).scene.floorplan
    painted = load_world(_flat_with_room_map(tmp_path)).scene.floorplan
    assert [r.name for r in painted.rooms] == list(ROOM_LABELS)
    by_name = {r.name: sorted(r.cells()) for r in polygons.rooms}
    assert {r.name: sorted(r.cells()) for r in painted.rooms} == by_name
    # an L-shaped region keeps its shape: the hall of one room, the rest of the flat another
    labels = cv2.imread(str(FLAT.parent / "flat.rooms.png"), cv2.IMREAD_UNCHANGED)
    labels[labels == 4] = 2  # the bathroom joins the living room: an L
    l_shaped = load_world(
        _flat_with_room_map(tmp_path, labels, rooms={"kitchen": 1, "livingroom": 2, "bedroom": 3})
    ).scene.floorplan
    living = next(r for r in l_shaped.rooms if r.name == "livingroom")
    assert sorted(living.cells()) == sorted(by_name["livingroom"] + by_name["bathroom"])
    assert l_shaped.room_at((6.5, 5.0)) == living and l_shaped.room_at((2.0, 5.0)).name == "bedroom"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ("no map", "room_map: a labelled region image lies over the map: give map too"),
        ("both", "give rooms or room_map, not both"),
        ("absent label", "room_map: room 'cellar': no pixel has the value 9"),
        ("two regions", "room_map: room 'kitchen': the value 1 paints 2 separate regions; a room is one"),
        ("colour", "has colour channels; paint the rooms in one channel"),
        ("size", "is 10 x 10 pixels, the map 220 x 180: paint it over the map's image"),
        ("no file", "room_map: cannot read the image"),
    ],
)
def test_a_bad_room_map_is_one_line(tmp_path: Path, edit: str, message: str) -> None:
    labels = cv2.imread(str(FLAT.parent / "flat.rooms.png"), cv2.IMREAD_UNCHANGED)
    path = _flat_with_room_map(tmp_path)
    doc = yaml.safe_load(path.read_text())
    if edit == "no map":
        del doc["map"]
    elif edit == "both":
        doc["rooms"] = SMALL["rooms"]
    elif edit == "absent label":
        doc["room_map"]["rooms"]["cellar"] = 9
    elif edit == "two regions":
        labels[120:125, :] = 0  # a corridor of no room cuts the kitchen in two
        path = _flat_with_room_map(tmp_path, labels)
        doc = yaml.safe_load(path.read_text())
    elif edit == "colour":
        path = _flat_with_room_map(tmp_path, cv2.cvtColor(labels, cv2.COLOR_GRAY2BGR))
        doc = yaml.safe_load(path.read_text())
    elif edit == "size":
        path = _flat_with_room_map(tmp_path, np.ones((10, 10), np.uint8))
        doc = yaml.safe_load(path.read_text())
    else:
        doc["room_map"]["image"] = "nowhere.png"
    path = _write(tmp_path, doc)
    with pytest.raises(WorldFileError) as caught:
        load_world(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text


def test_a_compiled_world_saves_and_loads_without_loss(tmp_path: Path) -> None:
    scene = load_world(FLAT).scene
    save_scene(scene, tmp_path / "flat.json")
    again = load_scene(tmp_path / "flat.json")
    assert again == scene
    assert again.floorplan.rooms[0].polygon and again.floorplan.origin == (-1.0, -1.0)


def test_near_goals_take_the_tdwmat_rules(tmp_path: Path) -> None:
    doc = {**SMALL, "task": {"name": "food to the shelf", "goal": ["near(book, shelf): 1"], "category": "food"}}
    scene = load_world(_write(tmp_path, doc)).scene
    assert scene.benchmark == Benchmark.TDWMAT and scene.task.horizon == 3000 and scene.task.category == "food"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            {"colour": "red"},
            "colour: unknown key (allowed here: format, name, map, cell_size, rooms, room_map, fixtures, items, "
            "robots, task, safety)",
        ),
        ({"format": "coteam-world/9"}, "format: expected one of coteam-world/1, got 'coteam-world/9'"),
        ({"task": {**SMALL["task"], "goal": ["book in box"]}}, "goal 'book in box': write RELATION(ITEM, TARGET)"),
        ({"task": {**SMALL["task"], "goal": ["in(book, sofa): 1"]}}, "no fixture is named 'sofa'"),
        ({"task": {**SMALL["task"], "goal": ["in(book, shelf): 1"]}}, "shelf is a surface"),
        ({"task": {**SMALL["task"], "goal": ["in(cup, box): 1"]}}, "no item is named 'cup' (items: book, pen)"),
        ({"task": {**SMALL["task"], "goal": ["in(book, box): 3"]}}, "3 wanted, 2 in items"),
        ({"task": {**SMALL["task"], "goal": ["in(book, box): 1", "near(pen, shelf): 1"]}}, "mixes near"),
        ({"items": [{"name": "book", "where": "in shelf"}]}, "shelf is a surface"),
        ({"items": [{"name": "book", "where": "under shelf"}]}, "items[0].where: String should match pattern"),
        ({"items": [{"name": "book", "where": "floor 30 30"}]}, "item 'book' at [30.0, 30.0] is in no room"),
        ({"robots": [{"name": "r1", "start": [9.0, 9.0]}]}, "robot 'r1' at [9.0, 9.0] is in no room"),
        ({"rooms": [*SMALL["rooms"], {"name": "hall", "polygon": [[0, 0], [1, 0], [1, 1]]}]}, "two rooms are named"),
        (
            {"rooms": [*SMALL["rooms"], {"name": "closet", "polygon": [[4, 4], [6, 4], [6, 6], [4, 6]]}]},
            "rooms 'study' and 'closet' overlap (at [4.25, 4.25])",
        ),
        (
            {"robots": [{"name": "r1", "start": [1, 1], "capabilities": {"grippers": 3}}]},
            "robots[0].capabilities.grippers: Input should be less than or equal to 2",
        ),
        (
            {"robots": [{"name": "r1", "start": [1, 1], "rest": "cellar"}]},
            "robot 'r1' rests in 'cellar', which is not a room (hall, study)",
        ),
        ({"map": "missing.map.yaml"}, "missing.map.yaml: cannot read it (No such file or directory)"),
        ({"rooms": []}, "rooms: give at least one room (or a room_map)"),
        ({"safety": {"no_go": ["cellar"]}}, "safety.no_go: no room named 'cellar' (rooms: hall, study)"),
        ({"safety": {"max_speed_mps": -1}}, "safety.max_speed_mps: must be a positive number, got -1.0"),
        ({"safety": {"never_touch": "book"}}, "safety.never_touch: expected a non-empty list, got the string 'book'"),
    ],
)
def test_every_error_is_one_line_naming_the_file(tmp_path: Path, edit: dict, message: str) -> None:
    path = _write(tmp_path, {**SMALL, **edit})
    with pytest.raises(WorldFileError) as caught:
        load_world(path)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text


def test_a_fixture_out_of_reach_of_free_space_is_refused(tmp_path: Path) -> None:
    """On a real map furniture is blocked space: its position must be where an arm reaches from free space."""
    doc = yaml.safe_load(FLAT.read_text())
    doc["map"] = str(FLAT.parent / doc["map"])
    doc["fixtures"] = [{**f, "position": [2.0, 6.0]} if f["name"] == "bed" else f for f in doc["fixtures"]]
    with pytest.raises(WorldFileError, match=r"fixture 'bed' at \[2.0, 6.0\] is 1.13 m from free space, beyond"):
        load_world(_write(tmp_path, doc))


def test_a_bad_map_yaml_or_drawing_name_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.map.yaml").write_text("image: flat.pgm\nresolution: 0.05\norigin: 5\n")
    with pytest.raises(WorldFileError, match=r"bad.map.yaml: origin must be \[x, y, yaw\]"):
        load_world(_write(tmp_path, {**SMALL, "map": "bad.map.yaml"}))
    with pytest.raises(ValueError, match="the drawing is a PNG"):
        draw_world(load_world(FLAT), tmp_path / "flat.jpg")


def test_not_yaml_and_no_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.world.yaml"
    bad.write_text("rooms: [\n")
    with pytest.raises(WorldFileError, match=r"bad.world.yaml: not valid YAML: .* at line \d+ column \d+"):
        load_world(bad)
    with pytest.raises(WorldFileError, match="cannot read it"):
        load_world(tmp_path / "none.yaml")


def test_goal_grammar() -> None:
    assert parse_goal(" IN( apple , fridge ) : 2") == (Relation.IN, "apple", "fridge", 2)
    assert parse_goal("near(bread, bed): 1") == (Relation.NEAR, "bread", "bed", 1)
    with pytest.raises(ValueError, match="at least 1"):
        parse_goal("on(apple, table): 0")


def test_world_check_and_draw_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert coteam_main(["world", "check", str(FLAT)]) == 0
    shown = capsys.readouterr().out
    assert (
        "usable" in shown and "in(apple, fridge): 2" in shown and "robot1 at [1.5, 1.2], rests in the kitchen" in shown
    )
    out = tmp_path / "flat.png"
    assert coteam_main(["world", "draw", str(FLAT), "--out", str(out)]) == 0
    image = cv2.imread(str(out))
    assert image is not None and image.shape[1] > 600 and image.shape[0] > 500
    bad = _write(tmp_path, {**SMALL, "task": {"name": "x", "goal": ["grab(book)"]}})
    assert coteam_main(["world", "check", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("coteam world: error: ") and "grab(book)" in err[0]


def test_a_world_files_safety_section_is_the_homes_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The policy may live in the world file: the world holds it, ``load_safety_policy`` reads it from there (what the
    robots' nodes do with ``safety_path``), and ``coteam world check`` shows it."""
    section = {"no_go": ["study"], "never_touch": ["pen"], "max_speed_mps": 0.3}
    path = _write(tmp_path, {**SMALL, "safety": section})
    world = load_world(path)
    assert (
        world.safety
        == load_safety_policy(path)
        == SafetyPolicy(no_go=("study",), never_touch=("pen",), max_speed_mps=0.3)
    )
    assert load_world(_write(tmp_path, SMALL, "plain.world.yaml")).safety is None
    with pytest.raises(SafetyPolicyError, match=r"plain\.world\.yaml: a safety policy is a file of"):
        load_safety_policy(tmp_path / "plain.world.yaml")  # a world file without the section holds no policy
    assert coteam_main(["world", "check", str(path)]) == 0
    assert "no-go rooms: study; never touched: pen; top speed 0.3 m/s" in capsys.readouterr().out


def test_the_drawing_puts_the_map_under_the_world(tmp_path: Path) -> None:
    """The occupancy map is drawn in place: a piece of furniture is dark where the file puts it."""
    world = load_world(FLAT)
    image = cv2.imread(str(draw_world(world, tmp_path / "f.png")), cv2.IMREAD_GRAYSCALE)
    assert image is not None
    fp = world.scene.floorplan
    (x0, _), (_, y1) = fp.corner_of(0, 0), fp.corner_of(fp.width, fp.height)
    header = 28 * 3

    def pixel(x: float, y: float) -> int:
        return int(image[header + 30 + round((y1 - y) * 60), 30 + round((x - x0) * 60)])

    assert pixel(1.5, 0.3) < 80  # the kitchen cabinet, occupied on the map
    assert pixel(1.2, 2.0) > 200  # kitchen floor
    assert np.mean(image) > 100
