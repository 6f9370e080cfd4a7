"""coteam on ROS 2: the nodes (``coteam_ros.nodes``), the team YAML loader (``coteam_ros.config``) shared by
``coteam launch`` (``coteam_ros.launcher``) and the ``ros2 launch`` files, and the MCAP recorder."""

__version__ = "0.1.0"
