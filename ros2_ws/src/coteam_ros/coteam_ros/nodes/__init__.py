"""The coteam ROS 2 nodes, one module and one class each; ``python -m coteam_ros.nodes.<name>`` runs one (what they
share around rclpy is :mod:`coteam_ros.runtime`)."""
