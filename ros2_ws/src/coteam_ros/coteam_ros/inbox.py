"""The planner's inbox of teammate messages waiting for the status that delivers them.

Messages arrive on ``/team/messages`` before or after the robot's status lists them (sender, step). The inbox
keeps them under that key, and refuses what cannot be a genuine, new message of the team:

* a sender that is not one of the robot's teammates;
* when the team signs (a :class:`~coteam.home.signing.Verifier`): a message without the sender's signature over exactly
  it, or with a sequence number not newer than the sender's last (a replay) or too old;
* a second message under a key already waiting (the first one stands: a forgery cannot replace it);
* a key already delivered (a replay);
* beyond ``capacity`` messages waiting, the oldest is dropped (a flood cannot grow memory without bound);
* messages for a step long past that no status delivered (:meth:`TeamInbox.drop_stale`).

Every refusal is counted (:attr:`TeamInbox.dropped`, reported to the bridge as ``StepTick.messages_dropped``) and
logged at most once per ``warn_every_s`` seconds per sender and kind of refusal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from coteam.domain.observation import Message
from coteam.home.signing import Envelope, Verifier

Key = tuple[str, int]  # (sender, step)


class TeamInbox:
    def __init__(
        self,
        teammates: Iterable[str],
        warn: Callable[[str], None],
        *,
        capacity: int = 64,
        warn_every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        verifier: Verifier | None = None,
    ):
        self.teammates = frozenset(teammates)
        self.verifier = verifier
        self.capacity = capacity
        self.dropped = 0
        self._waiting: dict[Key, Message] = {}
        self._delivered: set[Key] = set()
        self._warn, self._warn_every_s, self._clock = warn, warn_every_s, clock
        self._warned: dict[tuple[str, str], float] = {}

    def add(
        self,
        message: Message,
        accept: Callable[[Message], Message] = lambda m: m,
        *,
        receiver: str = "",
        envelope: Envelope | None = None,
    ) -> bool:
        """Keep ``message`` (as ``accept`` returns it, e.g. cut and with its payload checked) until it is delivered;
        False (counted, logged) when it is refused. ``receiver`` and ``envelope`` are what the sender signed
        besides the message (its payload as JSON text)."""
        key = (message.sender, message.step)
        if message.sender not in self.teammates:
            return self._drop(
                message.sender, "stranger", f"not a teammate ({', '.join(sorted(self.teammates)) or 'none'})"
            )
        if self.verifier is not None:
            if envelope is None or not envelope.signature:
                return self._drop(message.sender, "unsigned", "not signed (this team signs its messages)")
            payload = message.payload or ""
            why = self.verifier.check(message.sender, receiver, message.step, message.text, payload, envelope)
            if why is not None:
                return self._drop(message.sender, "unverified", why)
        if key in self._waiting:
            return self._drop(
                message.sender, "second", f"a second message for step {message.step}; the first one stands"
            )
        if key in self._delivered:
            return self._drop(message.sender, "delivered", f"its message for step {message.step} was delivered already")
        self._waiting[key] = accept(message)
        if len(self._waiting) > self.capacity:
            oldest = min(self._waiting, key=lambda k: (k[1], k[0]))
            del self._waiting[oldest]
            self._drop(oldest[0], "full", f"more than {self.capacity} messages waiting: the oldest dropped")
        return True

    def drop_stale(self, before_step: int) -> None:
        """Drop (counted) the waiting messages sent before ``before_step``: no status will deliver them now."""
        for key in [k for k in self._waiting if k[1] < before_step]:
            del self._waiting[key]
            self._drop(key[0], "stale", f"its message for step {key[1]} was never delivered and is stale now")

    def _drop(self, sender: str, kind: str, why: str) -> bool:
        """Count a refusal; log it unless one of the same ``kind`` from ``sender`` was logged recently."""
        self.dropped += 1
        now = self._clock()
        last = self._warned.get((sender, kind))
        if last is None or now - last >= self._warn_every_s:
            self._warned[(sender, kind)] = now
            self._warn(f"team message from {sender!r} dropped: {why} ({self.dropped} dropped so far)")
        return False

    def pop(self, key: Key) -> Message:
        """The waiting message under ``key``, now delivered."""
        self._delivered.add(key)
        return self._waiting.pop(key)

    def __getitem__(self, key: Key) -> Message:
        """The message waiting under ``key`` (still waiting)."""
        return self._waiting[key]

    def __contains__(self, key: object) -> bool:
        return key in self._waiting

    def __iter__(self) -> Iterator[Key]:
        return iter(list(self._waiting))

    def __len__(self) -> int:
        return len(self._waiting)
