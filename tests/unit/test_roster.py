"""A teammate silent past its lease is lost to a robot, and back once heard (``coteam.home.roster``); while lost, the
robot's memory plans without it: its claims lapse, what it held is out of reach, and its belief has no plans of it."""

from __future__ import annotations

import pytest

from coteam.agent.memory import TeammateSighting
from coteam.agent.options import available_actions
from coteam.belief import BeliefState
from coteam.domain.actions import Verb
from coteam.home.roster import RosterChange, TeamRoster
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from scenario import pce_brain


def _expire(roster: TeamRoster, start: float, end: float) -> list[tuple[float, RosterChange]]:
    """Check every 0.1 s from ``start`` to ``end``, as the planner does; the changes and when."""
    times = [start + k / 10 for k in range(1, round((end - start) * 10) + 1)]
    return [(t, c) for t in times for c in roster.expire(t)]


def test_a_teammate_silent_past_its_lease_is_lost_once_and_back_when_heard() -> None:
    roster = TeamRoster(["bob", "carol"], lease_s=5.0, now=0.0)
    for t in range(1, 6):
        assert roster.heard("bob", t) is None and roster.heard("carol", t) is None
        assert _expire(roster, t - 1, t) == []
    roster.heard("carol", 6.0)
    changes = _expire(roster, 5.0, 11.0)  # bob silent since 5.0, carol since 6.0
    assert [(round(t, 1), c.teammate, c.lost) for t, c in changes] == [(10.1, "bob", True)], "one change, said once"
    assert roster.heard("mallory", 11.0) is None, "a stranger is nobody's teammate"
    assert roster.heard("bob", 11.0) == RosterChange("bob", False, 6.0)
    assert roster.heard("bob", 11.1) is None
    assert (roster.losses, roster.returns, roster.lost) == (1, 1, set())


def test_a_teammate_never_heard_is_lost_only_after_the_start_up_time() -> None:
    roster = TeamRoster(["bob"], lease_s=5.0, now=100.0, startup_s=60.0)
    assert [(round(t, 1), c.teammate) for t, c in _expire(roster, 100.0, 170.0)] == [(160.1, "bob")]


def test_a_gap_in_my_own_listening_is_no_teammates_silence() -> None:
    """A planner busy for 30 s (a slow model) hears nobody meanwhile: that is not the teammates' silence."""
    roster = TeamRoster(["bob"], lease_s=5.0, now=0.0)
    roster.heard("bob", 1.0)
    assert roster.expire(31.0) == []
    assert [round(t, 1) for t, _ in _expire(roster, 31.0, 40.0)] == [36.1]


@pytest.mark.parametrize(("lease", "startup"), [(0.0, 60.0), (10.0, 5.0)])
def test_a_roster_refuses_a_lease_it_cannot_keep(lease: float, startup: float) -> None:
    with pytest.raises(ValueError, match="lease_s"):
        TeamRoster(["bob"], lease_s=lease, now=0.0, startup_s=startup)


def test_a_lost_teammates_claims_lapse_and_what_it_held_is_out_of_reach() -> None:
    sim = Simulator(get_suite("cwah-test").episodes()[0].build(), ["alice", "bob"], seed=0)
    brain = pce_brain(sim)
    memory = brain.memory
    target = next(
        o.action.target for o in available_actions(memory, sim.nav) if o.action.verb in (Verb.CHECK, Verb.GRAB)
    )
    assert target is not None
    memory.claim("bob", target.id)
    assert target.id not in {o.action.target.id for o in available_actions(memory, sim.nav) if o.action.target}
    item = next(i for i in sim.scene.items if i.id != target.id)
    memory.teammates["bob"] = TeammateSighting(memory.step, (0.0, 0.0), memory.room, (item.id, None))
    assert "bob" in BeliefState(memory, teammates=["bob"]).teammates()

    assert memory.lose("bob") == [item.id], "what bob held is reported, not silently missing"
    assert target.id in {o.action.target.id for o in available_actions(memory, sim.nav) if o.action.target}
    assert "bob" not in BeliefState(memory, teammates=["bob"]).teammates(), "no plans are made with bob"

    memory.regain("bob")
    assert "bob" in BeliefState(memory, teammates=["bob"]).teammates()
