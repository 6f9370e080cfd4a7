"""Test helpers for runs of the ROS 2 team over real DDS: a team file, the comparable part of a trace, watching a
robot's steps, starting the team once the test hears its simulator, stopping a test's node and children, and
checking that no robot loops on a failing action."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coteam.agent.retries import NOT_FAILURES

RUN_TIMEOUT_S = 240.0
BRIDGE = "sim_bridge@/"  # the launch plan's label of the simulator bridge


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
    """The steps of ``robot``'s status as ``node`` sees them, a list that keeps growing while ``node`` spins. Made
    before the team starts, and the robots started once it hears the bridge (:func:`start_bridge_first`): a lockstep
    team plays tens of steps a second, and a subscriber that joins late sees the episode nearly over."""

    def __init__(self, node, robot: str) -> None:
        from coteam_interfaces.msg import RobotStatus
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self.node, self.robot, self.seen = node, robot, []
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(RobotStatus, f"/{robot}/status", lambda m: self.seen.append(m.step), qos)

    def reach(self, step: int) -> int:
        """Spin until the status reaches ``step`` (at most 120 s: a loaded machine can take a minute to discover every
        action server); the step seen."""
        import rclpy

        deadline = time.monotonic() + 120
        while not (self.seen and self.seen[-1] >= step) and time.monotonic() < deadline:
            rclpy.spin_once(self.node, timeout_sec=0.01)
        assert self.seen and self.seen[-1] >= step, f"{self.robot} did not reach step {step}"
        return self.seen[-1]


def start_bridge_first(
    node, children, heard: Callable[[], bool], popen: Callable[[Any], subprocess.Popen]
) -> dict[str, subprocess.Popen]:
    """Start the simulator bridge, spin ``node`` until ``heard()`` says the test hears it (at most 60 s), then the
    robots' nodes (each with ``popen``): the clock starts once the robots answer, and a lockstep team plays tens of
    steps a second, so a test node that discovered the bridge after them would see the episode half over."""
    import rclpy

    bridge = next(c for c in children if c.label == BRIDGE)
    procs = {BRIDGE: popen(bridge)}
    deadline = time.monotonic() + 60
    while not heard() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.01)
    if not heard():
        shut_down(node, procs)
        raise AssertionError("the test never heard the simulator bridge")
    procs.update({c.label: popen(c) for c in children if c is not bridge})
    return procs


def shut_down(node, procs: dict[str, subprocess.Popen]) -> None:
    """End a test's ROS node and stop every child still running (:func:`stop_all`)."""
    import rclpy

    node.destroy_node()
    rclpy.try_shutdown()
    stop_all(procs)


def exit_status(p: subprocess.Popen, timeout_s: float) -> int | str:
    """``p``'s exit status within ``timeout_s``; if it is still running, every thread's stack (a node's SIGUSR1:
    ``coteam_ros.runtime.spin_node``) goes to its stderr, it is killed, and the answer says so."""
    try:
        return p.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        p.kill()
        return f"still running after {timeout_s:g} s (its stacks are on its stderr)"


def stop_all(procs: dict[str, subprocess.Popen], timeout_s: float = 10.0) -> None:
    """Stop every child still running: SIGINT, then kill after ``timeout_s``."""
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs.values():
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()


def assert_never_a_third_identical_failure(decisions: list[dict]) -> None:
    """No robot tries an action again at once after it failed the same way twice in a row (coteam.agent.retries): one
    retry of a failure may be bad luck, never a loop."""
    by_robot: dict[str, list[dict]] = {}
    for d in decisions:
        by_robot.setdefault(d["agent"], []).append(d)
    for robot, mine in by_robot.items():
        for before, last, now in zip(mine, mine[1:], mine[2:], strict=False):
            failed_twice = (
                last["previous"] == now["previous"]
                and before["action"] == last["action"] == now["previous"][0]
                and now["previous"][1].startswith("failed: ")
                and not now["previous"][1].removeprefix("failed: ").startswith(NOT_FAILURES)  # a cancel is no failure
            )
            assert not (failed_twice and now["action"] == last["action"]), f"{robot} tried {now['action']} a third time"
