"""The ``coteam`` command. Core subcommands live here; packages add theirs through the ``coteam.commands``
entry-point group (the simulator adds ``run``, ``suites``, ``render``, ``demo``), so the core imports neither the
simulator nor ROS."""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coteam.reasoning import methods


def _cmd_methods(args: argparse.Namespace) -> int:
    table = Table(title="coteam methods (use with --team)")
    table.add_column("method")
    table.add_column("summary")
    table.add_column("switches (--set key=value)")
    for name, spec in sorted(methods().items()):
        table.add_row(name, spec.summary, "\n".join(f"{k}: {v}" for k, v in spec.switches.items()) or "-")
    Console().print(table)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from coteam.explain import draw_decision_tree, find_decision, format_decision

    trace = json.loads(Path(args.trace).read_text())
    decision = find_decision(trace, args.agent, args.step)
    print(format_decision(decision))
    if args.png:
        out = draw_decision_tree(decision, args.png)
        print(f"tree drawn to {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coteam", description="cooperative household robot teams")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("methods", help="list reasoning methods and their switches")
    p.set_defaults(func=_cmd_methods)
    p = sub.add_parser("explain", help="show one decision of a trace: options, reasoning, tree and scores")
    p.add_argument("trace")
    p.add_argument("--agent", required=True)
    p.add_argument("--step", type=int, required=True, help="the decision taken at (or last before) this step")
    p.add_argument("--png", help="also draw the assumption tree to this PNG")
    p.set_defaults(func=_cmd_explain)
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
