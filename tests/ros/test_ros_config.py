"""The team YAML file (``coteam_ros.team_config``, one loader for both launchers): strict validation; the node list
and the ``--ros-args`` of a node process (``coteam_ros.node_graph``, checked against rclpy's own parsing); and the
``ros2 launch`` files, which are executed with small fake ``launch`` / ``launch_ros`` modules (no wheels exist for
them) and must start exactly the nodes ``coteam launch`` starts."""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from ros_isolation import isolate_ros, task_scene

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "ros2_ws" / "src" / "coteam_ros"
if importlib.util.find_spec("coteam_ros") is None:  # not pip-installed yet: use the source tree
    sys.path.insert(0, str(PKG))

from pydantic import Field  # noqa: E402

from coteam.domain.capabilities import RobotCapabilities, team_capabilities  # noqa: E402
from coteam.home.signing import PUBLIC_KEYS, init_keystore  # noqa: E402
from coteam.kit import MethodConfig, MethodTeam  # noqa: E402
from coteam.kit.store import StoreSchema  # noqa: E402
from coteam.registry import register_method, unregister_method  # noqa: E402
from coteam_ros import launcher  # noqa: E402
from coteam_ros.keystore import prepare_keystore  # noqa: E402
from coteam_ros.node_graph import (  # noqa: E402
    NodeSpec,
    model_groups,
    node_list,
    ros_args,
    write_params_file,
    write_task_scene,
)
from coteam_ros.team_config import (  # noqa: E402
    REMAPPABLE,
    ConfigError,
    LocalModelSection,
    RobotSection,
    TeamConfig,
    load_config,
    parse_config,
)

SIM = ROOT / "config" / "team_sim.yaml"
HARDWARE = ROOT / "config" / "team_hardware.yaml"
SCENE = "/runs/scene.json"  # the task's scene file (node_list only passes its path on)
LAUNCH_FILES = {"sim": PKG / "launch" / "team_sim.launch.py", "hardware": PKG / "launch" / "team_hardware.launch.py"}

SIM_DOC: dict[str, Any] = {
    "world": {"suite": "cwah-test", "episode": 0, "seed": 0, "mode": "lockstep", "tick_hz": 10.0},
    "team": {"method": "pce", "backend": "symbolic", "params": {}},
    "navigation": "sim",
    "robots": [{"name": "alice"}, {"name": "bob"}],
    "security": {"sign": True},
}
HW_DOC: dict[str, Any] = {
    "task": {"suite": "cwah-test", "episode": 0},
    "team": {"method": "pce"},
    "navigation": "nav2",
    "robots": [{"name": "robot1", "remap": {"detections": "/robot1/detector/objects"}}, {"name": "robot2"}],
}


