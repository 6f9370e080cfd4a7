"""The ``ros2 launch`` side of the team YAML: one launch description for the sim and the hardware launch files.

``launch`` and ``launch_ros`` exist only on apt-installed ROS 2 (no wheels), so they are imported when a launch
file asks for its description, never when ``coteam_ros`` is imported.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

from coteam_ros.keystore import prepare_keystore
from coteam_ros.launcher import DDS_PROFILE
from coteam_ros.node_graph import model_groups, node_list, write_task_scene
from coteam_ros.team_config import TeamConfig, load_config

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


def team_launch_description(kind: str) -> Any:
    """A LaunchDescription with a ``config`` argument that starts ``node_list(load_config(config))``; with a
    world the launch ends when the simulator bridge exits (the episode is over), as ``coteam launch`` does. The
    task's scene file goes to a new temporary folder (launch_ros writes its parameter files to one, too)."""
    from launch.actions import (
        DeclareLaunchArgument,
        OpaqueFunction,
        RegisterEventHandler,
        SetEnvironmentVariable,
        Shutdown,
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
        scene = write_task_scene(cfg, tempfile.mkdtemp(prefix="coteam-launch-"))
        for spec in node_list(cfg, scene, endpoints):
            node = Node(
                package="coteam_ros",
                executable=spec.executable,
                name=spec.name,
                namespace=spec.namespace,
                parameters=[spec.parameters],
                remappings=spec.remappings,
                output="screen",
            )
            actions.append(node)
            if spec.executable == "sim_bridge":
                done = Shutdown(reason="the simulator bridge exited: the episode is over")
                actions.append(RegisterEventHandler(OnProcessExit(target_action=node, on_exit=[done])))
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
            OpaqueFunction(function=nodes),
        ]
    )
