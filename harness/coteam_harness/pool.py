"""A run's episodes on worker processes: ``coteam run`` and ``coteam bench`` play them on a local pool of
``--workers`` processes (default: the machine's cores), with the results, traces and tables of one process playing
them in order.

* Every worker builds each team it is given once and resets it for each episode, as a serial run does: an
  episode's result and trace depend only on the episode, the team's settings and the seed. A team that keeps a
  store across episodes (a learning method's ``store:`` file) plays its episodes in order in this process: each
  one learns from the last.
* The caller gets every event here, in this process (:func:`run_jobs`): an episode started, its clock, its result,
  or its failure. ``coteam run`` saves each result as it comes (crash-safe results) and shows one progress bar
  across the workers.
* A worker that dies (killed, out of memory, a crash in native code) fails the episode it was playing with the
  reason, and a new worker takes its place; an episode that raises fails with its one-line error the same way. The
  other episodes go on. A :class:`~coteam_sim.bridges.BridgeError` (a Unity build that cannot be reached) stops the
  run instead: every episode would meet it.
* The model endpoint's rate limit (:mod:`coteam.llm.ratelimit`) is kept for the whole pool: a worker's request
  reserves its slot on this process's clock, through the worker's pipes.
* ``--ray`` plays the same jobs on a Ray cluster instead (:mod:`coteam_harness.ray_pool`).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from coteam.agent.reasoning import Team
from coteam.llm.ratelimit import local_clock, share_reservations
from coteam_harness.jobs import Event, Failed, Finished, Job, RunSettings, one_line, play, plays_in_order, team_for
from coteam_harness.results import EpisodeResult
from coteam_sim.bridges import BridgeError
from coteam_sim.suites import EpisodeSpec

PR_SET_PDEATHSIG = 1  # Linux prctl: a signal for the worker when its parent dies


def run_jobs(
    jobs: Sequence[Job],
    workers: int,
    report: Callable[[Event], None],
    teams: Mapping[str, Team] | None = None,
    *,
    ray_address: str | None = None,
) -> None:
    """Play ``jobs`` on ``workers`` processes (1: here, in order), or on the Ray cluster at ``ray_address``
    (:func:`coteam_harness.ray_pool.run_on_ray`), and ``report`` every event here. ``teams`` (by
    :attr:`RunSettings.team_key`) are the team objects of this process: a job whose team must play in order
    (:func:`plays_in_order`) is played here with it, after the others."""
    teams = dict(teams or {})

    on_ray = ray_address is not None
    here = [j for j in jobs if (workers <= 1 and not on_ray) or plays_in_order(team_for(teams, j.settings))]
    pooled = [j for j in jobs if j not in here]
    if len(pooled) == 1 and not on_ray:
        here, pooled = pooled + here, []
    if pooled and on_ray:
        from coteam_harness.ray_pool import run_on_ray

        run_on_ray(ray_address, pooled, report)
    elif pooled:
        _Pool(min(workers, len(pooled))).run(pooled, report)
    for job in here:
        try:
            result = play(job, team_for(teams, job.settings), report)
        except BridgeError:
            raise
        except Exception as exc:  # the episode fails with its reason; the run goes on
            report(Failed(job, one_line(exc)))
        else:
            report(Finished(job, result))


def play_all(
    specs: Sequence[EpisodeSpec],
    team: str,
    params: Mapping[str, Any] | None = None,
    *,
    agents: int = 2,
    seed: int = 0,
    workers: int = 1,
) -> list[EpisodeResult]:
    """``team``'s results on ``specs``, in their order, played on ``workers`` processes (a bench script's loop); an
    episode that fails raises a :class:`RuntimeError` naming it and why (a measurement must not skip one)."""
    settings = RunSettings(team, dict(params or {}), agents, seed)
    jobs = [Job(spec, settings) for spec in specs]
    results: dict[str, EpisodeResult] = {}

    def keep(event: Event) -> None:
        if isinstance(event, Failed):
            raise RuntimeError(f"{event.job.name} failed: {event.reason}")
        if isinstance(event, Finished):
            results[event.job.name] = event.result

    run_jobs(jobs, workers, keep)
    return [results[spec.name] for spec in specs]


def default_workers() -> int:
    """The machine's cores (the ones this process may use)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- the pool ------------------------------------------------------------------------------------------------------
