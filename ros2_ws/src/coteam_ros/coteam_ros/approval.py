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

from coteam_interfaces.srv import ApproveAction
from rclpy.node import Node

from coteam_ros.runtime import spin_node

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


class ApprovalNode(Node):
    """The ``approve_action`` node: answers each (robot, request id) once; a repeat of a request (its answer was
    lost on the way) gets the same answer again."""

    def __init__(self, answer: str | None, timeout_s: float) -> None:
        super().__init__("approve_action")
        self.answer = answer
        self.timeout_s = timeout_s
        self.answered: dict[tuple[str, int], tuple[bool, str]] = {}  # (robot, request_id) -> the answer given
        self.create_service(ApproveAction, SERVICE, self._on_request)
        whom = "every question: " + answer if answer else "on this terminal"
        print(f"answering {SERVICE} ({whom}); Ctrl-C stops", flush=True)

    def _on_request(self, request: Any, response: Any) -> Any:
        key = (request.robot, request.request_id)
        if key not in self.answered:
            question = f"[{request.robot}] {request.question} ({request.action})"
            if self.answer is None:
                self.answered[key] = (ask_person(question, self.timeout_s), "coteam approve (a person)")
            else:
                self.answered[key] = (self.answer == "yes", f"coteam approve --answer {self.answer}")
                print(f"{question}: {self.answer}", flush=True)
        response.approved, response.answered_by = self.answered[key]
        return response


def serve(answer: str | None, timeout_s: float) -> None:
    """Serve ``/approve_action`` until Ctrl-C or SIGTERM: ``answer`` ("yes"/"no") for every question, or ask on the
    terminal. It stops as the robots' nodes do (``coteam_ros.runtime.spin_node``): a middleware teardown that hangs
    does not keep it running."""
    spin_node(lambda: ApprovalNode(answer, timeout_s))
