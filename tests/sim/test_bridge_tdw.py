"""The TDW bridge (``coteam_sim.bridges.tdwmat``): TDW's real controller (``tdw.controller.Controller``) and its own
``Replicant`` add-on, talking over ZMQ to a stand-in build that answers in TDW's output-data format
(``coteam_sim.bridges.fake_tdw``): the house built in TDW, TDW-MAT's primitives played by the Replicants, TDW's
action statuses as the simulator's reasons, a team transporting through it, and a build that hangs or never
connects said in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tdw.controller")

from tdw.controller import Controller
from tdw.librarian import ModelLibrarian
from tdw.replicant.action_status import ActionStatus

from coteam.domain.world import Relation
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.bridges import BridgedSimulator, BridgeError, bridge_for
from coteam_sim.bridges.fake_tdw import FakeTdwBuild, FakeTdwController, free_port
from coteam_sim.bridges.settings import TdwSettings
from coteam_sim.bridges.tdwmat import (
    FLOOR_ID,
    MODELS,
    REPLICANT_IDS,
    WALL_IDS,
    TdwBridge,
    TdwEngine,
    controller_factory,
    failure_reason,
)
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite

AGENTS = ("alice", "bob")
SPEC = get_suite("tdwmat-tdw").episodes()[0]
SCENE = get_suite("tdwmat-test").episodes()[0].build()


def _engine(**faults) -> tuple[TdwEngine, FakeTdwController]:
    timeout_s = faults.pop("timeout_s", 10.0)
    make = FakeTdwController(**faults)
    return TdwEngine(SCENE, AGENTS, make, TdwSettings(timeout_s=timeout_s)), make


def _put(make: FakeTdwController, sim: BridgedSimulator, agent: str, xy: tuple[float, float], yaw: float) -> None:
    """Stand ``agent``'s Replicant at ``xy`` facing ``yaw`` in the fake build (a test's hand in its physics)."""
    engine = sim.engine
    replicant = make.build.replicants[engine.replicants[agent].replicant_id]
    replicant.position, replicant.yaw = np.array([xy[0], 0.0, xy[1]]), yaw
    engine._communicate([], "a test")  # the add-on reads the new pose
    engine.mirror(sim.world)


def _act(sim: BridgedSimulator, agent: str, kind: PrimitiveKind, *args: int) -> str:
    """``agent``'s primitive, once it is ready (a TDW-MAT action lasts several frames); its failure reason."""
    while not sim.is_ready(agent):
        sim.step({})
    return sim.step({agent: Primitive(kind, args)})[agent]


def test_the_house_is_built_in_tdw_and_every_robot_is_a_replicant() -> None:
    engine, make = _engine()
    build = make.build
    try:
        assert isinstance(engine.controller, Controller)
        walls = [oid for oid in build.bodies if oid >= WALL_IDS]
        assert walls and all(build.bodies[w].kinematic for w in walls)
        cells = sum(row.count("#") for row in SCENE.floorplan.rows) * SCENE.floorplan.cell_size**2
        area = sum(build.bodies[w].size[0] * build.bodies[w].size[2] for w in walls)
        assert area == pytest.approx(cells), "the wall cubes cover the floor plan's walls exactly"
        floor = build.bodies[FLOOR_ID]
        width, depth = (
            SCENE.floorplan.width * SCENE.floorplan.cell_size,
            SCENE.floorplan.height * SCENE.floorplan.cell_size,
        )
        assert floor.kinematic and tuple(floor.size) == pytest.approx((width, 0.1, depth))
        assert floor.position[1] + floor.size[1] / 2 == pytest.approx(0.0), "its top is the ground"
        for item in SCENE.items:
            assert item.id in build.bodies and not build.bodies[item.id].kinematic
        spots = [tuple(build.bodies[i.id].position) for i in SCENE.items]
        assert len(set(spots)) == len(spots), "no two items in one place (rigid bodies would push each other away)"
        bed = next(s for s in SCENE.surfaces if s.name == "bed")
        assert tuple(build.bodies[bed.id].position[[0, 2]]) == pytest.approx(bed.position)
        starts = {s.name: s for s in SCENE.agent_starts}
        for index, agent in enumerate(AGENTS):
            replicant = build.replicants[REPLICANT_IDS + index]
            assert tuple(replicant.position[[0, 2]]) == pytest.approx(starts[agent].position)
        assert {"add_replicant", "send_replicants", "send_transforms"} <= set(build.commands_seen)
    finally:
        engine.close()
    models = ModelLibrarian("models_core.json")
    assert all(models.get_record(name) is not None for name in MODELS.values()), "every model is in TDW's library"


