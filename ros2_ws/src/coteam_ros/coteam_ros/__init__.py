"""coteam on ROS 2: the nodes (``coteam_ros.nodes``); the team YAML file (``coteam_ros.team_config``), the nodes it
starts (``coteam_ros.node_graph``) and its signing keys (``coteam_ros.keystore``), shared by ``coteam launch``
(``coteam_ros.launcher``) and the ``ros2 launch`` files; and the MCAP recorder."""

__version__ = "0.1.0"

CANNOT_START = (
    2  # a node's exit status when it cannot start (bad parameters, a missing file or module): the launch stops
)
