"""A coteam team on real robots (no simulator): perception, planner and executor per robot, Nav2 navigation.

    ros2 launch coteam_ros team_hardware.launch.py config:=config/team_hardware.yaml

The YAML file is read by coteam_ros.config, the same loader `coteam launch` (pip installs) uses, so both
launchers start the same nodes with the same parameters. The coteam core (`pip install -e .` at the repository
root) must be importable.
"""

from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from coteam_ros.config import load_config, node_list
from launch import LaunchDescription

NEEDS_WORLD = False


def _nodes(context, *args, **kwargs):
    path = LaunchConfiguration("config").perform(context)
    cfg = load_config(path)
    if (cfg.world is not None) != NEEDS_WORLD:
        raise RuntimeError(
            f"{path}: team_hardware.launch.py runs without a simulator; remove `world:` or use team_sim.launch.py"
        )
    return [
        Node(
            package="coteam_ros",
            executable=spec.executable,
            name=spec.name,
            namespace=spec.namespace,
            parameters=[spec.parameters],
            remappings=spec.remappings,
            output="screen",
        )
        for spec in node_list(cfg)
    ]


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "config",
                default_value="config/team_hardware.yaml",
                description="team YAML file without a world: section (relative to the current directory)",
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
