"""What every coteam node shares around rclpy, so that a node module is its class, its parameters and its callbacks:
timers on the wall clock (:func:`wall_timer`, :func:`call_later`), Nav2's types when it is installed, a start-up
failure as one line (:func:`cannot_start`), the wiring a node waits for (:func:`require_wiring`), and
:func:`spin_node`, which runs a node and stops it cleanly (its goals cancelled, a hung middleware teardown cut
short), and :func:`spin_nodes`, which does so for several nodes in one process (a composed robot)."""

from __future__ import annotations

import faulthandler
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logging_directory
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from rclpy.timer import Timer

from coteam.agent.heap import settle_heap
from coteam_ros import CANNOT_START
from coteam_ros.exit_timer import exit_later

RETRY_S = 0.2  # how soon a node tries again to reach an action server that is not up yet
SHUTDOWN_GRACE_S = 10.0  # a node whose middleware has not shut down this long after its spin ended exits anyway
BACKSTOP_S = 5.0  # and if that exit cannot run (the hang holds the interpreter's lock), a C timer's, this much later
CANCEL_GRACE_S = 2.0  # a stopped node waits this long at most for the answers to its goals' cancels
# the spin wakes this often: rclpy's wait does not return on a signal while rclpy's own handler (which would end the
# ROS context before the node cancels its goals) is off, so an idle node (nothing to receive, no timer) would never
# take in its SIGINT
SIGNAL_POLL_S = 0.2


