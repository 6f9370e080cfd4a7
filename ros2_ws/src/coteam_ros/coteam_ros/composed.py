"""A robot's nodes in one process (``composed: true`` in the team file), as ROS engineers compose nodes that share a
computer: one interpreter, one DDS participant and one rclpy executor instead of one of each per node.

    python -m coteam_ros.composed perception --ros-args -r __node:=perception -r __ns:=/alice --params-file ... -- \\
        planner --ros-args ... -- executor --ros-args ... --

Each node is its executable's name followed by its own ``--ros-args ... --``
(:func:`coteam_ros.node_graph.composed_arguments`); arguments after the last node (``ros2 launch`` may add
``--ros-args``) are the process's. A node is made with its own arguments only (rclpy's ``cli_args`` and
``use_global_arguments=False``): the same name, namespace, parameters and remappings as in a process of its own, and
none of them reaches another node of the process.

The nodes run on one single-threaded executor (:func:`coteam_ros.runtime.spin_nodes`): each node's callbacks run one
at a time, as in its own process, so no node needs a lock (a multi-threaded executor would run a node's futures'
callbacks beside its other callbacks). The price: a long callback of one node (a decision on a slow model) holds up
the others of the robot for as long. The process stops as a node process does: 0 on SIGINT or SIGTERM, the
executor's goals cancelled first; a node that cannot start says so in one line and the process exits with
:data:`~coteam_ros.CANNOT_START`. When a node ends the ROS context (a real robot's planner at the end of its task),
the whole robot's process ends.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

from rclpy.node import Node

from coteam_ros.runtime import cannot_start, spin_nodes

# the nodes a robot runs (coteam_ros.node_graph.node_list): executable -> its class in coteam_ros.nodes.<executable>
NODE_CLASSES = {
    "robot_state": "RobotStateNode",
    "perception": "PerceptionNode",
    "planner": "PlannerNode",
    "relay": "RelayNode",
    "executor": "ExecutorNode",
}
ROS_ARGS, END = "--ros-args", "--"


def node_arguments(argv: Sequence[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """``argv`` split into each node's executable and its ``--ros-args`` (without the closing ``--``), and the
    process's own arguments after the last node. A :class:`ValueError` says what is wrong with them."""
    nodes: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(argv) and argv[i] != ROS_ARGS:
        executable = argv[i]
        if executable not in NODE_CLASSES:
            raise ValueError(f"{executable!r} is not a robot's node ({', '.join(NODE_CLASSES)})")
        if i + 1 >= len(argv) or argv[i + 1] != ROS_ARGS or END not in argv[i + 2 :]:
            raise ValueError(f"{executable}: expected its own {ROS_ARGS} ... {END}")
        end = argv.index(END, i + 2)
        nodes.append((executable, list(argv[i + 1 : end])))
        i = end + 1
    if not nodes:
        raise ValueError(f"no node: expected <executable> {ROS_ARGS} ... {END} per node")
    return nodes, list(argv[i:])


def node_maker(executable: str, args: list[str]) -> Callable[[], Node]:
    """What makes the node: its class, given its own arguments only. Named ``<name>@<namespace>`` (its remaps), as
    the line that says it cannot start names it."""
    remaps = dict(args[j + 1].split(":=", 1) for j, arg in enumerate(args[:-1]) if arg == "-r" and ":=" in args[j + 1])

    def make() -> Node:
        module = importlib.import_module(f"coteam_ros.nodes.{executable}")
        return getattr(module, NODE_CLASSES[executable])(cli_args=args, use_global_arguments=False)

    make.__name__ = f"{remaps.get('__node', executable)}@{remaps.get('__ns', '/')}"
    return make


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        nodes, rest = node_arguments(args)
    except ValueError as exc:
        raise cannot_start("composed", exc) from None
    spin_nodes([node_maker(executable, node_args) for executable, node_args in nodes], [sys.argv[0], *rest])


if __name__ == "__main__":
    main()
