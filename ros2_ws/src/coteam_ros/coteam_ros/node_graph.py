"""The nodes a team config starts, shared by ``coteam launch`` and the ``ros2 launch`` files: each node's name,
namespace, parameters and remappings (:func:`node_list`), the task's scene file they read (:func:`write_task_scene`),
the processes they run in (:func:`processes`: a composed robot's nodes in one) and the ``--ros-args`` of a node
(:func:`ros_args`; a composed robot's process: :func:`composed_arguments`).

ROS parameter values are only ``bool``, ``int``, ``float``, ``str`` or non-empty lists of one of them (launch_ros
rejects empty lists and rcl drops them), so mappings travel as JSON strings (``params_json``) and an empty
``teammates`` list is left out (a one-robot team).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from coteam.domain.capabilities import capabilities_json
from coteam.domain.scene_io import save_scene
from coteam.registry import method_class, observes_world
from coteam_ros.team_config import TeamConfig, WorldSection

__all__ = [
    "NodeSpec",
    "ParamValue",
    "composed_arguments",
    "model_groups",
    "node_list",
    "processes",
    "ros_args",
    "write_params_file",
    "write_task_scene",
]

ParamValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str]
TASK_SCENE = "scene.json"  # the task's scene file in the launch's folder
TEAMMATE_WAIT_S = 2.0  # lockstep: how long a centralised team's executor waits for its teammates' statuses of a step


@dataclass(frozen=True)
class NodeSpec:
    """One node to start: the same fields for ``launch_ros.actions.Node`` and for ``coteam launch``."""

    name: str
    executable: str
    namespace: str
    parameters: dict[str, ParamValue]
    remappings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def fqn(self) -> str:
        """Fully-qualified node name, e.g. ``/alice/planner`` or ``/sim_bridge``."""
        return f"{self.namespace.rstrip('/')}/{self.name}"

    @property
    def label(self) -> str:
        """``planner@/alice``: how the launcher prefixes the node's output."""
        return f"{self.name}@{self.namespace}"


RELAY_PARAMETERS = ("robot", "scene_path", "ends_task", "time_limit_s")  # what a relay takes of a planner's


def _relay(planner: dict[str, ParamValue]) -> dict[str, ParamValue]:
    """A centralised team's robot runs a relay (its coordinator decides): the parameters it takes of a planner's."""
    return {key: value for key, value in planner.items() if key in RELAY_PARAMETERS}


def write_task_scene(cfg: TeamConfig, directory: str | os.PathLike[str]) -> Path:
    """The scene file (``coteam.domain.scene_io`` JSON) every node reads the task from: the world's saved scene, or the
    suite episode of ``world:`` / ``task:`` built here and written to ``directory`` (the launch runs on the operator's
    machine; the robots' nodes do not import the simulator)."""
    if cfg.world is not None and cfg.world.scene is not None:
        return Path(cfg.world.scene)
    ref = cfg.episode_ref
    path = Path(directory) / TASK_SCENE
    if ref.world is not None:  # a world file: no simulator needed
        save_scene(ref.world.scene, path)
        return path
    from coteam_sim.suites import get_suite

    assert ref.suite is not None
    spec = get_suite(ref.suite).episodes()[ref.episode]
    if cfg.world is not None and _on_an_engine(cfg):  # the bridge's scene (AI2-THOR: a session's, read once)
        from coteam_sim.bridges import bridge_for
        from coteam_sim.bridges.settings import UnitySettings

        unity = UnitySettings.of(**cfg.world.unity.model_dump())
        bridge = bridge_for(spec, cfg.world.engine, unity)
        scene = bridge.known_scene
        if scene is None:
            scene, engine = bridge.start(tuple(cfg.robot_names), ref.seed)
            engine.close()  # (a session that fails to start is closed by the bridge)
        save_scene(scene, path)
        return path
    save_scene(spec.build(), path)
    return path


def _engine_parameters(world: WorldSection) -> dict[str, ParamValue]:
    """The sim_bridge's parameters for a bridge suite: the episode, the engine and how to start its Unity build."""
    unity = world.unity
    return {
        "episode": world.episode,
        "engine": world.engine,
        "thor_executable": unity.thor_executable or "",
        "thor_platform": unity.thor_platform or "",
        "tdw_port": unity.tdw_port,
        "tdw_launch": unity.tdw_launch,
    }


def _on_an_engine(cfg: TeamConfig) -> bool:
    """Whether the world's episode runs on an external engine (a bridge suite: its sim_bridge opens the session)."""
    if cfg.world is None or cfg.world.scene is not None:
        return False
    from coteam_sim.suites import get_suite

    return bool(get_suite(cfg.world.suite).episodes()[cfg.world.episode].bridge)


