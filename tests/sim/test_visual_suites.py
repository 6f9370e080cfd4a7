"""The visual suites: the test sets seen through the robots' cameras. An item not held by a robot reaches an agent's
observation only when the agent's camera detector finds it (or it is in or on the fixture at hand); everything else
passes unchanged; `coteam run --suite cwah-test-visual` runs a whole episode that way."""

from __future__ import annotations

import json
import math

import pytest

from coteam.domain.world import ObjectKind, Placement, Relation
from coteam_sim.camera import REACH_M, VisualObservations, stand_facing
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.suites import get_suite


def _reset(suite: str):
    spec = get_suite(suite).episodes()[0]
    env = CoteamParallelEnv(spec.benchmark, 2)
    obs, _ = env.reset(seed=0, options={"scene": spec.build()})
    return env, obs


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_items_are_kept_only_where_the_camera_finds_them(suite: str):
    env, obs = _reset(suite)
    world = env.sim.world
    visual = VisualObservations(world, "oracle")
    seen_all = visual(obs)
    for agent, o in obs.items():
        kept = {v.id for v in seen_all[agent].visible}
        assert kept <= {v.id for v in o.visible}, "vision never adds what the simulator does not show"
        assert {v.id for v in o.visible if v.kind != ObjectKind.ITEM} <= kept, "fixtures and rooms pass"
        found = visual.detected(agent)
        for v in o.visible:
            if v.kind == ObjectKind.ITEM and not v.held_by:
                at_hand = (
                    v.holder >= 0 and math.dist(world.position_of(v.holder), world.agents[agent].position) <= REACH_M
                )
                assert (v.id in kept) == (v.id in found or at_hand)


@pytest.mark.parametrize("suite", ["cwah-test", "tdwmat-test"])
def test_rendering_only_the_views_that_can_show_an_item_finds_the_same(suite: str):
    """The visual suites render a view only when one of the items in question lies in it: the same items are found as
    when every view is rendered, from robots standing at each fixture."""
    env, _ = _reset(suite)
    world = env.sim.world
    visual = VisualObservations(world, "aruco")
    items = {i.id for i in world.scene.items}
    fixtures = [f.id for f in (*world.scene.containers, *world.scene.surfaces)][:6]
    for fixture in fixtures:
        for agent in world.agents:
            if stand_facing(world, agent, fixture, 2.0):
                every_view = visual.detected(agent)
                assert visual.detected(agent, among=items) == every_view
                assert visual.detected(agent, among=set()) == set()


def test_held_items_pass_and_a_bad_detector_is_refused():
    env, _ = _reset("cwah-test")
    world = env.sim.world
    item = world.scene.items[0].id
    world.placements[item] = Placement.held("alice", 0)
    o = env.sim.observe("alice")
    assert item in {v.id for v in VisualObservations(world, "aruco").observe("alice", o).visible}
    with pytest.raises(ValueError, match="perception must be one of aruco, color, oracle"):
        VisualObservations(world, "telepathy")


def test_the_visual_suites_are_the_test_sets_with_cameras():
    for base, visual in (("cwah-test", "cwah-test-visual"), ("tdwmat-test", "tdwmat-test-visual")):
        a, b = get_suite(base).episodes(), get_suite(visual).episodes()
        assert len(a) == len(b) and all(s.perception == "aruco" and s.suite == visual for s in b)
        assert a[0].build().placements == b[0].build().placements


def test_coteam_run_plays_a_visual_episode(tmp_path):
    from coteam.cli import main

    out = tmp_path / "run"
    assert (
        main(["run", "--suite", "cwah-test-visual", "--team", "pce", "--episodes", "0", "--out", str(out), "--quiet"])
        == 0
    )
    episode = json.loads((out / "results.json").read_text())["episodes"][0]
    assert episode["episode"] == "cwah-test-visual/0" and episode["success"]


