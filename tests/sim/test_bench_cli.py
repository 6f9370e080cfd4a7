"""`coteam bench`: paper-style comparison of methods on a suite."""

from __future__ import annotations

import json

import pytest

from coteam.cli import main
from talking import first_talking_episode


@pytest.mark.parametrize(("suite", "metric"), [("cwah-test", "total_steps"), ("tdwmat-test", "total")])
def test_bench_writes_table_json_and_chart(tmp_path, capsys, suite, metric):
    out = tmp_path / "bench"
    assert (
        main(["bench", "--suite", suite, "--methods", "rhp,oracle", "--episodes", "0-1", "--quiet", "--out", str(out)])
        == 0
    )
    rows = {r["method"]: r for r in json.loads((out / "comparison.json").read_text())["rows"]}
    assert set(rows) == {"rhp", "oracle"}
    assert rows["oracle"]["vs_oracle"] == pytest.approx(1.0)
    assert all(r["episodes"] == 2 and metric in r for r in rows.values())
    assert rows["rhp"]["vs_reference"] is None and rows["oracle"]["vs_reference"][2] == 2, "paired with rhp"
    assert all(r["se"] >= 0 for r in rows.values())
    table = (out / "comparison.md").read_text()
    assert ("Total Steps" in table) == (suite == "cwah-test") and "| rhp | 2 |" in table and "| oracle | 2 |" in table
    assert "Δ vs rhp" in table and " ± " in table and "standard error" in table
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "rhp" / "results.json").is_file()
    assert "comparison.md" in capsys.readouterr().out


def test_bench_rejects_unknown_methods(tmp_path):
    assert main(["bench", "--suite", "cwah-test", "--methods", "rhp,telepathy", "--out", str(tmp_path)]) == 2


def test_bench_prints_the_papers_metrics_for_each_method(tmp_path):
    out = tmp_path / "bench"
    episode, _ = first_talking_episode("cwah-test")
    argv = ["bench", "--suite", "cwah-test", "--methods", "pce,coela,rhp", "--episodes", str(episode), "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    rows = {r["method"]: r for r in json.loads((out / "comparison.json").read_text())["rows"]}
    for key in ("comm", "chars", "comm_tokens", "travel_m", "balance", "failed"):
        assert all(key in r for r in rows.values())
    assert rows["rhp"]["comm"] == 0 and rows["rhp"]["comm_tokens"] == 0
    assert rows["coela"]["comm"] > rows["pce"]["comm"] > 0
    assert rows["coela"]["comm_tokens"] > rows["pce"]["comm_tokens"] > 0
    assert all(r["travel_m"] > 0 and 0 < r["balance"] <= 1 for r in rows.values())
    assert "Comm tokens" in (out / "comparison.md").read_text()


def test_bench_sweeps_the_number_of_agents_into_a_scaling_table(tmp_path, capsys):
    out = tmp_path / "bench"
    argv = ["bench", "--suite", "cwah-test", "--methods", "rhp,oracle", "--agents", "1,2,3", "--episodes", "0-1"]
    assert main([*argv, "--quiet", "--out", str(out)]) == 0
    table = (out / "scaling.md").read_text()
    assert "| method | 1 agents: steps ↓ | 2 agents: steps ↓ | 3 agents: steps ↓ |" in table
    for n in (1, 2, 3):
        assert (out / f"x{n}" / "comparison.json").is_file()
        assert json.loads((out / f"x{n}" / "rhp" / "results.json").read_text())["meta"]["agents"] == n
    assert "scaling with the number of agents" in capsys.readouterr().out
    assert main(["bench", "--suite", "cwah-test", "--agents", "2,x", "--out", str(tmp_path / "bad")]) == 2


def test_a_results_table_never_cuts_an_episode_id():
    from dataclasses import replace

    from rich.console import Console

    from coteam_harness.report import results_table
    from coteam_harness.runner import run_episode
    from coteam_sim.suites import get_suite

    played = run_episode(get_suite("cwah-test").episodes()[0].build(), "rhp")
    result = replace(played, episode="tdwmat-test-visual/23")
    console = Console(width=80, record=True)
    console.print(results_table([result], "a narrow terminal"))
    assert "tdwmat-test-visual/23" in console.export_text()


def test_the_spread_is_the_standard_error_and_pairs_share_episodes() -> None:
    from dataclasses import replace

    from coteam_harness.report import mean_se, paired
    from coteam_harness.runner import run_episode
    from coteam_sim.suites import get_suite

    assert mean_se([2.0, 4.0, 6.0]) == pytest.approx((4.0, 2.0 / 3**0.5))
    assert mean_se([5.0]) == (5.0, 0.0)
    base = run_episode(get_suite("cwah-test").episodes()[0].build(), "rhp", episode_name="e0")
    ours = [replace(base, episode="e0", steps=10), replace(base, episode="e1", steps=30), replace(base, episode="e2")]
    theirs = [replace(base, episode="e0", steps=12), replace(base, episode="e1", steps=31)]
    mean, se, shared = paired(ours, theirs, "steps")
    assert (mean, shared) == (-1.5, 2) and se == pytest.approx(0.5), "e2 is not shared: left out"
    assert paired(ours, [replace(base, episode="x")], "steps") is None
