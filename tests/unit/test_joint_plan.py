"""The oracle's exact joint planner."""

from __future__ import annotations

import math

from coteam.teams.joint_plan import AgentStart, Candidate, plan


def manhattan_steps(a, b):
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def test_each_agent_fetches_the_items_near_it():
    goal = (0.0, 0.0)
    agents = [AgentStart("alice", (10.0, 0.0), 0), AgentStart("bob", (-10.0, 0.0), 0)]
    items = [Candidate(1, "apple", (11.0, 0.0), 0), Candidate(2, "wine", (-11.0, 0.0), 0)]
    best = plan(agents, {"apple": 1, "wine": 1}, items, goal, manhattan_steps)
    assert best is not None
    assert best.agents["alice"].items == (1,) and best.agents["bob"].items == (2,)
    # 1 step to the item, grab, 11 back, put.
    assert best.makespan == 1 + 1 + 11 + 1


def test_two_items_share_one_trip_and_spares_are_ignored():
    goal = (0.0, 0.0)
    agents = [AgentStart("alice", (0.0, 0.0), 0)]
    items = [
        Candidate(1, "plate", (5.0, 0.0), 0),
        Candidate(2, "plate", (50.0, 0.0), 0),  # a spare far away
        Candidate(3, "fork", (6.0, 0.0), 1),  # inside a closed cabinet: one extra step to open
    ]
    best = plan(agents, {"plate": 1, "fork": 1}, items, goal, manhattan_steps)
    assert best is not None
    mine = best.agents["alice"]
    assert set(mine.items) == {1, 3} and mine.trips == (2,)
    assert best.makespan == 5 + 1 + (1 + 1 + 1) + 6 + 2


def test_held_items_are_delivered_and_busy_time_counts():
    goal = (0.0, 0.0)
    agents = [AgentStart("alice", (3.0, 0.0), 2, busy_steps=4)]
    best = plan(agents, {}, [], goal, manhattan_steps, goal_open_steps=1)
    assert best is not None and best.agents["alice"].trips == (0,)
    assert best.makespan == 4 + 3 + 1 + 2


def test_missing_items_give_no_plan():
    assert plan([AgentStart("alice", (0.0, 0.0), 0)], {"pudding": 1}, [], (0.0, 0.0), manhattan_steps) is None


def test_plan_is_optimal_against_brute_force_on_a_line():
    goal = (0.0, 0.0)
    agents = [AgentStart("alice", (2.0, 0.0), 0), AgentStart("bob", (-3.0, 0.0), 1)]
    positions = [4.0, -1.0, 7.0]
    items = [Candidate(i, "cupcake", (x, 0.0), 0) for i, x in enumerate(positions)]
    best = plan(agents, {"cupcake": 3}, items, goal, manhattan_steps)
    assert best is not None
    # Brute force over who takes what and in which order, each trip carrying at most two items.
    import itertools

    def agent_time(start, held, seq):
        t, pos, hand = 0.0, start, held
        for x in seq:
            if hand == 2:
                t += manhattan_steps(pos, goal) + hand
                pos, hand = goal, 0
            t += manhattan_steps(pos, (x, 0.0)) + 1
            pos, hand = (x, 0.0), hand + 1
        if hand:
            t += manhattan_steps(pos, goal) + hand
        return t

    brute = math.inf
    for owners in itertools.product((0, 1), repeat=3):
        for order in itertools.permutations(range(3)):
            seqs = [[positions[i] for i in order if owners[i] == j] for j in (0, 1)]
            brute = min(brute, max(agent_time(a.position, a.holding, s) for a, s in zip(agents, seqs, strict=True)))
    assert best.makespan <= brute


def test_each_walk_is_measured_once_per_plan():
    """The search compares every order of every assignment: it asks for the same walks again and again, and a walk
    (a path search on the grid) is worked out once."""
    asked: list[tuple] = []

    def steps(a, b):
        asked.append((a, b))
        return manhattan_steps(a, b)

    agents = [AgentStart("alice", (10.0, 0.0), 0), AgentStart("bob", (-10.0, 0.0), 1)]
    items = [Candidate(i, name, (3.0 * i, 2.0), 0) for i, name in enumerate(["apple", "apple", "wine", "plate"])]
    assert plan(agents, {"apple": 2, "wine": 1, "plate": 1}, items, (0.0, 0.0), steps) is not None
    assert len(asked) == len(set(asked))