def _write(tmp_path: Path, doc: Any, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    return path


def _edit(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``doc`` with ``dotted`` (e.g. "world.mode", "robots.1.name") set, or deleted for ...."""
    out = json.loads(json.dumps(doc))
    *parents, last = dotted.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key: Any = int(last) if isinstance(node, list) else last
    if value is Ellipsis:
        del node[key]
    else:
        node[key] = value
    return out


# ----------------------------------------------------------------------------------------------------------------
# loading


def test_shipped_sim_config() -> None:
    cfg = load_config(SIM)
    assert cfg.world is not None and cfg.task is None
    assert (cfg.world.suite, cfg.world.episode, cfg.world.seed, cfg.world.mode) == ("cwah-test", 0, 0, "lockstep")
    assert (cfg.team.method, cfg.team.backend, dict(cfg.team.params)) == ("pce", "symbolic", {})
    assert cfg.navigation == "sim"
    assert [(r.name, r.namespace, dict(r.remap)) for r in cfg.robots] == [("alice", "/alice", {}), ("bob", "/bob", {})]


def test_shipped_hardware_config() -> None:
    cfg = load_config(HARDWARE)
    assert cfg.world is None and cfg.task is not None
    assert cfg.navigation == "nav2"
    assert cfg.robot_names == ["robot1", "robot2"]
    assert all(r.remap for r in cfg.robots)
    assert cfg.robots[0].remap["detections"] == "/robot1/detector/detections"
    assert [r.base_frame for r in cfg.robots] == ["robot1/base_link", "robot2/base_link"]
    assert cfg.perception is None


def test_printed_markers_default_to_the_world_files_ids(tmp_path: Path) -> None:
    """aruco on hardware needs its marker file, unless the task is a world file: marker id = the object's id there."""
    for home in ("flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / home, tmp_path)
    doc = {**HW_DOC, "task": {"world_file": "flat.world.yaml"}, "perception": {"detector": "aruco"}}
    cfg = parse_config(doc, str(tmp_path / "team.yaml"))
    assert cfg.perception is not None and cfg.perception.markers is None
    with pytest.raises(ConfigError, match=r"perception\.markers: required on hardware"):
        parse_config({**HW_DOC, "perception": {"detector": "aruco"}}, str(tmp_path / "team.yaml"))


def test_the_twins_robots_are_documented_profiles_named_per_robot(tmp_path: Path) -> None:
    from coteam_ros.twin_robots import TWIN_ROBOTS

    doc = {**HW_DOC, "twin": {"robots": {"robot1": "stretch3"}}, "robots": [{"name": "robot1"}, {"name": "robot2"}]}
    doc["task"] = {"world_file": "flat.world.yaml"}
    for home in ("flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / home, tmp_path)
    twin = next(s for s in node_list(parse_config(doc, str(tmp_path / "team.yaml")), SCENE) if s.name == "twin")
    assert json.loads(twin.parameters["robot_profiles_json"]) == {"robot1": "stretch3"}
    with pytest.raises(ConfigError, match=r"twin\.robots\.robot1: no twin robot 'roomba' \(one of generic, tiago"):
        parse_config({**doc, "twin": {"robots": {"robot1": "roomba"}}}, str(tmp_path / "team.yaml"))
    with pytest.raises(ConfigError, match=r"twin\.robots names robot3, who is not in robots"):
        parse_config({**doc, "twin": {"robots": {"robot3": "tiago"}}}, str(tmp_path / "team.yaml"))
    # what each arm driver answers: one gripper full, a door with every gripper full on a robot that needs one free
    stretch, generic, dual = TWIN_ROBOTS["stretch3"], TWIN_ROBOTS["generic"], TWIN_ROBOTS["tiago_dual"]
    assert (stretch.grasp_refusal(0), stretch.grasp_refusal(1)) == ("", "gripper occupied")
    assert stretch.open_refusal(1) == "no free gripper to open or close with" and stretch.open_refusal(0) == ""
    assert (dual.open_refusal(1), dual.open_refusal(2)) == ("", "no free gripper to open or close with")
    assert generic.open_refusal(2) == "" and generic.speed_mps is None


def test_the_twins_robots_are_obstacles_to_each_other_but_may_always_back_off() -> None:
    from coteam_ros.twin_robots import robot_in_the_way

    bases = {"robot1": ((0.0, 0.0), 0.27), "robot2": ((1.0, 0.0), 0.27)}  # two TIAGo bases 1 m apart
    assert robot_in_the_way("robot1", (0.0, 0.0), (0.3, 0.0), bases) is None  # 0.7 m apart: 0.1 m clear of both
    assert robot_in_the_way("robot1", (0.0, 0.0), (0.4, 0.0), bases) == "robot2"  # 0.6 m: bases within 0.1 m
    assert robot_in_the_way("robot2", (1.0, 0.0), (1.3, 0.0), bases) is None  # moving away
    closer = {**bases, "robot2": ((0.5, 0.0), 0.27)}  # already too close: backing off is free, closing in is not
    assert robot_in_the_way("robot1", (0.0, 0.0), (-0.2, 0.0), closer) is None
    assert robot_in_the_way("robot1", (0.0, 0.0), (0.0, 0.1), closer) is None  # sideways, no closer
    assert robot_in_the_way("robot1", (0.0, 0.0), (0.1, 0.0), closer) == "robot2"


def test_a_twin_arm_without_ids_takes_the_object_of_the_class_in_front_of_it() -> None:
    """A robot whose detector gives classes without ids names objects by its own labels; the twin's arm, as a real
    one, grasps the object of the asked class nearest the asked place within reach, and puts down what it holds."""
    from coteam.agent.skills import Manipulation, ManipulationKind
    from coteam.domain.world import WorldState
    from coteam.home.world_file import load_world
    from coteam_ros.twin_robots import object_in_front

    scene = load_world(ROOT / "config" / "flat.world.yaml").scene
    world = WorldState(scene, ("robot1", "robot2"))
    apples = sorted(i.id for i in scene.items if i.name == "apple")
    plate = next(i.id for i in scene.items if i.name == "plate")
    table = next(s for s in scene.surfaces if s.name == "coffeetable")
    world.agents["robot1"].position = (table.position[0], table.position[1] - 0.5)
    grasp = Manipulation(ManipulationKind.GRASP, apples[1])
    assert object_in_front(world, "robot1", grasp, "apple", table.position, 1.0) == apples[1], "the labelled one"
    world.agents["robot2"].hands[0] = apples[1]  # the teammate took it since
    del world.placements[apples[1]]
    assert object_in_front(world, "robot1", grasp, "apple", table.position, 1.0) == apples[0], "the other apple"
    assert object_in_front(world, "robot1", grasp, "apple", (0.0, 0.0), 0.1) == apples[1], "none in reach"
    world.agents["robot1"].hands[1] = apples[0]
    put = Manipulation(ManipulationKind.PUT_IN, plate, 2, hand=1)
    assert object_in_front(world, "robot1", put, "apple", None, 1.0) == apples[0], "what the hand holds"
    assert object_in_front(world, "robot1", put, "plate", None, 1.0) == plate, "nothing of the class held"


def test_a_twin_detector_sees_what_is_in_its_panning_view_with_its_errors() -> None:
    """The twin's detector as a real one: a 90 degree camera panning a field of view a frame sees all round in four
    frames, nothing past its range, what is beside the base always; it misses, errs in position and sees what is
    not there at the rates it is given, the same for the same seed."""
    import random

    from coteam.senses.perception import Detection
    from coteam_ros.twin_robots import TwinDetector

    def apple(x: float, y: float) -> Detection:
        return Detection("apple", 3, "food", "kitchen", "", (x, y), 1.0, 0)

    around = [apple(2.0, 0.0), apple(0.0, 2.0), apple(-2.0, 0.0), apple(0.0, -2.0), apple(0.3, -0.3), apple(9.0, 0.0)]
    camera = TwinDetector(range_m=4.0, fov_deg=90.0)
    rng = random.Random(0)
    seen = [{d.position for d in camera.detect(around, (0.0, 0.0), 0.0, frame, rng)} for frame in range(4)]
    assert seen[0] == {(2.0, 0.0), (0.3, -0.3)} and seen[1] == {(0.0, 2.0), (0.3, -0.3)}
    assert set().union(*seen) == {d.position for d in around[:5]}, "all round in four frames, not past 4 m"
    faulty = TwinDetector(noise_m=0.1, miss=0.5, false_rate=1.0)
    frames = [faulty.detect(around[:4], (0.0, 0.0), 0.0, f, random.Random(f), (apple(0, 0),)) for f in range(40)]
    true_seen = sum(1 for frame in frames for d in frame if d.object_id == 3)
    assert 40 < true_seen < 120, "about half of 160 missed"
    assert all(sum(d.object_id == -1 for d in frame) == 1 for frame in frames), "one false detection a frame"
    assert any(d.position not in {a.position for a in around} for frame in frames for d in frame if d.object_id == 3)
    assert frames == [
        faulty.detect(around[:4], (0.0, 0.0), 0.0, f, random.Random(f), (apple(0, 0),)) for f in range(40)
    ]


def test_a_twin_odometry_drifts_with_the_distance_driven_and_its_localisation_takes_it_out() -> None:
    """Each metre driven adds a random error to the odometry (``odom -> base_link``); ``map -> odom`` composed with
    it is the true pose, so a localisation that publishes it corrects the drift; no drift keeps them one."""
    import random

    import numpy as np

    from coteam_ros.tf import RigidTransform
    from coteam_ros.twin_robots import TwinOdometry

    rng = random.Random(0)
    odometry = TwinOdometry(drift_m_per_m=0.05, drift_deg_per_m=2.0)
    truth = RigidTransform.of(0.0, 0.0)
    for k in range(1, 41):  # 10 m straight on
        truth = RigidTransform.of(0.25 * k, 0.0)
        odometry.drove((0.25 * k, 0.0), 0.25, rng)
    said = odometry.odom_pose(truth)
    error = float(np.linalg.norm(said.translation - truth.translation))
    assert 0.01 < error < 2.0, error
    corrected = odometry.map_to_odom @ said
    assert np.allclose(corrected.translation, truth.translation) and np.allclose(corrected.rotation, truth.rotation)
    still = TwinOdometry()
    still.drove((1.0, 0.0), 1.0, rng)
    assert not still.drifts and np.allclose(still.odom_pose(truth).translation, truth.translation)


def test_a_held_twin_robot_routes_round_the_other_where_the_map_leaves_room_and_not_in_a_hallway() -> None:
    """As Nav2's planner round an obstacle in its costmap: in a room the held robot's next cell leads round the
    other robot; in a 1 m hallway two 0.5 m bases cannot pass (config/hallway.world.yaml)."""
    from coteam.domain.navigation import NavGrid
    from coteam.home.world_file import load_world
    from coteam_ros.twin_robots import detour

    hallway = NavGrid(load_world(ROOT / "config" / "hallway.world.yaml").scene.floorplan)
    assert detour(hallway, (5.1, 2.25), (10.0, 2.25), 0.25, [((5.8, 2.25), 0.6)]) is None
    here, other = (1.0, 2.25), (1.7, 2.25)  # in the west room, the other robot between me and the hallway
    step = detour(hallway, here, (10.0, 2.25), 0.25, [(other, 0.6)])
    assert step is not None and math.dist(step, here) < 0.4 and math.dist(step, other) >= 0.6, step


def test_a_twin_runs_a_world_file_or_a_suite_episode(tmp_path: Path) -> None:
    """The twin's robots are the task's: a world file's names, or a suite episode's agents (alice, bob, ...)."""
    from coteam.domain.scene_io import load_scene
    from coteam_ros.nodes.twin import twin_scene

    suite_twin = {**HW_DOC, "twin": {}, "robots": [{"name": "alice"}, {"name": "bob"}]}
    cfg = parse_config(suite_twin, str(tmp_path / "team.yaml"))
    scene = load_scene(write_task_scene(cfg, tmp_path))
    simulated, frames = twin_scene(scene, ["bob", "alice"], 100.0)
    assert frames == {"alice": "alice", "bob": "bob"} and simulated.task.horizon == 100
    with pytest.raises(ConfigError, match="the robots are its agents, in order: alice, bob"):
        parse_config({**HW_DOC, "twin": {}}, str(tmp_path / "team.yaml"))
    for home in ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):  # robot1, robot2 of the flat
        shutil.copy(ROOT / "config" / home, tmp_path)
    world = load_config(tmp_path / "team_twin.yaml")
    _, frames = twin_scene(load_scene(write_task_scene(world, tmp_path)), ["robot2", "robot1"], 0.0)
    assert frames == {"alice": "robot1", "bob": "robot2"}  # the simulator's agents in the order of the start poses
    # the robots' nodes stamp with the twin's /clock; on hardware with their own clocks
    sim_time = {s.label: s.parameters.get("use_sim_time") for s in node_list(world, SCENE)}
    assert sim_time.pop("twin@/") is None and set(sim_time.values()) == {True} and len(sim_time) == 8
    hardware = world.model_copy(update={"twin": None})
    assert all("use_sim_time" not in s.parameters for s in node_list(hardware, SCENE))


def test_defaults_and_number_coercion(tmp_path: Path) -> None:
    doc = {"world": {"suite": "tdwmat-test", "tick_hz": 5}, "team": {"method": "rhp"}, "robots": [{"name": "alice"}]}
    cfg = load_config(_write(tmp_path, doc))
    assert cfg.world is not None
    assert (cfg.world.episode, cfg.world.seed, cfg.world.mode) == (0, 0, "lockstep")
    assert cfg.world.tick_hz == 5.0 and isinstance(cfg.world.tick_hz, float)  # an int would be a ROS int param
    assert (cfg.team.backend, cfg.navigation) == ("symbolic", "sim")
    hw = load_config(_write(tmp_path, {**HW_DOC, "navigation": None}, "hw.yaml"))
    assert hw.navigation == "nav2" and hw.task is not None and hw.task.seed == 0


@pytest.mark.parametrize(
    ("base", "dotted", "value", "key", "words"),
    [
        ("sim", "colour", "red", "colour", "unknown key (allowed here: world, task, twin, execution, team, navigation"),
        ("sim", "world.modee", "lockstep", "world.modee", "unknown key"),
        ("sim", "robots.1.nmae", "bob", "robots[1].nmae", "unknown key"),
        ("sim", "team.temperature", 0.2, "team.temperature", "unknown key"),
        ("sim", "world.episode", "0", "world.episode", "expected an integer"),
        ("sim", "world.episode", True, "world.episode", "expected an integer"),
        ("sim", "world.seed", -1, "world.seed", ">= 0"),
        ("sim", "world.episode", 10, "world.episode", "has 10 episodes"),
        ("sim", "world.tick_hz", "fast", "world.tick_hz", "expected a number"),
        ("sim", "world.tick_hz", 0, "world.tick_hz", "positive"),
        ("sim", "world.mode", "turbo", "world.mode", "lockstep, realtime"),
        ("sim", "world.suite", "nope", "world.suite", "unknown suite"),
        ("sim", "perception", "sonar", "perception.detector", "expected one of aruco"),
        ("sim", "perception", {"detector": "aruco", "markers": "m.yaml"}, "perception.markers", "only on hardware"),
        ("sim", "perception", {"detector": "aruco", "range": 3}, "perception.range", "unknown key"),
        (
            "sim",
            "perception",
            {"detector": "color", "markers": "m.yaml"},
            "perception.markers",
            "only with detector aruco",
        ),
        ("sim", "perception", {"detector": "color", "colours": "c.yaml"}, "perception.colours", "only on hardware"),
        ("sim", "perception", "onnx", "perception.model", "required"),
        ("sim", "world.suite", ..., "world.suite", "required"),
        ("sim", "world", [1, 2], "world", "expected a mapping"),
        ("sim", "team.method", "telepathy", "team.method", "expected one of"),
        ("sim", "team.backend", "oracle", "team.backend", "expected one of"),
        ("sim", "team.params", [1], "team.params", "expected a mapping, got a list"),
        ("sim", "team", ..., "team", "required (team: {method: ..., backend: ..., params: {}})"),
        ("sim", "navigation", "teleport", "navigation", "sim, nav2"),
        ("sim", "robots", [], "robots", "expected a non-empty list, got an empty list"),
        ("sim", "robots", ..., "robots", "required"),
        ("sim", "world.mode", 3, "world.mode", "expected one of lockstep, realtime, got 3"),
        ("sim", "world.tick_hz", float("inf"), "world.tick_hz", "must be a positive number, got inf"),
        ("sim", "robots.1.remap", ["odom"], "robots[1].remap", "expected a mapping, got a list"),
        ("sim", "robots.1.remap", {"odom": 5}, "robots[1].remap.odom", "expected a non-empty string, got int 5"),
        ("hw", "perception", {"detector": "aruco", "markers": "m.yaml"}, "perception.markers", "no such file"),
        ("sim", "robots.1.name", "carol", "robots", "alice, bob"),
        ("sim", "robots.1.name", "al ice", "robots[1].name", "not a valid ROS name"),
        ("sim", "robots.1.namespace", "bob", "robots[1].namespace", "absolute"),
        ("sim", "robots.1.namespace", "/alice", "robots", "duplicate namespace"),
        ("sim", "robots.1.remap", {"odom": "bad name"}, "robots[1].remap.odom", "not a valid ROS"),
        ("hw", "robots.1.remap", {"detection": "/d"}, "robots[1].remap.detection", "did you mean detections?"),
        ("hw", "robots.1.capabilities", {"grippers": 3}, "robots[1].capabilities.grippers", "less than or equal"),
        ("hw", "robots.1.capabilities", {"hands": 1}, "robots[1].capabilities.hands", "unknown key"),
        ("sim", "robots.1.capabilities", {"grippers": 1}, "robots", "capabilities only on robots"),
        ("sim", "task", {"suite": "cwah-test"}, "task", "only without a world"),
        ("hw", "navigation", "sim", "navigation", "must be nav2"),
        ("hw", "task", ..., "task", "required without a world"),
        ("hw", "task.episode", 99, "task.episode", "has 10 episodes"),
        ("hw", "robots.1.name", "robot1", "robots", "duplicate name"),
        ("sim", "security.sign", "yes", "security.sign", "expected true or false"),
        ("sim", "security.keystore", "", "security.keystore", "non-empty string"),
        ("sim", "security.max_age_s", 0, "security.max_age_s", "positive"),
        ("sim", "security.secret", 1, "security.secret", "unknown key"),
        ("sim", "world.unity", {"tdw_port": 0}, "world.unity.tdw_port", ">= 1"),
        ("sim", "world.unity", {"tdw_host": "gpu1"}, "world.unity.tdw_host", "unknown key"),
        ("sim", "composed", "yes", "composed", "expected true or false, got the string 'yes'"),
        ("sim", "robots.1.composed", 1, "robots[1].composed", "expected true or false"),
        ("sim", "robots.1.compose", True, "robots[1].compose", "unknown key (allowed here: name, namespace, remap"),
    ],
)
def test_strict_errors_name_the_file_and_key(
    tmp_path: Path, base: str, dotted: str, value: Any, key: str, words: str
) -> None:
    path = _write(tmp_path, _edit(SIM_DOC if base == "sim" else HW_DOC, dotted, value))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: {key}: "), msg
    assert words in msg, msg


def test_composed_runs_a_robots_nodes_in_one_process_the_robots_own_key_first(tmp_path: Path) -> None:
    """``composed`` (default false) at the top level is every robot's; a robot's own ``composed`` overrides it. The
    processes of a run: one per node, except a composed robot's nodes, together where its first node would start."""
    from coteam_ros.node_graph import processes

    separate = load_config(_write(tmp_path, SIM_DOC))
    assert separate.composed is False and not any(map(separate.composes, separate.robots))
    specs = node_list(separate, SCENE)
    assert processes(separate, specs) == [(s,) for s in specs]
    mixed = load_config(_write(tmp_path, {**_edit(SIM_DOC, "robots.1.composed", False), "composed": True}))
    assert [mixed.composes(r) for r in mixed.robots] == [True, False]
    specs = node_list(mixed, SCENE)
    assert [[s.label for s in group] for group in processes(mixed, specs)] == [
        ["sim_bridge@/"],
        ["perception@/alice", "planner@/alice", "executor@/alice"],
        ["perception@/bob"],
        ["planner@/bob"],
        ["executor@/bob"],
    ]
    only_bob = load_config(_write(tmp_path, _edit(SIM_DOC, "robots.1.composed", True)))
    assert [only_bob.composes(r) for r in only_bob.robots] == [False, True]
    assert len(processes(only_bob, node_list(only_bob, SCENE))) == 5
    hardware = load_config(_write(tmp_path, {**HW_DOC, "composed": True}))
    robots = [group for group in processes(hardware, node_list(hardware, SCENE)) if len(group) > 1]
    assert [[s.name for s in group] for group in robots] == [["robot_state", "perception", "planner", "executor"]] * 2
    assert TeamConfig.model_fields["composed"].description and RobotSection.model_fields["composed"].description


def test_yaml_level_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="duplicate key 'robots'"):
        load_config(_write(tmp_path, "robots: []\nrobots: []\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(_write(tmp_path, "world: [unclosed\n"))
    with pytest.raises(ConfigError, match="top level: expected a mapping"):
        load_config(_write(tmp_path, "- 1\n"))
    with pytest.raises(FileNotFoundError, match="team config not found"):
        load_config(tmp_path / "missing.yaml")
    assert issubclass(ConfigError, ValueError)  # `coteam` prints ValueErrors as "coteam launch: error: ..."


# ----------------------------------------------------------------------------------------------------------------
# node list


def _is_ros_value(value: Any) -> bool:
    if isinstance(value, bool | int | float | str):
        return True
    return isinstance(value, list) and bool(value) and len({type(v) for v in value}) == 1


def test_node_list_sim() -> None:
    specs = node_list(load_config(SIM), SCENE)
    assert [(s.name, s.namespace) for s in specs] == [
        ("sim_bridge", "/"),
        ("perception", "/alice"),
        ("planner", "/alice"),
        ("executor", "/alice"),
        ("perception", "/bob"),
        ("planner", "/bob"),
        ("executor", "/bob"),
    ]
    assert all(s.name == s.executable for s in specs)
    bridge, _, alice_planner, alice_exec, *_ = specs
    episode = {"scene_path": SCENE, "seed": 0}
    assert bridge.parameters == {
        "suite": "cwah-test",
        **episode,
        "mode": "lockstep",
        "tick_hz": 10.0,
        "robots": ["alice", "bob"],
        "namespaces": ["/alice", "/bob"],
        "method": "pce",
        "params_json": '{"backend": "symbolic"}',
        "cameras": False,
    }
    keys = ROOT / "config" / "keys"
    assert alice_planner.parameters == {
        "robot": "alice",
        "robots": ["alice", "bob"],
        "teammates": ["bob"],
        "method": "pce",
        "backend": "symbolic",
        "params_json": "{}",
        **episode,
        "signing_key": str(keys / "alice.key"),
        "team_keys": str(keys / "team.pub.json"),
        "max_message_age_s": 120.0,
    }
    assert alice_exec.parameters == {"robot": "alice", "robots": ["alice", "bob"], "navigation": "sim", **episode}
    assert specs[4].parameters == {"robot": "bob", "robots": ["alice", "bob"], **episode}  # the map places detections
    assert all(s.remappings == [] for s in specs)
    assert all(_is_ros_value(v) for s in specs for v in s.parameters.values())


def test_a_bridge_suites_sim_bridge_starts_the_unity_build_as_the_team_file_says(tmp_path: Path) -> None:
    world = {"suite": "tdwmat-tdw", "episode": 1, "engine": "unity", "unity": {"tdw_port": 2071, "tdw_launch": False}}
    cfg = load_config(_write(tmp_path, {**SIM_DOC, "world": world}))
    (bridge,) = [s for s in node_list(cfg, SCENE) if s.name == "sim_bridge"]
    assert {k: bridge.parameters[k] for k in ("episode", "engine", "tdw_port", "tdw_launch", "thor_platform")} == {
        "episode": 1,
        "engine": "unity",
        "tdw_port": 2071,
        "tdw_launch": False,
        "thor_platform": "",
    }
    plain = next(s for s in node_list(load_config(SIM), SCENE) if s.name == "sim_bridge")
    assert "tdw_port" not in plain.parameters, "only a bridge suite's world runs on an engine"


def test_every_node_reads_the_task_from_the_scene_file_the_launch_writes(tmp_path: Path) -> None:
    """The suite episode is built on the operator's machine and written for the nodes (robot nodes do not import the
    simulator); a saved scene is passed on as it is, and the results name the suite by the scene's path."""
    from coteam.domain.scene_io import load_scene, save_scene, scene_to_dict
    from coteam_sim.suites import get_suite

    for doc in (_edit(SIM_DOC, "world.episode", 2), _edit(HW_DOC, "task", {"suite": "tdwmat-test", "episode": 2})):
        cfg = parse_config(doc, "inline")
        written = write_task_scene(cfg, tmp_path)
        assert written == tmp_path / "scene.json"
        built = get_suite(cfg.episode_ref.suite).episodes()[2].build()
        assert scene_to_dict(load_scene(written)) == scene_to_dict(built)
    save_scene(get_suite("cwah-test").episodes()[1].build(), tmp_path / "saved.json")
    cfg = parse_config(_edit(SIM_DOC, "world.scene", "saved.json"), str(tmp_path / "team.yaml"))
    saved = write_task_scene(cfg, tmp_path / "elsewhere")
    assert saved == tmp_path / "saved.json"
    specs = node_list(cfg, saved)
    assert {s.parameters.get("scene_path") for s in specs} == {str(saved)}
    assert specs[0].parameters["suite"] == str(saved)


def test_a_robot_node_without_its_scene_file_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    argv = [sys.executable, "-m", "coteam_ros.nodes.executor", "--ros-args", "-p", "robot:=alice"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start: no scene_path" in lines[0], proc.stderr


@pytest.mark.parametrize(
    ("params", "problem"),
    [({"lamda": 1}, "unknown switch 'lamda' (did you mean 'lambda'?)"), ({"lambda": "abc"}, "switch 'lambda'")],
)
def test_method_switches_are_validated_before_any_node_starts(params: dict, problem: str) -> None:
    doc = _edit(SIM_DOC, "team.params", params)
    with pytest.raises(ConfigError) as err:
        parse_config(doc, "inline")
    assert "team.params" in str(err.value) and problem in str(err.value) and "\n" not in str(err.value)


def test_node_list_hardware() -> None:
    cfg = load_config(HARDWARE)
    specs = node_list(cfg, SCENE)
    assert "sim_bridge" not in [s.name for s in specs]
    assert [(s.name, s.namespace) for s in specs[:4]] == [
        ("robot_state", "/robot1"),
        ("perception", "/robot1"),
        ("planner", "/robot1"),
        ("executor", "/robot1"),
    ]
    for spec in specs:
        robot = next(r for r in cfg.robots if r.namespace == spec.namespace)
        assert spec.remappings == list(robot.remap.items())
    planner, executor = specs[2], specs[3]
    assert planner.parameters["teammates"] == ["robot2"]
    assert planner.parameters["message_delivery"] == "arrival"
    assert specs[0].parameters["robots"] == ["robot1", "robot2"]
    assert (planner.parameters["scene_path"], planner.parameters["seed"]) == (SCENE, 0)
    assert executor.parameters["navigation"] == "nav2"
    assert specs[0].parameters["base_frame"] == "robot1/base_link"  # the pose comes from TF
    # the bodies: the defaults (two grippers), the time limits of an action in seconds
    assert specs[0].parameters["hands"] == 2 and team_capabilities(executor.parameters["capabilities_json"]) == {
        "robot1": RobotCapabilities(),
        "robot2": RobotCapabilities(),
    }
    assert (executor.parameters["skill_overhead_s"], executor.parameters["skill_travel_factor"]) == (60.0, 3.0)
    # meetings in passages: the teammates' poses from their statuses, the rule's settings
    assert executor.parameters["teammate_poses"] == ["/robot2/status"]
    assert (executor.parameters["passage_near_m"], executor.parameters["passage_tries"]) == (1.5, 3)


def test_a_robots_body_comes_from_the_team_file_or_the_world_file_never_both(tmp_path: Path) -> None:
    one_gripper = {"grippers": 1, "open_needs_free_gripper": True, "speed_mps": 0.2}
    cfg = load_config(_write(tmp_path, _edit(HW_DOC, "robots.1.capabilities", one_gripper)))
    specs = {s.label: s for s in node_list(cfg, SCENE)}
    assert specs["robot_state@/robot2"].parameters["hands"] == 1
    bodies = team_capabilities(specs["planner@/robot1"].parameters["capabilities_json"])
    assert bodies["robot2"] == RobotCapabilities(**one_gripper) and bodies["robot1"] == RobotCapabilities()

    world = yaml.safe_load((ROOT / "config" / "flat.world.yaml").read_text())
    world["robots"][1]["capabilities"] = one_gripper
    for name in ("flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / name, tmp_path / name)
    (tmp_path / "home.world.yaml").write_text(yaml.safe_dump(world))
    doc = {**HW_DOC, "task": {"world_file": "home.world.yaml"}}
    assert load_config(_write(tmp_path, doc)).capabilities["robot2"] == RobotCapabilities(**one_gripper)
    with pytest.raises(ConfigError, match=r"robot2.s capabilities are in home\.world\.yaml too"):
        load_config(_write(tmp_path, _edit(doc, "robots.1.capabilities", one_gripper)))


def test_every_name_a_robots_node_uses_may_be_remapped() -> None:
    """The remap keys a team file may use are the names the nodes really subscribe, publish, serve and call."""
    pattern = re.compile(
        r"(?:create_subscription|create_publisher|ActionClient|ActionServer|create_client)\([^)]*?\"([a-z_/]+)\""
    )
    used = set()
    for source in (PKG / "coteam_ros").rglob("*.py"):
        used |= set(pattern.findall(source.read_text()))
    assert used and used <= set(REMAPPABLE), sorted(used - set(REMAPPABLE))


def test_perception_from_cameras(tmp_path: Path) -> None:
    """A visual suite's world sees through cameras by default: the bridge renders them, each robot's perception
    node detects with the simulator's markers, the planner waits for its detections. On hardware the printed
    markers' file is required."""
    from coteam_sim.camera import ITEM_SIZE_M, MARKER_SIZE_M

    shipped = yaml.safe_load((ROOT / "config" / "team_sim_visual.yaml").read_text())
    for doc in (shipped, _edit(SIM_DOC, "world.suite", "cwah-test-visual"), _edit(SIM_DOC, "perception", "aruco")):
        specs = {s.fqn: s for s in node_list(parse_config(doc, "inline"), SCENE)}
        assert specs["/sim_bridge"].parameters["cameras"] is True
        perception = specs["/alice/perception"].parameters
        assert (perception["detector"], perception["robots"]) == ("aruco", ["alice", "bob"])
        assert perception["status_from_cameras"] is True
        assert (perception["marker_size_m"], perception["object_depth_m"]) == (MARKER_SIZE_M, ITEM_SIZE_M / 2)
        assert perception["scene_path"] == SCENE and "markers" not in perception
    markers = tmp_path / "markers.yaml"
    markers.write_text("12: apple\n13: cupcake\n")
    hw = _edit(HW_DOC, "perception", {"detector": "aruco", "markers": "markers.yaml", "marker_size_m": 0.05})
    specs = {s.fqn: s for s in node_list(load_config(_write(tmp_path, hw)), SCENE)}
    perception = specs["/robot1/perception"].parameters
    assert perception["markers"] == str(markers) and perception["marker_size_m"] == 0.05
    assert "object_depth_m" not in perception and "status_from_cameras" not in perception
    with pytest.raises(ConfigError, match=r"perception\.markers: required on hardware"):
        load_config(_write(tmp_path, _edit(HW_DOC, "perception", "aruco")))
    markers.write_text("apple: 12\n")
    with pytest.raises(ConfigError, match=r"perception\.markers: .*maps marker ids to class names"):
        load_config(_write(tmp_path, hw))


def test_class_only_detectors_in_the_team_file(tmp_path: Path) -> None:
    """``color`` in a world uses the simulator's class colours, on hardware a colours file; ``onnx`` needs a model
    file and its class names. Each goes to the perception node as its parameters."""
    specs = {s.fqn: s for s in node_list(parse_config(_edit(SIM_DOC, "perception", "color"), "inline"), SCENE)}
    perception = specs["/alice/perception"].parameters
    assert perception["detector"] == "color" and perception["status_from_cameras"] is True
    assert not {"colours", "markers", "marker_size_m"} & set(perception)
    colours = tmp_path / "colours.yaml"
    colours.write_text("apple: [200, 30, 30]\ncup: [30, 30, 200]\n")
    hw = _edit(HW_DOC, "perception", {"detector": "color", "colours": "colours.yaml"})
    specs = {s.fqn: s for s in node_list(load_config(_write(tmp_path, hw)), SCENE)}
    assert specs["/robot1/perception"].parameters["colours"] == str(colours)
    colours.write_text("apple: red\n")
    with pytest.raises(ConfigError, match=r"perception\.colours: .*RGB triples"):
        load_config(_write(tmp_path, hw))
    model = tmp_path / "detector.onnx"
    model.write_bytes(b"onnx")
    onnx = _edit(HW_DOC, "perception", {"detector": "onnx", "model": "detector.onnx", "classes": ["apple", "cup"]})
    specs = {s.fqn: s for s in node_list(load_config(_write(tmp_path, onnx)), SCENE)}
    perception = specs["/robot1/perception"].parameters
    assert (perception["model"], perception["classes"]) == (str(model), ["apple", "cup"])
    with pytest.raises(ConfigError, match=r"perception\.classes: required"):
        load_config(_write(tmp_path, _edit(HW_DOC, "perception", {"detector": "onnx", "model": "detector.onnx"})))
    with pytest.raises(ConfigError, match=r"perception\.model: no such file"):
        load_config(_write(tmp_path, _edit(onnx, "perception.model", "missing.onnx")))


class _NestedConfig(MethodConfig):
    depth: int = 1
    weights: dict[str, float] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)


class _NestedTeam(MethodTeam):
    Config = _NestedConfig


@pytest.fixture
def nested_method():
    register_method("nested-params", _NestedTeam)
    yield "nested-params"
    unregister_method("nested-params")


class _LearningTeam(MethodTeam):
    store_schema = StoreSchema(1, {"seen": "episode TEXT"})


@pytest.mark.parametrize("robots", [["alice"], ["alice", "bob"]])
def test_each_planner_of_a_decentralised_team_keeps_its_own_store_beside_the_team_file(tmp_path, robots) -> None:
    register_method("learning", _LearningTeam)
    try:
        doc = _edit(SIM_DOC, "robots", [{"name": r} for r in robots])
        doc["team"] = {"method": "learning", "params": {"store": "memory/learned.sqlite"}}
        specs = node_list(parse_config(doc, str(tmp_path / "team.yaml")), SCENE)
    finally:
        unregister_method("learning")
    planners = [s.parameters for s in specs if s.name == "planner"]
    stores = {p["robot"]: json.loads(str(p["params_json"]))["store"] for p in planners}
    folder = tmp_path.resolve() / "memory"
    if len(robots) == 1:
        assert stores == {"alice": str(folder / "learned.sqlite")}
    else:
        assert stores == {r: str(folder / f"learned.{r}.sqlite") for r in robots}


@pytest.mark.parametrize("sees_all", [True, False])
def test_a_centralised_team_gets_one_coordinator_and_its_robots_share_what_they_see(sees_all: bool) -> None:
    doc = _edit(SIM_DOC, "team", {"method": "oracle", "params": {"full_observability": sees_all}})
    doc["robots"] = [{"name": "alice"}, {"name": "bob"}, {"name": "carol"}]
    specs = node_list(parse_config(doc, "inline"), SCENE)
    assert [s.fqn for s in specs][:2] == ["/sim_bridge", "/coordinator"]
    coordinator = specs[1].parameters
    assert coordinator["robots"] == ["alice", "bob", "carol"] and coordinator["lockstep"] is True
    assert json.loads(str(coordinator["params_json"])) == {"full_observability": sees_all}
    executors = {s.namespace: s.parameters for s in specs if s.name == "executor"}
    if sees_all:
        assert all("teammate_status" not in p for p in executors.values())
    else:  # in the team's order, without the robot's own
        assert executors["/bob"]["teammate_status"] == ["/alice/status", "/carol/status"]
        assert executors["/bob"]["teammate_wait_s"] > 0
    decentralised = node_list(parse_config(SIM_DOC, "inline"), SCENE)
    assert not any(s.name == "coordinator" or "teammate_status" in s.parameters for s in decentralised)


def test_a_team_that_sees_the_whole_world_needs_the_simulator() -> None:
    oracle = _edit(HW_DOC, "team", {"method": "oracle"})
    with pytest.raises(ConfigError, match=r"team\.params\.full_observability: oracle sees the whole world"):
        parse_config(oracle, "inline")
    searching = _edit(oracle, "team.params", {"full_observability": False})
    specs = node_list(parse_config(searching, "inline"), SCENE)
    coordinator = next(s for s in specs if s.name == "coordinator")
    assert coordinator.parameters["lockstep"] is False  # real robots: each report played as it comes
    assert next(s for s in specs if s.name == "executor").parameters["teammate_wait_s"] == 0.0


def test_a_store_for_a_method_that_keeps_nothing_is_refused_before_any_node_starts(tmp_path) -> None:
    doc = _edit(SIM_DOC, "team.params", {"store": "x.sqlite"})
    with pytest.raises(ConfigError, match=r"team\.params\.store: pce keeps nothing across episodes"):
        parse_config(doc, str(tmp_path / "team.yaml"))


def test_params_json_and_one_robot_team(nested_method: str) -> None:
    doc = _edit(SIM_DOC, "robots", [{"name": "alice"}])
    doc["team"]["method"] = nested_method
    doc["team"]["params"] = {"depth": 3, "weights": {"a": 0.5}, "tags": ["x"]}
    specs = node_list(parse_config(doc, "inline"), SCENE)
    planner = next(s for s in specs if s.name == "planner")
    assert json.loads(planner.parameters["params_json"]) == {"depth": 3, "weights": {"a": 0.5}, "tags": ["x"]}
    # ROS has no empty-list parameter value (launch_ros raises, rcl drops it): a lone robot has no teammates key
    assert "teammates" not in planner.parameters
    assert all(_is_ros_value(v) for s in specs for v in s.parameters.values())


# ----------------------------------------------------------------------------------------------------------------
# --ros-args


TRICKY = NodeSpec(
    "probe",
    "probe",
    "/ns1",
    {
        "s": "cwah-test",
        "s_num": "0",
        "s_float": "1.5",
        "s_bool": "true",
        "s_yes": "yes",
        "s_null": "null",
        "s_empty": "",
        "s_json": '{"a": [1, 2], "b": "x: y", "c": null}',
        "s_colon": "a: b # not a comment",
        "s_unicode": "café ☕",
        "i": -3,
        "f": 10.0,
        "f_big": 1e20,
        "f_small": 2.5e-7,
        "b": False,
        "ls": ["a", "1", "yes", "b c"],
        "li": [1, 2, 3],
        "lf": [0.5, 2.0],
        "lb": [True, False],
    },
    [("odom", "/ns1/odometry/filtered"), ("camera", "cam/image_raw")],
)


def test_ros_args_shape(tmp_path: Path) -> None:
    args = ros_args(TRICKY, tmp_path, {"results_path": "/tmp/r.json"})
    assert args[:5] == ["--ros-args", "-r", "__node:=probe", "-r", "__ns:=/ns1"]
    assert args[5] == "--params-file"
    assert args[7:] == ["-r", "odom:=/ns1/odometry/filtered", "-r", "camera:=cam/image_raw"]
    doc = yaml.safe_load(Path(args[6]).read_text())
    assert doc == {"/ns1/probe": {"ros__parameters": {**TRICKY.parameters, "results_path": "/tmp/r.json"}}}
    assert Path(args[6]) == write_params_file(TRICKY, tmp_path, {"results_path": "/tmp/r.json"})
    inline = ros_args(TRICKY)
    assert "--params-file" not in inline and inline.count("-p") == len(TRICKY.parameters)
    assert "s_num:='0'" in inline and "i:=-3" in inline and "ls:=[a, '1', 'yes', b c]" in inline


PROBE = """
import json, sys
import rclpy
from rclpy.node import Node

names = sys.argv[1:sys.argv.index("--ros-args")]
rclpy.init(args=sys.argv)
node = Node("unnamed", automatically_declare_parameters_from_overrides=True)
params = {}
for name, p in node.get_parameters_by_prefix("").items():
    v = p.value
    params[name] = v if isinstance(v, (bool, int, float, str)) else list(v)
for builtin in ("use_sim_time", "start_type_description_service"):
    params.pop(builtin, None)
print(json.dumps({"name": node.get_name(), "ns": node.get_namespace(), "params": params,
                  "resolved": {n: node.resolve_topic_name(n) for n in names}}))
node.destroy_node()
rclpy.shutdown()
"""


@pytest.mark.parametrize("form", ["params-file", "inline"])
def test_ros_args_round_trip_through_rclpy(tmp_path: Path, form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """rclpy parses the arguments back to the same name, namespace, values *and types*, and remappings."""
    pytest.importorskip("rclpy")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    args = ros_args(TRICKY, tmp_path if form == "params-file" else None)
    isolate_ros(tmp_path, monkeypatch)
    proc = subprocess.run(
        [sys.executable, str(probe), "odom", "camera", "other", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (got["name"], got["ns"]) == ("probe", "/ns1")
    assert got["resolved"] == {"odom": "/ns1/odometry/filtered", "camera": "/ns1/cam/image_raw", "other": "/ns1/other"}
    assert got["params"] == TRICKY.parameters
    for key, value in TRICKY.parameters.items():
        sample = value[0] if isinstance(value, list) else value
        got_sample = got["params"][key][0] if isinstance(value, list) else got["params"][key]
        assert type(got_sample) is type(sample), key


# ----------------------------------------------------------------------------------------------------------------
# launch files


def test_launch_files_compile() -> None:
    for path in LAUNCH_FILES.values():
        source = path.read_text()
        tree = ast.parse(source, str(path))
        compile(tree, str(path), "exec")
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "generate_launch_description" in functions
    assert (ROOT / "launch").is_symlink() and (ROOT / "launch" / "team_sim.launch.py").is_file()


class _Fake:
    """Fake ``launch`` / ``launch_ros`` with the real constructors' keyword signatures."""

    nodes: ClassVar[list[dict[str, Any]]] = []

    class LaunchDescription:
        def __init__(self, initial_entities=None, *, deprecated_reason=None):
            self.entities = list(initial_entities or [])

    class DeclareLaunchArgument:
        def __init__(self, name, *, default_value=None, description=None, choices=None, **kwargs):
            self.name, self.default_value = name, default_value

    class OpaqueFunction:
        def __init__(self, *, function, args=None, kwargs=None, **left_over_kwargs):
            self.function, self.args, self.kwargs = function, args or [], kwargs or {}

        def execute(self, context):
            return self.function(context, *self.args, **self.kwargs)

    class Shutdown:
        def __init__(self, *, reason="reason not given", **kwargs):
            self.reason = reason

    class LogInfo:
        def __init__(self, *, msg, **kwargs):
            self.msg = msg

    class TimerAction:
        def __init__(self, *, period, actions, cancel_on_shutdown=True, **kwargs):
            self.period, self.actions = period, actions

    class SetEnvironmentVariable:
        def __init__(self, name, value):
            self.name, self.value = name, value

    class OnProcessExit:
        def __init__(self, *, target_action=None, on_exit, **kwargs):
            self.target_action, self.on_exit = target_action, on_exit

    class RegisterEventHandler:
        def __init__(self, event_handler, **kwargs):
            self.event_handler = event_handler

    class LaunchConfiguration:
        def __init__(self, variable_name, *, default=None):
            self.variable_name = variable_name

        def perform(self, context):
            return context.launch_configurations[self.variable_name]

    class Node:
        def __init__(
            self,
            *,
            executable,
            package=None,
            name=None,
            namespace=None,
            exec_name=None,
            parameters=None,
            remappings=None,
            ros_arguments=None,
            arguments=None,
            **kwargs,
        ):
            # What launch_ros accepts in a parameters dict (evaluate_parameter_dict): no None, no dicts (they
            # would be flattened to dotted names), no empty or mixed lists.
            for params in parameters or []:
                for key, value in params.items():
                    assert _is_ros_value(value), (key, value)
            self.executable = executable
            _Fake.nodes.append(
                dict(
                    package=package,
                    executable=executable,
                    name=name,
                    namespace=namespace,
                    parameters=parameters,
                    remappings=remappings,
                    arguments=arguments,
                    exec_name=exec_name,
                    **kwargs,
                )
            )


def _fake_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    mods = {
        name: types.ModuleType(name)
        for name in ("launch", "launch.actions", "launch.substitutions", "launch.event_handlers")
    }
    mods |= {name: types.ModuleType(name) for name in ("launch_ros", "launch_ros.actions")}
    mods["launch"].LaunchDescription = _Fake.LaunchDescription
    mods["launch.actions"].DeclareLaunchArgument = _Fake.DeclareLaunchArgument
    mods["launch.actions"].OpaqueFunction = _Fake.OpaqueFunction
    mods["launch.actions"].RegisterEventHandler = _Fake.RegisterEventHandler
    mods["launch.actions"].Shutdown = _Fake.Shutdown
    mods["launch.actions"].LogInfo = _Fake.LogInfo
    mods["launch.actions"].TimerAction = _Fake.TimerAction
    mods["launch.actions"].SetEnvironmentVariable = _Fake.SetEnvironmentVariable
    mods["launch.event_handlers"].OnProcessExit = _Fake.OnProcessExit
    mods["launch.substitutions"].LaunchConfiguration = _Fake.LaunchConfiguration
    mods["launch_ros.actions"].Node = _Fake.Node
    mods["launch"].actions = mods["launch.actions"]
    mods["launch"].substitutions = mods["launch.substitutions"]
    mods["launch"].event_handlers = mods["launch.event_handlers"]
    mods["launch_ros"].actions = mods["launch_ros.actions"]
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    _Fake.nodes = []


RUN_OUTPUTS = ("results_path", "trace_path", "end_report", "memory_journal")  # where a node writes the run's


def _run_launch_file(path: Path, config: Path, out: Path | None = None) -> tuple[list[NodeSpec], list[str]]:
    """The nodes a launch file starts (with the parameters of their own), and what it says as its nodes exit one by
    one, the last running node first, until it shuts down."""
    spec = importlib.util.spec_from_file_location(f"launch_file_{path.stem.replace('.', '_')}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    args = [e for e in description.entities if isinstance(e, _Fake.DeclareLaunchArgument)]
    assert [a.name for a in args] == ["config", "out", "serve"] and all(a.default_value for a in args)
    (dds,) = [e for e in description.entities if isinstance(e, _Fake.SetEnvironmentVariable)]
    assert (dds.name, dds.value) == ("FASTDDS_DEFAULT_PROFILES_FILE", str(launcher.DDS_PROFILE))  # as coteam launch
    out = out or config.parent / "out"
    context = types.SimpleNamespace(launch_configurations={"config": str(config), "out": str(out), "serve": "false"})
    actions = []
    for entity in description.entities:
        if isinstance(entity, _Fake.OpaqueFunction):
            actions += entity.execute(context)
    handlers = [a for a in actions if isinstance(a, _Fake.RegisterEventHandler)]
    nodes = [a for a in actions if isinstance(a, _Fake.Node)]
    assert len(nodes) == len(_Fake.nodes) and [h.event_handler.target_action for h in handlers] == nodes
    specs, params_of = [], {}
    for node, kw in zip(nodes, _Fake.nodes, strict=True):
        assert kw["package"] == "coteam_ros" and kw["output"] == "screen"
        (params,) = kw["parameters"]
        own = {k: v for k, v in params.items() if k not in RUN_OUTPUTS}
        specs.append(NodeSpec(kw["name"], kw["executable"], kw["namespace"], own, kw["remappings"]))
        params_of[id(node)] = params
    # the run's outputs: where coteam launch has each node write them
    results = out.resolve() / "results.json"
    for node, spec_ in zip(nodes, specs, strict=True):
        expected = {**spec_.parameters, **launcher.run_outputs(spec_, results)}
        assert params_of[id(node)] == expected, spec_.label
    said: list[str] = []
    for handler in reversed(handlers):  # the nodes exit, the bridge or the planners last
        exited = handler.event_handler.on_exit(types.SimpleNamespace(returncode=0), context)
        said += [a.msg for a in exited if isinstance(a, _Fake.LogInfo)]
        if any(isinstance(a, _Fake.Shutdown) for a in exited):
            break
    return specs, said


@pytest.mark.parametrize(("which", "config"), [("sim", SIM), ("hardware", HARDWARE)])
def test_launch_file_and_pip_launcher_start_the_same_nodes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, which: str, config: Path
) -> None:
    """The YAML loader produces the same node list for both launchers, and each writes the same task scene file."""
    _fake_modules(monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the launch file makes its scene's folder
    config = Path(shutil.copy(config, tmp_path))  # its keystore (keys/ next to it) goes to tmp_path
    for home in ("flat.world.yaml", "flat.map.yaml", "flat.pgm"):  # the hardware file's home
        shutil.copy(ROOT / "config" / home, tmp_path)
    cfg = load_config(config)
    if which == "hardware":  # on hardware the keys must exist before launch
        init_keystore(tmp_path / "keys", cfg.robot_names)
    from_launch_file, said = _run_launch_file(LAUNCH_FILES[which], config)
    # it ends as coteam launch does: when the bridge exits, or once every robot's planner has ended its task
    assert (
        said[-1] == "[coteam] sim_bridge@/ exited with code 0: the run ends"
        if which == "sim"
        else ("every robot ended its task" in " ".join(said) and (tmp_path / "out" / "results.json").is_file())
    )
    launch_scene = next(s for s in from_launch_file if s.name == "planner").parameters["scene_path"]
    assert from_launch_file == node_list(cfg, launch_scene)
    # the pip launcher's children come from the same node_list call, with the same parameters on their command line
    children = launcher.plan(cfg, tmp_path)
    expected = node_list(cfg, tmp_path / "scene.json")
    assert Path(launch_scene).read_text() == (tmp_path / "scene.json").read_text()
    assert [c.spec for c in children] == expected
    for child, spec in zip(children, expected, strict=True):
        assert child.argv[:3] == [sys.executable, "-m", f"coteam_ros.nodes.{spec.executable}"]
        assert child.argv[3:] == ros_args(spec, tmp_path)
        assert child.label == f"{spec.name}@{spec.namespace}"


def test_the_launch_file_starts_a_robots_node_again_after_a_native_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As coteam launch does (coteam_ros.launcher.RunEnding.restart_after_crash): a planner dead of SIGSEGV is
    started again by a timer with the same parameters; the simulator bridge is not."""
    _fake_modules(monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = Path(shutil.copy(SIM, tmp_path))
    spec = importlib.util.spec_from_file_location("launch_file_sim_crash", LAUNCH_FILES["sim"])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    description = module.generate_launch_description()
    context = types.SimpleNamespace(
        launch_configurations={"config": str(config), "out": str(tmp_path / "out"), "serve": "false"}
    )
    (opaque,) = [e for e in description.entities if isinstance(e, _Fake.OpaqueFunction)]
    actions = opaque.execute(context)
    handlers = {
        h.event_handler.target_action.executable: h for h in actions if isinstance(h, _Fake.RegisterEventHandler)
    }
    started = len(_Fake.nodes)
    again = handlers["planner"].event_handler.on_exit(types.SimpleNamespace(returncode=-signal.SIGSEGV), context)
    log, timer = again
    assert "crashed (SIGSEGV): started again in 1 s (1 of 3)" in log.msg and timer.period == launcher.RESTART_DELAY_S
    node, handler = timer.actions
    assert handler.event_handler.target_action is node and len(_Fake.nodes) == started + 1
    crashed = [n for n in _Fake.nodes[:started] if n["executable"] == "planner"][-1]  # the handler's: the last
    assert _Fake.nodes[-1] == crashed, "the same node with the same parameters"
    bridge = handlers["sim_bridge"].event_handler.on_exit(types.SimpleNamespace(returncode=-signal.SIGSEGV), context)
    assert any(isinstance(a, _Fake.Shutdown) for a in bridge), "the simulator's crash ends the run"


def test_the_launch_file_runs_a_composed_robot_in_one_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``composed: true`` under ``ros2 launch``: each robot is one process, the package's ``composed`` executable
    with every node's own arguments and nothing of launch_ros's (no name, namespace or parameters of the process),
    labelled and ended as under coteam launch; a crash starts the whole robot again."""
    from coteam_ros.composed import node_arguments

    _fake_modules(monkeypatch)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = Path(shutil.copy(SIM, tmp_path))
    config.write_text(config.read_text() + "composed: true\n")
    spec = importlib.util.spec_from_file_location("launch_file_sim_composed", LAUNCH_FILES["sim"])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "out"
    context = types.SimpleNamespace(launch_configurations={"config": str(config), "out": str(out), "serve": "false"})
    (opaque,) = [e for e in module.generate_launch_description().entities if isinstance(e, _Fake.OpaqueFunction)]
    handlers = [a for a in opaque.execute(context) if isinstance(a, _Fake.RegisterEventHandler)]
    assert [(n["executable"], n["exec_name"]) for n in _Fake.nodes] == [
        ("sim_bridge", None),
        ("composed", "robot@/alice"),
        ("composed", "robot@/bob"),
    ]
    alice = _Fake.nodes[1]
    assert (alice["package"], alice["output"], alice["name"], alice["namespace"]) == (
        "coteam_ros",
        "screen",
        None,
        None,
    )
    assert alice["parameters"] is None and alice["remappings"] is None
    nodes, rest = node_arguments(alice["arguments"])
    assert rest == [] and [executable for executable, _ in nodes] == ["perception", "planner", "executor"]
    params = {}
    for _, args in nodes:
        params.update(yaml.safe_load(Path(args[args.index("--params-file") + 1]).read_text()))
    scene = params["/alice/planner"]["ros__parameters"]["scene_path"]
    results = out.resolve() / "results.json"
    expected = [s for s in node_list(load_config(config), scene) if s.namespace == "/alice"]
    assert params == {
        s.fqn: {"ros__parameters": {**s.parameters, **launcher.run_outputs(s, results)}} for s in expected
    }
    crashed = handlers[1].event_handler.on_exit(types.SimpleNamespace(returncode=-signal.SIGSEGV), context)
    assert "robot@/alice crashed (SIGSEGV): started again" in crashed[0].msg and _Fake.nodes[-1] == alice
    ended = handlers[0].event_handler.on_exit(types.SimpleNamespace(returncode=0), context)
    assert [a.msg for a in ended if isinstance(a, _Fake.LogInfo)] == [
        "[coteam] sim_bridge@/ exited with code 0: the run ends"
    ]


@pytest.mark.parametrize(
    ("which", "config", "words"), [("sim", HARDWARE, "needs a `world:`"), ("hardware", SIM, "without")]
)
def test_launch_file_rejects_the_other_kind(
    monkeypatch: pytest.MonkeyPatch, which: str, config: Path, words: str
) -> None:
    _fake_modules(monkeypatch)
    with pytest.raises(RuntimeError, match=words):
        _run_launch_file(LAUNCH_FILES[which], config)


def test_package_files() -> None:
    xml = (PKG / "package.xml").read_text()
    for dep in ("rclpy", "coteam_interfaces", "launch_ros", "python3-yaml", "visualization_msgs"):
        assert f"<exec_depend>{dep}</exec_depend>" in xml
    assert "<build_type>ament_python</build_type>" in xml and 'format="3"' in xml
    assert (PKG / "resource" / "coteam_ros").is_file()
    setup = (PKG / "setup.py").read_text()
    assert "coteam.commands" in setup and "share/ament_index/resource_index/packages" in setup
    assert "composed = {PACKAGE}.composed:main" in setup  # ros2 launch's executable of a composed robot


def test_the_bridge_records_the_switches_the_planners_run_with() -> None:
    doc = _edit(SIM_DOC, "team.backend", "llm")
    specs = node_list(parse_config(doc, "inline"), SCENE)
    bridge, planner = specs[0], next(s for s in specs if s.name == "planner")
    assert json.loads(bridge.parameters["params_json"]) == {"backend": "llm"}  # what the planners run with
    assert planner.parameters["backend"] == "llm" and json.loads(planner.parameters["params_json"]) == {}


@pytest.mark.parametrize(
    ("edits", "problem"),
    [
        ({"team.method": "rhp", "team.backend": "llm"}, "rhp has no LLM roles"),
        ({"team.params": {"backend": "llm"}}, "contradicts team.backend 'symbolic'"),
    ],
)
def test_a_backend_the_method_cannot_use_is_an_error(edits: dict, problem: str) -> None:
    doc = SIM_DOC
    for key, value in edits.items():
        doc = _edit(doc, key, value)
    with pytest.raises(ConfigError, match=problem):
        parse_config(doc, "inline")


def test_a_planner_with_a_bad_switch_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_ros(tmp_path, monkeypatch)
    argv = [sys.executable, "-m", "coteam_ros.nodes.planner", "--ros-args", "-p", "params_json:='{\"lamda\": 1}'"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start: pce: unknown switch 'lamda'" in lines[0], proc.stderr


def test_a_composed_robot_whose_node_cannot_start_says_which_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A composed robot's process stops with status 2 and one line naming the node that cannot start; its other
    nodes' arguments (another name, a good scene file) do not reach it."""
    isolate_ros(tmp_path, monkeypatch)
    scene = task_scene(tmp_path)
    perception = ["perception", "--ros-args", "-r", "__node:=perception", "-r", "__ns:=/alice"]
    perception += ["-p", "robot:=alice", "-p", f"scene_path:={scene}", "--"]
    planner = ["planner", "--ros-args", "-r", "__node:=planner", "-r", "__ns:=/alice", "-p", "robot:=alice"]
    planner += ["-p", f"scene_path:={scene}", "-p", "params_json:='{\"lamda\": 1}'", "--"]
    argv = [sys.executable, "-m", "coteam_ros.composed", *perception, *planner]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "cannot start" in line]
    assert len(said) == 1 and said[0].startswith("planner@/alice: cannot start: pce: unknown switch 'lamda'"), said


def test_an_executor_without_nav2_msgs_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_ros(tmp_path, monkeypatch)
    hidden = tmp_path / "hidden" / "nav2_msgs"  # shadows the installed package: as on a ROS 2 without Nav2
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('no nav2_msgs here')\n")
    monkeypatch.setenv("PYTHONPATH", f"{hidden.parent}:{os.environ.get('PYTHONPATH', '')}")
    scene = task_scene(tmp_path)
    argv = [sys.executable, "-m", "coteam_ros.nodes.executor", "--ros-args", "-p", "navigation:=nav2"]
    proc = subprocess.run([*argv, "-p", f"scene_path:={scene}"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2  # coteam_ros.CANNOT_START: coteam launch stops the run
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start: Nav2's interfaces (nav2_msgs) cannot be imported" in lines[0]


# ----------------------------------------------------------------------------------------------------------------
# a local model per robot (team.llm)


def test_a_local_model_is_configured_for_the_llm_backend_only(tmp_path: Path) -> None:
    llm = _edit(_edit(SIM_DOC, "team.backend", "llm"), "team.llm", {"local": True})
    cfg = parse_config(llm, str(tmp_path / "team.yaml"))
    assert cfg.team.local_llm == LocalModelSection(local=True, share="robot", model=None)
    assert model_groups(cfg) == [("alice",), ("bob",)]
    shared = parse_config(_edit(llm, "team.llm", {"local": True, "share": "machine"}), "inline")
    assert model_groups(shared) == [("alice", "bob")]
    assert parse_config(_edit(llm, "team.llm", {"local": False}), "inline").team.local_llm is None
    (tmp_path / "m.gguf").write_bytes(b"x")
    with_file = parse_config(_edit(llm, "team.llm", {"local": True, "model": "m.gguf"}), str(tmp_path / "t.yaml"))
    assert with_file.team.local_llm is not None and with_file.team.local_llm.model == str(tmp_path / "m.gguf")
    for edits, problem in (
        ({"team.llm": {"local": True}}, "serves the llm backend, but team.backend is 'symbolic'"),
        ({"team.backend": "llm", "team.llm": {"local": "yes"}}, "team.llm.local: expected true or false"),
        ({"team.backend": "llm", "team.llm": {"local": True, "share": "house"}}, "expected one of robot, machine"),
        ({"team.backend": "llm", "team.llm": {"local": True, "model": "no.gguf"}}, "no.gguf does not exist"),
        ({"team.backend": "llm", "team.llm": {"local": True, "port": 1}}, "team.llm.port"),
    ):
        doc = SIM_DOC
        for key, value in edits.items():
            doc = _edit(doc, key, value)
        with pytest.raises(ConfigError, match=re.escape(problem)):
            parse_config(doc, str(tmp_path / "team.yaml"))


def test_each_planner_is_pointed_at_its_model_server() -> None:
    cfg = parse_config(_edit(_edit(SIM_DOC, "team.backend", "llm"), "team.llm", {"local": True}), "inline")
    endpoints = {
        r: {"base_url": f"http://127.0.0.1:{9000 + i}/v1", "model": "m"} for i, r in enumerate(("alice", "bob"))
    }
    planners = {s.namespace: s for s in node_list(cfg, SCENE, endpoints) if s.executable == "planner"}
    for robot, endpoint in endpoints.items():
        params = json.loads(str(planners[f"/{robot}"].parameters["params_json"]))
        assert params == endpoint
    bare = [s for s in node_list(cfg, SCENE) if s.executable == "planner"]
    assert all(json.loads(str(s.parameters["params_json"])) == {} for s in bare)


# ----------------------------------------------------------------------------------------------------------------
# signed team messages (security)


def test_planners_sign_by_default_with_the_keystore_next_to_the_file(tmp_path: Path) -> None:
    cfg = parse_config(SIM_DOC, str(tmp_path / "team.yaml"))
    assert cfg.security.sign and cfg.security.keystore == str(tmp_path / "keys")
    planner = next(s for s in node_list(cfg, SCENE) if s.executable == "planner")
    assert planner.parameters["signing_key"] == str(tmp_path / "keys" / "alice.key")
    assert planner.parameters["team_keys"] == str(tmp_path / "keys" / PUBLIC_KEYS)
    elsewhere = parse_config(_edit(SIM_DOC, "security", {"keystore": "/etc/team"}), str(tmp_path / "team.yaml"))
    assert elsewhere.security.keystore == "/etc/team"
    off = parse_config(_edit(SIM_DOC, "security", {"sign": False}), "inline")
    assert all("signing_key" not in s.parameters for s in node_list(off, SCENE))


def test_a_simulated_team_gets_its_keys_at_launch_a_real_one_must_have_them(tmp_path: Path) -> None:
    sim = parse_config(SIM_DOC, str(tmp_path / "sim" / "team.yaml"))
    prepare_keystore(sim)
    keys = sorted(p.name for p in (tmp_path / "sim" / "keys").iterdir())
    assert keys == ["alice.key", "bob.key", "operator.key", PUBLIC_KEYS]  # and the operator's, for coteam tell
    hw = parse_config(HW_DOC, str(tmp_path / "hw.yaml"))
    with pytest.raises(ConfigError) as err:
        prepare_keystore(hw)
    assert str(err.value).startswith(f"{tmp_path / 'hw.yaml'}: security: no {tmp_path / 'keys'}")
    assert "coteam keys init" in str(err.value)
    init_keystore(tmp_path / "keys", hw.robot_names)
    prepare_keystore(hw)


def test_a_planner_without_its_key_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_ros(tmp_path, monkeypatch)
    init_keystore(tmp_path, ["alice", "bob"])
    argv = [
        sys.executable,
        "-m",
        "coteam_ros.nodes.planner",
        "--ros-args",
        "-p",
        f"scene_path:={task_scene(tmp_path)}",
        "-p",
        f"team_keys:={tmp_path / PUBLIC_KEYS}",
    ]
    for key, problem in ((tmp_path / "carol.key", "cannot read the key"), (tmp_path / "bob.key", "not the key")):
        proc = subprocess.run([*argv, "-p", f"signing_key:={key}"], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot start" in lines[0] and problem in lines[0], proc.stderr


def test_a_serving_team_has_a_task_node_and_planners_that_take_its_tasks(tmp_path: Path) -> None:
    """``serve:``: the task node joins the robots' nodes (the home, its safety policy, the reader, the per-task time
    limit), every planner serves, and the task node's records go next to the results; only robots (a world is one
    episode of the simulator) and only per-robot planners."""
    from coteam_ros.launcher import TASKS_JSONL, run_outputs

    cfg = load_config(_write(tmp_path, {**HW_DOC, "serve": {"first_task": False, "reader": "grammar"}}))
    specs = {s.label: s for s in node_list(cfg, SCENE)}
    desk = specs["task_desk@/"]
    assert desk.parameters["first_task"] is False and desk.parameters["reader"] == "grammar"
    assert desk.parameters["scene_path"] == SCENE and desk.parameters["robots"] == ["robot1", "robot2"]
    assert all(specs[f"planner@/{r}"].parameters["serve"] is True for r in ("robot1", "robot2"))
    assert run_outputs(desk, tmp_path / "results.json") == {"results_path": str(tmp_path / TASKS_JSONL)}
    assert "task_desk@/" not in {s.label for s in node_list(load_config(_write(tmp_path, HW_DOC)), SCENE)}
    # a world file's robot with a rest room walks there between tasks; one without keeps still where it stopped
    for home in ("flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(ROOT / "config" / home, tmp_path)
    home = yaml.safe_load((tmp_path / "flat.world.yaml").read_text())
    home["robots"][0].pop("rest"), home["robots"][1].update(rest="livingroom")
    _write(tmp_path, home, "flat.world.yaml")
    doc = {**HW_DOC, "task": {"world_file": "flat.world.yaml"}, "serve": {}, "twin": {}}
    nodes = {s.label: s.parameters for s in node_list(parse_config(doc, str(tmp_path / "team.yaml")), SCENE)}
    assert nodes["planner@/robot2"]["rest_room"] == "livingroom" and "rest_room" not in nodes["planner@/robot1"]
    assert nodes["twin@/"]["serve"] is True  # a serving team's twin runs until stopped, not for the file's task
    with pytest.raises(ConfigError, match="serve: only without a world"):
        parse_config({**SIM_DOC, "serve": {}}, str(tmp_path / "team.yaml"))
    with pytest.raises(ConfigError, match="evocf plans centrally"):
        parse_config({**HW_DOC, "team": {"method": "evocf"}, "serve": {}}, str(tmp_path / "team.yaml"))
