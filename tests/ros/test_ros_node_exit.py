"""How a coteam node process ends (``coteam_ros.runtime.spin_node``): SIGINT ends it with status 0, and a teardown
that hangs in the middleware no longer keeps the process, or a launch waiting on it, alive: it exits after the
grace, says so in one line and leaves its threads' stacks -- with status 0 also when the hang holds the interpreter's
lock, as a deadlock inside the DDS library's destruction of an entity does (no Python thread can run then). A
composed robot's process (``coteam_ros.composed``, several nodes) ends as one node's does."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, task_scene

pytest.importorskip("rclpy")

SCRIPT = """
import ctypes, sys, threading
import coteam_ros.runtime as runtime
from rclpy.node import Node

runtime.SHUTDOWN_GRACE_S = 1.0
runtime.BACKSTOP_S = 2.0


class StuckAtExit(Node):
    def __init__(self):
        super().__init__("stuck_at_exit")
        if sys.argv[1] == "idle":  # nothing to receive and no timer of its own: its wait never returns by itself
            print("spinning", flush=True)
        else:
            self.create_timer(0.1, lambda: print("spinning", flush=True))

    def destroy_node(self):
        if sys.argv[1] == "hangs":
            threading.Event().wait()  # a teardown that never returns
        if sys.argv[1] == "slow":  # a teardown that takes a while: the launcher's SIGTERM may come meanwhile
            print("tearing down", flush=True)
            threading.Event().wait(2.0)
        if sys.argv[1] == "hangs-holding-the-gil":
            ctypes.PyDLL(None).sleep(3600)  # a C call that keeps the interpreter's lock (PyDLL does not release it)
        super().destroy_node()


runtime.spin_node(StuckAtExit)
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("teardown", "started"),
    [("returns", None), ("idle", None), ("hangs", None), ("hangs-holding-the-gil", None), ("returns", _ignore_sigint)],
    # started-with-sigint-ignored: as by a shell's `nohup` or `&`, and Python keeps it so
    ids=["returns", "idle", "hangs", "hangs-holding-the-gil", "started-with-sigint-ignored"],
)
def test_sigint_ends_a_node_with_status_0_even_when_its_teardown_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, teardown: str, started: object
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    script = tmp_path / "stuck.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), teardown],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=started,  # a signal disposition, set before exec
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "spinning"
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    said = [line for line in err.splitlines() if "did not shut down" in line]
    if teardown in ("returns", "idle"):
        assert not said and time.monotonic() - started < 5
        return
    assert time.monotonic() - started < 20
    if teardown == "hangs-holding-the-gil":  # no Python line then: faulthandler's stacks on stderr, from C
        assert not said and "Timeout" in err and "destroy_node" in err, err
        return
    assert said == [
        f"stuck_at_exit: ROS 2 did not shut down within 1 s; exiting anyway (its threads: "
        f"{tmp_path / 'ros_log' / f'stuck_at_exit-{proc.pid}-shutdown-hang.txt'})"
    ]
    stacks = (tmp_path / "ros_log" / f"stuck_at_exit-{proc.pid}-shutdown-hang.txt").read_text()
    assert "destroy_node" in stacks  # where it hung


def test_a_second_signal_during_the_teardown_does_not_change_the_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launcher stops a node with SIGINT, then SIGTERM when it takes long: the node still exits with status 0."""
    isolate_ros(tmp_path, monkeypatch)
    script = tmp_path / "stuck.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), "slow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "spinning"
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline().strip() == "tearing down"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_composed_robots_process_ends_with_status_0_on_a_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sig: int
) -> None:
    """A robot's perception and executor in one process: both up, then the launcher's SIGINT or SIGTERM ends the
    process with status 0 (the executor, a node with goals elsewhere, has its goals cancelled first)."""
    isolate_ros(tmp_path, monkeypatch)
    scene = task_scene(tmp_path)
    argv = [sys.executable, "-m", "coteam_ros.composed"]
    for node in ("perception", "executor"):
        argv += [node, "--ros-args", "-r", f"__node:={node}", "-r", "__ns:=/alice", "-p", "robot:=alice"]
        argv += ["-p", f"scene_path:={scene}", "--"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen: list[str] = []
    while not any("executor for alice" in line for line in seen):  # the nodes are made in order: both are up
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, "".join(seen) + err
    assert any("[alice.perception]" in line for line in seen), "each node keeps its own name and namespace"