def test_tdwmats_primitives_are_played_by_the_replicants() -> None:
    engine, make = _engine()
    sim = BridgedSimulator(SCENE, AGENTS, engine)
    try:
        alice = sim.world.agents["alice"]
        start, heading = alice.position, alice.heading
        assert _act(sim, "alice", PrimitiveKind.TURN_LEFT) == ""
        assert alice.heading == (heading + 15) % 360 and alice.position == start
        _put(make, sim, "alice", start, 90.0)  # facing +x (yaw 90)
        assert _act(sim, "alice", PrimitiveKind.MOVE_FORWARD) == ""
        assert alice.position == pytest.approx((start[0] + 0.5, start[1]))
        fails = [_act(sim, "alice", PrimitiveKind.MOVE_FORWARD) for _ in range(40)]
        assert "blocked" in fails, "a wall stops the Replicant"

        food = [i for i in SCENE.items if not i.is_carrier and i.category == SCENE.task.category][:2]
        carrier = next(i for i in SCENE.items if i.is_carrier)
        here = sim.world.position_of(food[0].id)
        _put(make, sim, "bob", (here[0] - 3.0, here[1]), 90.0)  # facing it, 3 m away
        assert _act(sim, "bob", PrimitiveKind.GRASP, food[0].id, 0) == "too far", "TDW's reach: 1.5 m at most"
        _put(make, sim, "alice", (here[0] - 0.5, here[1]), 90.0)
        assert _act(sim, "alice", PrimitiveKind.GRASP, food[0].id, 0) == ""
        assert alice.hands[0] == food[0].id and sim.world.held_by(food[0].id) == "alice"
        assert _act(sim, "bob", PrimitiveKind.GRASP, food[0].id, 0) == "object taken"
        assert _act(sim, "alice", PrimitiveKind.PUT_INTO_CARRIER, 0) == ("no container in the other hand")
        there = sim.world.position_of(carrier.id)
        _put(make, sim, "alice", (there[0] - 0.5, there[1]), 90.0)
        assert _act(sim, "alice", PrimitiveKind.GRASP, carrier.id, 1) == ""
        assert _act(sim, "alice", PrimitiveKind.PUT_INTO_CARRIER, 0) == ""
        assert sim.world.placements[food[0].id] == sim.world.placements[food[0].id].__class__(Relation.IN, carrier.id)
        assert make.build.bodies[food[0].id].parent == carrier.id, "in TDW it travels with the container"
        _put(make, sim, "alice", (there[0] - 1.5, there[1]), 270.0)
        assert _act(sim, "alice", PrimitiveKind.DROP, 1) == ""
        placed = sim.world.placements[carrier.id]
        assert placed.relation == Relation.FLOOR and placed.position == pytest.approx((there[0] - 1.6, there[1]))
        assert sim.world.placements[food[0].id].relation == Relation.IN, "still in the container"
        assert tuple(make.build.bodies[food[0].id].position[[0, 2]]) == pytest.approx(placed.position, abs=0.01)
        assert _act(sim, "alice", PrimitiveKind.DROP, 1) == "not holding"
    finally:
        engine.close()
    assert failure_reason(ActionStatus.cannot_reach) == "too far"
    assert failure_reason(ActionStatus.collision) == "blocked"
    assert failure_reason(ActionStatus.failure) == "failed"


def test_what_a_robot_sees_is_its_view_on_tdws_poses_and_a_reach_tdw_does_not_complete_fails() -> None:
    engine, make = _engine(refuse={"replicant_reach_for_object"})
    sim = BridgedSimulator(SCENE, AGENTS, engine)
    try:
        item = next(i for i in SCENE.items if not i.is_carrier)
        here = sim.world.position_of(item.id)
        _put(make, sim, "alice", (here[0] - 1.0, here[1]), 270.0)  # the item is 1 m behind her, within reach
        assert item.id not in {v.id for v in sim.observe("alice").visible}, "behind her: not in view"
        assert _act(sim, "alice", PrimitiveKind.GRASP, item.id, 0) == "not visible"
        _put(make, sim, "alice", (here[0] - 1.0, here[1]), 90.0)
        assert item.id in {v.id for v in sim.observe("alice").visible}
        assert sim.observe("alice").complete_fixtures == ()
        assert _act(sim, "alice", PrimitiveKind.GRASP, item.id, 0) == "too far", "the build's reach did not arrive"
    finally:
        engine.close()


