"""The ``ros2 launch`` side of the team YAML: one launch description for the sim and the hardware launch files.

It does what ``coteam launch`` does (:mod:`coteam_ros.launcher`), from the same pieces: the nodes of
:func:`~coteam_ros.node_graph.node_list` with what each writes to the run's ``out`` folder
(:func:`~coteam_ros.launcher.run_outputs`: results, traces, end reports), and the run ends as
:class:`~coteam_ros.launcher.RunEnding` says (a node that cannot start stops it, the bridge's exit or the last
planner's end of its task ends it); a run on robots then writes ``results.json`` from the end reports
(:func:`~coteam_ros.launcher.finish_team_run`); a robot's node that crashes is started again as there
(:meth:`~coteam_ros.launcher.RunEnding.restart_after_crash`). A composed robot's nodes run in one process, the
``composed`` executable (:mod:`coteam_ros.composed`) with each node's own ``--ros-args``, as ``coteam launch`` runs
them. What ``ros2 launch`` cannot do: its own exit status is not the run's (``results.json`` says whether the goal was
met), and it has no ``--timeout``.

``launch`` and ``launch_ros`` exist only on apt-installed ROS 2 (no wheels), so they are imported when a launch
file asks for its description, never when ``coteam_ros`` is imported; :func:`launch_plan` is what the description
starts, testable without them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coteam_ros.keystore import prepare_keystore
from coteam_ros.launcher import (
    DDS_PROFILE,
    RESTART_DELAY_S,
    Child,
    RunEnding,
    finish_team_run,
    fresh_results,
    run_outputs,
)
from coteam_ros.node_graph import NodeSpec, composed_arguments, model_groups, node_list, processes, write_task_scene
from coteam_ros.team_config import ServeSection, TeamConfig, load_config

DEFAULT_OUT = "runs/ros2-launch"  # the `out` launch argument's default, as `coteam launch --out`

_KINDS = {
    # kind: (needs a world: section, default config, what to use instead)
    "sim": (True, "config/team_sim.yaml", "without one use team_hardware.launch.py"),
    "hardware": (False, "config/team_hardware.yaml", "remove `world:` or use team_sim.launch.py"),
}


def local_model_processes(cfg: TeamConfig) -> tuple[list[Any], dict[str, dict[str, str]]]:
    """``team.llm``'s local model servers as launch processes (``coteam llm serve`` on ports chosen now), and each
    robot's ``{"base_url", "model"}``. A planner that asks before its server is up gets a connection error, which
    the LLM backend retries."""
    groups, local = model_groups(cfg), cfg.team.local_llm
    actions: list[Any] = []
    endpoints: dict[str, dict[str, str]] = {}
    if not groups or local is None:
        return actions, endpoints
    from launch.actions import ExecuteProcess

    from coteam.llm.local import LocalLLMServer, LocalServerSettings, free_port

    for robots in groups:
        port = free_port("127.0.0.1")
        cmd = [sys.executable, "-m", "coteam.cli", "llm", "serve", "--port", str(port)]
        if local.model is not None:
            cmd += ["--model", local.model]
        actions.append(ExecuteProcess(cmd=cmd, name=f"llm_{'_'.join(robots)}", output="screen"))
        model = LocalLLMServer(LocalServerSettings(model=local.model)).model_name
        endpoints.update({r: {"base_url": f"http://127.0.0.1:{port}/v1", "model": model} for r in robots})
    return actions, endpoints


@dataclass(frozen=True)
class LaunchedNode:
    spec: NodeSpec
    parameters: dict[str, Any]  # the node's, with where it writes its part of the run's outputs


@dataclass(frozen=True)
class LaunchedProcess:
    """A process the launch starts: one node (launch_ros gives it its name, parameters and remappings), or a
    composed robot's nodes, each with its own ``--ros-args`` in ``arguments`` (``coteam_ros.composed``'s)."""

    label: str  # as coteam launch labels it (coteam_ros.launcher.Child.of)
    nodes: tuple[LaunchedNode, ...]
    arguments: tuple[str, ...] = ()  # a composed robot's


@dataclass
class LaunchPlan:
    """What a ``ros2 launch`` of a team file starts, and how its run ends."""

    cfg: TeamConfig
    out: Path
    processes: list[LaunchedProcess]
    ending: RunEnding

    @property
    def nodes(self) -> list[LaunchedNode]:
        """Every node the launch starts, in start order."""
        return [node for process in self.processes for node in process.nodes]

    def exited(self, label: str, code: int) -> tuple[list[str], bool]:
        """A node exited: what to say, and whether the launch shuts down now (a run on robots has then written its
        ``results.json``)."""
        said, result = self.ending.exited(label, code)
        if result is None:
            return said, False
        if self.cfg.world is None:
            result, unfinished = finish_team_run(self.cfg, self.out, result)
            said += [unfinished] if unfinished else []
            said.append(f"results in {self.out / 'results.json'} (exit {result} as coteam launch would say)")
        return said, True


def launch_plan(
    cfg: TeamConfig,
    out: str | os.PathLike[str],
    scene: str,
    endpoints: dict[str, dict[str, str]] | None = None,
    *,
    serve: bool = False,
    params_dir: str | os.PathLike[str] | None = None,
) -> LaunchPlan:
    """The nodes of ``cfg`` for ``ros2 launch`` in their processes (a composed robot's together, its nodes' params
    files written to ``params_dir``, by default a new temporary folder), each told where it writes its part of the
    run's outputs in ``out`` (made, and cleared of a previous run's), and the run's ending. ``serve``: a serving team
    (``serve:=true``), as the team file's ``serve:`` section says."""
    if serve and cfg.serve is None:
        cfg = cfg.model_copy(update={"serve": ServeSection()})
    directory = Path(out).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    results = fresh_results(directory)

    def outputs(spec: NodeSpec) -> dict[str, str]:
        return run_outputs(spec, results)

    launched: list[LaunchedProcess] = []
    children: list[Child] = []
    for group in processes(cfg, node_list(cfg, scene, endpoints)):
        arguments = []
        if len(group) > 1:
            params_dir = params_dir or tempfile.mkdtemp(prefix="coteam-launch-")
            arguments = composed_arguments(group, params_dir, outputs)
        children.append(Child.of(group, arguments))
        nodes = tuple(LaunchedNode(spec, {**spec.parameters, **outputs(spec)}) for spec in group)
        launched.append(LaunchedProcess(children[-1].label, nodes, tuple(arguments)))
    return LaunchPlan(cfg, directory, launched, RunEnding.of(children))


