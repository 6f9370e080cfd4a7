"""The AI2-THOR bridge (``coteam_sim.bridges.thor``) against a fake controller that answers in AI2-THOR's own
metadata format (``coteam_sim.bridges.fake_thor``, built on ``ai2thor.server``'s event classes): the scene read from
the session, a team finishing a MAP-THOR task through it, AI2-THOR's failures as the simulator's reasons, and a
session that cannot start or stops answering said in one line."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ai2thor.server")

from coteam.domain.world import Relation
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.bridges import BridgedSimulator, BridgeError
from coteam_sim.bridges.fake_thor import FakeThorController
from coteam_sim.bridges.thor import MAP_THOR_TASKS, ThorBridge, ThorEngine, failure_reason
from coteam_sim.primitives import Primitive, PrimitiveKind

TASK = MAP_THOR_TASKS[0]  # put bread, lettuce and tomato in the fridge, FloorPlan1
AGENTS = ("alice", "bob")


def _engine(**faults) -> ThorEngine:
    return ThorEngine(TASK, AGENTS, functools.partial(FakeThorController, faults=faults))


def _ids(engine: ThorEngine, name: str) -> int:
    scene = engine.scene
    return next(o.id for o in (*scene.containers, *scene.surfaces, *scene.items) if o.name == name)


def test_the_scene_is_read_from_the_sessions_metadata() -> None:
    engine = _engine()
    scene = engine.scene
    fake = engine.controller
    assert [r.name for r in scene.floorplan.rooms] == ["kitchen"]
    assert sorted(c.name for c in scene.containers) == ["cabinet", "fridge", "microwave"]
    assert sorted(s.name for s in scene.surfaces) == ["countertop", "diningtable", "sinkbasin"]
    assert sorted(i.name for i in scene.items) == ["apple", "bread", "lettuce", "tomato"]
    free = sum(row.count(".") for row in scene.floorplan.rows)
    assert free == len(fake.reachable), "one planning cell per reachable position"
    fridge = _ids(engine, "fridge")
    assert [(p.item, p.target, p.relation) for p in scene.task.predicates] == [
        ("bread", fridge, Relation.IN),
        ("lettuce", fridge, Relation.IN),
        ("tomato", fridge, Relation.IN),
    ]
    bread = _ids(engine, "bread")
    assert scene.placements[bread] == scene.placements[bread].__class__(Relation.ON, _ids(engine, "countertop"))
    assert {a.name: a.position for a in scene.agent_starts} == {"alice": (1.0, 1.0), "bob": (3.0, 1.0)}
    assert fake.calls[0]["action"] == "GetReachablePositions"


def test_a_team_puts_bread_lettuce_and_tomato_in_the_fridge_through_the_bridge(tmp_path: Path) -> None:
    """Symbolic PCE on the fake AI2-THOR: every walk is a TeleportFull to a reachable position, every open, grab and
    put an AI2-THOR action, and the goal is judged on AI2-THOR's own account of where things are."""
    made: list[FakeThorController] = []

    def make(**kwargs):
        made.append(FakeThorController(**kwargs))
        return made[-1]

    result = run_episode(ThorBridge(TASK, make), "pce", trace_path=tmp_path / "t.json")
    assert result.success and result.transport_rate == 1.0, result
    (fake,) = made
    fridge = next(o for o in fake.objects.values() if o.object_type == "Fridge")
    inside = {o.object_type for o in fake.objects.values() if o.parent == fridge.object_id}
    assert {"Bread", "Lettuce", "Tomato"} <= inside, "the fake's own state agrees"
    done = {c["action"] for c in fake.calls}
    assert {"TeleportFull", "OpenObject", "PickupObject", "PutObject"} <= done
    assert all(c["agentId"] in (0, 1) for c in fake.calls)
    trace = load_trace(tmp_path / "t.json")
    assert trace["scene"]["name"].startswith("FloorPlan1") and trace["decisions"]


def test_ai2thors_failures_are_the_simulators_reasons() -> None:
    engine = _engine()
    sim = BridgedSimulator(engine.scene, AGENTS, engine)
    fridge, tomato, bread = _ids(engine, "fridge"), _ids(engine, "tomato"), _ids(engine, "bread")
    # the tomato (sink, 1.5 m away and behind alice) is not interactable from where she stands
    assert sim.step({"alice": Primitive(PrimitiveKind.GRAB, (tomato,))})["alice"] == "too far"
    assert sim.step({"alice": Primitive(PrimitiveKind.PUT_IN, (bread, fridge))})["alice"] == "not holding"
    for _ in range(30):  # walk to the countertop, then take the bread
        sim.step({"alice": Primitive(PrimitiveKind.WALK, (_ids(engine, "countertop"),))})
    assert sim.step({"alice": Primitive(PrimitiveKind.GRAB, (bread,))})["alice"] == ""
    assert sim.world.agents["alice"].hands[0] == bread and sim.observe("alice").holding[0] == bread
    for _ in range(30):
        sim.step({"alice": Primitive(PrimitiveKind.WALK, (fridge,))})
    assert sim.step({"alice": Primitive(PrimitiveKind.PUT_IN, (bread, fridge))})["alice"] == "container closed"
    assert sim.step({"alice": Primitive(PrimitiveKind.OPEN, (fridge,))})["alice"] == ""
    assert sim.step({"alice": Primitive(PrimitiveKind.PUT_IN, (bread, fridge))})["alice"] == ""
    assert sim.world.placements[bread].relation == Relation.IN and sim.world.placements[bread].target == fridge
    assert sim.world.progress() == (1, 3)
    for message, reason in (
        ("Apple|+00.10|+01.00|-00.10 is not interactable and (perhaps it is occluded by something).", "too far"),
        ("objectId: X is not the objectId on any object in the scene!", "unknown object"),
        ("Can't place an object if Agent isn't holding anything", "not holding"),
        ("Sofa|1|2 is not an Openable object", "cannot be opened"),
        ("No valid positions to place object found", "container full"),
        ("something new", "failed"),
    ):
        assert failure_reason(message) == reason


