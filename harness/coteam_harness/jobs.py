"""What a run's episodes are, wherever they are played (a local pool, :mod:`coteam_harness.pool`; a Ray cluster,
:mod:`coteam_harness.ray_pool`): the run's settings, a job (one episode), the events a player reports, and how one
job is played with its team."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coteam.agent.heap import settle_heap
from coteam.agent.reasoning import Team
from coteam.home.safety import SafetyPolicy
from coteam.registry import make_team
from coteam_harness.results import EpisodeResult
from coteam_harness.runner import run_episode
from coteam_sim.bridges import bridge_for
from coteam_sim.bridges.settings import UnitySettings
from coteam_sim.suites import EpisodeSpec

CLOCK_REPORT_EVERY = 10  # a worker reports an episode's clock this often (each step would flood the queue)


@dataclass(frozen=True)
class RunSettings:
    """What the episodes of one run share: the team and its switches, the team size, the seed, the safety policy and
    the engine of bridge suites (picklable: it goes to the workers)."""

    team: str
    params: Mapping[str, Any] = field(default_factory=dict)
    agents: int = 2
    seed: int = 0
    safety: SafetyPolicy | None = None
    approve: bool = False
    engine: str = "unity"
    unity: UnitySettings | None = None

    @property
    def team_key(self) -> str:
        """The team a worker builds for these settings (one per method and switches)."""
        return json.dumps([self.team, dict(self.params)], sort_keys=True, default=str)


@dataclass(frozen=True)
class Job:
    """One episode to play, with its run's settings and where its trace goes."""

    spec: EpisodeSpec
    settings: RunSettings
    trace_path: Path | None = None

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Started:
    job: Job
    title: str
    horizon: int


@dataclass(frozen=True)
class Clock:
    job: Job
    clock: int


@dataclass(frozen=True)
class Finished:
    job: Job
    result: EpisodeResult


@dataclass(frozen=True)
class Failed:
    job: Job
    reason: str


Event = Started | Clock | Finished | Failed


def team_for(teams: dict[str, Team], settings: RunSettings) -> Team:
    """The team ``settings`` name, from ``teams`` (by :attr:`RunSettings.team_key`), built and kept there the first
    time: a process builds each team once and resets it for each episode. What is alive once the team is built is
    then frozen out of the garbage collector's scans (:func:`~coteam.agent.heap.settle_heap`), as a robot's planner
    does once its nodes are up."""
    key = settings.team_key
    if key not in teams:
        teams[key] = make_team(settings.team, dict(settings.params))
        settle_heap()
    return teams[key]


def play(job: Job, team: Team, report: Callable[[Event], None]) -> EpisodeResult:
    """``job``'s episode with ``team`` (reset for it), reporting its start and its clock."""
    spec, settings = job.spec, job.settings
    source = bridge_for(spec, settings.engine, settings.unity) if spec.bridge else spec.build()
    title, horizon = (source.title, source.horizon) if spec.bridge else (source.task.name, source.task.horizon)
    report(Started(job, title, horizon))
    approve = settings.approve

    def clock(now: int, _horizon: int) -> None:
        if now % CLOCK_REPORT_EVERY == 0:
            report(Clock(job, now))

    return run_episode(
        source,
        team,
        n_agents=settings.agents,
        seed=settings.seed,
        trace_path=job.trace_path,
        episode_name=spec.name,
        on_step=clock,
        perception=spec.perception,
        safety=settings.safety,
        approve=(lambda _question: approve) if settings.safety is not None else None,
    )


def plays_in_order(team: Team) -> bool:
    """Whether ``team`` must play a run's episodes in order, in one process: it keeps a store across them."""
    store = getattr(team, "store", None)
    return store is not None and store.persisted


def one_line(exc: BaseException) -> str:
    """An exception as the one line a failed episode is reported with."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