def _planner_switches(cfg: TeamConfig, robot: str, endpoints: Mapping[str, Mapping[str, str]] | None) -> dict[str, Any]:
    """The method's switches for ``robot``'s planner (or a centralised team's coordinator): its model endpoint, and
    its own store file."""
    switches = {**cfg.team.params, **(endpoints or {}).get(robot, {})}
    store = cfg.team.store_of(robot, cfg.robot_names)
    if store is not None:
        switches["store"] = store
    return switches


def model_groups(cfg: TeamConfig) -> list[tuple[str, ...]]:
    """The robots served by each local model server of ``team.llm`` (none without it)."""
    local = cfg.team.local_llm
    if local is None:
        return []
    names = tuple(cfg.robot_names)
    return [(n,) for n in names] if local.share == "robot" else [names]


def node_list(
    cfg: TeamConfig, scene_path: str | os.PathLike[str], endpoints: Mapping[str, Mapping[str, str]] | None = None
) -> list[NodeSpec]:
    """The nodes of a team run, in start order: the ``sim_bridge`` (with a world), the team's ``coordinator`` (a
    centralised method), then per robot its ``robot_state`` (without a world), ``perception``, ``planner`` (a
    ``relay`` in a centralised team) and ``executor`` in the robot's namespace, and a serving team's ``task_desk``.
    Every node reads the task from ``scene_path`` (:func:`write_task_scene`). ``endpoints`` (robot ->
    ``{"base_url", "model"}``) point each planner at its model server."""
    episode: dict[str, ParamValue] = {"scene_path": str(scene_path), "seed": cfg.episode_ref.seed}
    names = cfg.robot_names
    bodies = cfg.capabilities
    # real robots' bodies (a simulated world's robots are the benchmark's)
    team_bodies: dict[str, ParamValue] = {} if cfg.world else {"capabilities_json": capabilities_json(bodies)}
    specs: list[NodeSpec] = []
    if cfg.world is not None:
        w = cfg.world
        specs.append(
            NodeSpec(
                "sim_bridge",
                "sim_bridge",
                "/",
                {
                    "suite": w.scene or w.suite,  # what the results call the suite (a saved scene: its path)
                    **episode,
                    "mode": w.mode,
                    "tick_hz": w.tick_hz,
                    "robots": list(names),
                    "namespaces": [r.namespace for r in cfg.robots],
                    "method": cfg.team.method,
                    "params_json": json.dumps(cfg.team.switches(), sort_keys=True),
                    "cameras": cfg.perception is not None,
                    **(_engine_parameters(w) if _on_an_engine(cfg) else {}),
                },
            )
        )
    if cfg.twin is not None:  # simulated robots with a real robot's interfaces: the robots' nodes run as on hardware
        ref = cfg.episode_ref
        specs.append(
            NodeSpec(
                "twin",
                "twin",
                "/",
                {
                    "suite": ref.world_file or ref.suite or "",
                    **episode,
                    "mode": "realtime",
                    "tick_hz": cfg.twin.tick_hz,
                    "robots": list(names),
                    "namespaces": [r.namespace for r in cfg.robots],
                    "method": cfg.team.method,
                    "params_json": json.dumps(cfg.team.switches(), sort_keys=True),
                    "time_limit_s": cfg.time_limit_s or 0.0,
                    "serve": cfg.serve is not None,  # then it runs until stopped, not for the file's task
                    "faults_json": json.dumps(cfg.twin.faults),
                    "robot_profiles_json": json.dumps(cfg.twin.robots, sort_keys=True),
                    "tf_lag_s": cfg.twin.tf_lag_s,
                    "robots_block": cfg.twin.robots_block,
                    "detections_frame": cfg.twin.detections_frame,
                    "detections_delay_s": cfg.twin.detections_delay_s,
                    "detector_json": cfg.twin.detector.model_dump_json(),
                    "odometry_json": cfg.twin.odometry.model_dump_json(),
                    **team_bodies,
                    "cameras": cfg.perception is not None,  # the robots' perception nodes detect in its images
                },
            )
        )
    lockstep = cfg.world is not None and cfg.world.mode == "lockstep"
    # the home's safety policy: the planners leave out what it refuses, the executors refuse it and ask for approvals
    safety: dict[str, ParamValue] = {"safety_path": cfg.safety_path} if cfg.safety_path else {}
    executor: dict[str, ParamValue] = {
        "robots": list(names),
        "navigation": cfg.navigation,
        **episode,
        **safety,
        **team_bodies,
    }
    if cfg.world is None:  # a real robot's Nav2 and arm: when to give up on a goal, and on a whole action
        executor.update(cfg.execution.model_dump())
    centralised = method_class(cfg.team.method).centralised
    if centralised:  # one planner for the whole team: each robot runs a relay
        specs.append(
            NodeSpec(
                "coordinator",
                "coordinator",
                "/",
                {
                    "robots": list(names),
                    "namespaces": [r.namespace for r in cfg.robots],
                    "method": cfg.team.method,
                    "backend": cfg.team.backend,
                    # the first robot's model server (a local model shared by the team), the team's store file
                    "params_json": json.dumps(_planner_switches(cfg, names[0], endpoints), sort_keys=True),
                    "lockstep": lockstep,
                    **episode,
                    **safety,
                    **team_bodies,
                    # real robots: the task ends when the team's map shows the goal met (coteam_ros.task_end)
                    **({"ends_task": True, "time_limit_s": cfg.time_limit_s or 0.0} if cfg.world is None else {}),
                },
            )
        )
        if len(names) > 1 and not observes_world(cfg.team.method, cfg.team.switches()):
            # its robots' skills read what the whole team sees, as their memories do in process
            executor["teammate_wait_s"] = TEAMMATE_WAIT_S if lockstep else 0.0
    perception: dict[str, ParamValue] = {"robots": list(names), **episode}  # the task's map places detections
    if cfg.perception is not None:
        pc = cfg.perception
        perception["detector"] = pc.detector
        if cfg.world is not None:  # the bridge's status goes through perception, which adds what the cameras saw
            perception["status_from_cameras"] = True
        if pc.markers:
            perception["markers"] = pc.markers
        if pc.marker_size_m:
            perception["marker_size_m"] = pc.marker_size_m
        if pc.object_depth_m:
            perception["object_depth_m"] = pc.object_depth_m
        if pc.colours:
            perception["colours"] = pc.colours
        if pc.model:
            perception.update(model=pc.model, classes=list(pc.classes))
    for robot in cfg.robots:
        remappings = list(robot.remap.items())
        if "teammate_wait_s" in executor:
            executor["teammate_status"] = [f"{r.namespace.rstrip('/')}/status" for r in cfg.robots if r is not robot]
        if cfg.world is None and len(cfg.robots) > 1:  # real robots: teammates met in a passage (coteam.home.passage)
            executor["teammate_poses"] = [f"{r.namespace.rstrip('/')}/status" for r in cfg.robots if r is not robot]
        teammates = [n for n in names if n != robot.name]
        planner: dict[str, ParamValue] = {"robot": robot.name, "robots": list(names)}
        if teammates:  # an empty list is not a valid ROS parameter value (one-robot team: left out)
            planner["teammates"] = teammates
        planner.update(
            method=cfg.team.method,
            backend=cfg.team.backend,
            params_json=json.dumps(_planner_switches(cfg, robot.name, endpoints), sort_keys=True),
            **episode,
            **safety,
            **team_bodies,
        )
        if cfg.security.sign:
            planner.update(
                signing_key=str(cfg.security.private_key(robot.name)),
                team_keys=str(cfg.security.public_keys),
                max_message_age_s=cfg.security.max_age_s,
            )
        if cfg.serve is not None:  # tasks come from the team's task node (/team/task_assignment)
            planner["serve"] = True
            if robot.name in cfg.rest_rooms:  # and it waits for them there
                planner["rest_room"] = cfg.rest_rooms[robot.name]
        if cfg.world is None:  # a real robot: its status comes from its odometry and detector
            planner["message_delivery"] = "arrival"
            planner["ends_task"] = True  # when its map shows the goal met (coteam_ros.task_end)
            planner["time_limit_s"] = cfg.time_limit_s or 0.0
            specs.append(
                NodeSpec(
                    "robot_state",
                    "robot_state",
                    robot.namespace,
                    {
                        "robot": robot.name,
                        "robots": list(names),
                        "base_frame": robot.base_frame,
                        "hands": bodies[robot.name].grippers,  # the arm's grippers, in its state
                        "wiring_timeout_s": cfg.execution.wiring_timeout_s,
                        **episode,
                    },
                    list(remappings),
                )
            )
        specs += [
            NodeSpec(
                "perception",
                "perception",
                robot.namespace,
                {"robot": robot.name, **perception},
                list(remappings),
            ),
            NodeSpec("relay", "relay", robot.namespace, _relay(planner), list(remappings))
            if centralised
            else NodeSpec("planner", "planner", robot.namespace, planner, list(remappings)),
            NodeSpec("executor", "executor", robot.namespace, {"robot": robot.name, **executor}, list(remappings)),
        ]
    if cfg.serve is not None:  # people's tasks in, one at a time to the robots (coteam task)
        serve = cfg.serve
        desk: dict[str, ParamValue] = {
            "robots": list(names),
            **episode,
            **safety,
            "first_task": serve.first_task,
            "time_limit_s": cfg.time_limit_s or 0.0,
            "reader": serve.reader,
        }
        desk.update({k: v for k, v in (("llm_base_url", serve.llm_base_url), ("llm_model", serve.llm_model)) if v})
        specs.append(NodeSpec("task_desk", "task_desk", "/", desk))
    if cfg.twin is not None:  # the robots' nodes stamp with the twin's clock (/clock): their stamps and its agree
        for spec in specs:
            if spec.name != "twin":
                spec.parameters["use_sim_time"] = True
    for spec in specs:
        for key, value in spec.parameters.items():
            _check_param(spec, key, value)
    return specs


