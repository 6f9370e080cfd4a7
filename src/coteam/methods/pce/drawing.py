"""PCE's assumption tree of one recorded decision, drawn to a PNG (``coteam explain --png``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def draw_decision_tree(decision: Mapping[str, Any], out: str | Path) -> Path:
    """Draw the decision's assumption tree (hypotheses as boxes, leaves with their utility) to a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    r = decision.get("rationale", {})
    tree = r.get("tree")
    if not tree:
        raise ValueError("this decision has no assumption tree (a method or ablation without a Composer)")
    scores = {s["leaf"]: s for s in r.get("scores", [])}
    leaves: list[float] = []
    nodes: list[tuple[float, float, str, bool, bool]] = []  # x, y, text, is_leaf, chosen
    edges: list[tuple[float, float, float, float, str]] = []

    def place(n: dict[str, Any], level: int) -> float:
        if n.get("type") == "action":
            k = len(leaves)
            x = float(k)
            leaves.append(x)
            s = scores.get(k)
            label = f"#{k} {n['action'][:48]}" + (f"\nU={s['utility']:+.3f}" if s else "")
            nodes.append((x, -level, label, True, k == r.get("chosen_leaf")))
            return x
        xt, xf = place(n["True"], level + 1), place(n["False"], level + 1)
        x = (xt + xf) / 2
        nodes.append((x, -level, n["text"][:60], False, False))
        edges.extend([(x, -level, xt, -level - 1, "T"), (x, -level, xf, -level - 1, "F")])
        return x

    place(tree, 0)
    depth = -min(y for _, y, *_ in nodes)
    fig = Figure(figsize=(max(6.0, 2.6 * len(leaves)), 1.8 + 1.6 * depth), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.02, 0.02, 0.96, 0.86))
    ax.set_axis_off()
    for x0, y0, x1, y1, label in edges:
        ax.plot([x0, x1], [y0, y1], color="#888", lw=1.2, zorder=1)
        ax.text(
            (x0 + x1) / 2,
            (y0 + y1) / 2,
            label,
            fontsize=8,
            color="#555",
            ha="center",
            va="center",
            bbox={"boxstyle": "circle,pad=0.15", "fc": "white", "ec": "none"},
        )
    for x, y, text, is_leaf, chosen in nodes:
        colour = "#c8f0c8" if chosen else ("#eef3ff" if is_leaf else "#fff4d6")
        ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=7,
            wrap=True,
            zorder=2,
            bbox={"boxstyle": "round,pad=0.4", "fc": colour, "ec": "#2a7a2a" if chosen else "#777"},
        )
    ax.set_xlim(-0.8, max(leaves) + 0.8)
    ax.set_ylim(-depth - 0.6, 0.6)
    fig.suptitle(f"{decision['agent']} at step {decision['step']}: {decision['action'][:90]}", fontsize=9)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out