def test_a_team_transports_through_tdw_as_in_the_embedded_simulator(tmp_path: Path) -> None:
    """RHP (symbolic) on tdwmat-test/0 through the bridge: every step, turn and grasp a Replicant action, and the
    result the embedded simulator gives for the same episode."""
    bridge = bridge_for(SPEC, "fake")
    assert isinstance(bridge, TdwBridge)
    through = run_episode(bridge, "rhp", trace_path=tmp_path / "t.json")
    embedded = run_episode(SCENE, "rhp")
    assert through.transport_rate > 0
    assert (through.steps, through.transport_rate) == (embedded.steps, embedded.transport_rate)
    seen = set(bridge.make_controller.build.commands_seen)
    assert {"play_replicant_animation", "rotate_object_by", "replicant_reach_for_object"} <= seen
    assert {"replicant_grasp_object", "replicant_drop_object", "parent_object_to_object"} <= seen
    assert load_trace(tmp_path / "t.json")["decisions"]


def test_a_build_that_hangs_or_never_connects_is_one_line() -> None:
    engine, _make = _engine(stall_after=30, timeout_s=1.0)
    sim = BridgedSimulator(SCENE, AGENTS, engine)
    with pytest.raises(BridgeError) as caught:
        for _ in range(30):
            _act(sim, "alice", PrimitiveKind.MOVE_FORWARD)
    assert str(caught.value).startswith("TDW did not answer within 1 s") and "\n" not in str(caught.value)
    engine.close()
    # a real controller waiting for a build that never comes: one line, and the process still exits
    script = (
        "from coteam_sim.bridges.settings import TdwSettings\n"
        "from coteam_sim.bridges.tdwmat import TdwEngine, controller_factory\n"
        "from coteam_sim.suites import get_suite\n"
        f"settings = TdwSettings(port={free_port()}, launch_build=False, connect_timeout_s=1.0)\n"
        "scene = get_suite('tdwmat-test').episodes()[0].build()\n"
        "TdwEngine(scene, ('alice', 'bob'), controller_factory(settings), settings)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "no TDW build connected on port" in last and "within 1 s" in last, done.stderr


def test_a_build_started_by_hand_serves_every_episode_of_the_run() -> None:
    """A build connects to one controller for good: with ``launch_build`` off, the run keeps its session from one
    episode to the next (a new scene each time) and never asks it to quit."""
    settings = TdwSettings(port=free_port(), launch_build=False, timeout_s=10.0)
    build = FakeTdwBuild(settings.port)
    build.start()
    bridge = TdwBridge(SCENE, controller_factory(settings), settings)
    for _ in range(2):
        scene, engine = bridge.start(AGENTS, 0)
        sim = BridgedSimulator(scene, AGENTS, engine)
        assert _act(sim, "alice", PrimitiveKind.TURN_LEFT) == ""
        engine.close()
    assert build.scenes_loaded >= 2 and "terminate" not in build.commands_seen
    assert len(build.replicants) == 2, "the last episode's robots only"
    assert bridge.known_scene is SCENE, "the launcher needs no session to know the house"


def test_coteam_run_plays_the_tdwmat_tdw_suite_on_the_fake(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "coteam.cli", "run", "--suite", "tdwmat-tdw", "--team", "rhp", "--quiet"]
    done = subprocess.run(
        [*argv, "--episodes", "1", "--engine", "fake", "--out", str(tmp_path / "r")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["meta"]["engine"] == "fake" and results["episodes"][0]["transport_rate"] > 0


@pytest.mark.team
def test_over_ros_the_sim_bridge_hosts_tdw_and_the_robots_run_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`coteam launch` of a lockstep team on `tdwmat-tdw` (engine fake): the sim_bridge node plays the episode on
    its own TDW session and the run equals the in-process one, step for step."""
    pytest.importorskip("rclpy")
    from coteam_ros.launcher import launch
    from ros_isolation import isolate_ros
    from ros_team_run import RUN_TIMEOUT_S, comparable, write_config

    isolate_ros(tmp_path, monkeypatch)
    config = write_config(
        tmp_path / "team.yaml", "suite: tdwmat-tdw, episode: 0, seed: 0, mode: lockstep, engine: fake", method="rhp"
    )
    expected = run_episode(bridge_for(SPEC, "fake"), "rhp", trace_path=tmp_path / "in_process.json")
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    got = json.loads(results.read_text())["episodes"][0]
    assert (got["steps"], got["transport_rate"]) == (expected.steps, expected.transport_rate)
    assert comparable(load_trace(tmp_path / "ros" / "trace.json")) == comparable(
        load_trace(tmp_path / "in_process.json")
    )
