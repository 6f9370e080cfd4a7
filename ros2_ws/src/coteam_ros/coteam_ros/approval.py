"""``coteam approve``: a person answers the robots' requests for approval (``/approve_action``,
``coteam_interfaces/srv/ApproveAction``), which their executors send before an action the home's safety policy
names (``ask_before``).

Each question is printed with the robot's name; a line starting with ``y`` approves it, anything else (or nothing
within ``--timeout`` seconds) refuses it. ``--answer yes|no`` answers every question without asking (for a test
rig, or to refuse everything while nobody watches). The robot itself waits no longer than its policy's
``approval_timeout_s``: no answer in time is no.
"""

from __future__ import annotations

import select
import sys
from typing import Any, TextIO

SERVICE = "/approve_action"


def ask_person(question: str, timeout_s: float, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> bool:
    """Print ``question`` and wait up to ``timeout_s`` for a line; True only for an answer starting with y."""
    stdout.write(f"{question} [y/N, {timeout_s:g} s] ")
    stdout.flush()
    ready, _, _ = select.select([stdin], [], [], timeout_s)
    if not ready:
        stdout.write("no answer: no\n")
        stdout.flush()
        return False
    return stdin.readline().strip().lower().startswith("y")


def serve(answer: str | None, timeout_s: float) -> None:
    """Serve ``/approve_action`` until Ctrl-C: ``answer`` ("yes"/"no") for every question, or ask on the
    terminal."""
    import rclpy
    from coteam_interfaces.srv import ApproveAction
    from rclpy.executors import ExternalShutdownException

    rclpy.init()
    node = rclpy.create_node("approve_action")
    answered: dict[tuple[str, int], tuple[bool, str]] = {}  # (robot, request_id) -> the answer given

    def on_request(request: Any, response: Any) -> Any:
        key = (request.robot, request.request_id)
        if key not in answered:  # else a request sent again: its first answer was lost on the way
            question = f"[{request.robot}] {request.question} ({request.action})"
            if answer is None:
                answered[key] = (ask_person(question, timeout_s), "coteam approve (a person)")
            else:
                answered[key] = (answer == "yes", f"coteam approve --answer {answer}")
                print(f"{question}: {answer}", flush=True)
        response.approved, response.answered_by = answered[key]
        return response

    node.create_service(ApproveAction, SERVICE, on_request)
    print(f"answering {SERVICE} ({'every question: ' + answer if answer else 'on this terminal'}); Ctrl-C stops")
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
