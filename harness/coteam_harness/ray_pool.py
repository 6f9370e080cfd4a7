"""A run's episodes on a Ray cluster (``--ray [ADDRESS]``; the ``ray`` extra): one Ray task per episode, one CPU
each, so a cluster of N machines plays N times as many episodes at once as one.

* Every node needs this coteam installed (the same version, with the ``ray`` extra); the cluster's Ray workers
  import it. A node's worker process builds each team once and resets it per episode, as a local worker does, so
  an episode's result and trace are the serial run's.
* Each task writes its trace on its own node and returns it with the result; this process writes it where the
  run keeps its traces. Progress (an episode started, its clock) comes back through an actor (:class:`Progress`)
  that a task tells without waiting: a task that waits on Ray lends its CPU to another task, and Ray would start
  more workers than the cluster has CPUs.
* The model endpoint's rate limit (the ``requests_per_minute`` switch) is kept by one actor for the run
  (:class:`RateClock`): every request of every worker of the cluster reserves its slot there.
* A task whose worker or node dies fails its episode with the reason; an episode that raises fails with its
  one-line error; the rest go on. A node that cannot import coteam stops the run in one line. Ctrl-C / SIGTERM
  cancel what is still running; a cancelled episode's partial trace stays on its node (not in the run's folder).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from coteam.agent.reasoning import Team
from coteam.llm.ratelimit import ReservationClock, share_reservations
from coteam_harness.jobs import Clock, Event, Failed, Finished, Job, one_line, play, team_for
from coteam_harness.results import EpisodeResult, atomic_write_text
from coteam_harness.stopping import signals_held
from coteam_sim.bridges import BridgeError

try:
    import ray
except ImportError:  # the optional extra
    ray = None

POLL_S = 0.2  # how often this process reads the episodes' progress while they run
CLOCK_EVERY_S = 0.5  # how often a task reports its episode's clock
RATE_CLOCK = "coteam-rate-clock"  # the cluster's one rate-limit actor (by name)

_TEAMS: dict[str, Team] = {}  # a Ray worker process's teams, by RunSettings.team_key


def connect(address: str) -> None:
    """Join the Ray cluster at ``address`` (``"auto"``: the one running on this machine; ``"local"``: the one
    ``RAY_ADDRESS`` names or one running here, else a new one on this machine), unless this process already has."""
    if ray is None:
        raise ImportError("--ray needs Ray: pip install 'coteam[ray]' (or pip install ray) on every node")
    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        ray.init(address=None if address == "local" else address, include_dashboard=False, logging_level="warning")
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ValueError(f"cannot reach the Ray cluster at {address}: {one_line(exc)}") from None


def _play_remote(job: Job, events: Any, rate_clock: Any) -> tuple[EpisodeResult | None, str | None, str | None]:
    """A Ray task: ``job``'s episode on this worker (its team built once per process). Returns the result, the
    trace's text, and the one-line reason when the episode failed."""
    share_reservations(lambda *request: ray.get(rate_clock.reserve.remote(*request)))
    with tempfile.TemporaryDirectory(prefix="coteam-ray-") as folder:
        local = Job(job.spec, job.settings, Path(folder) / "trace.json" if job.trace_path else None)

        last_clock = -math.inf

        def report(event: Event) -> None:
            nonlocal last_clock
            if isinstance(event, Clock):  # an actor call each: at most one per CLOCK_EVERY_S
                if time.monotonic() - last_clock < CLOCK_EVERY_S:
                    return
                last_clock = time.monotonic()
            events.add.remote(replace(event, job=job))  # the run's job, with its trace path there; not waited on

        try:
            result = play(local, team_for(_TEAMS, job.settings), report)
        except BridgeError:
            raise
        except Exception as exc:  # the episode fails with its reason; the worker goes on
            return None, None, one_line(exc)
        trace = local.trace_path.read_text() if local.trace_path and local.trace_path.exists() else None
        return result, trace, None


class ProgressLog:
    """The events the tasks report, kept until this process takes them."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, event: Event) -> None:
        self.events.append(event)

    def take(self) -> list[Event]:
        taken, self.events = self.events, []
        return taken


if ray is not None:

    @ray.remote
    class RateClock(ReservationClock):
        """The run's rate-limit clock: one actor, every worker's requests reserve their slots on it."""

    Progress = ray.remote(num_cpus=0)(ProgressLog)
    play_remote = ray.remote(num_cpus=1, max_retries=0)(_play_remote)


def run_on_ray(address: str, jobs: Sequence[Job], report: Callable[[Event], None]) -> None:
    """Play ``jobs`` on the Ray cluster at ``address`` and ``report`` every event here (an episode's progress only
    until it has ended)."""
    connect(address)
    events = Progress.remote()
    rate_clock = RateClock.options(name=RATE_CLOCK, get_if_exists=True).remote()
    pending = {play_remote.remote(job, events, rate_clock): job for job in jobs}
    ended: set[tuple[str, Path | None]] = set()  # the episodes reported over (late progress of theirs is dropped)

    def progress() -> None:
        with signals_held():
            taken = ray.get(events.take.remote())
        for event in taken:
            if (event.job.name, event.job.trace_path) not in ended:
                report(event)

    try:
        while pending:
            with signals_held():  # a stop signal inside Ray's wait would end the process there, results unsaved
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            progress()
            for ref in ready:
                job = pending.pop(ref)
                ended.add((job.name, job.trace_path))
                report(_outcome(ref, job))
    finally:
        for ref in pending:  # stopped (Ctrl-C, an error): what still runs is cancelled
            ray.cancel(ref, force=True)
        ray.kill(events)


def _outcome(ref: Any, job: Job) -> Event:
    """A finished task's result (its trace written here) or why it failed."""
    try:
        with signals_held():
            result, trace, reason = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, BridgeError):
            raise exc.cause from None
        if isinstance(exc.cause, ImportError):  # a node without coteam (or an extra): every episode would meet it
            raise ImportError(
                f"a Ray node cannot import what an episode needs ({one_line(exc.cause)}): install this coteam, with "
                f"the ray extra, on every node"
            ) from None
        return Failed(job, one_line(exc.cause or exc))
    except ray.exceptions.RayError as exc:  # its worker or node died, the task was lost
        return Failed(job, f"its Ray worker died ({type(exc).__name__})")
    if reason is not None:
        return Failed(job, reason)
    if trace is not None and job.trace_path is not None:
        job.trace_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(job.trace_path, trace)
    assert result is not None
    return Finished(job, result)
