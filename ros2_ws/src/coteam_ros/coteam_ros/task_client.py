"""``coteam task``: a person's side of a serving team -- give it a task, watch it, cancel it, see the queue.

    coteam task "put two cups in the kitchen cabinet"      # a sentence, read against the home's names
    coteam task --goal "in(cup, kitchencabinet): 2"        # goal lines in the world file's syntax
    coteam task --first "bring the juice to the sofa"      # before the tasks already waiting
    coteam task --status                                   # the running and waiting tasks, and the last ended
    coteam task --cancel task-3                            # a waiting or running task (no id: the running one)

It sends the request to the team's ``/team/task`` action (:mod:`coteam_ros.nodes.task_desk`) and shows the
progress live: its place in the queue, then each goal line as the robots' maps show it and what each robot does.
Ctrl-C while it runs cancels the task. Exit codes: :data:`EXIT_CODES`.
"""

from __future__ import annotations

import json
import signal
import time
from typing import Any

EXIT_CODES = {"done": 0, "failed": 4, "refused": 5, "canceled": 6}
NO_TEAM = 7  # no serving team answered within the timeout
WAIT_S = 10.0  # how long to look for the team's task node


def give(request: str, *, first: bool, timeout_s: float | None, console: Any) -> int:
    """Send ``request`` and follow it to its end; the exit code of its outcome."""
    import rclpy
    from coteam_interfaces.action import TeamTask
    from rclpy.action import ActionClient
    from rclpy.signals import SignalHandlerOptions
    from rich.live import Live

    # Ctrl-C is Python's KeyboardInterrupt, the ROS context left up to cancel with (rclpy's handler would end it)
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    node = rclpy.create_node("coteam_task")
    try:
        client = ActionClient(node, TeamTask, "/team/task")
        if not client.wait_for_server(timeout_sec=WAIT_S):
            console.print(
                f"no serving team answers on /team/task (waited {WAIT_S:g} s): is `coteam launch --serve` up?"
            )
            return NO_TEAM
        shown: dict[str, Any] = {}

        def on_feedback(message: Any) -> None:
            shown["feedback"] = message.feedback

        future = client.send_goal_async(TeamTask.Goal(request=request, first=first), feedback_callback=on_feedback)
        rclpy.spin_until_future_complete(node, future, timeout_sec=WAIT_S)
        handle = future.result()
        if handle is None or not handle.accepted:
            console.print("the team's task node did not take the request")
            return NO_TEAM
        result_future = handle.get_result_async()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            with Live(_view(None), console=console, refresh_per_second=4, transient=True) as live:
                while not result_future.done():
                    rclpy.spin_once(node, timeout_sec=0.25)
                    live.update(_view(shown.get("feedback")))
                    if deadline is not None and time.monotonic() > deadline:
                        console.print(f"still not over after {timeout_s:g} s: stopped following it (it goes on)")
                        return NO_TEAM
        except KeyboardInterrupt:
            cancel = handle.cancel_goal_async()
            rclpy.spin_until_future_complete(node, cancel, timeout_sec=WAIT_S)
            rclpy.spin_until_future_complete(node, result_future, timeout_sec=WAIT_S)
            if not result_future.done():
                console.print("canceled (the team did not confirm)")
                return EXIT_CODES["canceled"]
        result = result_future.result().result
        goal = "; ".join(result.goal)
        console.print(
            f"{result.task_id}: {result.outcome}"
            + (f" ({goal})" if goal else "")
            + (f": {result.reason}" if result.reason else "")
            + (f" in {result.seconds:.0f} s" if result.seconds else "")
        )
        return EXIT_CODES.get(result.outcome, 1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def _view(feedback: Any) -> Any:
    from rich.table import Table

    table = Table(show_header=False, box=None)
    if feedback is None:
        table.add_row("waiting for the team's task node ...")
        return table
    where = "running" if feedback.state == "running" else f"waiting, number {feedback.position} in the queue"
    table.add_row(f"[bold]{feedback.task_id}[/bold]: {where}")
    for line in feedback.progress or feedback.goal:
        table.add_row(f"  {line}")
    for robot in feedback.robots:
        table.add_row(f"  [dim]{robot}[/dim]")
    return table


def cancel(task_id: str, console: Any) -> int:
    """Cancel a task by its id (empty: the running one); 0 when canceled, 1 when there was none."""
    import rclpy
    from coteam_interfaces.srv import CancelTask

    rclpy.init()
    node = rclpy.create_node("coteam_task")
    try:
        client = node.create_client(CancelTask, "/team/cancel_task")
        if not client.wait_for_service(timeout_sec=WAIT_S):
            console.print(f"no serving team answers on /team/cancel_task (waited {WAIT_S:g} s)")
            return NO_TEAM
        future = client.call_async(CancelTask.Request(task_id=task_id))
        rclpy.spin_until_future_complete(node, future, timeout_sec=WAIT_S)
        answer = future.result()
        if answer is None:
            console.print("the team's task node did not answer")
            return NO_TEAM
        console.print(answer.reason)
        return 0 if answer.canceled else 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def status(console: Any) -> int:
    """The desk's state, from ``/team/tasks``: the running and waiting tasks, and the last ended ones."""
    import rclpy
    from std_msgs.msg import String

    from coteam_ros.qos import LATCHED

    rclpy.init()
    node = rclpy.create_node("coteam_task")
    got: list[str] = []
    try:
        node.create_subscription(String, "/team/tasks", lambda m: got.append(m.data), LATCHED)
        deadline = time.monotonic() + WAIT_S
        while not got and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.25)
        if not got:
            console.print(f"no serving team publishes /team/tasks (waited {WAIT_S:g} s)")
            return NO_TEAM
        console.print(status_table(json.loads(got[-1])))
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def status_table(state: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table("task", "state", "goal", "request")
    for t in state.get("tasks", []):
        where = "running" if t["state"] == "running" else f"waiting ({t['position']})"
        table.add_row(t["task_id"], where, "\n".join(t["goal"]), t["request"])
    for t in state.get("ended", []):
        said = t["outcome"] + (f": {t['reason']}" if t["reason"] else "")
        table.add_row(t["id"], said, "\n".join(t["goal"]), t["request"])
    return table
