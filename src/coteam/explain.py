"""Explaining recorded decisions: find one in a trace, and let its method print and draw it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coteam.registry import method_class


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


def format_decision(decision: dict[str, Any], method: str) -> str:
    """The decision as text: the action, the options offered, then what the method says of its rationale."""
    lines = [f"{decision['agent']} at step {decision['step']} chose: {decision['action']}", ""]
    lines += ["Options offered:"] + [f"  {o}" for o in decision.get("options", [])]
    rationale = decision.get("rationale", {})
    try:
        team = method_class(method)
    except KeyError:  # a trace of a method not installed here: its rationale as recorded
        lines += ["", *(f"{k}: {v}" for k, v in sorted(rationale.items()))]
    else:
        lines += ["", *team.explain(rationale)]
    return "\n".join(lines)


def draw_decision(decision: dict[str, Any], method: str, out: str | Path) -> Path:
    """Draw the decision as its method does."""
    return Path(method_class(method).draw(decision, str(out)))