def wall_timer(node: Node, seconds: float, callback: Callable[[], object]) -> Timer:
    """A timer on the steady wall clock. The nodes' stamps follow ROS time (simulated time with ``use_sim_time``,
    ``/clock``), but waiting for a teammate, a goal or a camera frame is measured in real seconds: in lockstep the
    simulated clock stands still until every robot has answered, so a sim-time timer would never fire."""
    return node.create_timer(seconds, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


def call_later(node: Node, seconds: float, callback: Callable[[], object]) -> None:
    """Run ``callback`` once, ``seconds`` from now, on ``node``'s executor."""
    timer = None

    def fire() -> None:
        assert timer is not None
        node.destroy_timer(timer)
        callback()

    timer = wall_timer(node, seconds, fire)


def cannot_start(name: str, exc: Exception) -> SystemExit:
    """Print why node ``name`` cannot start in one line; the exit to raise (status :data:`CANNOT_START`)."""
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    print(f"{name}: cannot start: {message}", file=sys.stderr)
    return SystemExit(CANNOT_START)


def _from_nav2(kind: str, name: str) -> type:
    """Nav2's interface ``nav2_msgs/<kind>/<name>``: the real package on a ROS 2 with Nav2, the wheel of
    ros2_ws/pip/nav2_msgs on pip installs. Missing, a :class:`ValueError` of one line (the node cannot start)."""
    try:
        return getattr(importlib.import_module(f"nav2_msgs.{kind}"), name)
    except ImportError:
        raise ValueError(
            "Nav2's interfaces (nav2_msgs) cannot be imported by this Python: source a ROS 2 with Nav2 (apt: "
            "ros-jazzy-nav2-msgs), or on a pip install run `make venv` (it builds ros2_ws/pip/nav2_msgs)"
        ) from None


def navigate_to_pose_action() -> type:
    """``nav2_msgs/action/NavigateToPose``: a navigation goal."""
    return _from_nav2("action", "NavigateToPose")


def speed_limit_message() -> type:
    """``nav2_msgs/msg/SpeedLimit``: the top speed Nav2's controller keeps to."""
    return _from_nav2("msg", "SpeedLimit")


STARTUP_ERRORS = (ValueError, KeyError, ImportError)  # a bad parameter, file or method; a missing module


@dataclass(frozen=True)
class Wire:
    """A topic or action a node needs another node for: its name as the node uses it (remaps apply), what must be at
    the other end, and whether it is there now."""

    name: str
    needs: str  # e.g. "an action server (nav2_msgs/action/NavigateToPose)"
    live: Callable[[], bool]


WIRING_CHECK_S = 0.5  # how often the wires not seen live yet are looked at


def require_wiring(node: Node, within_s: float, wires: list[Wire]) -> None:
    """Wrong wiring is said, never waited on quietly: every wire must have been live at some moment within
    ``within_s`` of start (looked at every :data:`WIRING_CHECK_S`; one that goes away later is another fault, a
    teammate or driver lost, which the nodes deal with); otherwise the node stops with one line naming the resolved
    name and what is missing there, and status :data:`~coteam_ros.CANNOT_START` (which stops the launch). 0: no
    check."""
    if within_s <= 0:
        return
    unseen = list(wires)
    deadline = time.monotonic() + within_s

    def check() -> None:
        unseen[:] = [w for w in unseen if not w.live()]
        if not unseen:
            timer.cancel()
        elif time.monotonic() >= deadline:
            timer.cancel()
            missing = [f"no {w.needs} on {node.resolve_topic_name(w.name)} ({w.name})" for w in unseen]
            raise cannot_start(node.get_name(), ValueError(f"{'; '.join(missing)} within {within_s:g} s"))

    timer = wall_timer(node, WIRING_CHECK_S, check)


class StopsItsGoals(Protocol):
    """A node that has goals running on other nodes (Nav2, an arm) to cancel when it is stopped."""

    def cancel_goals(self) -> list[Future]: ...


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops a node as Ctrl-C does


def spin_node(make_node: Callable[[], Node], argv: list[str] | None = None) -> None:
    """Run one node until Ctrl-C (SIGINT), SIGTERM or shutdown, then clean up (:func:`spin_nodes`)."""
    spin_nodes([make_node], argv)


def spin_nodes(makers: Sequence[Callable[[], Node]], argv: list[str] | None = None) -> None:
    """Run the nodes ``makers`` make, in this order, on one executor (a composed robot's: ``coteam_ros.composed``; a
    single-threaded one, so that each node's callbacks run one at a time, as in a process of its own) until Ctrl-C
    (SIGINT), SIGTERM or shutdown, then clean up: exit status 0 on a signal, also when the middleware's teardown
    hangs (after :data:`SHUTDOWN_GRACE_S`, :func:`_exit_if_shutdown_hangs`), and when it hangs so that no Python
    thread can run (a deadlock in the DDS library while rclpy holds the interpreter's lock): then every thread's stack
    goes to stderr from faulthandler's C thread and a C timer ends the process
    (:func:`coteam_ros.exit_timer.exit_later`, :data:`BACKSTOP_S` later; status 1 where there is none).

    A node that cannot start (a bad method switch, an unknown method, no or a bad scene file, a missing module:
    :data:`STARTUP_ERRORS`) prints one line naming it and the process exits with status
    :data:`~coteam_ros.CANNOT_START`, which stops the launch. The signals are Python's, not rclpy's (whose handler
    ends the ROS context at once): every node with goals running elsewhere (:class:`StopsItsGoals`, the executor)
    still cancels them, for :data:`CANCEL_GRACE_S` at most, before it goes: a robot stops when its team is
    stopped."""
    rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGTERM, _on_sigterm)
    # and SIGINT always: a process started in the background by a shell (nohup, `cmd &`) inherits SIGINT ignored,
    # and Python then leaves it so: the launcher's SIGINT would not stop the node
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1` a node that seems hung: its stacks
    faulthandler.enable(all_threads=True)  # a crash in native code (a segmentation fault) leaves the Python stacks
    executor = SingleThreadedExecutor()
    nodes: list[Node] = []
    name, status = "node", 0
    try:
        for make_node in makers:
            name = getattr(make_node, "__name__", "node")
            nodes.append(make_node())
            executor.add_node(nodes[-1])
        name = "+".join(node.get_name() for node in nodes)
        wall_timer(nodes[0], SIGNAL_POLL_S, lambda: None)
        settle_heap()  # what the nodes set up lives as long as the process: full collections need not scan it
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        _cancel_goals(executor, nodes)
    except STARTUP_ERRORS as exc:
        status = CANNOT_START
        raise cannot_start(name, exc) from None
    finally:
        # the teardown is bounded below (the watchdogs); a second signal meanwhile (a launcher's SIGTERM after its
        # SIGINT) would raise inside it and end the process by the signal instead of with its status
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        watchdog = _exit_if_shutdown_hangs(name, status)
        # and should the teardown hang holding the interpreter's lock (the timer's thread then never runs): every
        # thread's stack to stderr from faulthandler's own thread, then the exit from a C timer's
        backstop = exit_later(SHUTDOWN_GRACE_S + BACKSTOP_S, status)
        faulthandler.dump_traceback_later(SHUTDOWN_GRACE_S + BACKSTOP_S / 2, exit=backstop is None)
        for node in reversed(nodes):
            node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()
        faulthandler.cancel_dump_traceback_later()
        if backstop is not None:
            backstop()
        watchdog.cancel()


def _cancel_goals(executor: Executor, nodes: Sequence[Node]) -> None:
    """Cancel the goals the nodes have on other nodes and spin until their servers have answered (a second signal,
    or :data:`CANCEL_GRACE_S`, cuts it short)."""
    try:
        pending = [future for node in nodes if hasattr(node, "cancel_goals") for future in node.cancel_goals()]
        end = time.monotonic() + CANCEL_GRACE_S
        while rclpy.ok() and any(not f.done() for f in pending) and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass


def _exit_if_shutdown_hangs(name: str, status: int) -> threading.Timer:
    """Arm a timer that ends the process with ``status`` should the node's teardown (DDS entities, the context)
    hang for :data:`SHUTDOWN_GRACE_S`: the node's work is done by then, and a launch must not wait on it. It says so
    in one line and leaves every thread's Python stack in the ROS log folder."""

    def give_up() -> None:
        folder = get_logging_directory()
        path = folder / f"{name}-{os.getpid()}-shutdown-hang.txt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with path.open("w") as stacks:
                faulthandler.dump_traceback(stacks, all_threads=True)
        except OSError:
            path = None
        where = f" (its threads: {path})" if path else ""
        print(f"{name}: ROS 2 did not shut down within {SHUTDOWN_GRACE_S:g} s; exiting anyway{where}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(status)

    timer = threading.Timer(SHUTDOWN_GRACE_S, give_up)
    timer.daemon = True
    timer.start()
    return timer
