"""Sweep files (``coteam sweep``, ``coteam_harness.sweep``): expanded into one run per method, switch setting,
suite, team size and seed, played on one pool, reported in one table per suite and size with the episode count,
the standard error and the paired difference to the reference; the same tables from one process or a pool; a bad
file is one line; a stopped sweep resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from coteam_harness.report import mean_se, paired
from coteam_harness.results import EpisodeResult
from coteam_harness.sweep import SweepFile, Variant, load_sweep, run_sweep, variants

SWEEP = """\
methods: [rhp, pce]
suites: [cwah-test]
episodes: 0-1
seeds: [0, 1]
agents: [2, 3]
switches:
  K_action: [3, 5]
"""


def _results(path: Path) -> list[EpisodeResult]:
    return [EpisodeResult(**e) for e in json.loads(path.read_text())["episodes"]]


def test_a_switch_grid_gives_each_method_the_switches_it_declares_once() -> None:
    sweep = SweepFile(methods=["rhp", "pce"], suites=["cwah-test"], switches={"K_action": [3, 5]})
    rows = variants(sweep)
    # rhp has no K_action: it runs once, not once per grid value
    assert rows == [Variant("rhp", ()), Variant("pce", (("K_action", 3),)), Variant("pce", (("K_action", 5),))]
    assert [v.label for v in rows] == ["rhp", "pce[K_action=3]", "pce[K_action=5]"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("methods: [nosuch]\nsuites: [cwah-test]\n", "methods: unknown method(s) nosuch"),
        ("methods: [pce]\nsuites: [nowhere]\n", "suites: unknown suite(s) nowhere"),
        ("methods: [pce]\nsuites: [cwah-test]\nagents: [0]\n", "agents: team sizes must be between 1 and"),
        ("methods: [pce]\nsuites: [cwah-test]\nswitches: {K_action: []}\n", "switches: switch(es) K_action list no"),
        ("methods: [pce]\nsuites: [cwah-test]\nseed: 3\n", "seed: unknown key (allowed here:"),
        ("methods: [pce]\n", "suites: required"),
        ("methods: [pce]\nsuites: [cwah-test]\nseeds: [0, 0]\n", "seeds: listed twice: 0"),
        ("methods: [pce\n", "not valid YAML"),
    ],
)
def test_a_bad_sweep_file_is_one_line_naming_what_is_wrong(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as caught:
        load_sweep(path)
    assert error in str(caught.value) and "\n" not in str(caught.value)


def test_a_switch_no_method_declares_is_refused_before_anything_runs(tmp_path: Path) -> None:
    sweep = SweepFile(methods=["rhp"], suites=["cwah-test"], switches={"K_action": [3]})
    with pytest.raises(ValueError, match="no method in rhp has the switch"):
        run_sweep(sweep, tmp_path, quiet=True)
    assert not list(tmp_path.iterdir())


def test_a_sweep_writes_one_table_per_suite_and_size_with_spread_and_pairs(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    sweep = load_sweep(path)
    serial = run_sweep(sweep, tmp_path / "serial", workers=1, quiet=True)
    pooled = run_sweep(sweep, tmp_path / "pool", workers=2, quiet=True)
    assert serial["tables"] == pooled["tables"], "the pool's tables are the serial run's"

    tables = {(t["suite"], t["agents"]): {r["method"]: r for r in t["rows"]} for t in serial["tables"]}
    assert set(tables) == {("cwah-test", 2), ("cwah-test", 3)}
    rows = tables["cwah-test", 2]
    assert list(rows) == ["rhp", "pce[K_action=3]", "pce[K_action=5]"]
    folder = tmp_path / "serial" / "cwah-test" / "x2"
    pce = [r for s in (0, 1) for r in _results(folder / "pce[K_action=3]" / f"seed{s}" / "results.json")]
    rhp = [r for s in (0, 1) for r in _results(folder / "rhp" / f"seed{s}" / "results.json")]
    assert rows["pce[K_action=3]"]["episodes"] == 4 == len(pce), "2 episodes x 2 seeds, pooled"
    assert rows["pce[K_action=3]"]["se"] == pytest.approx(mean_se([r.steps for r in pce])[1])
    # paired on (seed, episode): both seeds play the same two episodes, each pair is its own
    keyed = [[replace(r, episode=f"s{i // 2}/{r.episode}") for i, r in enumerate(rs)] for rs in (pce, rhp)]
    assert rows["pce[K_action=3]"]["vs_reference"] == pytest.approx(paired(*keyed, "steps"))
    assert rows["rhp"]["vs_reference"] is None, "rhp is the reference (the first method)"

    text = (tmp_path / "serial" / "sweep.md").read_text()
    assert "## cwah-test x2" in text and "## cwah-test x3" in text and "scaling with the number of agents" in text
    assert "Δ vs rhp" in text and "| pce[K_action=5] | 4 |" in text
    assert (folder / "comparison.png").stat().st_size > 0


def test_coteam_sweep_on_the_command_line_resumes_a_finished_sweep_without_playing_it_again(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text("methods: [rhp, random]\nsuites: [cwah-test]\nepisodes: 0\nreference: random\n")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "coteam.cli", "sweep", str(path), "--out", str(out), "--quiet", "--workers", "2"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "Δ vs random" in first.stdout and f"table: {out / 'sweep.md'}" in first.stdout
    trace = out / "cwah-test" / "x2" / "rhp" / "seed0" / "traces" / "cwah-test-000.json"
    stamp = trace.stat().st_mtime_ns
    again = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert trace.stat().st_mtime_ns == stamp, "a finished episode is not played again"


def test_a_learning_store_shared_by_two_runs_is_refused_before_anything_runs(tmp_path: Path) -> None:
    store = tmp_path / "rules.sqlite"
    sweep = SweepFile(methods=["evocf"], suites=["cwah-test"], seeds=[0, 1], switches={"store": [str(store)]})
    with pytest.raises(ValueError, match=r"store .*rules.sqlite would be shared by 2 runs"):
        run_sweep(sweep, tmp_path / "out", quiet=True)
    assert not (tmp_path / "out").exists()


def test_a_sweep_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    sweep = SweepFile(methods=["random"], suites=["cwah-test"], episodes=0)
    run_sweep(sweep, tmp_path, quiet=True)
    with pytest.raises(ValueError, match="holds an earlier sweep's results: add --resume"):
        run_sweep(sweep, tmp_path, quiet=True)
