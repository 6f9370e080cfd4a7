"""How a method explains one recorded decision: a structured :class:`Explanation` (titled sections of lines, a tree
of the alternatives it weighed, the options it scored) that ``coteam explain`` renders as text and draws as a
picture (:mod:`coteam.explain`). A method's ``explain(rationale)`` builds it from the rationale it recorded; the
keys it does not show itself end in :func:`rationale_section`, which every method shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TreeNode:
    """A node of the alternatives a method weighed: a question whose ``branches`` are (edge label, subtree) pairs,
    or a leaf (no branches); ``note`` holds its scores, ``chosen`` marks the leaf taken."""

    text: str
    branches: tuple[tuple[str, TreeNode], ...] = ()
    note: str = ""
    chosen: bool = False

    def leaves(self) -> list[TreeNode]:
        return [self] if not self.branches else [leaf for _, b in self.branches for leaf in b.leaves()]


@dataclass(frozen=True)
class Section:
    """A titled part of an explanation: the title line, then its lines indented; an optional tree below them."""

    title: str
    lines: tuple[str, ...] = ()
    tree: TreeNode | None = None


@dataclass(frozen=True)
class Explanation:
    """One decision explained (see the module docstring). ``scores`` are the options the method valued and what it
    valued them at (``score_name``), drawn as bars."""

    sections: tuple[Section, ...] = ()
    scores: tuple[tuple[str, float], ...] = ()
    score_name: str = ""

    @property
    def tree(self) -> TreeNode | None:
        return next((s.tree for s in self.sections if s.tree is not None), None)

    def lines(self) -> list[str]:
        """The explanation as text lines."""
        out: list[str] = []
        for s in self.sections:
            if out and (s.tree is not None or len(s.lines) > 1):
                out.append("")
            indent = "  " if s.title else ""
            out += [s.title] if s.title else []
            out += [indent + line for line in s.lines]
            if s.tree is not None:
                out += tree_lines(s.tree, indent)
        if self.scores:
            out += ["", f"Options by {self.score_name or 'score'}:"]
            out += [f"  {value:+.3f}  {option}" for option, value in self.scores]
        return out


def tree_lines(node: TreeNode, indent: str = "", label: str = "") -> list[str]:
    """A tree as indented text: questions end in ``?``, each leaf shows its note, the chosen one is marked."""
    if not node.branches:
        note = f"  [{node.note}]" if node.note else ""
        return [f"{indent}{label}{node.text}{note}" + ("  <== chosen" if node.chosen else "")]
    note = f"  ({node.note})" if node.note else ""
    out = [f"{indent}{label}? {node.text}{note}"]
    for edge, child in node.branches:
        out += tree_lines(child, indent + "    ", f"{edge}: ")
    return out


def rationale_section(rationale: Mapping[str, Any]) -> Section:
    """The rationale's keys a method does not show itself as ``key: value`` lines, and how each role was answered
    (source, tokens, calls, why the model was asked, errors)."""
    roles = rationale.get("roles") or {}
    other = {k: v for k, v in rationale.items() if k not in ("roles", "context")}
    lines = [f"{k}: {v}" for k, v in sorted(other.items())]
    if roles:
        lines.append(
            "Roles: "
            + ", ".join(f"{k} {v['source']} ({v['tokens']} tokens, {v['calls']} calls)" for k, v in roles.items())
        )
        lines += [f"  {k} asked the model because: {v['why']}" for k, v in roles.items() if v.get("why")]
        lines += [f"  {k} error: {v['error']}" for k, v in roles.items() if v.get("error")]
    return Section("", tuple(lines))
