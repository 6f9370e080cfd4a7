"""Failed actions remembered: an action that fails again for the reason it failed before is not offered for a while.

Whatever the reason -- the simulator's, a real Nav2's error, an arm driver's words -- one failure may be bad luck (a
teammate in the doorway, a detection that moved), so the action may be tried once more unchanged; the same failure a
second time blocks that action for the robot, and each further repeat doubles the wait (:class:`RetryLedger`). The
method decides among what is left: another action, another target, a word to the team. Nothing here reads what a
reason means, so nothing here knows a simulator's hidden rules. Refusals of the home's safety policy and a person's
no are final (``coteam.home.safety``): the action is never offered again as it was.

Times are the robot's: seconds on a robot's clock (``AgentMemory.clock_s``), the step count in simulation, where a
step is the benchmark's unit of time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from coteam.home.safety import NOT_APPROVED, REFUSED

RETRY_STEPS = 20  # simulation: the first block lasts this many steps
RETRY_BACKOFF_S = 15.0  # a robot: the first block lasts this many seconds
BACKOFF_DOUBLINGS = 3  # each repeat doubles the block, at most this many times (8x the first)
# How a runtime ends an action that did not fail: a newer decision, the end of the episode (coteam_ros, harness)
NOT_FAILURES = ("canceled", "preempted", "superseded", "episode over")


@dataclass
class _Failures:
    reason: str  # the latest failure's reason
    repeats: int = 0  # identical failures in a row after the first
    until: float = -math.inf  # blocked until this time


@dataclass
class RetryLedger:
    """Per action (its text): its latest failure, how often it repeated, and until when it is blocked; with the
    count of blocks so far (``retries_blocked``, a result column)."""

    failures: dict[str, _Failures] = field(default_factory=dict)
    retries_blocked: int = 0

    def failed(self, action: str, reason: str, now: float, first_block: float = RETRY_STEPS) -> None:
        """``action`` failed for ``reason`` at ``now``; a repeat blocks it ``first_block`` (in ``now``'s unit),
        doubling at each further repeat."""
        if reason.startswith((REFUSED, NOT_APPROVED)):
            self.failures[action] = _Failures(reason, until=math.inf)
            return
        if reason.startswith(NOT_FAILURES):
            return
        known = self.failures.get(action)
        if known is None or known.reason != reason:
            self.failures[action] = _Failures(reason)
            return
        known.repeats += 1
        known.until = now + first_block * 2 ** min(known.repeats - 1, BACKOFF_DOUBLINGS)
        self.retries_blocked += 1

    def succeeded(self, action: str) -> None:
        self.failures.pop(action, None)

    def blocked(self, now: float) -> set[str]:
        """The actions not to offer at ``now``."""
        return {action for action, f in self.failures.items() if f.until > now}
