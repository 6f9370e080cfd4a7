"""Harness subcommands of ``coteam``: ``run``, ``bench``, ``suites``, ``render``, ``demo``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from coteam.llm import backends
from coteam.reasoning import Team
from coteam.registry import make_team, method_class, method_names
from coteam.safety import SafetyPolicy, load_policy
from coteam.world import MAX_AGENTS, Benchmark
from coteam_harness.pool import Clock, Event, Finished, Job, RunSettings, Started, default_workers, run_jobs
from coteam_harness.results import RESULTS_LOG, EpisodeResult, ResultsLog, summarize
from coteam_harness.runner import method_params
from coteam_harness.trace import journal_path
from coteam_harness.yamlfile import load_yaml
from coteam_sim.bridges import ENGINES
from coteam_sim.bridges.settings import TdwSettings, UnitySettings
from coteam_sim.camera import PERCEPTION
from coteam_sim.suites import SUITES, EpisodeSpec, get_suite

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


def parse_params(items: list[str], yaml_path: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if yaml_path:
        loaded = load_yaml(yaml_path) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{yaml_path}: expected a mapping of parameters")
        params.update(loaded)
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        try:
            params[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ValueError(f"--set {key.strip()}: {value!r} is not a YAML value") from None
    return params


def select_episodes(suite_name: str, episodes: str | None, seed: int) -> list[EpisodeSpec]:
    suite = get_suite(suite_name)
    if suite.fixed:
        specs = suite.episodes()
        return [specs[i] for i in parse_episode_range(episodes, len(specs))]
    return [suite.fresh(seed, i) for i in parse_episode_range(episodes or "0-9", None)]


class RunStopped(SystemExit):
    """A run stopped by a signal: the process exits with 128 + the signal's number once the results are saved."""

    def __init__(self, signum: int):
        self.signal = signal.Signals(signum).name
        super().__init__(128 + signum)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`RunStopped` in the main thread while the block runs (elsewhere, e.g. in a
    test's worker thread, signals are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise RunStopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def trace_path_of(out: Path, spec: EpisodeSpec) -> Path:
    return out / "traces" / f"{spec.suite}-{spec.index:03d}.json"


def run_suite(
    specs: list[EpisodeSpec],
    team: str,
    agents: int,
    params: dict[str, Any],
    out: Path,
    seed: int,
    quiet: bool = False,
    resume: bool = False,
    safety: SafetyPolicy | None = None,
    approve: bool = False,
    engine: str = "unity",
    unity: UnitySettings | None = None,
    workers: int = 1,
) -> list[EpisodeResult]:
    """Run ``specs`` and keep their results in ``out`` as each one ends (:class:`ResultsLog`); with ``resume``,
    the episodes an earlier run of the same settings finished there are kept, not run again. SIGTERM / SIGINT
    stop the run with every finished episode saved, ``results.json`` marked incomplete and the running episode's
    trace journal left in ``traces/``; the process then exits with 128 + the signal number. ``safety``: the home's
    policy in every episode; ``approve``: the answer to each question it asks a person. A bridge suite's episodes
    run on ``engine`` (``unity``: the simulator's Unity build, with ``unity``'s settings; ``fake``: its stand-in).
    ``workers``: processes playing the episodes at once (:mod:`coteam_harness.pool`: the same results); an episode
    that fails (its worker died, it raised) is listed in ``results.json`` and played again by ``resume``."""
    team_obj = make_team(team, params)  # validated once, before any episode; reset (not rebuilt) per episode
    meta = {"team": team, "agents": agents, "params": method_params(team_obj), "seed": seed}
    if safety is not None:
        meta["safety"] = {**safety.model_dump(mode="json", exclude_defaults=True), "approve": approve}
    seen_by = {spec.perception for spec in specs if spec.perception}
    if seen_by:
        meta["perception"] = ",".join(sorted(seen_by))
    noise = {spec.distractors for spec in specs if spec.distractors}
    if noise:
        meta["distractors"] = ",".join(str(n) for n in sorted(noise))
    if any(spec.bridge for spec in specs):
        meta["engine"] = engine
    log = ResultsLog(out, meta, planned=len(specs), resume=resume, order=[spec.name for spec in specs])
    check_store(team_obj, log)
    done = log.done
    settings = RunSettings(team, params, agents, seed, safety, approve, engine, unity)
    jobs = [Job(spec, settings, trace_path_of(out, spec)) for spec in specs if spec.name not in done]
    bars: dict[str, TaskID] = {}  # the episodes playing now, each with its bar
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
        overall = progress.add_task(f"{team} x{agents}", total=len(specs))
        progress.advance(overall, len(specs) - len(jobs))

        def report(event: Event) -> None:
            name = event.job.name
            if isinstance(event, Started):
                bars[name] = progress.add_task(f"  {name} {event.title}", total=event.horizon)
            elif isinstance(event, Clock):
                progress.update(bars[name], completed=event.clock)
            else:
                if name in bars:  # (an episode may fail before it starts: its scene could not be made)
                    progress.remove_task(bars.pop(name))
                progress.advance(overall)
                if isinstance(event, Finished):
                    log.add(event.result)
                else:
                    log.fail(name, event.reason)
                    console.print(f"[red]{name} failed[/red]: {event.reason}")

        try:
            run_jobs(jobs, workers, report, {settings.team_key: team_obj})
        except RunStopped as stop:
            interrupted = [
                {"episode": name, "trace": str(journal_path(trace_path_of(out, spec)))}
                for spec in specs
                if (name := spec.name) in bars
            ]
            log.write(stopped=stop.signal, interrupted=interrupted)
            console.print(
                f"stopped by {stop.signal} after {len(log.results)} of {len(specs)} episodes; results so far: "
                f"{out / 'results.json'} (finish with --resume)"
            )
            raise
    log.write()
    by_name = {r.episode: r for r in log.results}
    return [by_name[spec.name] for spec in specs if spec.name in by_name]


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


def results_table(results: list[EpisodeResult], title: str) -> Table:
    tdw = results and results[0].benchmark == Benchmark.TDWMAT.value
    table = Table(title=title)
    for col in (
        "episode",
        "task",
        "success",
        "frames" if tdw else "steps",
        "transport rate",
        "messages",
        "comm tokens",
        "travel m",
        "failed",
        "LLM tokens",
        "ms/decision",
    ):
        if col == "episode":  # never cut: an episode id is what a reader looks up (other columns wrap first)
            table.add_column(col, no_wrap=True, min_width=max((len(r.episode) for r in results), default=7))
        else:
            table.add_column(col, justify="left" if col == "task" else "right")
    for r in results:
        table.add_row(
            r.episode,
            r.task,
            "yes" if r.success else "no",
            str(r.steps),
            f"{r.transport_rate:.2f}",
            str(r.messages),
            str(r.comm_tokens),
            f"{r.travel_total_m:.1f}",
            str(r.failed_actions),
            str(r.tokens),
            f"{r.decision_ms_mean:.2f}",
        )
    s = summarize(results)
    table.add_section()
    table.add_row(
        "mean",
        "",
        f"{s['success_rate']:.0%}",
        f"{s['steps']:.1f}",
        f"{s['transport_rate']:.3f}",
        f"{s['messages']:.1f}",
        f"{s['comm_tokens']:.0f}",
        f"{s['travel_m']:.1f}",
        f"{s['failed_actions']:.1f}",
        f"{s['tokens']:.0f}",
        f"{s['decision_ms_mean']:.2f}",
    )
    return table


def run_folder(out: Path, *, chosen: bool, resume: bool) -> Path:
    """Where a run writes: ``out``, unless it holds an earlier run's results and the run does not resume it. Then a
    folder the user named is refused (one line), and the default folder becomes the next free ``<out>-2``,
    ``<out>-3``, ... (said): an earlier run's results are never overwritten."""
    if resume or not (out / RESULTS_LOG).exists():
        return out
    if chosen:
        raise ValueError(
            f"{out} holds an earlier run's results: add --resume to go on with it, or choose another --out"
        )
    n = 2
    while (Path(f"{out}-{n}") / RESULTS_LOG).exists():
        n += 1
    console.print(f"{out} holds an earlier run's results: writing to {out}-{n}")
    return Path(f"{out}-{n}")


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _cmd_run(args: argparse.Namespace) -> int:
    if not 1 <= args.agents <= MAX_AGENTS:
        raise ValueError(f"--agents must be between 1 and {MAX_AGENTS}")
    params = parse_params(args.set, args.config)
    if args.backend is not None:
        params["backend"] = args.backend
    specs = select_episodes(args.suite, args.episodes, args.seed)
    if args.perception:
        specs = [replace(spec, perception=args.perception) for spec in specs]
    if args.distractors:
        specs = [replace(spec, distractors=args.distractors) for spec in specs]
    tags = (f"-{args.perception}" if args.perception else "") + (
        f"-noisy{args.distractors}" if args.distractors else ""
    )
    default = f"runs/{args.suite}-{args.team}-x{args.agents}{tags}"
    out = run_folder(Path(args.out or default), chosen=args.out is not None, resume=args.resume)
    safety = load_policy(args.safety) if args.safety else None
    results = run_suite(
        specs,
        args.team,
        args.agents,
        params,
        out,
        args.seed,
        quiet=args.quiet,
        resume=args.resume,
        safety=safety,
        approve=args.approve == "yes",
        engine=args.engine,
        unity=unity_settings(args),
        workers=args.workers,
    )
    console.print(results_table(results, f"{args.suite} · {args.team} · {args.agents} agent(s)"))
    console.print(f"results: {out / 'results.json'}\ntraces:  {out / 'traces'}")
    return 0


def parse_agent_counts(text: str) -> list[int]:
    """``"2"`` -> [2]; ``"2,3,4"`` -> [2, 3, 4] (each between 1 and MAX_AGENTS)."""
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--agents expects a number or a list like 2,3,4, got {text!r}") from None
    if not counts or any(not 1 <= n <= MAX_AGENTS for n in counts):
        raise ValueError(f"--agents must be between 1 and {MAX_AGENTS}, got {text!r}")
    return counts


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


def _cmd_bench(args: argparse.Namespace) -> int:
    from coteam_harness.report import scaling_markdown, write_report

    params = parse_params(args.set, args.config)
    if args.backend is not None:
        params["backend"] = args.backend
    counts = parse_agent_counts(args.agents)
    suite = get_suite(args.suite)
    specs = select_episodes(args.suite, args.episodes, args.seed)
    out = Path(args.out or f"runs/bench-{args.suite}")
    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [n for n in names if n not in method_names()]
    if unknown or not names:
        raise KeyError(f"unknown method(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(method_names())}")
    own = split_params(names, params)
    reference = args.reference or names[0]
    if reference not in names:
        raise KeyError(f"--reference {reference} is not one of the methods run ({', '.join(names)})")
    by_count: dict[int, dict[str, list[EpisodeResult]]] = {}
    for n in counts:
        count_out = out if len(counts) == 1 else out / f"x{n}"
        unity = unity_settings(args)
        results = {
            name: run_suite(
                specs,
                name,
                n,
                own[name],
                count_out / name,
                args.seed,
                quiet=args.quiet,
                engine=args.engine,
                unity=unity,
                workers=args.workers,
            )
            for name in names
        }
        by_count[n] = results
        report = write_report(results, suite.benchmark, f"{args.suite} x{n}", count_out, reference)
        console.print(Path(report["markdown"]).read_text())
        console.print(f"table: {report['markdown']}\njson:  {report['json']}\nchart: {report['png']}")
    if len(counts) > 1:
        text = scaling_markdown(by_count, suite.benchmark, args.suite)
        (out / "scaling.md").write_text(text)
        console.print(text)
        console.print(f"scaling table: {out / 'scaling.md'}")
    return 0


def _cmd_suites(args: argparse.Namespace) -> int:
    table = Table(title="episode suites")
    for col in ("suite", "benchmark", "episodes", "description"):
        table.add_column(col)
    for s in SUITES.values():
        table.add_row(s.name, s.benchmark.value, str(len(s.episodes())) if s.fixed else "any (--seed)", s.description)
    console.print(table)
    if args.export:
        from coteam.scene_io import save_scene

        out = Path(args.export)
        out.mkdir(parents=True, exist_ok=True)
        for spec in select_episodes(args.export_suite, None if SUITES[args.export_suite].fixed else "0-9", args.seed):
            save_scene(spec.build(), out / f"{spec.suite}-{spec.index:03d}.json")
        console.print(f"scenes written to {out}")
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    from coteam_harness.trace import load_trace
    from coteam_sim.render import render_trace

    trace = load_trace(args.trace)
    out = Path(args.out or Path(args.trace).with_suffix(".png"))
    render_trace(trace, out)
    console.print(f"map written to {out}")
    return 0


def _cmd_camera(args: argparse.Namespace) -> int:
    import cv2
    import numpy as np

    from coteam.vision import draw_detections
    from coteam.world import AGENT_NAMES
    from coteam_sim.camera import CameraSpec, item_detector, render, stand_facing
    from coteam_sim.engine import Simulator

    (spec,) = select_episodes(args.suite, args.episode, args.seed)
    scene = spec.build()
    if args.agent not in AGENT_NAMES[: len(scene.agent_starts)]:
        raise ValueError(f"--agent must be one of {', '.join(a.name for a in scene.agent_starts)}")
    world = Simulator(scene, tuple(a.name for a in scene.agent_starts)).world
    if args.pose:
        x, y, heading = args.pose
        if not scene.floorplan.is_free(*scene.floorplan.cell_of((x, y))):
            raise ValueError(f"--pose: ({x}, {y}) is not on a free cell of {spec.name}'s floor plan")
        world.agents[args.agent].position, world.agents[args.agent].heading = (x, y), round(heading) % 360
    if args.facing:
        fixture, metres = int(args.facing[0]), args.facing[1]
        if not world.is_fixture(fixture):
            raise ValueError(f"--facing: {fixture} is not a fixture of {spec.name}")
        if not stand_facing(world, args.agent, fixture, metres):
            raise ValueError(f"--facing: no free spot {metres:g} m from {world.fixture(fixture).name} in its room")
    if args.open_all:
        world.is_open.update(dict.fromkeys(world.is_open, True))
    frame = render(world, args.agent, CameraSpec(args.width, args.height, args.fov))
    rgb_path, depth_path = Path(f"{args.out}-rgb.png"), Path(f"{args.out}-depth.png")
    drawn_path = Path(f"{args.out}-detections.png")
    rgb_path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(rgb_path), cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(depth_path), np.clip(frame.depth * 1000, 0, 65535).astype(np.uint16))
    found = item_detector(world).detect(frame)
    cv2.imwrite(str(drawn_path), cv2.cvtColor(draw_detections(frame.rgb, found), cv2.COLOR_RGB2BGR))
    table = Table(title=f"{spec.name}: {args.agent}'s camera, ArUco markers")
    for col in ("object", "pixel", "depth m", "map x, y, z"):
        table.add_column(col)
    for d in found:
        x, y, z = frame.pose.to_map(np.array(d.point))
        table.add_row(f"<{d.name}> ({d.object_id})", f"{d.pixel[0]:.0f}, {d.pixel[1]:.0f}", f"{d.depth_m:.2f}",
                      f"{x:.2f}, {y:.2f}, {z:.2f}")  # fmt: skip
    console.print(table)
    console.print(f"rgb: {rgb_path}\ndepth: {depth_path} (uint16, millimetres)\ndetections: {drawn_path}")
    return 0


