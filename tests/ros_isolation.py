"""Isolation of ROS 2 tests that use real DDS: a domain of their own, localhost discovery, logs in tmp_path; and the
task's scene file the nodes they start read."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_tests_isolated = itertools.count()


def domain_id() -> int:
    """A fresh ROS domain in 1..100 for each isolated test (Fast DDS ports stay below Linux's ephemeral range).

    The xdist workers share the range out, and within its share a worker gives each test the next domain (offset by
    the pid, to spread separate runs); with two workers a domain comes round again after 50 tests. A test thus meets
    neither the participants of the tests just before it nor the shared memory that a Fast DDS process killed with
    SIGKILL leaves in its domain: after a fault test killed a planner, a later test's planner in the same domain
    once hung before its first step."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    workers = min(100, max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    share = max(1, 100 // workers)
    return 1 + (index % workers) * share + (os.getpid() + next(_tests_isolated)) % share


def isolate_ros(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """Point this process (and the children it starts, which inherit the environment) at a private domain,
    localhost-only discovery and log directories under ``tmp_path``; returns the domain id."""
    domain = domain_id()
    for key, value in {
        "ROS_DOMAIN_ID": str(domain),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "ROS_HOME": str(tmp_path / "ros_home"),
        "ROS_LOG_DIR": str(tmp_path / "ros_log"),
    }.items():
        monkeypatch.setenv(key, value)
    return domain


@contextmanager
def rclpy_session() -> Iterator[list]:
    """rclpy initialised for one test, yielding a list the test adds its in-process nodes to. They are destroyed at
    the end, before shutdown: a node left to the garbage collector stays on the network, and would take the topics
    and goals of a later test's robots in the same domain."""
    import rclpy

    rclpy.init()
    nodes: list = []
    try:
        yield nodes
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


def task_scene(directory: Path, suite: str = "cwah-test", episode: int = 0) -> str:
    """Episode ``episode`` of ``suite`` saved in ``directory`` as the scene file (``scene_path``) a node reads the
    task from, as ``coteam launch`` writes it."""
    from coteam.domain.scene_io import save_scene
    from coteam_sim.suites import get_suite

    path = directory / f"{suite}-{episode}.json"
    save_scene(get_suite(suite).episodes()[episode].build(), path)
    return str(path)


def node_complaints(tmp_path: Path) -> str:
    """The warnings and errors the nodes of an isolated test logged (under ``tmp_path/ros_log``), for a failure's
    message: what a node noticed is often why a run parted from the one expected."""
    lines = [
        line
        for log in sorted((tmp_path / "ros_log").glob("*.log"))
        for line in log.read_text(errors="replace").splitlines()
        if line.startswith(("[WARN]", "[ERROR]", "[FATAL]"))
    ]
    return "\n".join(lines) or "(no node logged a warning)"
