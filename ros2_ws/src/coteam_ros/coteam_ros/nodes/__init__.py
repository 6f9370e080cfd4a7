"""The coteam ROS 2 nodes: one module per node, each runnable as ``python -m coteam_ros.nodes.<node>``."""
