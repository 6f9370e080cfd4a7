"""The ``mhp`` team: UCT over high-level actions with belief sampling (coteam.teams.mcts)."""

from __future__ import annotations

import json

import pytest

from coteam.agent.memory import AgentMemory
from coteam.agent.options import available_actions
from coteam.agent.reasoning import Decision, DecisionContext, EpisodeInfo
from coteam.domain.actions import Verb, format_action
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import ObjectView, Observation
from coteam.domain.world import Benchmark, FloorPlan, GoalPredicate, ObjectKind, Relation, Room, Task
from coteam.kit import PerAgentTeam, TeamWrapper
from coteam.registry import make_team, method_class
from coteam.teams.mcts import MhpTeam
from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite


class RecordingTeam(TeamWrapper):
    """Wraps a team and records every decision it makes."""

    def __init__(self, inner):
        super().__init__(inner)
        self.log: list[tuple[str, int, str, dict]] = []

    def reset(self, info: EpisodeInfo) -> None:
        self.benchmark = info.benchmark
        self.inner.reset(info)

    def decide(self, ctx: DecisionContext) -> Decision:
        d = self.inner.decide(ctx)
        self.log.append((ctx.agent, ctx.memory.frames, format_action(d.action, self.benchmark), d.rationale))
        return d


def _run(suite: str, index: int, n_agents: int, params: dict | None = None):
    team = RecordingTeam(make_team("mhp", params))
    scene = get_suite(suite).episodes()[index].build()
    return run_episode(scene, team, n_agents=n_agents), team.log


def test_mhp_is_registered_and_listed():
    assert {"iterations", "depth", "exploration"} <= set(method_class("mhp").Config.switch_names())
    team = make_team("mhp", {"iterations": 10})
    assert isinstance(team, PerAgentTeam)
    assert team.name == "mhp" and not team.full_observability


def test_mhp_finishes_a_cwah_episode_and_root_visits_sum_to_iterations():
    result, log = _run("cwah-test", 4, 2, {"iterations": 40})
    assert result.success and result.transport_rate == 1.0
    assert result.messages == 0  # decentralised, no messages
    searched = [r for _, _, _, r in log if "root" in r]
    assert searched, "the planner never searched"
    for rationale in searched:
        assert rationale["method"] == "mhp" and rationale["iterations"] == 40
        assert sum(s["visits"] for s in rationale["root"].values()) == 40
        json.dumps(rationale, allow_nan=False)  # JSON-serialisable, finite


def test_mhp_is_deterministic_for_a_seed():
    params = {"iterations": 30}
    first, log1 = _run("cwah-test", 0, 2, params)
    second, log2 = _run("cwah-test", 0, 2, params)
    assert [e[:3] for e in log1] == [e[:3] for e in log2]
    assert [e[3] for e in log1] == [e[3] for e in log2]
    assert first.steps == second.steps


def test_mhp_works_on_tdwmat():
    result, log = _run("tdwmat-test", 13, 2, {"iterations": 30})
    assert result.transport_rate >= 0.3
    assert any("root" in r for _, _, _, r in log)
    assert len(log) < 400  # no loops of instantly finished actions


def _two_room_memory(needed: int) -> tuple[AgentMemory, NavGrid, EpisodeInfo]:
    """Alice stands by the coffee table holding an apple; the bedroom far to the east is unexplored."""
    width, height = 40, 8
    rows = []
    for y in range(height):
        row = []
        for x in range(width):
            wall = x in (0, width - 1) or y in (0, height - 1) or (x == 8 and y not in (3, 4))
            row.append("#" if wall else ".")
        rows.append("".join(row))
    fp = FloorPlan(0.5, tuple(rows), (Room(1, "livingroom", 1, 1, 9, 7), Room(2, "bedroom", 9, 1, 39, 7)))
    task = Task("prepare_afternoon_tea", Benchmark.CWAH, (GoalPredicate(Relation.ON, "apple", 10, needed),))
    memory = AgentMemory("alice", Benchmark.CWAH, fp, task)
    table = ObjectView(10, "coffeetable", ObjectKind.SURFACE, 1, (2.25, 2.25))
    apple = ObjectView(20, "apple", ObjectKind.ITEM, 1, (2.25, 1.75), "food", location=Relation.HELD, held_by="alice")
    memory.update(Observation("alice", 0, 0, (2.25, 1.75), 0, 1, (20, None), (table, apple)))
    info = EpisodeInfo(Benchmark.CWAH, task, fp, ("alice",), 7)
    return memory, NavGrid(fp), info


@pytest.mark.parametrize("needed", [2, 3])
def test_mhp_delivers_a_held_item_next_to_the_goal_before_exploring_a_far_room(needed):
    memory, nav, info = _two_room_memory(needed)
    options = available_actions(memory, nav, allow_messages=False)
    verbs = {o.action.verb for o in options}
    assert verbs == {Verb.EXPLORE, Verb.PUT}
    team = MhpTeam(MhpTeam.Config(iterations=80), name="mhp")
    team.reset(info)
    decision = team.decide(DecisionContext("alice", memory, options, nav))
    assert decision.action.verb == Verb.PUT
    root = decision.rationale["root"]
    put = next(v for k, v in root.items() if k.startswith("[goput]"))
    explore = next(v for k, v in root.items() if k.startswith("[goexplore]"))
    assert put["visits"] > explore["visits"]
    if needed == 3:  # exploring first would leave one hand for two apples: a second long trip
        assert put["mean"] > explore["mean"]
