"""Test helpers for runs of the ROS 2 team over real DDS: a team file, the comparable part of a trace, waiting for a
robot's step, and stopping a test's node and children."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

RUN_TIMEOUT_S = 240.0


def write_config(path: Path, world: str, robots: tuple[str, ...] = ("alice", "bob"), method: str = "pce") -> Path:
    listed = ", ".join(f"{{name: {r}}}" for r in robots)
    path.write_text(
        f"world: {{{world}}}\nteam: {{method: {method}, backend: symbolic}}\nnavigation: sim\nrobots: [{listed}]\n"
    )
    return path


def comparable(trace: dict) -> dict:
    return {
        "steps": [(s["step"], s["clock"], s["actions"], s["failures"], s["digest"]) for s in trace["steps"]],
        "messages": trace["messages"],
        # robots decide in parallel: per robot in order, across robots by step
        "decisions": sorted(((d["step"], d["agent"], d["action"]) for d in trace["decisions"]), key=lambda d: d[:2]),
    }


def wait_for_step(node, robot: str, step: int) -> list[int]:
    """Spin ``node`` until ``robot``'s status reaches ``step`` (at most 60 s); the steps seen, a list that keeps
    growing while ``node`` spins."""
    import rclpy
    from coteam_interfaces.msg import RobotStatus
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    steps: list[int] = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(RobotStatus, f"/{robot}/status", lambda m: steps.append(m.step), qos)
    deadline = time.monotonic() + 60
    while not (steps and steps[-1] >= step) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    assert steps and steps[-1] >= step, f"{robot} did not reach step {step}"
    return steps


def shut_down(node, procs: dict[str, subprocess.Popen]) -> None:
    """End a test's ROS node and stop every child still running (SIGINT, then kill after 10 s)."""
    import rclpy

    node.destroy_node()
    rclpy.try_shutdown()
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs.values():
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
