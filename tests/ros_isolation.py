"""Isolation of ROS 2 tests that use real DDS: a domain of their own, localhost discovery, logs in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def domain_id() -> int:
    """A ROS domain in 1..100 for this test process (Fast DDS ports stay below Linux's ephemeral range);
    pid and xdist worker spread parallel runs over the range."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    return 1 + (os.getpid() + 37 * index) % 100


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
    the end, before shutdown: a node left to the garbage collector stays in the worker's ROS domain (every test of a
    pytest worker shares it) and takes the topics and goals of the next test's robots."""
    import rclpy

    rclpy.init()
    nodes: list = []
    try:
        yield nodes
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