def test_an_object_out_of_view_is_not_seen_and_a_refused_action_fails() -> None:
    engine = _engine(refuse={"OpenObject": 1})
    sim = BridgedSimulator(engine.scene, AGENTS, engine)
    seen = {v.id for v in sim.observe("alice").visible}
    assert _ids(engine, "bread") not in seen, "4 m away: out of AI2-THOR's visibility distance"
    assert sim.observe("alice").complete_fixtures == (), "a camera's view: not seeing is not proof of absence"
    fridge = _ids(engine, "fridge")
    for _ in range(30):
        sim.step({"bob": Primitive(PrimitiveKind.WALK, (fridge,))})
    assert sim.step({"bob": Primitive(PrimitiveKind.OPEN, (fridge,))})["bob"] == "failed"
    assert sim.step({"bob": Primitive(PrimitiveKind.OPEN, (fridge,))})["bob"] == ""


def test_a_session_that_stops_answering_or_cannot_start_is_one_line() -> None:
    engine = _engine(timeout_at=20)  # after the start (9 steps: the map, two looks round)
    sim = BridgedSimulator(engine.scene, AGENTS, engine)
    with pytest.raises(BridgeError) as caught:
        for _ in range(10):
            sim.step({"alice": Primitive(PrimitiveKind.WALK, (_ids(engine, "fridge"),))})
    assert "did not answer TeleportFull in FloorPlan1" in str(caught.value) and "\n" not in str(caught.value)

    def no_display(**_kwargs):
        raise Exception(
            "The following builds were found, but had missing dependencies. Only one valid platform is required.\n"
            "Platform Linux64 failed validation with the following errors: No valid X display found"
        )

    with pytest.raises(BridgeError) as caught:
        ThorEngine(TASK, AGENTS, no_display)
    text = str(caught.value)
    assert "\n" not in text and "AI2-THOR could not start FloorPlan1" in text and "X display" in text
    with pytest.raises(BridgeError, match="Scene 'FloorPlan999' not contained in build"):
        ThorEngine(
            MAP_THOR_TASKS[0].__class__("x", "FloorPlan999", ("in(bread, fridge): 1",)), AGENTS, FakeThorController
        )


def test_coteam_run_plays_the_mapthor_suite_on_the_fake_and_says_in_one_line_when_unity_is_missing(
    tmp_path: Path,
) -> None:
    argv = [sys.executable, "-m", "coteam.cli", "run", "--suite", "mapthor", "--team", "pce", "--quiet"]
    done = subprocess.run(
        [*argv, "--episodes", "0-1", "--engine", "fake", "--out", str(tmp_path / "r")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert [e["success"] for e in results["episodes"]] == [True, True]
    assert results["meta"]["engine"] == "fake"
    real = subprocess.run([*argv, "--episodes", "0", "--out", str(tmp_path / "u")], capture_output=True, text=True)
    assert real.returncode == 2 and len(real.stderr.strip().splitlines()) == 1, real.stderr
    assert "AI2-THOR" in real.stderr


@pytest.mark.team
def test_over_ros_the_sim_bridge_hosts_the_bridge_and_the_robots_run_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`coteam launch` of a lockstep team on `mapthor` (engine fake): the launcher reads the scene from a session
    once for the robots, the sim_bridge node plays the episode on its own session, and the run equals the in-process
    one, step for step."""
    pytest.importorskip("rclpy")
    from coteam_ros.launcher import launch
    from ros_isolation import isolate_ros
    from ros_team_run import RUN_TIMEOUT_S, comparable, write_config

    isolate_ros(tmp_path, monkeypatch)
    config = write_config(tmp_path / "team.yaml", "suite: mapthor, episode: 0, seed: 0, mode: lockstep, engine: fake")
    expected = run_episode(ThorBridge(TASK, FakeThorController), "pce", trace_path=tmp_path / "in_process.json")
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    got = json.loads(results.read_text())["episodes"][0]
    assert got["success"] and (got["steps"], got["decisions"]) == (expected.steps, expected.decisions)
    assert comparable(load_trace(tmp_path / "ros" / "trace.json")) == comparable(
        load_trace(tmp_path / "in_process.json")
    )


def test_a_one_room_home_seen_through_a_camera_is_offered_for_search_again() -> None:
    """AI2-THOR's kitchens are one room: once it is explored, a robot that sees through a camera (what is out of
    view may be there) may still search it; with the embedded simulator's whole-room view it is not offered."""
    from coteam.agent.options import available_actions
    from coteam.domain.actions import Verb
    from coteam_sim.engine import Simulator
    from scenario import method_brain

    engine = _engine()
    for sim in (BridgedSimulator(engine.scene, AGENTS, engine), Simulator(engine.scene, AGENTS)):
        brain = method_brain(sim)
        searches = [o.action for o in available_actions(brain.memory, sim.nav) if o.action.verb == Verb.EXPLORE]
        kitchen = engine.scene.floorplan.rooms[0].id
        assert [a.target.id for a in searches] == ([kitchen] if isinstance(sim, BridgedSimulator) else [])
