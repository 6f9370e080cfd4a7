"""A coteam team in the embedded simulator: one sim_bridge plus perception, planner and executor per robot.

    ros2 launch coteam_ros team_sim.launch.py config:=config/team_sim.yaml

The YAML file is read by coteam_ros.team_config, the same loader `coteam launch` (pip installs) uses, so both
launchers start the same nodes with the same parameters. The coteam core (`pip install -e .` at the repository
root) must be importable.
"""

from coteam_ros.launch_description import team_launch_description


def generate_launch_description():
    return team_launch_description("sim")