def processes(cfg: TeamConfig, specs: Sequence[NodeSpec]) -> list[tuple[NodeSpec, ...]]:
    """The processes that run ``specs`` (:func:`node_list`'s), in start order: one node each, except a composed
    robot's (``composed:`` in the team file, :meth:`~coteam_ros.team_config.TeamConfig.composes`), whose nodes run
    together in one process, started where its first node would be. A robot's nodes are those in its namespace (no
    robot's is ``/``, where the team's own nodes are)."""
    composed = {r.namespace for r in cfg.robots if cfg.composes(r)}
    robots: dict[str, list[NodeSpec]] = {}
    groups: list[list[NodeSpec]] = []
    for spec in specs:
        if spec.namespace not in composed:
            groups.append([spec])
        elif spec.namespace in robots:
            robots[spec.namespace].append(spec)
        else:
            robots[spec.namespace] = [spec]
            groups.append(robots[spec.namespace])
    return [tuple(group) for group in groups]


def _check_param(spec: NodeSpec, key: str, value: Any) -> None:
    ok = isinstance(value, bool | int | float | str)
    if isinstance(value, list) and value:
        kinds = {bool if isinstance(v, bool) else type(v) for v in value}
        ok = len(kinds) == 1 and kinds <= {bool, int, float, str}
    if not ok:
        raise TypeError(f"{spec.label}: parameter {key}={value!r} is not a valid ROS parameter value")


