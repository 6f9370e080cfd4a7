"""Exact joint fetch-and-deliver planning for the oracle (C-WAH-style tasks with one goal target).

Given every agent's start (position, items already in hand, time already committed), the candidate instances
of each needed item and the goal, it chooses which instances to use, which agent fetches which, in which
order and in which two-handed trips, minimising the makespan (then the total time). Time is measured in
benchmark steps: walking ``ceil((distance - reach) / step)``, one step per open, grab and put.

Search is exhaustive over instance choices, assignments and orders; callers fall back to a greedy rule when
:func:`search_size` exceeds their budget.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coteam.domain.world import Vec2

HANDS = 2


@dataclass(frozen=True)
class AgentStart:
    name: str
    position: Vec2
    holding: int  # goal items already in hand (delivered on the first trip)
    busy_steps: float = 0.0  # time already committed before this plan starts


@dataclass(frozen=True)
class Candidate:
    id: int
    name: str
    position: Vec2
    open_steps: float  # steps to open what hides it (0 when reachable)


@dataclass(frozen=True)
class AgentPlan:
    items: tuple[int, ...]  # fetch order
    trips: tuple[int, ...]  # items per trip, in order (the first trip also carries what the agent holds)
    steps: float


@dataclass(frozen=True)
class JointPlan:
    makespan: float
    total: float
    agents: dict[str, AgentPlan]


def search_size(n_agents: int, n_items: int, instance_choices: int) -> int:
    return instance_choices * n_agents**n_items * max(1, math.factorial(n_items))


def plan(
    agents: Sequence[AgentStart],
    needed: dict[str, int],
    candidates: Sequence[Candidate],
    goal: Vec2,
    walk_steps: Callable[[Vec2, Vec2], float],
    goal_open_steps: float = 0.0,
) -> JointPlan | None:
    """The best joint plan, or None when the needed items cannot all be found among ``candidates``."""
    walk_steps = functools.cache(walk_steps)  # the search asks for the same few walks again and again
    by_name: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_name.setdefault(c.name, []).append(c)
    choices = []
    for name, count in sorted(needed.items()):
        if count <= 0:
            continue
        pool = by_name.get(name, [])
        if len(pool) < count:
            return None
        choices.append(list(itertools.combinations(pool, count)))
    best: JointPlan | None = None
    for combo in itertools.product(*choices):
        items = [c for group in combo for c in group]
        candidate = _best_assignment(agents, items, goal, walk_steps, goal_open_steps)
        if best is None or (candidate.makespan, candidate.total) < (best.makespan, best.total):
            best = candidate
    return best


def _best_assignment(
    agents: Sequence[AgentStart],
    items: list[Candidate],
    goal: Vec2,
    walk_steps: Callable[[Vec2, Vec2], float],
    goal_open_steps: float,
) -> JointPlan:
    k = len(items)
    # Best plan of every agent for every subset of the items (bitmask).
    per_agent: list[dict[int, AgentPlan]] = []
    for a in agents:
        table = {}
        for mask in range(1 << k):
            subset = [items[i] for i in range(k) if mask >> i & 1]
            table[mask] = _best_order(a, subset, goal, walk_steps, goal_open_steps)
        per_agent.append(table)
    best: JointPlan | None = None
    for owners in itertools.product(range(len(agents)), repeat=k):
        masks = [0] * len(agents)
        for i, owner in enumerate(owners):
            masks[owner] |= 1 << i
        plans = [per_agent[j][masks[j]] for j in range(len(agents))]
        makespan = max(p.steps for p in plans)
        total = sum(p.steps for p in plans)
        if best is None or (makespan, total) < (best.makespan, best.total):
            best = JointPlan(makespan, total, {a.name: p for a, p in zip(agents, plans, strict=True)})
    assert best is not None
    return best


def _best_order(
    agent: AgentStart,
    subset: list[Candidate],
    goal: Vec2,
    walk_steps: Callable[[Vec2, Vec2], float],
    goal_open_steps: float,
) -> AgentPlan:
    if not subset:  # nothing to fetch: deliver what is held, if anything
        steps = agent.busy_steps
        if agent.holding:
            steps += walk_steps(agent.position, goal) + goal_open_steps + agent.holding
        return AgentPlan((), (0,) if agent.holding else (), steps)
    best: AgentPlan | None = None
    for order in itertools.permutations(subset):
        steps, trips = _trips(agent, order, goal, walk_steps, goal_open_steps)
        if best is None or steps < best.steps:
            best = AgentPlan(tuple(c.id for c in order), trips, steps)
    assert best is not None
    return best


def _trips(
    agent: AgentStart,
    order: Sequence[Candidate],
    goal: Vec2,
    walk_steps: Callable[[Vec2, Vec2], float],
    goal_open_steps: float,
) -> tuple[float, tuple[int, ...]]:
    """Cheapest split of a fixed fetch order into trips (dynamic programming over the order)."""
    n = len(order)
    inf = math.inf
    # cost[j]: time when the first j items are delivered and the agent stands at the goal.
    cost = [inf] * (n + 1)
    split: list[tuple[int, ...]] = [()] * (n + 1)
    first_capacity = HANDS - agent.holding
    if agent.holding:
        cost[0] = agent.busy_steps + walk_steps(agent.position, goal) + goal_open_steps + agent.holding
        split[0] = (0,)
    for j in range(n + 1):
        # First trip from the start: picks j items (0 only when holding something).
        if 0 < j <= first_capacity:
            t = (
                agent.busy_steps
                + _collect(agent.position, order[:j], walk_steps)
                + walk_steps(order[j - 1].position, goal)
            )
            t += goal_open_steps + j + agent.holding
            if t < cost[j]:
                cost[j], split[j] = t, (j,)
    for j in range(n + 1):
        if cost[j] == inf:
            continue
        for take in (1, 2):
            if j + take > n:
                break
            seq = order[j : j + take]
            t = cost[j] + _collect(goal, seq, walk_steps) + walk_steps(seq[-1].position, goal) + take
            if t < cost[j + take]:
                cost[j + take], split[j + take] = t, (*split[j], take)
    return cost[n], split[n]


def _collect(start: Vec2, seq: Sequence[Candidate], walk_steps: Callable[[Vec2, Vec2], float]) -> float:
    t, pos = 0.0, start
    for c in seq:
        t += walk_steps(pos, c.position) + c.open_steps + 1  # walk, open what hides it, grab
        pos = c.position
    return t
