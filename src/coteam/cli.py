"""The ``coteam`` command. Core subcommands live here; packages add theirs through the ``coteam.commands``
entry-point group (the harness adds ``run``, ``bench``, ``suites``, ``render``, ``demo``; coteam_ros adds
``launch``), so the core imports neither the simulator nor ROS."""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coteam.kit.config import MethodConfig, RoleMethodConfig
from coteam.registry import method_class, method_names


def _cmd_methods(args: argparse.Namespace) -> int:
    names = args.names or method_names()
    for name in names:
        if name not in method_names():
            raise ValueError(f"unknown method {name!r}; known methods: {', '.join(method_names())}")
    console = Console()
    for name in names:
        team = method_class(name)
        endpoint = (
            set(RoleMethodConfig.model_fields) - set(MethodConfig.model_fields) - {"backend"}
            if issubclass(team.Config, RoleMethodConfig)
            else set()
        )
        hidden = endpoint | ({"store"} if team.store_schema is None else set())  # a store only for what learns
        # one table a method, two columns: the switch (never broken) and what it does, which wraps -- it reads in
        # an 80-column terminal
        table = Table(title=f"[bold]{name}[/bold]: {team.summary}", title_justify="left", expand=False)
        table.add_column("--set", no_wrap=True, style="cyan")
        table.add_column("what it does (values; default)")
        for switch in team.Config.switches():
            if switch.name not in hidden:
                table.add_row(switch.name, switch.describe())
        if endpoint:
            llm = RoleMethodConfig.LLM_FIELDS
            others = [f for f in RoleMethodConfig.model_fields if f in endpoint and f not in llm]
            table.add_row("model endpoint", f"with backend=llm: {', '.join(llm)}; and {', '.join(others)}")
        if not table.rows:
            table.add_row("-", "no switches")
        console.print(table)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from coteam.explain import draw_decision, find_decision, format_decision

    trace = json.loads(Path(args.trace).read_text())
    decision = find_decision(trace, args.agent, args.step)
    print(format_decision(decision, trace.get("team", "")))
    if args.png:
        out = draw_decision(decision, trace.get("team", ""), args.png)
        print(f"drawn to {out}")
    return 0


def _cmd_world_check(args: argparse.Namespace) -> int:
    from coteam.home.world_file import load_world, world_summary

    world = load_world(args.file)
    table = Table(title=f"{args.file}: usable")
    table.add_column("part")
    table.add_column("what the robots will use")
    for part, value in world_summary(world):
        table.add_row(part, value)
    Console().print(table)
    return 0


def _cmd_world_draw(args: argparse.Namespace) -> int:
    from coteam.home.world_draw import draw_world
    from coteam.home.world_file import load_world

    out = args.out or str(Path(args.file).with_suffix("").with_suffix("")) + ".png"
    print(f"drawn to {draw_world(load_world(args.file), out)}")
    return 0


def _cmd_llm_serve(args: argparse.Namespace) -> int:
    from coteam.llm.local import LocalLLMError, LocalServerSettings, serve_forever

    settings = LocalServerSettings(args.model, args.host, args.port, args.context, args.threads, args.chat_format)
    try:
        return serve_forever(settings)
    except LocalLLMError as exc:
        raise ValueError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coteam", description="cooperative household robot teams")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("methods", help="list reasoning methods and their switches")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these methods (default: every one)")
    p.set_defaults(func=_cmd_methods)
    p = sub.add_parser("explain", help="show one decision of a trace: the options and how its method chose")
    p.add_argument("trace")
    p.add_argument("--agent", required=True)
    p.add_argument("--step", type=int, required=True, help="the decision taken at (or last before) this step")
    p.add_argument("--png", help="also draw the decision to this PNG (its tree of alternatives, scores and text)")
    p.set_defaults(func=_cmd_explain)
    world = sub.add_parser("world", help="a world file: your home and task (docs/hardware.md)").add_subparsers(
        dest="world_command", required=True
    )
    p = world.add_parser("check", help="validate a world file and show what the robots will use")
    p.add_argument("file")
    p.set_defaults(func=_cmd_world_check)
    p = world.add_parser("draw", help="draw a world file over its occupancy map (PNG)")
    p.add_argument("file")
    p.add_argument("--out", help="the PNG to write (default: the file's name with .png)")
    p.set_defaults(func=_cmd_world_draw)
    llm = sub.add_parser("llm", help="a local chat model (the local-llm extra)").add_subparsers(
        dest="llm_command", required=True
    )
    p = llm.add_parser("serve", help="serve a GGUF model on loopback with llama.cpp's OpenAI-compatible server")
    p.add_argument("--model", help="GGUF model file (default: the packaged Gemma 3 270M)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--context", type=int, default=8192, help="context length in tokens")
    p.add_argument("--threads", type=int, help="CPU threads (default: every core)")
    p.add_argument("--chat-format", help="llama-cpp-python chat format (default: the model file's own template)")
    p.set_defaults(func=_cmd_llm_serve)
    for ep in sorted(entry_points(group="coteam.commands"), key=lambda e: e.name):
        ep.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"coteam {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