def team_launch_description(kind: str) -> Any:
    """A LaunchDescription with ``config`` and ``out`` arguments that starts :func:`launch_plan`'s nodes and ends
    the run as ``coteam launch`` does (module docstring). The task's scene file and a composed robot's nodes'
    parameter files go to a new temporary folder (launch_ros writes its parameter files to one, too)."""
    from launch.actions import (
        DeclareLaunchArgument,
        LogInfo,
        OpaqueFunction,
        RegisterEventHandler,
        SetEnvironmentVariable,
        Shutdown,
        TimerAction,
    )
    from launch.event_handlers import OnProcessExit
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    from launch import LaunchDescription

    needs_world, default_config, instead = _KINDS[kind]

    def nodes(context: Any, *args: Any, **kwargs: Any) -> list[Any]:
        path = LaunchConfiguration("config").perform(context)
        cfg = load_config(path)
        if (cfg.world is not None) != needs_world:
            need = "needs a `world:` section" if needs_world else "runs without a simulator"
            raise RuntimeError(f"{path}: team_{kind}.launch.py {need}; {instead}")
        prepare_keystore(cfg)
        actions, endpoints = local_model_processes(cfg)
        folder = tempfile.mkdtemp(prefix="coteam-launch-")  # the task's scene, a composed robot's params files
        scene = write_task_scene(cfg, folder)
        serve = LaunchConfiguration("serve").perform(context).strip().lower() in ("true", "1", "yes")
        out = LaunchConfiguration("out").perform(context)
        run = launch_plan(cfg, out, str(scene), endpoints, serve=serve, params_dir=folder)

        def started(process: LaunchedProcess) -> list[Any]:
            if process.arguments:  # a composed robot: its nodes' own arguments, none of the process's
                node = Node(
                    package="coteam_ros",
                    executable="composed",
                    exec_name=process.label,
                    arguments=list(process.arguments),
                    output="screen",
                )
            else:
                ((spec, parameters),) = [(n.spec, n.parameters) for n in process.nodes]
                node = Node(
                    package="coteam_ros",
                    executable=spec.executable,
                    name=spec.name,
                    namespace=spec.namespace,
                    parameters=[parameters],
                    remappings=spec.remappings,
                    output="screen",
                )
            on_exit = lambda event, _context: exited(process, event.returncode)  # noqa: E731
            return [node, RegisterEventHandler(OnProcessExit(target_action=node, on_exit=on_exit))]

        def exited(process: LaunchedProcess, code: int) -> list[Any]:
            if restart := run.ending.restart_after_crash(process.label, code):
                return [
                    LogInfo(msg=f"[coteam] {restart}"),
                    TimerAction(period=RESTART_DELAY_S, actions=started(process)),
                ]
            said, ends = run.exited(process.label, code)
            actions = [LogInfo(msg=f"[coteam] {line}") for line in said]
            return [*actions, Shutdown(reason=said[-1])] if ends else actions

        for process in run.processes:
            actions += started(process)
        return actions

    world = "with" if needs_world else "without"
    dds = os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE", str(DDS_PROFILE))  # as `coteam launch` (launcher.child_env)
    return LaunchDescription(
        [
            SetEnvironmentVariable("FASTDDS_DEFAULT_PROFILES_FILE", dds),
            DeclareLaunchArgument(
                "config",
                default_value=default_config,
                description=f"team YAML file {world} a world: section (relative to the current directory)",
            ),
            DeclareLaunchArgument(
                "out",
                default_value=DEFAULT_OUT,
                description="where the run's results go: results.json, traces, the robots' end reports",
            ),
            DeclareLaunchArgument(
                "serve",
                default_value="false",
                description="true: the team keeps running and takes tasks (coteam task) until it is stopped",
            ),
            OpaqueFunction(function=nodes),
        ]
    )
