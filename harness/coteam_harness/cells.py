"""Runs of several teams at once: each :class:`Cell` is one team's run over a list of episodes, with its own folder
(``results.json``, ``traces/``), and :func:`run_cells` plays every cell's episodes on one pool (local processes or
a Ray cluster, :mod:`coteam_harness.pool`), so a comparison of methods, team sizes or switches keeps every worker
busy until its last episode. ``coteam run`` is one cell; ``coteam bench`` and ``coteam sweep`` are many.

Each cell saves its results as its episodes end (:class:`~coteam_harness.results.ResultsLog`: crash-safe, listed
in the cell's order, ``--resume`` plays only what is missing or failed). SIGTERM / SIGINT stop the run with every
finished episode saved, each cell's ``results.json`` marked incomplete and the running episodes' trace journals
left in ``traces/``; the process then exits with 128 + the signal number."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from coteam.agent.reasoning import Team
from coteam.registry import method_class
from coteam_harness.jobs import Clock, Event, Finished, Job, RunSettings, Started, team_for
from coteam_harness.pool import run_jobs
from coteam_harness.results import EpisodeResult, ResultsLog
from coteam_harness.runner import method_params
from coteam_harness.stopping import RunStopped, stop_on_signals
from coteam_harness.trace import journal_path
from coteam_sim.suites import EpisodeSpec, get_suite

console = Console(width=None if sys.stdout.isatty() else 132)  # full tables in logs and pipes


def parse_episode_range(text: str | None, available: int | None) -> list[int]:
    """``"0-4"`` → [0..4], ``"1,3,7"`` → [1, 3, 7], ``None`` → all ``available``."""
    if text is None:
        if available is None:
            raise ValueError("--episodes is required for a generated suite")
        return list(range(available))
    bad = ValueError(f"bad episode range {text!r}: expected e.g. 0-4 or 1,3,7")
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.extend(range(int(lo), int(hi) + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise bad from None
    if not out or min(out) < 0:
        raise bad
    if available is not None and max(out) >= available:
        raise ValueError(f"episode {max(out)} out of range: the suite has {available} episodes (0-{available - 1})")
    return out


def select_episodes(suite_name: str, episodes: str | None, seed: int) -> list[EpisodeSpec]:
    """The episodes ``episodes`` (a range, :func:`parse_episode_range`) of suite ``suite_name``: a fixed suite's
    own (all by default), or a generated suite's made from ``seed`` (0-9 by default)."""
    suite = get_suite(suite_name)
    if suite.fixed:
        specs = suite.episodes()
        return [specs[i] for i in parse_episode_range(episodes, len(specs))]
    return [suite.fresh(seed, i) for i in parse_episode_range(episodes or "0-9", None)]


