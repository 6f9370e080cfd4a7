"""A run that is stopped or killed keeps every episode it finished; ``coteam run --resume`` finishes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coteam.registry import make_team
from coteam_harness.results import ResultsLog
from coteam_harness.runner import run_episode
from coteam_harness.trace import journal_path, load_trace, replay
from coteam_sim.suites import get_suite

EPISODES = "0-3"


def _run(out: Path, *extra: str, team: str = "pce") -> subprocess.Popen:
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "cwah-test", "--team", team, "--episodes", EPISODES]
    return subprocess.Popen(
        [*cmd, "--out", str(out), "--quiet", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(check, timeout_s: float = 120.0) -> None:
    end = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _finished(out: Path) -> int:
    log = out / "episodes.jsonl"
    return max(0, len(log.read_text().splitlines()) - 1) if log.exists() else 0


def _stop_during_second_episode(out: Path, sig: int) -> subprocess.Popen:
    proc = _run(out, "--workers", "1")  # in order: the first episode is finished when the second plays
    journal = journal_path(out / "traces" / "cwah-test-001.json")
    _wait_for(lambda: (journal.exists() and '["step"' in journal.read_text()) or proc.poll() is not None)
    os.kill(proc.pid, sig)
    proc.communicate(timeout=60)
    return proc


def test_sigterm_keeps_the_finished_episodes_and_resume_runs_only_the_rest(tmp_path):
    out = tmp_path / "run"
    proc = _stop_during_second_episode(out, signal.SIGTERM)
    assert proc.returncode == 128 + signal.SIGTERM
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] is False and data["stopped"] == "SIGTERM"
    done = [e["episode"] for e in data["episodes"]]
    assert done and done == [f"cwah-test/{i}" for i in range(len(done))] and len(done) < 4
    assert _finished(out) == len(done)
    # The episode that was running left its trace journal: the steps done, replayable.
    (running,) = data["interrupted"]
    assert running["episode"] == f"cwah-test/{len(done)}"
    partial = load_trace(running["trace"])
    assert partial["incomplete"] and partial["steps"]
    replay(partial)
    first_trace = out / "traces" / "cwah-test-000.json"
    stamp = first_trace.stat().st_mtime_ns

    proc = _run(out, "--resume")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] is True and "stopped" not in data
    assert [e["episode"] for e in data["episodes"]] == [f"cwah-test/{i}" for i in range(4)]
    assert first_trace.stat().st_mtime_ns == stamp  # not run again
    assert not list((out / "traces").glob("*.partial.jsonl"))  # every episode finished: no journal left


def test_a_killed_run_leaves_readable_results_and_resume_finishes_it(tmp_path):
    out = tmp_path / "run"
    proc = _stop_during_second_episode(out, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    kept = _finished(out)
    assert kept >= 1
    data = json.loads((out / "results.json").read_text())
    assert len(data["episodes"]) == kept  # never half-written
    assert data["complete"] is False and "stopped" not in data  # killed outright: not all episodes are in
    proc = _run(out, "--resume")
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert json.loads((out / "results.json").read_text())["summary"]["episodes"] == 4


def test_a_run_killed_before_its_first_episode_ends_says_so(tmp_path):
    out = tmp_path / "run"
    # one episode at a time, each of many seconds (a deep search per decision): none can end before the kill
    proc = _run(out, "--workers", "1", "--set", "iterations=20000", team="mhp")
    journal = journal_path(out / "traces" / "cwah-test-000.json")
    _wait_for(lambda: (journal.exists() and '["step"' in journal.read_text()) or proc.poll() is not None)
    proc.kill()
    proc.communicate(timeout=60)
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] is False and data["episodes"] == [] and data["summary"] == {}


def test_resume_refuses_another_configuration_in_one_line(tmp_path):
    out = tmp_path / "run"
    proc = _run(out)
    proc.communicate(timeout=300)
    proc = _run(out, "--resume", team="rhp")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert stderr.strip().splitlines() == [
        f"coteam run: error: cannot resume {out}: it was run with other settings (params, team)"
    ]


def test_a_line_cut_short_by_a_kill_is_dropped_and_garbage_elsewhere_is_an_error(tmp_path, capsys):
    spec = get_suite("cwah-test").episodes()[0]
    meta = {"team": "rhp", "agents": 2, "params": {}, "seed": 0}
    log = ResultsLog(tmp_path, meta, planned=2)
    log.add(run_episode(spec.build(), "rhp", episode_name=spec.name))
    line = (tmp_path / "episodes.jsonl").read_text().splitlines()[-1]
    with (tmp_path / "episodes.jsonl").open("a") as f:
        f.write(line[: len(line) // 2])  # the kill came mid-write
    again = ResultsLog(tmp_path, meta, planned=2, resume=True)
    assert again.done == {spec.name}
    assert "dropping a cut-short last line" in capsys.readouterr().err
    lines = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["episode"]["episode"] == spec.name  # rewritten clean
    (tmp_path / "episodes.jsonl").write_text(lines[0] + "\nnot json\n" + lines[1] + "\n")
    with pytest.raises(ValueError, match=r"episodes.jsonl:2: not a results line"):
        ResultsLog(tmp_path, meta, planned=2, resume=True)


def test_an_episode_that_crashes_leaves_a_replayable_journal(tmp_path):
    spec = get_suite("cwah-test").episodes()[0]
    trace = tmp_path / "trace.json"

    def crash(clock: int, horizon: int) -> None:
        if clock >= 12:
            raise RuntimeError("node died")

    with pytest.raises(RuntimeError):
        run_episode(spec.build(), make_team("pce"), trace_path=trace, on_step=crash)
    assert not trace.exists()
    partial = load_trace(journal_path(trace))
    assert partial["incomplete"] and partial["decisions"] and partial["outcomes"]
    assert [s["clock"] for s in partial["steps"]][-1] == 11
    assert replay(partial).clock == 12
