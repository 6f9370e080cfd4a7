"""PCE's assumption decision tree: hypothesis nodes with True/False branches, one action per leaf.

Trees arrive as JSON (from the Composer role, LLM or symbolic) and are validated strictly: depth at most D,
every leaf action copied from the available list (or a message), no invented objects. Leaves are numbered in
left-to-right depth-first order, the order in which the Evaluator scores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coteam.domain.actions import ActionError, HighLevelAction, parse_action, validate_action
from coteam.domain.world import Benchmark
from coteam.kit import TreeNode


class TreeError(ValueError):
    """The tree is malformed, too deep, or a leaf is not an available action."""


@dataclass(frozen=True)
class Leaf:
    action: HighLevelAction
    text: str  # the action as written in the tree


@dataclass(frozen=True)
class Hypothesis:
    text: str
    reason: str
    when_true: Node
    when_false: Node


Node = Leaf | Hypothesis


@dataclass(frozen=True)
class Scenario:
    """One root-to-leaf path: the assumptions (text, truth value) and the leaf."""

    index: int
    path: tuple[tuple[str, bool], ...]
    leaf: Leaf


def depth(node: Node) -> int:
    if isinstance(node, Leaf):
        return 0
    return 1 + max(depth(node.when_true), depth(node.when_false))


def scenarios(node: Node) -> list[Scenario]:
    """Every root-to-leaf path, leaves in left-to-right depth-first order."""
    out: list[Scenario] = []
    _collect_scenarios(node, (), out)
    return out


def _collect_scenarios(node: Node, path: tuple[tuple[str, bool], ...], out: list[Scenario]) -> None:
    # a module function, not a nested one that calls itself: that would be a reference cycle (function -> its
    # closure -> the function) holding the decision's objects until a full garbage collection, which then pauses a
    # later decision to free them
    if isinstance(node, Leaf):
        out.append(Scenario(len(out), path, node))
    else:
        _collect_scenarios(node.when_true, (*path, (node.text, True)), out)
        _collect_scenarios(node.when_false, (*path, (node.text, False)), out)


def parse_tree(
    data: Any,
    *,
    benchmark: Benchmark,
    known_objects: Mapping[int, str],
    available: Sequence[HighLevelAction],
    max_depth: int,
    allow_messages: bool = True,
) -> Node:
    """Build and validate a tree from its JSON form. Raises :class:`TreeError` with the exact problem."""
    node = _parse(data, benchmark, known_objects, list(available), allow_messages, "root")
    if depth(node) > max_depth:
        raise TreeError(f"the tree is {depth(node)} levels deep; at most {max_depth} are allowed")
    return node


def _parse(data: Any, benchmark, known, available, allow_messages, where: str) -> Node:
    if not isinstance(data, Mapping):
        raise TreeError(f"{where}: expected an object with a 'type', got {type(data).__name__}")
    kind = data.get("type")
    if kind == "action":
        text = data.get("action")
        if not isinstance(text, str) or not text.strip():
            raise TreeError(f"{where}: an action leaf needs an 'action' string")
        try:
            action = parse_action(text, benchmark)
            if action.is_message and not allow_messages:
                raise TreeError(f"{where}: messages are not allowed here: {text[:60]!r}")
            validate_action(action, known, available)
        except ActionError as exc:
            raise TreeError(f"{where}: leaf {text[:80]!r} is not an available action ({exc})") from None
        if action.is_message and not action.text.strip():
            raise TreeError(f"{where}: a message leaf needs text")
        return Leaf(action, text.strip())
    if kind == "hypothesis":
        text = data.get("text")
        if not isinstance(text, str) or not text.strip():
            raise TreeError(f"{where}: a hypothesis needs a 'text'")
        if "True" not in data or "False" not in data:
            raise TreeError(f"{where}: hypothesis {text[:60]!r} needs both a 'True' and a 'False' branch")
        return Hypothesis(
            text.strip(),
            str(data.get("reason", "")),
            _parse(data["True"], benchmark, known, available, allow_messages, f"{where}.True"),
            _parse(data["False"], benchmark, known, available, allow_messages, f"{where}.False"),
        )
    raise TreeError(f"{where}: 'type' must be 'hypothesis' or 'action', got {kind!r}")


def tree_to_json(node: Node) -> dict[str, Any]:
    if isinstance(node, Leaf):
        return {"type": "action", "action": node.text}
    return {
        "type": "hypothesis",
        "text": node.text,
        "reason": node.reason,
        "True": tree_to_json(node.when_true),
        "False": tree_to_json(node.when_false),
    }


def explained_tree(
    data: Mapping[str, Any], scores: Sequence[Mapping[str, Any]] = (), chosen: int | None = None
) -> TreeNode:
    """A tree in JSON form as ``coteam explain`` shows it: each hypothesis with its reason, each leaf numbered and
    followed by its normalised scores, the chosen leaf marked."""
    counter = iter(range(10_000))
    by_leaf = {s["leaf"]: s for s in scores}

    def walk(n: Mapping[str, Any]) -> TreeNode:
        if n.get("type") == "action":
            k = next(counter)
            s = by_leaf.get(k)
            note = f"L={s['likelihood']:.2f} G={s['gain']:.2f} C={s['cost_penalty']:.2f} -> U={s['utility']:+.3f}"
            return TreeNode(f"#{k} {n['action']}", note=note if s is not None else "", chosen=k == chosen)
        return TreeNode(n["text"], (("T", walk(n["True"])), ("F", walk(n["False"]))), note=n.get("reason") or "")

    return walk(data)