# ----------------------------------------------------------------------------------------------------------------
# Command-line arguments for a node process (what ros2 launch does for launch_ros.actions.Node)


def _yaml_scalar(value: ParamValue) -> str:
    """A value as rcl's YAML parser reads it back with the same type (strings quoted when ambiguous)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return text.removesuffix("\n...\n").strip()  # a plain scalar document ends with "..."


def write_params_file(spec: NodeSpec, directory: str | os.PathLike[str], extra: Mapping[str, ParamValue] = ()) -> Path:
    """Write ``<fqn>: {ros__parameters: ...}`` for one node; returns the file's path."""
    params = {**spec.parameters, **dict(extra)}
    path = Path(directory) / f"{spec.fqn.strip('/').replace('/', '__')}.params.yaml"
    path.write_text(yaml.safe_dump({spec.fqn: {"ros__parameters": params}}, sort_keys=False, allow_unicode=True))
    return path


def ros_args(
    spec: NodeSpec,
    params_dir: str | os.PathLike[str] | None = None,
    extra: Mapping[str, ParamValue] = (),
) -> list[str]:
    """``--ros-args`` for a node process: name, namespace, parameters, remappings.

    With ``params_dir`` the parameters go to a per-node params file there (``--params-file``, as ros2 launch
    does); without it each is a ``-p key:=value`` with a YAML value that rcl parses back to the same type.
    ``extra`` adds parameters (the launcher's ``results_path``).
    """
    args = ["--ros-args", "-r", f"__node:={spec.name}", "-r", f"__ns:={spec.namespace}"]
    params = {**spec.parameters, **dict(extra)}
    if params_dir is not None:
        args += ["--params-file", str(write_params_file(spec, params_dir, extra))]
    else:
        for key, value in params.items():
            args += ["-p", f"{key}:={_yaml_scalar(value)}"]
    for src, dst in spec.remappings:
        args += ["-r", f"{src}:={dst}"]
    return args


def composed_arguments(
    specs: Sequence[NodeSpec],
    params_dir: str | os.PathLike[str],
    extra: Callable[[NodeSpec], Mapping[str, ParamValue]] = lambda spec: {},
) -> list[str]:
    """The arguments of a composed robot's process (``coteam_ros.composed``): per node its executable and its own
    ``--ros-args`` (:func:`ros_args`, parameters in a params file in ``params_dir``, plus ``extra(spec)``), closed by
    ``--``. Each node reads only its own (rclpy's ``cli_args`` without the process's global arguments), so one
    node's name, namespace, parameters and remappings never reach another."""
    args: list[str] = []
    for spec in specs:
        args += [spec.executable, *ros_args(spec, params_dir, extra(spec)), "--"]
    return args