def _worker(jobs: Connection, events: Connection) -> None:
    """A worker: each job the parent sends it, until None; the teams built once each. Each worker has its own pipes:
    a worker killed while writing to a queue shared by all would leave its lock held, and every other worker stuck."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the workers
    if sys.platform == "linux":  # a parent killed outright takes its workers with it
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    speaking = threading.Lock()  # one message at a time on the pipes (a team may call its model from threads)

    def send(event: object) -> None:
        with speaking:
            events.send(event)

    def reserve(endpoint: str, interval_s: float, max_wait_s: float) -> float:
        with speaking:
            events.send(Reservation(endpoint, interval_s, max_wait_s))
            return jobs.recv()

    share_reservations(reserve)
    teams: dict[str, Team] = {}
    while (job := jobs.recv()) is not None:
        try:
            result = play(job, team_for(teams, job.settings), send)
        except BridgeError as exc:
            send(exc)
        except Exception as exc:  # the episode fails with its reason; the worker goes on
            send(Failed(job, one_line(exc)))
        else:
            send(Finished(job, result))


@dataclass(frozen=True)
class Reservation:
    """A worker asks the parent for a request slot of a rate-limited endpoint; the answer (seconds to wait) comes
    back on its jobs pipe."""

    endpoint: str
    interval_s: float
    max_wait_s: float


@dataclass
class _Worker:
    process: Any
    jobs: Connection  # the parent's end: jobs out
    events: Connection  # the parent's end: events in
    job: Job | None = None  # the one it plays


class _Pool:
    """``size`` worker processes, each given one job at a time; a worker that dies is replaced."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.context = multiprocessing.get_context("spawn")  # no fork of a process with threads (progress bars)
        self.workers: list[_Worker] = []

    def _start_worker(self) -> None:
        jobs_in, jobs_out = self.context.Pipe(duplex=False)
        events_in, events_out = self.context.Pipe(duplex=False)
        process = self.context.Process(target=_worker, args=(jobs_in, events_out), daemon=True)
        process.start()
        jobs_in.close()
        events_out.close()
        self.workers.append(_Worker(process, jobs_out, events_in))

    def run(self, jobs: list[Job], report: Callable[[Event], None]) -> None:
        pending = collections.deque(jobs)
        for _ in range(self.size):
            self._start_worker()
        done = False
        try:
            while pending or any(w.job is not None for w in self.workers):
                for worker in self.workers:
                    if worker.job is None and pending:
                        worker.job = pending.popleft()
                        worker.jobs.send(worker.job)
                by_handle = {w.events: w for w in self.workers} | {w.process.sentinel: w for w in self.workers}
                for ready in wait(list(by_handle), timeout=1.0):
                    worker = by_handle[ready]
                    if worker in self.workers:
                        self._hear(worker, report)
            done = True
        finally:
            for worker in self.workers:
                if done and worker.process.is_alive():
                    worker.jobs.send(None)
                else:
                    worker.process.terminate()  # stopped (Ctrl-C, an error): no episode is finished
            for worker in self.workers:
                worker.process.join(timeout=10)

    def _hear(self, worker: _Worker, report: Callable[[Event], None]) -> None:
        """Everything ``worker`` said; if it died, its episode fails and another worker takes its place."""
        try:
            while worker.events.poll():
                event = worker.events.recv()
                if isinstance(event, BridgeError):
                    raise event
                if isinstance(event, Reservation):
                    worker.jobs.send(local_clock().reserve(event.endpoint, event.interval_s, event.max_wait_s))
                    continue
                if isinstance(event, Finished | Failed):
                    worker.job = None
                report(event)
        except (EOFError, OSError, pickle.UnpicklingError):
            pass  # it died (mid-message, perhaps): said below
        if worker.process.is_alive():
            return
        worker.process.join()
        self.workers.remove(worker)
        if worker.job is not None:
            report(Failed(worker.job, f"its worker died (exit code {worker.process.exitcode})"))
        self._start_worker()