DEMO_TEAM = "pce"  # the team of `make demo` (config/team_sim.yaml), which `coteam demo` runs in process


def _cmd_demo(args: argparse.Namespace) -> int:
    from coteam_harness.trace import load_trace
    from coteam_sim.render import render_trace

    out = Path(args.out)
    for suite in ("cwah-test", "tdwmat-test"):
        specs = select_episodes(suite, str(args.episode), 0)
        run_out = out / suite
        results = run_suite(specs, args.team, 2, {}, run_out, 0)
        console.print(results_table(results, f"demo: {suite} episode {args.episode} · {args.team} · 2 robots"))
        trace_path = Path(results[0].trace or "")
        png = trace_path.with_suffix(".png")
        render_trace(load_trace(trace_path), png)
        console.print(f"trace: {trace_path}\nmap:   {png}\nresults: {run_out / 'results.json'}\n")
    return 0


def unity_settings(args: argparse.Namespace) -> UnitySettings:
    """The Unity simulators' settings of the command line (:func:`_engine_arguments`)."""
    return UnitySettings.of(args.thor_executable, args.thor_platform, args.tdw_port, not args.tdw_no_launch)


def _workers_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        metavar="N",
        help=f"processes playing episodes at once (default: this machine's {default_workers()} cores; same results)",
    )


