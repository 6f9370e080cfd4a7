"""Harness subcommands of ``coteam``: ``run``, ``bench``, ``suites``, ``render``, ``demo``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from rich.table import Table

from coteam.domain.handling_file import load_handling
from coteam.domain.validation import read_yaml
from coteam.domain.world import MAX_AGENTS
from coteam.home.safety import SafetyPolicy
from coteam.home.world_file import load_safety_policy
from coteam.llm import backends
from coteam.registry import method_names
from coteam_harness.cells import Cell, console, run_cells, select_episodes, split_params
from coteam_harness.jobs import RunSettings
from coteam_harness.pool import default_workers
from coteam_harness.report import results_table
from coteam_harness.results import RESULTS_LOG, EpisodeResult
from coteam_sim.bridges import ENGINES
from coteam_sim.bridges.settings import TdwSettings, UnitySettings
from coteam_sim.camera import PERCEPTION
from coteam_sim.suites import SUITES, EpisodeSpec, get_suite


def parse_params(items: list[str], yaml_path: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if yaml_path:
        loaded = read_yaml(yaml_path) or {}
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
    ray_address: str | None = None,
) -> list[EpisodeResult]:
    """Run ``specs`` with ``team`` and keep their results in ``out`` as each one ends: one cell of
    :func:`~coteam_harness.cells.run_cells` (results, resume, signals, workers and Ray as documented there).
    ``safety``: the home's policy in every episode; ``approve``: the answer to each question it asks a person. A
    bridge suite's episodes run on ``engine`` (``unity``: the simulator's Unity build, with ``unity``'s settings;
    ``fake``: its stand-in)."""
    settings = RunSettings(team, params, agents, seed, safety, approve, engine, unity)
    cell = Cell(specs, settings, out, f"{team} x{agents}")
    (results,) = run_cells([cell], workers=workers, ray_address=ray_address, quiet=quiet, resume=resume)
    return results


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
    if args.handling:
        if any(spec.bridge for spec in specs):
            raise ValueError(f"--handling: {args.suite} runs on an external engine, which has its own handling")
        limits = load_handling(args.handling)
        specs = [replace(spec, handling=limits) for spec in specs]
    tags = (f"-{args.perception}" if args.perception else "") + (
        f"-noisy{args.distractors}" if args.distractors else ""
    )
    default = f"runs/{args.suite}-{args.team}-x{args.agents}{tags}"
    out = run_folder(Path(args.out or default), chosen=args.out is not None, resume=args.resume)
    safety = load_safety_policy(args.safety) if args.safety else None
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
        ray_address=args.ray,
    )
    if results:
        console.print(results_table(results, f"{args.suite} · {args.team} · {args.agents} agent(s)"))
    console.print(f"results: {out / 'results.json'}\ntraces:  {out / 'traces'}")
    if len(results) < len(specs):  # each failure was said as it happened; results.json lists them
        failed = len(specs) - len(results)
        console.print(f"{failed} of {len(specs)} episodes failed (listed in results.json; --resume plays them again)")
        return 1
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
    unity = unity_settings(args)

    def folder(n: int) -> Path:
        return out if len(counts) == 1 else out / f"x{n}"

    cells = [
        Cell(specs, RunSettings(name, own[name], n, args.seed, engine=args.engine, unity=unity), folder(n) / name)
        for n in counts
        for name in names
    ]
    played = iter(
        run_cells(
            cells,
            workers=args.workers,
            ray_address=args.ray,
            quiet=args.quiet,
            title=f"{args.suite}: {', '.join(names)} x{','.join(map(str, counts))}",
        )
    )
    by_count: dict[int, dict[str, list[EpisodeResult]]] = {n: {name: next(played) for name in names} for n in counts}
    for n, results in by_count.items():
        report = write_report(results, suite.benchmark, f"{args.suite} x{n}", folder(n), reference)
        console.print(Path(report["markdown"]).read_text())
        console.print(f"table: {report['markdown']}\njson:  {report['json']}\nchart: {report['png']}")
    if len(counts) > 1:
        text = scaling_markdown(by_count, suite.benchmark, args.suite)
        (out / "scaling.md").write_text(text)
        console.print(text)
        console.print(f"scaling table: {out / 'scaling.md'}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from coteam_harness.sweep import load_sweep, run_sweep

    sweep = load_sweep(args.file)
    out = Path(args.out or f"runs/sweep-{Path(args.file).stem}")
    report = run_sweep(
        sweep,
        out,
        workers=args.workers,
        ray_address=args.ray,
        quiet=args.quiet,
        resume=args.resume,
        engine=args.engine,
        unity=unity_settings(args),
    )
    console.print(Path(report["markdown"]).read_text())
    console.print(f"table: {report['markdown']}\njson:  {report['json']}\ncharts: {out}/<suite>/x<n>/comparison.png")
    return 0


def _cmd_suites(args: argparse.Namespace) -> int:
    table = Table(title="episode suites")
    for col in ("suite", "benchmark", "episodes", "description"):
        table.add_column(col)
    for s in SUITES.values():
        table.add_row(s.name, s.benchmark.value, str(len(s.episodes())) if s.fixed else "any (--seed)", s.description)
    console.print(table)
    if args.export:
        from coteam.domain.scene_io import save_scene

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

    from coteam.domain.world import AGENT_NAMES
    from coteam.senses.vision import draw_detections
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


def _pool_arguments(p: argparse.ArgumentParser) -> None:
    """Where the episodes are played (:mod:`coteam_harness.pool`): local worker processes, or a Ray cluster."""
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        metavar="N",
        help=f"processes playing episodes at once (default: this machine's {default_workers()} cores; same results)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="play the episodes on the Ray cluster at ADDRESS (e.g. 10.0.0.5:6379, or auto); no address: the one "
        "RAY_ADDRESS names or one running here, else a new one on this machine; needs the ray extra on every node",
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
        "--handling",
        metavar="FILE",
        help="handling limits the simulator applies and nobody tells the robots, instead of the suite's "
        "(coteam.domain.handling_file; the strict suites' are coteam_sim/handling/*.yaml)",
    )
    p.add_argument(
        "--approve",
        choices=("yes", "no"),
        default="no",
        help="the answer to every action the safety policy asks a person to approve (default: no)",
    )
    _engine_arguments(p)
    _pool_arguments(p)
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
    _pool_arguments(p)
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser(
        "sweep",
        help="run a sweep file (methods x suites x seeds x team sizes x switches): one table with its charts",
        description="Expand a sweep file (its format: harness/coteam_harness/sweep.py) into one run per method, "
        "switch setting, suite, team size and seed, play them all on one pool (or a Ray cluster), and write one "
        "comparison table per suite and team size (episode counts, standard errors, paired differences to the "
        "reference) with a bar chart each.",
    )
    p.add_argument("file", help="the sweep file (YAML)")
    p.add_argument("--out", help="output directory (default runs/sweep-<file name>)")
    p.add_argument("--resume", action="store_true", help="keep the episodes a stopped run of this sweep finished")
    p.add_argument("--quiet", action="store_true")
    _engine_arguments(p)
    _pool_arguments(p)
    p.set_defaults(func=_cmd_sweep)

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