def test_the_planner_reads_the_fused_semantic_map():
    """An item the head camera found reaches the observation as the robot's semantic map has it: on the floor, where
    the detector put it (not where the world has it); with its map entry confirmed by the frame."""
    env, _ = _reset("tdwmat-test")
    world = env.sim.world
    visual = VisualObservations(world, "aruco")
    fp = world.scene.floorplan
    checked = 0
    for item, placement in sorted(world.placements.items()):
        if placement.relation != Relation.FLOOR:
            continue
        x0, y0 = world.position_of(item)
        for angle in range(0, 360, 30):  # stand 2 m from the item, in its room, facing it
            x, y = x0 + 2.0 * math.cos(math.radians(angle)), y0 + 2.0 * math.sin(math.radians(angle))
            room = fp.room_at((x, y))
            if fp.is_free(*fp.cell_of((x, y))) and room is not None and room == fp.room_at((x0, y0)):
                world.agents["alice"].position, world.agents["alice"].heading = (x, y), (angle + 180) % 360
                break
        else:
            continue
        seen = {v.id: v for v in visual({"alice": env.sim.observe("alice")})["alice"].visible}
        if item not in seen:
            continue  # something stands in the way
        mapped = visual.perception["alice"].fusion.get(item)
        assert mapped is not None and mapped.last_seen_step == visual.perception["alice"].frames - 1
        assert seen[item].position == mapped.position != (x0, y0)
        assert seen[item].location == Relation.FLOOR and math.dist(mapped.position, (x0, y0)) < 0.15
        checked += 1
    assert checked >= 3


def test_a_class_only_detector_shows_the_planner_items_of_the_task_where_they_are():
    """With the colour detector (classes, not instances) an item seen from afar reaches the observation as one of the
    task's items of its class, on the fixture where an item of that class stands -- from its second sighting on (the
    semantic map takes a new anonymous object in when it is seen again, as a false detection is not)."""
    env, _ = _reset("cwah-test")
    world = env.sim.world
    visual = VisualObservations(world, "color")
    surfaces = [s.id for s in world.scene.surfaces]
    shown = 0
    for fixture in surfaces:
        if not stand_facing(world, "alice", fixture, 2.5):
            continue
        visual({"alice": env.sim.observe("alice")})  # the first look: what is new there is tentative
        for v in visual({"alice": env.sim.observe("alice")})["alice"].visible:
            if v.kind != ObjectKind.ITEM or v.held_by:
                continue
            there = {world.scene.item(i).name for i, p in world.placements.items() if p.target == v.holder}
            assert v.name in there and world.scene.item(v.id).name == v.name
            shown += 1
    assert shown >= 3 and visual.perception["alice"].bound


def test_coteam_run_sees_through_a_class_only_detector(tmp_path):
    from coteam.cli import main

    out = tmp_path / "run"
    argv = [
        "run",
        "--suite",
        "cwah-test",
        "--team",
        "pce",
        "--episodes",
        "0",
        "--perception",
        "color",
        "--out",
        str(out),
    ]
    assert main([*argv, "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["meta"]["perception"] == "color" and results["episodes"][0]["success"]


def test_an_item_the_camera_misses_is_remembered_until_its_place_is_seen_empty():
    """Through a camera, an item not detected may still be there: the memory keeps it when the detector misses it,
    and forgets it once a frame sees past its place (the depth there lies beyond it): a teammate put it away."""
    from coteam.agent.memory import AgentMemory

    env, _ = _reset("cwah-test")
    sim, world = env.sim, env.sim.world
    visual = VisualObservations(world, "aruco")
    memory = AgentMemory("alice", sim.benchmark, sim.scene.floorplan, sim.scene.task)
    memory.objects.update({v.id: v for v in sim.landmarks()})

    def look() -> None:
        memory.update(visual({"alice": sim.observe("alice")})["alice"])

    for surface in world.scene.surfaces:
        on_it = [i for i, p in sorted(world.placements.items()) if p.target == surface.id]
        if not on_it or not stand_facing(world, "alice", surface.id, 2.5):
            continue
        look()
        seen = [i for i in on_it if i in memory.objects]
        if seen:
            break
    else:
        pytest.fail("no item seen on a surface")
    item = seen[0]
    detector = visual.detector
    visual.detector = type("Blind", (), {"detect": staticmethod(lambda frame: [])})()  # misses everything
    look()
    assert item in memory.objects, "a missed detection is no evidence: the item is still where it was seen"
    visual.detector = detector
    elsewhere = next(
        c for c in world.scene.containers if c.room != world.scene.fixture(world.placements[item].target).room
    )
    world.placements[item] = Placement(Relation.IN, elsewhere.id)  # a teammate put it away in another room
    obs = visual({"alice": sim.observe("alice")})["alice"]
    assert item in obs.seen_empty and obs.complete_fixtures is not None
    memory.update(obs)
    assert item not in memory.objects, "its place seen empty: gone"
