"""What a robot may say to its teammates, whoever wrote the words (a symbolic solver or a language model).

A model that has been steered by injected text, or that is simply looping, can flood the team: the same words
again and again, a message every step, or a value it should never repeat (an API key from its environment). Every
runtime's :class:`~coteam.agent.reasoning.AgentBrain` passes each outgoing message through a :class:`MessageGuard`
before it is sent. A message is blocked when

* it contains a secret: the value of an environment variable whose name says it is one (``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``; values of at least 8 characters);
* it repeats, word for word (case and spacing aside), a message the robot sent in the last ``repeat_steps`` steps;
* the robot already sent ``burst`` messages in the last ``burst_steps`` steps, or ``per_episode`` in the episode.

A *stall* is ``stall_decisions`` decisions in a row that chose to talk: the guard then closes the channel for the
next ``quiet_decisions`` decisions, and the robot returns to physical actions. A blocked message is replaced by a
physical action chosen by the same team with messages taken off the list. Both are counted
(``messages_blocked``, ``message_stalls`` in the results) and logged once each.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

log = logging.getLogger("coteam.agent.messages")

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_CHARS = 8


def secret_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of the environment's secret-looking variables (see the module docstring)."""
    env = os.environ if environ is None else environ
    return tuple(sorted({v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_CHARS}))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass
class MessageGuard:
    """One robot's outgoing-message guard for one episode (see the module docstring)."""

    secrets: tuple[str, ...] = field(default_factory=secret_values)
    repeat_steps: int = 30
    burst: int = 4
    burst_steps: int = 10
    per_episode: int = 100
    stall_decisions: int = 4
    quiet_decisions: int = 10
    sent: list[tuple[int, str]] = field(default_factory=list)  # (step, normalised text)
    talk_streak: int = 0  # decisions in a row that chose to talk
    quiet_left: int = 0  # decisions the channel stays closed
    blocked: int = 0
    stalls: int = 0

    def open(self) -> bool:
        """Whether messages may be offered in this decision (closed for a while after a stall)."""
        return self.quiet_left == 0

    def check(self, text: str, step: int) -> str | None:
        """Why ``text`` may not be sent at ``step`` (None: it may). Counts the block."""
        reason = self._reason(text, step)
        if reason is not None:
            self.blocked += 1
        return reason

    def _reason(self, text: str, step: int) -> str | None:
        if any(s in text for s in self.secrets):
            return "it contains the value of a secret environment variable"
        normal = _normal(text)
        if any(t == normal and step - s <= self.repeat_steps for s, t in self.sent):
            return f"it repeats a message sent in the last {self.repeat_steps} steps"
        if sum(1 for s, _ in self.sent if step - s < self.burst_steps) >= self.burst:
            return f"{self.burst} messages were sent in the last {self.burst_steps} steps"
        if len(self.sent) >= self.per_episode:
            return f"the episode's {self.per_episode} messages are spent"
        return None

    def record(self, *, message: str | None, step: int) -> None:
        """A decision was taken: a message (its text, sent at ``step``) or a physical action (``message=None``)."""
        self.quiet_left = max(0, self.quiet_left - 1)
        if message is None:
            self.talk_streak = 0
            return
        self.sent.append((step, _normal(message)))
        self.talk_streak += 1
        if self.talk_streak >= self.stall_decisions:
            self.stalls += 1
            self.talk_streak = 0
            self.quiet_left = self.quiet_decisions
            log.warning(
                "%d decisions in a row chose to talk: no messages for the next %d decisions",
                self.stall_decisions,
                self.quiet_decisions,
            )
