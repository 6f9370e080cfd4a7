"""Explaining recorded decisions: find one in a trace, ask its method for the :class:`~coteam.kit.Explanation`, and
render that as text or draw it as a picture (the tree of alternatives, the scored options, the text)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from coteam.kit.explanation import Explanation, Section, TreeNode
from coteam.registry import method_class

TEXT_WIDTH = 110  # characters per line of the picture's text panel
TEXT_LINES = 40  # lines of it at most


def find_decision(trace: dict[str, Any], agent: str, step: int) -> dict[str, Any]:
    """The decision ``agent`` took at ``step``, or the last one before it."""
    mine = [d for d in trace.get("decisions", []) if d["agent"] == agent]
    if not mine:
        agents = sorted({d["agent"] for d in trace.get("decisions", [])})
        raise KeyError(f"no decisions of agent {agent!r} in this trace; agents: {', '.join(agents) or 'none'}")
    before = [d for d in mine if d["step"] <= step]
    if not before:
        raise KeyError(f"{agent} took no decision at or before step {step}; the first was at step {mine[0]['step']}")
    return before[-1]


def explanation_of(decision: dict[str, Any], method: str) -> Explanation:
    """What ``method`` says of the decision's rationale; a trace of a method not installed here: the rationale as
    recorded."""
    rationale = decision.get("rationale", {})
    try:
        team = method_class(method)
    except KeyError:
        return Explanation((Section("", tuple(f"{k}: {v}" for k, v in sorted(rationale.items()))),))
    return team.explain(rationale)


def format_decision(decision: dict[str, Any], method: str) -> str:
    """The decision as text: the action, the options offered, then its method's explanation."""
    lines = [f"{decision['agent']} at step {decision['step']} chose: {decision['action']}", ""]
    lines += ["Options offered:"] + [f"  {o}" for o in decision.get("options", [])]
    return "\n".join([*lines, "", *explanation_of(decision, method).lines()])


def draw_decision(decision: dict[str, Any], method: str, out: str | Path) -> Path:
    """The decision drawn to a PNG: its method's tree of alternatives, the options it scored, and the text."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    explanation = explanation_of(decision, method)
    tree = explanation.tree
    text = [line for s in explanation.sections if s.tree is None for line in Explanation((s,)).lines()]
    wrapped = [w for line in text for w in (textwrap.wrap(line, TEXT_WIDTH, subsequent_indent="    ") or [""])]
    wrapped = wrapped[:TEXT_LINES] + (["..."] if len(wrapped) > TEXT_LINES else [])
    leaves = len(tree.leaves()) if tree is not None else 0
    panels = [
        (name, height)
        for name, shown, height in (
            ("tree", tree is not None, _tree_height(tree)),
            ("scores", bool(explanation.scores), 0.3 * len(explanation.scores) + 1.0),
            ("text", bool(wrapped), 0.17 * len(wrapped) + 0.4),
        )
        if shown
    ]
    fig = Figure(figsize=(max(9.0, 2.6 * leaves), 0.6 + sum(h for _, h in panels)), dpi=100)
    FigureCanvasAgg(fig)
    top = 1.0 - 0.5 / fig.get_figheight()
    for panel, height in panels:
        h = height / fig.get_figheight()
        if panel == "scores":  # room for the option texts left of the bars and the axis label below them
            ax = fig.add_axes((0.42, top - h * 0.75, 0.55, h * 0.7))
        else:
            ax = fig.add_axes((0.03, top - h, 0.94, h * 0.92))
        top -= h
        if panel == "tree":
            assert tree is not None
            _draw_tree(ax, tree)
        elif panel == "scores":
            _draw_scores(ax, explanation)
        else:
            ax.set_axis_off()
            ax.text(0, 1, "\n".join(wrapped), family="monospace", fontsize=7, va="top", ha="left")
    fig.suptitle(f"{decision['agent']} at step {decision['step']}: {decision['action'][:90]}", fontsize=9)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _tree_height(tree: TreeNode | None) -> float:
    def depth(n: TreeNode) -> int:
        return 1 + max((depth(b) for _, b in n.branches), default=0)

    return 0.0 if tree is None else 0.4 + 1.4 * depth(tree)


def _draw_tree(ax: Any, tree: TreeNode) -> None:
    nodes: list[tuple[float, float, TreeNode]] = []
    edges: list[tuple[float, float, float, float, str]] = []
    leaves = iter(range(10_000))

    def place(n: TreeNode, level: int) -> float:
        if not n.branches:
            x = float(next(leaves))
        else:
            xs = [place(child, level + 1) for _, child in n.branches]
            x = sum(xs) / len(xs)
            edges.extend((x, -level, xc, -level - 1, edge) for (edge, _), xc in zip(n.branches, xs, strict=True))
        nodes.append((x, -level, n))
        return x

    place(tree, 0)
    ax.set_axis_off()
    for x0, y0, x1, y1, label in edges:
        ax.plot([x0, x1], [y0, y1], color="#888", lw=1.2, zorder=1)
        box = {"boxstyle": "circle,pad=0.15", "fc": "white", "ec": "none"}
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, fontsize=8, color="#555", ha="center", va="center", bbox=box)
    for x, y, n in nodes:
        leaf = not n.branches
        label = n.text[:48] + (f"\n{n.note}" if n.note and leaf else "")
        colour = "#c8f0c8" if n.chosen else ("#eef3ff" if leaf else "#fff4d6")
        box = {"boxstyle": "round,pad=0.4", "fc": colour, "ec": "#2a7a2a" if n.chosen else "#777"}
        ax.text(x, y, label, ha="center", va="center", fontsize=7, wrap=True, zorder=2, bbox=box)
    xs = [x for x, _, _ in nodes]
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(y for _, y, _ in nodes) - 0.6, 0.6)


def _draw_scores(ax: Any, explanation: Explanation) -> None:
    options = [o[:60] for o, _ in explanation.scores][::-1]
    values = [v for _, v in explanation.scores][::-1]
    colours = ["#2a7a2a" if i == len(values) - 1 else "#7a9cc6" for i in range(len(values))]
    ax.barh(range(len(values)), values, color=colours)
    ax.set_yticks(range(len(values)), options, fontsize=7)
    ax.set_xlabel(explanation.score_name or "score", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
