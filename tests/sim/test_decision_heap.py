"""Every method's decisions free their objects by reference counting (coteam.agent.heap): no decision leaves a
reference cycle for the garbage collector, which would free it later inside another decision."""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator

import pytest

from coteam.domain.world import Benchmark
from coteam.registry import make_team, method_names
from coteam_harness.jobs import RunSettings, team_for
from coteam_harness.runner import run_episode
from coteam_sim.suites import fresh_episode


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector off while the episode runs, so that what it would have freed stays to be counted."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _cyclic_garbage() -> Counter[str]:
    """The coteam objects only the collector could free, by type."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = Counter(type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("coteam"))
    gc.garbage.clear()
    gc.set_debug(0)
    return found


@pytest.mark.parametrize("benchmark", [Benchmark.CWAH, Benchmark.TDWMAT])
@pytest.mark.parametrize("method", method_names())
def test_decisions_leave_no_reference_cycles(method: str, benchmark: Benchmark, collector_off: None) -> None:
    team = make_team(method)  # alive through the check: a team and its agents may refer to each other
    run_episode(fresh_episode(benchmark, 5301, 0).build(), team, n_agents=2)
    assert _cyclic_garbage() == Counter()


def test_a_run_settles_the_heap_once_its_team_is_built() -> None:
    gc.unfreeze()
    try:
        teams: dict = {}
        team_for(teams, RunSettings(team="rhp"))
        assert gc.get_freeze_count() > 0  # the team and everything imported, out of the collector's scans
        frozen = gc.get_freeze_count()
        team_for(teams, RunSettings(team="rhp"))  # built once: nothing more to settle
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
