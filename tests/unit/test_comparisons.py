"""Comparing methods on the same episodes: the paired difference of the benchmark's metric, and the papers'
orderings checked against our runs (a claim that holds says yes; one that does not is marked and explained, or
said to be unexplained; a claim about a method that was not run is left out)."""

from __future__ import annotations

import pytest

from coteam_harness.report import PaperOrdering, orderings_markdown
from coteam_harness.results import EpisodeResult, compared, paired_difference, score, versus


def result(team: str, steps: int, messages: int = 0, rate: float = 1.0, benchmark: str = "cwah") -> EpisodeResult:
    return EpisodeResult(
        "e", "s", "t", benchmark, 2, team, True, steps, rate, None, None, messages, 0, 0, 0, 0, 0, 1, 1.0, 1.0, 1.0, 0.1
    )


def test_the_paired_difference_is_over_the_same_episodes_in_the_benchmarks_metric():
    a = [result("pce", 40), result("pce", 60), result("pce", 50)]
    b = [result("mhp", 50), result("mhp", 60), result("mhp", 70)]
    mean, se = paired_difference(a, b)
    assert mean == pytest.approx(-10.0) and se == pytest.approx(10.0 / 3**0.5)
    assert score(result("pce", 3000, rate=0.75, benchmark="tdwmat")) == 0.75
    assert paired_difference(a[:1], b[:1]) == (-10.0, 0.0)
    with pytest.raises(ValueError):
        paired_difference(a, b[:2])  # not the same episodes


def test_a_comparison_is_worded_from_the_paired_difference_and_two_standard_errors():
    """The sentences of the bench sections are computed: better or worse past two paired SEs, else within noise."""
    fewer = [result("a", 40), result("a", 41), result("a", 39)]
    same = [result("b", 50), result("b", 51), result("b", 49)]
    assert compared(fewer, same) == "better (-10.0 steps, paired SE 0.0)"
    assert compared(same, fewer) == "worse (+10.0 steps, paired SE 0.0)"
    noisy = [result("c", 30), result("c", 70), result("c", 50)]
    assert compared(noisy, same).startswith("within noise (+0.0 steps, paired SE ")
    more = [result("d", 3000, rate=0.8, benchmark="tdwmat")] * 2
    less = [result("e", 3000, rate=0.7, benchmark="tdwmat")] * 2
    assert compared(more, less) == "better (+0.100 transport, paired SE 0.000)"
    assert (versus(fewer, same), versus(more, less)) == ("-10.0 ± 0.0", "+0.100 ± 0.000")  # the table cells


RUNS = {"cwah-test": {"pce": [result("pce", 40, 2)], "coela": [result("coela", 60, 10)], "mhp": [result("mhp", 30)]}}


def test_orderings_that_hold_and_that_do_not():
    lines = orderings_markdown(
        RUNS,
        [
            PaperOrdering("cwah-test", "pce", "coela", "steps", "Table 1: 42.76 vs 60.40"),
            PaperOrdering("cwah-test", "pce", "coela", "messages", "Table 1: 1.70 vs 9.88"),
            PaperOrdering("cwah-test", "pce", "mhp", "steps", "Table 12", why_not="our mhp plans on exact costs."),
            PaperOrdering("cwah-test", "coela", "mhp", "steps", "Mind-Map Table 1"),
            PaperOrdering("cwah-test", "mindmap", "coela", "steps", "not run"),
            PaperOrdering("tdwmat-test", "pce", "coela", "transport_rate", "not run"),
        ],
    )
    table = [line for line in lines if line.startswith("| cwah-test")]
    assert table == [
        "| cwah-test | pce < coela (steps) | Table 1: 42.76 vs 60.40 | 40.0 vs 60.0 | -20.0 ± 0.0 | yes |",
        "| cwah-test | pce < coela (messages) | Table 1: 1.70 vs 9.88 | 2.0 vs 10.0 | -8.0 ± 0.0 | yes |",
        "| cwah-test | pce < mhp (steps) | Table 12 | 40.0 vs 30.0 | +10.0 ± 0.0 | **no** |",
        "| cwah-test | coela < mhp (steps) | Mind-Map Table 1 | 60.0 vs 30.0 | +30.0 ± 0.0 | **no** |",
    ]
    assert lines[-2:] == [
        "- cwah-test, pce < mhp (steps): our mhp plans on exact costs.",
        "- cwah-test, coela < mhp (steps): not explained yet.",
    ]


def test_a_higher_transport_rate_is_better():
    runs = {"tdwmat-test": {"pce": [result("pce", 3000, rate=0.9)], "coela": [result("coela", 3000, rate=0.7)]}}
    lines = orderings_markdown(runs, [PaperOrdering("tdwmat-test", "pce", "coela", "transport_rate", "Table 2")])
    assert (
        lines[2] == "| tdwmat-test | pce > coela (transport rate) | Table 2 | 0.900 vs 0.700 | +0.200 ± 0.000 | yes |"
    )


def test_an_ordering_with_the_papers_sign_inside_two_standard_errors_holds_within_noise():
    runs = {
        "cwah-test": {
            "pce": [result("pce", 40), result("pce", 70), result("pce", 50)],
            "coela": [result("coela", 50), result("coela", 60), result("coela", 55)],
        }
    }
    lines = orderings_markdown(runs, [PaperOrdering("cwah-test", "pce", "coela", "steps", "T1")])
    assert lines[2].endswith("| 53.3 vs 55.0 | -1.7 ± 6.0 | yes, within noise |"), lines[2]


def test_an_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="unknown metric 'speed'"):
        PaperOrdering("cwah-test", "pce", "coela", "speed", "")


def test_the_benchmarked_orderings_name_registered_methods_and_our_test_sets():
    import sys
    from pathlib import Path

    from coteam.registry import method_names

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from paper_orderings import ORDERINGS

    assert {o.suite for o in ORDERINGS} == {"cwah-test", "tdwmat-test"}
    assert {o.better for o in ORDERINGS} | {o.worse for o in ORDERINGS} <= set(method_names())