def split_params(names: list[str], params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each method's share of ``params`` (the switches its config declares), validated before anything runs."""
    declared = {n: set(method_class(n).Config.switch_names()) for n in names}
    unused = sorted(k for k in params if not any(k in d for d in declared.values()))
    if unused:
        raise ValueError(f"no method in {', '.join(names)} has the switch(es) {', '.join(unused)}")
    own = {n: {k: v for k, v in params.items() if k in declared[n]} for n in names}
    for n in names:
        method_class(n).Config.parse_switches(n, own[n])
    return own


def trace_path_of(out: Path, spec: EpisodeSpec) -> Path:
    return out / "traces" / f"{spec.suite}-{spec.index:03d}.json"


@dataclass(frozen=True)
class Cell:
    """One team's run: ``specs`` played with ``settings``, results and traces in ``out``; ``label`` names it on the
    progress bar."""

    specs: Sequence[EpisodeSpec]
    settings: RunSettings
    out: Path
    label: str = ""


def check_store(team: Team, log: ResultsLog) -> None:
    """A resumed run goes on with the method's persisted store only if the file still holds what the last finished
    episode left in it (a one-line error otherwise: nothing is overwritten)."""
    store = getattr(team, "store", None)
    if store is None or not store.persisted or not log.results:
        return
    last = log.results[-1]
    if last.store_sha256 != store.digest():
        raise ValueError(
            f"store {store.path} does not hold what episode {last.episode} left in it (results.json records "
            f"another content): restore the file, or run afresh with a new --out and store"
        )


def _refuse_shared_stores(cells: Sequence[Cell], teams: dict[str, Team]) -> None:
    """A learning team's store file belongs to one run: two cells learning into one file would each see the other's
    lessons (and a resumed run could not tell whose the file holds)."""
    users: dict[str, list[str]] = {}
    for cell in cells:
        store = getattr(teams[cell.settings.team_key], "store", None)
        if store is not None and store.persisted:
            users.setdefault(str(store.path), []).append(str(cell.out))
    shared = next(((path, outs) for path, outs in users.items() if len(outs) > 1), None)
    if shared is not None:
        path, outs = shared
        raise ValueError(
            f"store {path} would be shared by {len(outs)} runs ({outs[0]}, {outs[1]}, ...): give each its own store "
            f"(one method, seed and team size per store file)"
        )


def _meta(cell: Cell, team: Team) -> dict[str, Any]:
    """What a cell's ``results.json`` records of its settings (a resumed run must match it)."""
    s = cell.settings
    meta: dict[str, Any] = {"team": s.team, "agents": s.agents, "params": method_params(team), "seed": s.seed}
    if s.safety is not None:
        meta["safety"] = {**s.safety.model_dump(mode="json", exclude_defaults=True), "approve": s.approve}
    seen_by = {spec.perception for spec in cell.specs if spec.perception}
    if seen_by:
        meta["perception"] = ",".join(sorted(seen_by))
    noise = {spec.distractors for spec in cell.specs if spec.distractors}
    if noise:
        meta["distractors"] = ",".join(str(n) for n in sorted(noise))
    if any(spec.bridge for spec in cell.specs):
        meta["engine"] = s.engine
    return meta


def run_cells(
    cells: Sequence[Cell],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    quiet: bool = False,
    resume: bool = False,
    title: str | None = None,
) -> list[list[EpisodeResult]]:
    """Play every cell's episodes on ``workers`` local processes, or on the Ray cluster at ``ray_address``
    (``"local"``: one started on this machine), and return each cell's results in its episodes' order. Every team
    is built here first, so a bad switch fails before any episode runs. With ``resume`` a cell's finished episodes
    (an earlier run of the same settings in its folder) are kept, not played again. An episode that fails (its
    worker died, it raised) is listed in its cell's ``results.json`` and played again by ``resume``."""
    folders = [cell.out for cell in cells]
    clash = next((f for f in folders if folders.count(f) > 1), None)
    if clash is not None:
        raise ValueError(f"two runs of one sweep or bench would write to {clash} (a setting listed twice?)")
    teams: dict[str, Team] = {}
    for cell in cells:  # validated once, before any episode or file; reset (not rebuilt) per episode
        team_for(teams, cell.settings)
    _refuse_shared_stores(cells, teams)
    if ray_address is not None:  # before the signal handlers: joining Ray installs its own for SIGTERM
        from coteam_harness.ray_pool import connect

        connect(ray_address)
    logs: dict[Path, ResultsLog] = {}
    jobs: list[Job] = []
    owner: dict[Path, ResultsLog] = {}  # a job's trace path -> its cell's log
    for cell in cells:
        team = teams[cell.settings.team_key]
        log = ResultsLog(
            cell.out, _meta(cell, team), planned=len(cell.specs), resume=resume, order=[s.name for s in cell.specs]
        )
        check_store(team, log)
        logs[cell.out] = log
        for spec in cell.specs:
            if spec.name not in log.done:
                job = Job(spec, cell.settings, trace_path_of(cell.out, spec))
                jobs.append(job)
                owner[job.trace_path] = log
    planned = sum(len(cell.specs) for cell in cells)
    bars: dict[Path, TaskID] = {}  # the episodes playing now, each with its bar
    with (
        stop_on_signals(),
        Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=quiet,
            transient=False,
        ) as progress,
    ):
        overall = progress.add_task(title or ", ".join(cell.label for cell in cells), total=planned)
        progress.advance(overall, planned - len(jobs))

        def report(event: Event) -> None:
            where = event.job.trace_path
            if isinstance(event, Started):
                bars[where] = progress.add_task(f"  {event.job.name} {event.title}", total=event.horizon)
            elif isinstance(event, Clock):
                progress.update(bars[where], completed=event.clock)
            else:
                if where in bars:  # (an episode may fail before it starts: its scene could not be made)
                    progress.remove_task(bars.pop(where))
                progress.advance(overall)
                if isinstance(event, Finished):
                    owner[where].add(event.result)
                else:
                    owner[where].fail(event.job.name, event.reason)
                    console.print(f"[red]{event.job.name} failed[/red]: {event.reason}")

        try:
            run_jobs(jobs, workers, report, teams, ray_address=ray_address)
        except RunStopped as stop:
            for log in logs.values():
                interrupted = [
                    {
                        "episode": job.name,
                        "trace": str(journal) if (journal := journal_path(job.trace_path)).exists() else None,
                    }
                    for job in jobs
                    if job.trace_path in bars and owner[job.trace_path] is log
                ]
                log.write(stopped=stop.signal, interrupted=interrupted)
            done = sum(len(log.results) for log in logs.values())
            folders = ", ".join(str(log.out / "results.json") for log in logs.values())
            console.print(
                f"stopped by {stop.signal} after {done} of {planned} episodes; results so far: {folders} "
                f"(finish with --resume)"
            )
            raise
    out: list[list[EpisodeResult]] = []
    for cell in cells:
        log = logs[cell.out]
        log.write()
        by_name = {r.episode: r for r in log.results}
        out.append([by_name[spec.name] for spec in cell.specs if spec.name in by_name])
    return out
