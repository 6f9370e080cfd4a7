"""EvoCF's counterfactual generator: alternative joint plans made from the base plan by the paper's four operators,
each keeping every robot's action one of its options (so every candidate is valid).

* **SwapAgent** -- two waiting robots exchange their actions.
* **InsertAction** -- a robot keeps its object but changes the verb (the paper's definition despite the name); where
  no other verb applies to that object, it takes its nearest action of another verb (deliver instead of fetch).
* **DeleteAction** -- a robot's action is dropped: it looks around instead (its nearest search). Our robots have no
  "stay idle" skill, so a dropped action costs a short search, not a step of waiting.
* **ReplaceObject** -- a robot keeps its verb on another object (its nearest ones first).

Guided generation changes first the actions that retrieved rules or past failures flag and applies every
operator to them; random generation (the paper's ablation) draws an operator, a robot and an alternative
uniformly from a seeded stream. Neither ever replaces the base plan: it stays a candidate.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coteam.agent.options import ActionOption
from coteam.domain.actions import Verb

OPERATORS = ("SwapAgent", "InsertAction", "DeleteAction", "ReplaceObject")
SEARCHES = (Verb.EXPLORE, Verb.GOTO, Verb.CHECK)
VARIANTS = {"InsertAction": 4, "DeleteAction": 1, "ReplaceObject": 2}  # per robot, in guided generation


@dataclass(frozen=True)
class Candidate:
    """A joint plan (robot -> its action) and the operators that made it from the base plan (none: the base)."""

    plan: Mapping[str, ActionOption]
    operators: tuple[str, ...] = ()

    def signature(self) -> tuple[str, ...]:
        return tuple(f"{r}:{o.text}" for r, o in sorted(self.plan.items()))


def _target(option: ActionOption) -> int | None:
    return option.action.target.id if option.action.target is not None else None


def variants(
    operator: str, robot: str, plan: Mapping[str, ActionOption], options: Sequence[ActionOption]
) -> list[dict[str, ActionOption]]:
    """The plans ``operator`` makes from ``plan`` by changing ``robot``'s action (``options``: its options, no
    messages), nearest alternatives first."""
    mine = plan[robot]
    by_distance = sorted((o for o in options if o.text != mine.text), key=lambda o: (o.my_distance, o.text))
    if operator == "SwapAgent":
        return []  # a pair of robots: see :func:`swaps`
    if operator == "InsertAction":
        same_object = [o for o in by_distance if o.action.verb != mine.action.verb and _target(o) == _target(mine)]
        other_verbs = {o.action.verb: o for o in reversed(by_distance) if o.action.verb != mine.action.verb}
        picks = same_object or sorted(other_verbs.values(), key=lambda o: (o.my_distance, o.text))
        return [{**plan, robot: o} for o in picks]
    if operator == "DeleteAction":
        searches = [o for o in by_distance if o.action.verb in SEARCHES]
        return [{**plan, robot: searches[0]}] if searches else []
    if operator == "ReplaceObject":
        return [{**plan, robot: o} for o in by_distance if o.action.verb == mine.action.verb]
    raise ValueError(f"unknown counterfactual operator {operator!r}; known: {', '.join(OPERATORS)}")


def swaps(
    plan: Mapping[str, ActionOption], options: Mapping[str, Sequence[ActionOption]]
) -> list[dict[str, ActionOption]]:
    """SwapAgent: every pair of robots that can each take the other's action."""
    out = []
    robots = sorted(plan)
    for i, a in enumerate(robots):
        for b in robots[i + 1 :]:
            theirs = {o.text: o for o in options[b]}
            mine = {o.text: o for o in options[a]}
            if plan[a].text != plan[b].text and plan[b].text in mine and plan[a].text in theirs:
                out.append({**plan, a: mine[plan[b].text], b: theirs[plan[a].text]})
    return out


def guided(
    base: Mapping[str, ActionOption],
    options: Mapping[str, Sequence[ActionOption]],
    flagged: Sequence[str],
    count: int,
    handovers: Mapping[str, Sequence[ActionOption]] | None = None,
) -> list[Candidate]:
    """Up to ``count`` candidates: first each robot taking over an action of ``handovers`` (actions a rule forbids
    to the robot an earlier plan gave them to: SwapAgent across rounds, since the robots rarely wait at the same
    time), then the swaps of this round, then every operator on the flagged robots (in ``flagged``'s order) and on
    the others; each plan once."""
    out: dict[tuple[str, ...], Candidate] = {Candidate(base).signature(): Candidate(base)}
    order = [*flagged, *(r for r in sorted(base) if r not in flagged)]

    def add(plan: dict[str, ActionOption], operator: str) -> None:
        c = Candidate(plan, (operator,))
        out.setdefault(c.signature(), c)

    for robot, taken in (handovers or {}).items():
        for option in taken:
            add({**base, robot: option}, "SwapAgent")
    for plan in swaps(base, options):
        add(plan, "SwapAgent")
    for robot in order:
        for operator in OPERATORS[1:]:
            for plan in variants(operator, robot, base, options[robot])[: VARIANTS[operator]]:
                add(plan, operator)
    return list(out.values())[1 : count + 1]


def at_random(
    base: Mapping[str, ActionOption], options: Mapping[str, Sequence[ActionOption]], count: int, rng: random.Random
) -> list[Candidate]:
    """Up to ``count`` candidates, each one operator on one robot with a uniformly drawn alternative."""
    seen = {Candidate(base).signature()}
    out: list[Candidate] = []
    robots = sorted(base)
    for _ in range(4 * count):
        if len(out) >= count:
            break
        operator = rng.choice(OPERATORS)
        robot = rng.choice(robots)
        plans = swaps(base, options) if operator == "SwapAgent" else variants(operator, robot, base, options[robot])
        if plans:
            c = Candidate(rng.choice(plans), (operator,))
            if c.signature() not in seen:
                seen.add(c.signature())
                out.append(c)
    return out
