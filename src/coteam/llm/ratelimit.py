"""A model endpoint's rate limit, kept by every caller that shares it.

A backend with ``requests_per_minute`` calls :func:`reserve_turn` before each request: the request reserves the next
free slot of its endpoint (slots ``60 / requests_per_minute`` seconds apart) and sleeps until it. A request that
cannot wait that long (its call's deadline comes first) books nothing and gives up, so requests that give up never
push the slots of the others further out. The slots are
kept by one :class:`ReservationClock`; by default this process's own, and a run on several processes makes them
all reserve on one clock (:func:`share_reservations`): the local worker pool asks its parent process, a Ray cluster
asks one actor. So the limit holds for the whole team of workers, not for each one.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

# (endpoint, seconds between requests, the longest wait the request accepts) -> seconds to wait for its slot
Reserve = Callable[[str, float, float], float]


class ReservationClock:
    """Request slots per endpoint: :meth:`reserve` books the next one and says how long to wait for it; a wait
    longer than the request accepts is said but not booked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_free: dict[str, float] = {}

    def reserve(self, endpoint: str, interval_s: float, max_wait_s: float = math.inf) -> float:
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_free.get(endpoint, now))
            if slot - now <= max_wait_s:
                self._next_free[endpoint] = slot + interval_s
            return slot - now


_LOCAL = ReservationClock()
_reserve: Reserve = _LOCAL.reserve


def share_reservations(reserve: Reserve | None) -> None:
    """Reserve every request of this process with ``reserve`` (a clock other processes share); None: this
    process's own clock again."""
    global _reserve
    _reserve = reserve or _LOCAL.reserve


def local_clock() -> ReservationClock:
    """This process's own clock (a pool's parent serves its workers' reservations from it)."""
    return _LOCAL


def reserve_turn(endpoint: str, requests_per_minute: float, max_wait_s: float = math.inf) -> float:
    """Book ``endpoint``'s next request slot; the seconds to wait before sending (more than ``max_wait_s``: not
    booked, the request gives up)."""
    return _reserve(endpoint, 60.0 / requests_per_minute, max_wait_s)