def _engine_arguments(p: argparse.ArgumentParser) -> None:
    """How a bridge suite (``mapthor``, ``tdwmat-tdw``) reaches its external simulator (docs/simulator.md)."""
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="unity",
        help="bridge suites: the simulator's Unity build (default) or the stand-in that answers in its format",
    )
    p.add_argument("--thor-executable", metavar="PATH", help="AI2-THOR: a local Unity build to run")
    p.add_argument("--thor-platform", metavar="NAME", help="AI2-THOR: e.g. CloudRendering (no X display needed)")
    p.add_argument("--tdw-port", type=int, default=TdwSettings.port, metavar="N", help="TDW: the build's port")
    p.add_argument(
        "--tdw-no-launch", action="store_true", help="TDW: connect to a build started by hand instead of launching one"
    )


def register(sub: argparse._SubParsersAction) -> None:
    team_help = "method (see `coteam methods`)"
    p = sub.add_parser("run", help="run a team on a suite of episodes")
    p.add_argument("--suite", required=True, choices=sorted(SUITES))
    p.add_argument("--team", default="rhp", help=team_help)
    p.add_argument("--agents", type=int, default=2)
    p.add_argument("--episodes", help="e.g. 0-4 or 1,3,5 (default: the whole test set, or 0-9 when generated)")
    p.add_argument("--seed", type=int, default=0, help="seed of generated suites and of the simulator's tie-breaks")
    p.add_argument("--backend", choices=backends(), help="who answers the method's roles (methods with roles)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="method hyper-parameter")
    p.add_argument("--config", help="YAML file of method hyper-parameters")
    p.add_argument("--out", help="output directory (default runs/<suite>-<team>-x<agents>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--resume", action="store_true", help="keep the episodes a stopped run of the same settings finished in --out"
    )
    p.add_argument(
        "--perception",
        choices=PERCEPTION,
        help="see items through the robots' cameras with this detector (any suite; the visual suites use aruco)",
    )
    p.add_argument(
        "--distractors",
        type=_non_negative,
        default=0,
        help="add this many task-irrelevant items to every episode (any suite; the noisy suites add 10 or 20)",
    )
    p.add_argument("--safety", metavar="FILE", help="a safety policy the robots keep (docs/reliability.md)")
    p.add_argument(
        "--approve",
        choices=("yes", "no"),
        default="no",
        help="the answer to every action the safety policy asks a person to approve (default: no)",
    )
    _engine_arguments(p)
    _workers_argument(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("bench", help="compare methods on a suite: paper-style table, JSON and bar chart")
    p.add_argument("--suite", required=True, choices=sorted(SUITES))
    p.add_argument("--methods", default="pce,coela,mhp,rhp,random,oracle", help="comma-separated methods")
    p.add_argument(
        "--reference", metavar="METHOD", help="the method every other is paired against (default: the first)"
    )
    p.add_argument("--agents", default="2", help="team size, or several for a scaling table (e.g. 2,3,4)")
    p.add_argument("--episodes", help="e.g. 0-4 (default: the whole test set, or 0-9 when generated)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", choices=backends(), help="backend of the methods with roles")
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="hyper-parameter (to methods that have it)"
    )
    p.add_argument("--config", help="YAML file of hyper-parameters")
    p.add_argument("--out", help="output directory (default runs/bench-<suite>)")
    p.add_argument("--quiet", action="store_true")
    _engine_arguments(p)
    _workers_argument(p)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("suites", help="list episode suites (and export their scenes as JSON)")
    p.add_argument("--export", metavar="DIR", help="write the scenes of --export-suite to DIR")
    p.add_argument("--export-suite", default="cwah-test", choices=sorted(SUITES))
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_suites)

    p = sub.add_parser("render", help="draw an episode trace as a top-down PNG")
    p.add_argument("trace")
    p.add_argument("--out", help="PNG path (default: next to the trace)")
    p.set_defaults(func=_cmd_render)

    p = sub.add_parser(
        "camera",
        help="what a robot's simulated RGB-D camera sees at an episode's start, and the markers found in it",
        description="Render one robot's camera (coteam_sim.camera) at the start of an episode, or from a pose you "
        "give, write the RGB image and the depth image (16-bit PNG, millimetres), and list the ArUco markers found.",
    )
    p.add_argument("--suite", default="cwah-test", choices=sorted(SUITES))
    p.add_argument("--episode", default="0", help="episode index")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--agent", default="alice")
    p.add_argument("--pose", nargs=3, type=float, metavar=("X", "Y", "HEADING"), help="place the robot here first")
    p.add_argument(
        "--facing", nargs=2, type=float, metavar=("FIXTURE", "METRES"), help="place the robot this far from a fixture"
    )
    p.add_argument("--open-all", action="store_true", help="open every container first")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--fov", type=float, default=60.0, help="horizontal field of view, degrees")
    p.add_argument("--out", default="camera", help="output prefix: PREFIX-rgb.png, -depth.png, -detections.png")
    p.set_defaults(func=_cmd_camera)

    p = sub.add_parser("demo", help="one C-WAH and one TDW-MAT episode with the ROS demo's two-robot team, in process")
    p.add_argument("--team", default=DEMO_TEAM, choices=method_names(), help=f"default {DEMO_TEAM}, as make demo")
    p.add_argument("--episode", type=int, default=0)
    p.add_argument("--out", default="runs/demo")
    p.set_defaults(func=_cmd_demo)
