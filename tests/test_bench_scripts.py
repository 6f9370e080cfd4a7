"""The bench scripts' own plumbing: `make bench` keeps the sections other scripts splice into docs/benchmarks.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from run_benchmarks import with_other_sections


def test_a_rerun_replaces_its_sections_and_keeps_the_others():
    old = "# Benchmarks\n\nintro\n\n## Mine\nold numbers\n\n## Spliced by another script\nkept numbers\n"
    new = "# Benchmarks\n\nnew intro\n\n## Mine\nnew numbers\n"
    assert with_other_sections(new, old) == (
        "# Benchmarks\n\nnew intro\n\n## Mine\nnew numbers\n\n## Spliced by another script\nkept numbers\n"
    )
    assert with_other_sections(new, new) == new


def test_seeing_all_runs_the_same_planner_on_the_whole_world(tmp_path):
    """The symbolic-planner benchmark's 'pce seeing all': pce, shown the whole world as the oracle is."""
    from coteam.registry import make_team
    from coteam_harness.runner import run_episode
    from coteam_harness.trace import load_trace
    from coteam_sim.suites import get_suite
    from symbolic_planner import SeeingAll

    team = SeeingAll(make_team("pce"))
    assert team.full_observability and not make_team("pce").full_observability
    trace = tmp_path / "trace.json"
    scene = get_suite("cwah-test").episodes()[0].build()
    seeing_all = run_episode(scene, team, trace_path=trace)
    assert load_trace(trace)["full_observability"] is True
    assert seeing_all.success and seeing_all.steps < run_episode(scene, make_team("pce")).steps
