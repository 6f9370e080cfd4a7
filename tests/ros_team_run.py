"""Test helpers for runs of the ROS 2 team over real DDS: a team file, the comparable part of a trace, watching a
robot's steps, and stopping a test's node and children."""

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


class StatusSteps:
    """The steps of ``robot``'s status as ``node`` sees them, a list that keeps growing while ``node`` spins.
    Made before the team starts, so that the subscription is matched before the first step (a lockstep team plays
    tens of steps a second: a subscriber that joins late sees the episode nearly over)."""

    def __init__(self, node, robot: str) -> None:
        from coteam_interfaces.msg import RobotStatus
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self.node, self.robot, self.seen = node, robot, []
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(RobotStatus, f"/{robot}/status", lambda m: self.seen.append(m.step), qos)

    def reach(self, step: int) -> int:
        """Spin until the status reaches ``step`` (at most 60 s); the step seen."""
        import rclpy

        deadline = time.monotonic() + 60
        while not (self.seen and self.seen[-1] >= step) and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.01)
        assert self.seen and self.seen[-1] >= step, f"{self.robot} did not reach step {step}"
        return self.seen[-1]


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
