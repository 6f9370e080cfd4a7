"""The bench scripts' own plumbing: `make bench` keeps the sections other scripts splice into docs/benchmarks.md."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

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


def test_the_profile_bench_tells_the_nodes_each_robots_body_and_reads_robot_states_drops():
    """bench/twin_robots.py: the team file it runs gives each robot the body its twin profile documents, and it reads
    the detection arrays each robot_state placed and dropped from the line the node says as it stops."""
    from coteam_ros.team_config import TwinSection
    from twin_robots import CLASS_ONLY, drops, team_edit

    edit = team_edit({"robot1": "stretch3", "robot2": "generic"})
    assert edit["twin"]["robots"] == {"robot1": "stretch3", "robot2": "generic"}
    twin = TwinSection(**edit["twin"])  # the sensors it asks for are the twin's options
    assert twin.odometry.drift_m_per_m > 0 and twin.detector.fov_deg == 90 and twin.detector.ids
    assert not TwinSection(**{**edit["twin"], **CLASS_ONLY}).detector.ids
    assert edit["robots"] == [
        {"name": "robot1", "capabilities": {"grippers": 1, "open_needs_free_gripper": True, "speed_mps": 0.26}},
        {"name": "robot2", "capabilities": {"grippers": 2, "open_needs_free_gripper": False}},
    ]
    logs = {
        "robot_state@/robot1": "[INFO] detection arrays: 40 placed, 2 dropped (no transform from a within 0.5 s: 2)",
        "robot_state@/robot2": "[INFO] detection arrays: 38 placed, 1 dropped (no transform from b within 0.5 s: 1)",
        "planner@/robot1": "detection arrays: 9 placed, 9 dropped",
    }
    assert drops(logs) == (78, 3, {"no transform within 0.5 s": 3}), "counted by cause over both robots' cameras"


def test_the_ablation_reading_is_computed_from_the_paired_differences():
    """bench/ablations.py's lines under a paper's table: worse or better per set past two paired SEs, whether that
    is the paper's direction, and a switch that changed no episode's end named as such."""
    from ablations import SETS, PaperTable, Variant, _ablation_reading
    from coteam_harness.results import EpisodeResult

    def played(*steps: int) -> list[EpisodeResult]:
        return [
            EpisodeResult(
                "e", "s", "t", "cwah", 2, "x", True, n, 1.0, None, None, 0, 0, 0, 0, 0, 0, 1, 1.0, 1.0, 1.0, 0.1
            )
            for n in steps
        ]

    table = PaperTable(
        "pce", "PCE", False, (Variant("pce", {}, "42"), Variant("slower", {}, "56"), Variant("same", {}, "40"))
    )
    runs = {
        "pce": dict.fromkeys(SETS, played(40, 41, 39)),
        "slower": dict.fromkeys(SETS, played(50, 51, 49)),
        "same": dict.fromkeys(SETS, played(40, 41, 39)),
    }
    slower, same = _ablation_reading(table, runs)
    assert slower.startswith(f"- slower: worse on {', '.join(SETS)}; better on no set")
    assert slower.endswith("the paper has it worse than the full method — the same direction here.")
    assert "it changed no episode's end here" in same
    assert same.endswith("the paper has it no worse than the full method — the same direction here.")


def test_a_variant_asked_alongside_the_full_method_changes_nothing_when_it_is_the_same_method():
    """bench/ablation_decisions.py: a variant that is the full method itself takes every decision the same, asked
    on its copy of the memory; a variant that judges no relevance changes some."""
    from ablation_decisions import Shadowed
    from coteam.registry import make_team
    from coteam_harness.runner import run_episode
    from coteam_sim.suites import get_suite

    scene = get_suite("cwah-test").episodes()[0].build()
    twin = Shadowed(make_team("pce"), make_team("pce"))
    alone = Shadowed(make_team("reveca"), make_team("reveca", {"no_relevance": True}))
    for team in (twin, alone):
        run_episode(scene, team, n_agents=2)
    assert twin.decisions > 0 and (twin.changed, twin.talk_apart) == (0, 0)
    assert alone.decisions > 0 and alone.changed > 0


def test_the_diagnosis_of_a_switch_is_worded_from_the_decisions_it_changes_and_its_result():
    from ablation_decisions import Changed, _diagnosis

    line = _diagnosis(
        "x",
        {
            "a": (Changed(100, 1, 0), "within noise (+0.1 steps, paired SE 0.2)"),
            "b": (Changed(10, 1, 40), "within noise (+0.1 steps, paired SE 0.2)"),
            "c": (Changed(100, 30, 0), "worse (+9.0 steps, paired SE 2.0)"),
        },
    )
    assert line == (
        "- x: a: it changes few decisions (1%): the rest of the method decides alike; "
        "b: it changes 82% of the decisions, mostly whether to talk, which come to about as much; "
        "c: it changes 30% of the decisions, and they come to worse."
    )
