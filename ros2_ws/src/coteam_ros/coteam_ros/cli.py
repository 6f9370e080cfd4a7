"""``coteam launch CONFIG``, ``coteam keys init`` and ``coteam approve``: registered in the ``coteam.commands``
entry-point group by this package.

Kept light: importing it (which ``coteam`` does for every command) loads neither rclpy nor the nodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

EPILOG = """\
The run ends when the simulator bridge exits (its exit code is returned), at --timeout (exit 124), on
Ctrl-C / SIGTERM (exit 130 / 143; the results are marked incomplete) or when a node cannot start (exit 2,
after its one line saying why). A node that dies during the run is reported and the team goes on, but the
exit code is then 1 at least. Children are stopped with SIGINT, then SIGTERM, then SIGKILL. Without a world
(robots, or their twin) the run ends when every robot's planner has ended its task (its map shows the goal
met, a teammate said so, or the task's time limit), results.json is made of their end reports, and the exit
code is 0 only when the goal was met (3: the task ended unfinished).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch",
        help="start a ROS 2 team from a YAML file (the launcher of pip installs)",
        description="Start every node of a team YAML file (e.g. config/team_sim.yaml) as its own process.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("config", help="team YAML file (see config/team_sim.yaml, config/team_hardware.yaml)")
    p.add_argument("--record", metavar="FILE.mcap", help="also record the run's topics to an MCAP file")
    p.add_argument("--timeout", type=float, metavar="S", help="stop everything after S seconds")
    p.add_argument("--domain-id", type=int, metavar="N", help="ROS_DOMAIN_ID of the nodes (0-232)")
    p.add_argument("--out", metavar="DIR", help="keep results.json (and the twin's, the robots' end reports) in DIR")
    p.add_argument(
        "--grace", type=float, default=5.0, metavar="S", help="seconds between SIGINT and SIGTERM (default 5)"
    )
    p.add_argument(
        "--serve", action="store_true", help="keep the team running and take tasks (coteam task) until it is stopped"
    )
    p.set_defaults(func=_cmd_launch)

    p = sub.add_parser(
        "task",
        help="give a serving team a task, follow it, cancel it, or see the queue",
        description="Give a running team (coteam launch --serve) a task in words or as goal lines, and follow it.",
        epilog="exit codes: 0 done, 4 failed, 5 refused, 6 canceled, 7 no serving team answers "
        "(--cancel: 0 canceled, 1 nothing to cancel)",
    )
    p.add_argument("request", nargs="?", help='what to do, e.g. "put two cups in the kitchen cabinet"')
    p.add_argument("--goal", action="append", metavar="LINE", help='a goal line, e.g. "in(cup, kitchencabinet): 2"')
    p.add_argument("--first", action="store_true", help="before the tasks already waiting")
    p.add_argument("--cancel", nargs="?", const="", metavar="ID", help="cancel a task (no id: the running one)")
    p.add_argument("--status", action="store_true", help="the running and waiting tasks, and the last ended")
    p.add_argument("--timeout", type=float, metavar="S", help="stop following the task after S seconds")
    p.set_defaults(func=_cmd_task)

    p = sub.add_parser(
        "tell",
        help="tell a running team where things are (a person's word, signed with the operator key)",
        description='Read a sentence ("the cups are in the kitchen cabinet") against the team\'s home and send it to '
        "every robot: their beliefs look there first.",
        epilog="exit codes: 0 sent, 5 not understood (the line says why), 7 no robot listens",
    )
    p.add_argument("config", help="the team YAML file the team runs with (its home and keys)")
    p.add_argument("sentence", help='e.g. "the cups are in the kitchen cabinet"')
    p.set_defaults(func=_cmd_tell)

    p = sub.add_parser(
        "keys",
        help="make the signing keys of a team (coteam.home.signing)",
        description="Make one Ed25519 key per robot of a team YAML file, and the team's public-key file.",
    )
    keys = p.add_subparsers(dest="keys_command", required=True)
    k = keys.add_parser("init", help="one key per robot of CONFIG, kept if it exists")
    k.add_argument("config", help="team YAML file")
    k.add_argument("--dir", help="keystore directory (default: CONFIG's security.keystore, keys/ next to it)")
    k.add_argument("--force", action="store_true", help="replace existing keys")
    k.set_defaults(func=_cmd_keys_init)

    p = sub.add_parser(
        "approve",
        help="answer the robots' requests for approval (a safety policy's ask_before)",
        description="Serve /approve_action: print each robot's question and answer it (y: yes; else or none: no).",
    )
    p.add_argument("--answer", choices=("yes", "no"), help="answer every question so, without asking")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S", help="wait S seconds for an answer (then no)")
    p.set_defaults(func=_cmd_approve)


