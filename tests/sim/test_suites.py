"""The fixed test sets and the seeded generators: sizes, task structure, apartments, determinism."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import pytest

from coteam.domain.navigation import NavGrid
from coteam.domain.scene_io import scene_to_dict
from coteam.domain.world import Benchmark, Relation, Scene, WorldState
from coteam_sim import catalog
from coteam_sim.suites import SUITES, fresh_episode, get_suite

CWAH_ROOMS = {"livingroom", "kitchen", "bedroom", "bathroom"}


@pytest.fixture(scope="module")
def cwah_scenes() -> list[Scene]:
    return [spec.build() for spec in get_suite("cwah-test").episodes()]


@pytest.fixture(scope="module")
def tdw_scenes() -> list[Scene]:
    return [spec.build() for spec in get_suite("tdwmat-test").episodes()]


# --- cwah-test -------------------------------------------------------------------------------------------------
def test_cwah_test_has_ten_episodes_two_per_task(cwah_scenes: list[Scene]) -> None:
    specs = get_suite("cwah-test").episodes()
    assert len(specs) == 10
    assert [s.index for s in specs] == list(range(10))
    assert all(s.benchmark == Benchmark.CWAH for s in specs)
    per_task = Counter(s.task.name for s in cwah_scenes)
    assert per_task == {t.name: 2 for t in catalog.CWAH_TASKS}
    assert len(per_task) == 5
    # In the papers' task order: episodes 2k and 2k+1 share task k.
    assert [s.task.name for s in cwah_scenes] == [t.name for t in catalog.CWAH_TASKS for _ in range(2)]
    assert len({s.name for s in cwah_scenes}) == 10


def test_cwah_test_goals(cwah_scenes: list[Scene]) -> None:
    for scene in cwah_scenes:
        task = scene.task
        assert task.benchmark == Benchmark.CWAH
        assert task.horizon == 250
        assert 3 <= task.total_count <= 5, (scene.name, task.total_count)
        assert sum(p.count for p in task.predicates) == task.total_count
        assert len({p.item for p in task.predicates}) == len(task.predicates)
        tdef = next(t for t in catalog.CWAH_TASKS if t.name == task.name)
        for p in task.predicates:
            assert p.relation == tdef.relation
            assert p.item in tdef.items
            assert scene.object_name(p.target) == tdef.target
            assert p.count >= 1


def test_cwah_test_apartments(cwah_scenes: list[Scene]) -> None:
    for scene in cwah_scenes:
        rooms = scene.floorplan.rooms
        assert len(rooms) == 4
        assert {r.name for r in rooms} == CWAH_ROOMS


def test_cwah_goal_items_are_obtainable(cwah_scenes: list[Scene]) -> None:
    for scene in cwah_scenes:
        w = WorldState(scene, ("alice", "bob"))
        assert w.progress() == (0, scene.task.total_count), f"{scene.name}: goal partly done at the start"
        names = Counter(i.name for i in scene.items)
        for p in scene.task.predicates:
            assert names[p.item] >= p.count, f"{scene.name}: only {names[p.item]} {p.item} for {p.count} needed"
            for item in (i for i in scene.items if i.name == p.item):
                pl = scene.placements[item.id]
                assert pl.relation in (Relation.ON, Relation.IN)
                assert pl.target != p.target, f"{scene.name}: {item.id} already on its goal"
                assert scene.fixture(pl.target) is not None


def test_cwah_target_fixture_is_unique_enough(cwah_scenes: list[Scene]) -> None:
    for scene in cwah_scenes:
        for p in scene.task.predicates:
            fixture = scene.fixture(p.target)
            assert (p.relation == Relation.IN) == (fixture in scene.containers)


# --- tdwmat-test -----------------------------------------------------------------------------------------------
def test_tdwmat_test_has_24_episodes_in_the_full_design(tdw_scenes: list[Scene]) -> None:
    specs = get_suite("tdwmat-test").episodes()
    assert len(specs) == 24
    combos = [(s.params["floorplan"], s.params["layout"], s.params["category"], s.params["containers"]) for s in specs]
    assert len(set(combos)) == 24
    fps = sorted({c[0] for c in combos})
    layouts = sorted({c[1] for c in combos})
    assert len(fps) == 2 and len(layouts) == 3
    assert set(combos) == set(itertools.product(fps, layouts, ("food", "stuff"), ("low", "high")))
    # Scenes: two distinct floor plans, shared by the episodes that name them.
    by_fp: dict[str, set] = {}
    for spec, scene in zip(specs, tdw_scenes, strict=True):
        by_fp.setdefault(spec.params["floorplan"], set()).add(scene.floorplan)
    assert all(len(v) == 1 for v in by_fp.values())
    assert len({next(iter(v)) for v in by_fp.values()}) == 2
    # Three layouts per floor plan and setting really differ.
    for fp, cat, cont in itertools.product(fps, ("food", "stuff"), ("low", "high")):
        group = [
            sc
            for s, sc in zip(specs, tdw_scenes, strict=True)
            if (s.params["floorplan"], s.params["category"], s.params["containers"]) == (fp, cat, cont)
        ]
        assert len(group) == 3
        assert len({json.dumps(scene_to_dict(sc)["placements"], sort_keys=True) for sc in group}) == 3


def test_tdwmat_test_episode_contents(tdw_scenes: list[Scene]) -> None:
    specs = get_suite("tdwmat-test").episodes()
    for spec, scene in zip(specs, tdw_scenes, strict=True):
        task = scene.task
        assert task.benchmark == Benchmark.TDWMAT
        assert task.horizon == 3000
        assert 6 <= len(scene.floorplan.rooms) <= 8
        assert {"bedroom", "kitchen", "livingroom"} <= {r.name for r in scene.floorplan.rooms}
        assert task.total_count == 10, (scene.name, task.total_count)
        assert task.category == spec.params["category"]
        objects = catalog.TDW_FOOD_OBJECTS if task.category == "food" else catalog.TDW_STUFF_OBJECTS
        carriers = [i for i in scene.items if i.is_carrier]
        expected = {"low": 2, "high": 5}[spec.params["containers"]]
        assert len(carriers) == expected, (scene.name, len(carriers))
        assert all(c.capacity == 3 for c in carriers)
        allowed_carriers = catalog.TDW_FOOD_CONTAINERS if task.category == "food" else catalog.TDW_STUFF_CONTAINERS
        assert all(c.name in allowed_carriers for c in carriers)
        # Exactly 10 target instances exist, all of the task's category.
        targets = [i for i in scene.items if i.name in task.needed_names()]
        assert len(targets) == 10
        assert all(i.name in objects and i.category == task.category for i in targets)
        # The goal is the bed, which stands in a bedroom.
        beds = [s for s in scene.surfaces if s.name == "bed"]
        assert len(beds) == 1
        bed = beds[0]
        assert scene.floorplan.room(bed.room).name == "bedroom"
        assert scene.floorplan.room_at(bed.position).id == bed.room
        assert all(p.relation == Relation.NEAR and p.target == bed.id for p in task.predicates)


def test_tdwmat_targets_do_not_start_transported(tdw_scenes: list[Scene]) -> None:
    """No target may count as transported at frame 0 (it would be free transport rate)."""
    for scene in tdw_scenes:
        w = WorldState(scene, ("alice", "bob"))
        assert w.progress() == (0, 10), f"{scene.name}: goal partly done at the start ({w.progress()})"


def test_fresh_tdwmat_targets_do_not_start_transported() -> None:
    for seed in range(30):
        scene = fresh_episode(Benchmark.TDWMAT, seed, seed % 24).build()
        w = WorldState(scene, ("alice",))
        assert w.progress()[0] == 0, f"seed {seed}: {scene.name} starts with {w.progress()} transported"


# --- apartments ------------------------------------------------------------------------------------------------
def _check_connected(scene: Scene) -> None:
    fp = scene.floorplan
    nav = NavGrid(fp)
    for room in fp.rooms:
        centre = fp.room_center(room.id)
        assert nav.is_free(fp.cell_of(centre)), f"{scene.name}: centre of {room.name} is in a wall"
        assert fp.room_at(centre) == room
    for a, b in itertools.combinations(fp.rooms, 2):
        d = nav.path_length(fp.room_center(a.id), fp.room_center(b.id))
        assert math.isfinite(d), f"{scene.name}: {a.name} and {b.name} are not connected"
        nav.astar(nav.nearest_free(fp.room_center(a.id)), nav.nearest_free(fp.room_center(b.id)))
        nav.lane_path(fp.room_center(a.id), fp.room_center(b.id))


def _check_objects_stand_in_rooms(scene: Scene) -> None:
    fp = scene.floorplan
    nav = NavGrid(fp)
    for f in (*scene.containers, *scene.surfaces):
        assert nav.is_free(fp.cell_of(f.position)), f"{scene.name}: fixture {f.id} in a wall"
        assert fp.room_at(f.position).id == f.room, f"{scene.name}: fixture {f.id} outside its room"
    for s in scene.agent_starts:
        assert nav.is_free(fp.cell_of(s.position)), f"{scene.name}: {s.name} starts in a wall"
    w = WorldState(scene, tuple(s.name for s in scene.agent_starts))
    for item in scene.items:
        w.room_of(item.id)
        p = scene.placements[item.id]
        if p.relation == Relation.FLOOR:
            assert nav.is_free(fp.cell_of(p.position))
            assert fp.room_at(p.position).id == p.target


def test_every_suite_scene_is_connected(cwah_scenes: list[Scene], tdw_scenes: list[Scene]) -> None:
    for scene in cwah_scenes + tdw_scenes[::4]:  # every TDW floor plan occurs among every 4th episode
        _check_connected(scene)
        _check_objects_stand_in_rooms(scene)
    for scene in tdw_scenes:
        _check_objects_stand_in_rooms(scene)


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_fresh_scenes_are_connected(benchmark: Benchmark) -> None:
    for seed in range(6):
        scene = fresh_episode(benchmark, seed, seed * 5).build()
        _check_connected(scene)
        _check_objects_stand_in_rooms(scene)


# --- generated suites ------------------------------------------------------------------------------------------
def _content(scene: Scene) -> dict:
    d = scene_to_dict(scene)
    d.pop("name")
    return d


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_fresh_episode_is_deterministic_per_seed_and_index(benchmark: Benchmark) -> None:
    for seed, index in [(0, 0), (1, 3), (42, 7), (10**6, 13)]:
        a = fresh_episode(benchmark, seed, index)
        b = fresh_episode(benchmark, seed, index)
        assert a == b
        assert scene_to_dict(a.build()) == scene_to_dict(b.build())


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_fresh_episodes_differ_across_seeds(benchmark: Benchmark) -> None:
    for index in (0, 5):
        contents = [_content(fresh_episode(benchmark, seed, index).build()) for seed in (1, 2, 3)]
        for x, y in itertools.combinations(contents, 2):
            assert x != y
            assert x["floorplan"] != y["floorplan"] or x["placements"] != y["placements"]


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_fresh_episodes_differ_across_indices(benchmark: Benchmark) -> None:
    contents = [_content(fresh_episode(benchmark, 5, i).build()) for i in range(4)]
    for x, y in itertools.combinations(contents, 2):
        assert x != y


def test_generated_suites_follow_the_test_set_distribution() -> None:
    cwah = [spec.build() for spec in SUITES["cwah"].episodes(seed=9)]
    assert len(cwah) == 10
    assert Counter(s.task.name for s in cwah) == {t.name: 2 for t in catalog.CWAH_TASKS}
    for s in cwah:
        assert 3 <= s.task.total_count <= 5 and s.task.horizon == 250
        assert {r.name for r in s.floorplan.rooms} == CWAH_ROOMS
    tdw_specs = SUITES["tdwmat"].episodes(seed=9, count=4)
    assert len(tdw_specs) == 4
    for spec in tdw_specs:
        s = spec.build()
        assert s.task.total_count == 10 and s.task.horizon == 3000
        assert sum(i.is_carrier for i in s.items) == {"low": 2, "high": 5}[spec.params["containers"]]
    assert [s.name for s in SUITES["cwah"].episodes(seed=9)] == [s.name for s in SUITES["cwah"].episodes(seed=9)]
    assert SUITES["tdwmat"].episodes(seed=9, count=4) == SUITES["tdwmat"].episodes(seed=9, count=4)


def test_get_suite_unknown_name() -> None:
    with pytest.raises(KeyError, match="unknown suite"):
        get_suite("cwah-train")


@pytest.mark.parametrize("count", [10, 20])
def test_the_noisy_suites_are_the_test_set_with_distractors(count: int) -> None:
    """cwah-test-noisy10 / -noisy20: each cwah-test episode with that many more items, none of them named by the
    goal, none on or in the goal's destination; the rest of the episode unchanged, and the same every time."""
    clean = [spec.build() for spec in get_suite("cwah-test").episodes()]
    noisy = [spec.build() for spec in get_suite(f"cwah-test-noisy{count}").episodes()]
    for before, after in zip(clean, noisy, strict=True):
        added = [i for i in after.items if i.id not in {j.id for j in before.items}]
        assert len(added) == count and after.items[: len(before.items)] == before.items
        assert not {i.name for i in added} & before.task.needed_names()
        targets = {p.target for p in before.task.predicates}
        assert not {after.placements[i.id].target for i in added} & targets
        assert (after.task, after.floorplan, after.agent_starts) == (before.task, before.floorplan, before.agent_starts)
        ids = [r.id for r in after.floorplan.rooms] + [f.id for f in (*after.containers, *after.surfaces)]
        assert len(set(ids + [i.id for i in after.items])) == len(ids) + len(after.items)  # no id twice
    assert noisy == [spec.build() for spec in get_suite(f"cwah-test-noisy{count}").episodes()]


def test_any_suite_takes_distractors(tmp_path) -> None:
    """`coteam run --distractors N` adds them to any suite's episodes (TDW-MAT: on the floor or a surface)."""
    from dataclasses import replace

    from coteam.cli import main

    spec = get_suite("tdwmat-test").episodes()[0]
    scene = replace(spec, distractors=6).build()
    assert len(scene.items) == len(spec.build().items) + 6
    assert main(["run", "--suite", "cwah-test", "--episodes", "0", "--team", "rhp", "--distractors", "5",
                 "--out", str(tmp_path / "run"), "--quiet"]) == 0  # fmt: skip
    meta = json.loads((tmp_path / "run" / "results.json").read_text())["meta"]
    assert meta["distractors"] == "5"
