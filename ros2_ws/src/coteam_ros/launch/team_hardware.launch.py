"""A coteam team on real robots (no simulator): perception, planner and executor per robot, Nav2 navigation.

    ros2 launch coteam_ros team_hardware.launch.py config:=config/team_hardware.yaml

The YAML file is read by coteam_ros.team_config, the same loader `coteam launch` uses (see docs/ros2.md). The coteam
core (`pip install -e .` at the repository root) must be importable.
"""

from coteam_ros.launch_description import team_launch_description


def generate_launch_description():
    return team_launch_description("hardware")
