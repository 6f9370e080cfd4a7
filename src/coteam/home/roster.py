"""Which teammates a robot still hears: a teammate silent past its lease is lost, and back when heard again.

A runtime feeds :meth:`TeamRoster.heard` with every sign of life it gets from a teammate (a heartbeat, a message)
and calls :meth:`TeamRoster.expire` regularly; each returns the :class:`RosterChange` it made, once per change,
for the runtime to act on (``AgentMemory.lose`` / ``regain``), log and count. Times are the caller's clock
(seconds, monotonic). A teammate not heard since the roster started is lost once ``startup_s`` has passed: robots
start at different times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RosterChange:
    teammate: str
    lost: bool  # True: now lost; False: back
    silent_s: float  # how long it had been silent


class TeamRoster:
    def __init__(self, teammates: Iterable[str], lease_s: float, now: float, startup_s: float = 60.0):
        if lease_s <= 0 or startup_s < lease_s:
            raise ValueError(f"need 0 < lease_s <= startup_s, got lease_s={lease_s}, startup_s={startup_s}")
        self.lease_s, self.startup_s, self.started = lease_s, startup_s, now
        self.last_heard: dict[str, float | None] = {t: None for t in teammates}
        self.lost: set[str] = set()
        self.losses = 0  # changes to lost so far
        self.returns = 0  # changes back so far
        self._checked = now

    def heard(self, teammate: str, now: float) -> RosterChange | None:
        """A sign of life from ``teammate`` (unknown names are ignored); the change when it was lost."""
        if teammate not in self.last_heard:
            return None
        before = self.last_heard[teammate]
        self.last_heard[teammate] = now
        if teammate not in self.lost:
            return None
        self.lost.discard(teammate)
        self.returns += 1
        return RosterChange(teammate, False, now - (before if before is not None else self.started))

    def expire(self, now: float) -> list[RosterChange]:
        """The teammates silent past their lease since the last call, now lost. A gap of more than half a lease
        since the last call means I was not listening (a long decision, a stopped process): nobody's silence
        counts until a full lease after it."""
        gap, self._checked = now - self._checked, now
        if gap > self.lease_s / 2:
            self.started += gap
            self.last_heard = {t: (now if h is not None else None) for t, h in self.last_heard.items()}
        changes = []
        for teammate, heard in self.last_heard.items():
            if teammate in self.lost:
                continue
            since, lease = (heard, self.lease_s) if heard is not None else (self.started, self.startup_s)
            if now - since > lease:
                self.lost.add(teammate)
                self.losses += 1
                changes.append(RosterChange(teammate, True, now - since))
        return changes
