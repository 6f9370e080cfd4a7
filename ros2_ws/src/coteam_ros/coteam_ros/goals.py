"""Action goals that are answered once their outcome is known, without a waiting coroutine.

rclpy runs an action's execute callback as a task and re-polls a task that awaits a future on every spin, so a
server that waits for the world (the next simulation step, a teammate) inside the callback would busy-loop.
Instead the nodes accept a goal, keep its handle, and only call ``handle.execute()`` once the result is decided:
:meth:`DeferredGoals.execute_callback` then sets the final state at once.
"""

from __future__ import annotations

from typing import Any

from rclpy.action.server import ServerGoalHandle

STATES = ("succeed", "abort", "canceled")


def goal_key(handle: Any) -> bytes:
    """The goal id of a server or client goal handle, as bytes."""
    return bytes(handle.goal_id.uuid)


class DeferredGoals:
    def __init__(self) -> None:
        self._outcomes: dict[bytes, tuple[str, Any]] = {}

    def finish(self, handle: ServerGoalHandle, result: Any, state: str) -> None:
        """Answer ``handle`` with ``result`` and final ``state`` (succeed | abort | canceled)."""
        if state not in STATES:
            raise ValueError(f"unknown final state {state!r}")
        self._outcomes[goal_key(handle)] = (state, result)
        handle.execute()

    def execute_callback(self, handle: ServerGoalHandle) -> Any:
        state, result = self._outcomes.pop(goal_key(handle))
        if state == "canceled" and not handle.is_cancel_requested:
            state = "abort"
        {"succeed": handle.succeed, "canceled": handle.canceled, "abort": handle.abort}[state]()
        return result
