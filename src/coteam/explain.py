"""Explaining recorded decisions: find one in a trace, print it, draw its assumption tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coteam.methods.pce.tree import render_tree


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


def format_decision(decision: dict[str, Any]) -> str:
    r = decision.get("rationale", {})
    lines = [f"{decision['agent']} at step {decision['step']} chose: {decision['action']}", ""]
    lines += ["Options offered:"] + [f"  {o}" for o in decision.get("options", [])]
    if "planner" in r:
        lines += [
            "",
            f"Planner ({r['roles']['pce.planner']['source']}): {r['planner']['candidate']}",
            f"  reasoning: {r['planner']['reasoning']}",
        ]
        if r["planner"].get("assumptions"):
            lines += [f"  assumes: {a}" for a in r["planner"]["assumptions"]]
    if r.get("tree"):
        lines += ["", "Assumption tree (L, G, C normalised to [0, 1]; U = L*G - lambda*C):"]
        lines += [render_tree(r["tree"], r.get("scores", []), r.get("chosen_leaf"))]
    elif r.get("scores"):
        lines += ["", "Scores:"] + [f"  leaf {s['leaf']}: U={s['utility']:+.3f}" for s in r["scores"]]
    if r.get("tree_fallback"):
        lines += ["", "The model's tree was invalid: fell back to the Planner's candidate."]
    other = {k: v for k, v in r.items() if k not in ("planner", "tree", "scores", "context", "roles", "chosen_leaf")}
    if other:
        lines += ["", "Details: " + ", ".join(f"{k}={v}" for k, v in sorted(other.items()))]
    if "roles" in r:
        lines += ["Roles: " + ", ".join(f"{k} {v['source']} ({v['tokens']} tokens)" for k, v in r["roles"].items())]
    return "\n".join(lines)


def draw_decision_tree(decision: dict[str, Any], out: str | Path) -> Path:
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