def _cmd_task(args: argparse.Namespace) -> int:
    from rich.console import Console

    from coteam_ros import task_client

    console = Console()
    asked = [args.request is not None or bool(args.goal), args.cancel is not None, args.status]
    if sum(asked) != 1:
        raise ValueError("give one of: a request (or --goal lines), --cancel [ID], --status")
    if args.status:
        return task_client.status(console)
    if args.cancel is not None:
        return task_client.cancel(args.cancel, console)
    if args.request is not None and args.goal:
        raise ValueError("give a request in words or --goal lines, not both")
    request = args.request if args.request is not None else "\n".join(args.goal)
    return task_client.give(request, first=args.first, timeout_s=args.timeout, console=console)


def _cmd_tell(args: argparse.Namespace) -> int:
    from rich.console import Console

    from coteam_ros.operator import tell

    return tell(args.config, args.sentence, Console())


def _cmd_approve(args: argparse.Namespace) -> int:
    from coteam_ros.approval import serve

    serve(args.answer, args.timeout)
    return 0


def _cmd_keys_init(args: argparse.Namespace) -> int:
    from coteam.home.signing import init_keystore
    from coteam_ros.operator import OPERATOR
    from coteam_ros.team_config import load_config

    cfg = load_config(args.config)
    directory = Path(args.dir) if args.dir else Path(cfg.security.keystore)
    public = init_keystore(directory, [*(r.name for r in cfg.robots), OPERATOR], force=args.force)
    for r in cfg.robots:
        print(f"{r.name}: {directory / (r.name + '.key')} (private: give it to {r.name} only)")
    print(f"{OPERATOR}: {directory / (OPERATOR + '.key')} (private: for coteam tell, on the coteam computer)")
    print(f"team public keys: {public}")
    return 0


def _cmd_launch(args: argparse.Namespace) -> int:
    from rich.console import Console

    from coteam_ros.launcher import launch

    if args.timeout is not None and args.timeout <= 0:
        raise ValueError("--timeout must be positive")
    console = Console(width=None if sys.stdout.isatty() else 132)
    with tempfile.TemporaryDirectory(prefix="coteam-launch-") as tmp:
        code, results = launch(
            args.config,
            tmp,
            out_dir=args.out,
            record=args.record,
            timeout=args.timeout,
            domain_id=args.domain_id,
            sigint_grace=args.grace,
            serve=args.serve,
        )
        if results is not None:
            print_results(results, console, keep=args.out is not None)
    if args.record:
        console.print(f"recording: {args.record}")
    return code


def print_results(path: Path, console: Any, keep: bool = True) -> None:
    """The bridge's results JSON as the table of ``coteam run``; tolerant of a missing or partial file."""
    if not path.is_file():
        console.print(f"no results: the simulator bridge wrote no {path.name}")
        return
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        console.print(f"results file {path} unreadable: {exc}")
        return
    try:
        from coteam_harness.report import results_table
        from coteam_harness.results import EpisodeResult

        known = {f.name for f in fields(EpisodeResult)}
        episodes = [EpisodeResult(**{k: v for k, v in e.items() if k in known}) for e in data["episodes"]]
        meta = data.get("meta") or {}
        title = " · ".join(str(meta[k]) for k in ("suite", "team") if k in meta) or "results"
        if data.get("complete") is False:
            title += f" — incomplete ({data.get('stopped') or 'stopped'})"
        console.print(results_table(episodes, f"{title} (ROS)"))
    except Exception as exc:  # any other shape: show it as it is
        console.print(f"results ({type(exc).__name__}: {exc}; raw):")
        console.print_json(data=data)
    if keep:
        console.print(f"results: {path}")
