"""An exit that needs no Python thread: a POSIX timer (``timer_create`` with ``SIGEV_THREAD``) whose thread calls the C
library's ``_exit(status)``.

Why by hand: a node's teardown can hang inside the DDS library while it holds the interpreter's lock (rclpy's calls
into rcl keep it, and a deadlock between the library's own threads while it destroys an entity never returns). Then
no Python thread runs -- not a ``threading.Timer``, not a signal handler -- and :mod:`faulthandler`, whose C thread
still does, can only end the process with status 1. No maintained library offers a timed exit with a chosen status;
the C library does, through ctypes. Linux (glibc) only: elsewhere :func:`exit_later` returns None and the caller keeps
faulthandler's exit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

CLOCK_MONOTONIC = 1
SIGEV_THREAD = 2  # the timer's expiry runs the function in a new thread


class _SigEvent(ctypes.Structure):
    """glibc's ``struct sigevent`` (64 bytes) for ``SIGEV_THREAD``: the function gets the value as its argument."""

    _fields_ = [
        ("value", ctypes.c_void_p),  # union sigval: _exit reads its int
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("function", ctypes.c_void_p),
        ("attributes", ctypes.c_void_p),
        ("pad", ctypes.c_int * 8),
    ]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("interval", _TimeSpec), ("value", _TimeSpec)]


def exit_later(seconds: float, status: int) -> Callable[[], None] | None:
    """End the process with ``status`` in ``seconds``, whatever its Python threads are doing; the returned function
    disarms it. None where there are no POSIX timers of this kind (not Linux, or the call fails)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "timer_create"):  # glibc before 2.34 keeps the timers in librt
        found = ctypes.util.find_library("rt")
        if found is None:
            return None
        libc = ctypes.CDLL(found, use_errno=True)
    timer = ctypes.c_void_p()
    exit_function = ctypes.cast(ctypes.CDLL(None)._exit, ctypes.c_void_p).value
    event = _SigEvent(value=status, notify=SIGEV_THREAD, function=exit_function)
    if libc.timer_create(CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        return None
    whole = int(seconds)
    when = _ITimerSpec(value=_TimeSpec(whole, int((seconds - whole) * 1e9)))
    if libc.timer_settime(timer, 0, ctypes.byref(when), None) != 0:
        libc.timer_delete(timer)
        return None

    def disarm() -> None:
        libc.timer_delete(timer)

    return disarm
