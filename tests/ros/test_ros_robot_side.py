"""The robots' nodes need no simulator: planner, executor, perception and robot_state (and a centralised team's
coordinator), and ``coteam_ros.episode``
which gives them the task from a scene file, import in a Python where ``coteam_sim`` and ``coteam_harness`` are not
installed. The sim bridge is the node that runs the simulator."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

ROS_PKG = Path(__file__).resolve().parents[2] / "ros2_ws" / "src" / "coteam_ros"
ROBOT_SIDE = [
    "coteam_ros.episode",
    "coteam_ros.nodes.planner",
    "coteam_ros.nodes.executor",
    "coteam_ros.nodes.perception",
    "coteam_ros.nodes.robot_state",
    "coteam_ros.nodes.coordinator",
]
WITHOUT_SIMULATOR = """
import importlib, importlib.abc, sys

class NotOnARobot(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("coteam_sim", "coteam_harness"):
            raise ModuleNotFoundError(f"No module named {name!r} (not on a robot)", name=name)
        return None

sys.meta_path.insert(0, NotOnARobot())
importlib.import_module(sys.argv[1])
"""


def _import_without_simulator(module: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROS_PKG), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SIMULATOR, module], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize("module", ROBOT_SIDE)
def test_a_robot_node_imports_without_the_simulator(module: str) -> None:
    proc = _import_without_simulator(module)
    assert proc.returncode == 0, proc.stderr


def test_the_sim_bridge_does_not() -> None:
    proc = _import_without_simulator("coteam_ros.nodes.sim_bridge")
    assert proc.returncode != 0 and "(not on a robot)" in proc.stderr, proc.stderr
