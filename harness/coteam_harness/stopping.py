"""How a run stops on SIGTERM / SIGINT: :class:`RunStopped` raised in the main thread, so a run saves what it
finished before the process exits with 128 + the signal's number."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class RunStopped(SystemExit):
    """A run stopped by a signal: the process exits with 128 + the signal's number once the results are saved."""

    def __init__(self, signum: int):
        self.signal = signal.Signals(signum).name
        super().__init__(128 + signum)


_held: list[int] | None = None  # the stop signals received inside signals_held(), else None


def _stop(signum: int, frame: Any) -> None:
    if _held is not None:
        _held.append(signum)
        return
    raise RunStopped(signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`RunStopped` in the main thread while the block runs (elsewhere, e.g. in a
    test's worker thread, signals are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """Inside the block a stop signal is kept and raised as :class:`RunStopped` when the block ends: for calls into
    a library that turns an exception raised by a signal handler into its own exit (Ray's waits exit with status
    1), which would lose what the run finished."""
    global _held
    outer, _held = _held, []
    try:
        yield
    finally:
        got, _held = _held, outer
        if got:
            raise RunStopped(got[0])
