"""A run's episodes on a pool of worker processes (``coteam_harness.pool``, ``--workers``): the serial run's results
and traces, a worker that dies failing only its episode, a failed episode listed and played again by ``--resume``,
a team that learns across episodes kept in order, and a stopped run leaving no worker behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coteam_harness import jobs, pool
from coteam_harness.cli import run_suite
from coteam_harness.jobs import Failed, Finished, Job, RunSettings, Started
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite

SPECS = get_suite("cwah-test").episodes()[:4]
TIMINGS = {"wall_s", "decision_ms_mean", "decision_ms_median", "decision_ms_p95", "trace"}


def _outcome(results_json: Path) -> list[dict]:
    """The episodes of a results.json without their timings and paths (what a machine's load changes)."""
    data = json.loads(results_json.read_text())
    return [{k: v for k, v in e.items() if k not in TIMINGS} for e in data["episodes"]]


def _trace(path: Path) -> dict:
    """A trace without the time each decision took."""
    trace = load_trace(path)
    decisions = [{k: v for k, v in d.items() if k != "seconds"} for d in trace["decisions"]]
    return {"steps": trace["steps"], "messages": trace["messages"], "decisions": decisions}


def test_a_run_on_a_pool_is_the_serial_run(tmp_path: Path) -> None:
    run_suite(SPECS, "pce", 2, {}, tmp_path / "serial", 0, quiet=True, workers=1)
    run_suite(SPECS, "pce", 2, {}, tmp_path / "pool", 0, quiet=True, workers=2)
    assert _outcome(tmp_path / "pool" / "results.json") == _outcome(tmp_path / "serial" / "results.json")
    for trace in sorted((tmp_path / "serial" / "traces").glob("*.json")):
        assert _trace(tmp_path / "pool" / "traces" / trace.name) == _trace(trace), trace.name
    listed = [e["episode"] for e in json.loads((tmp_path / "pool" / "results.json").read_text())["episodes"]]
    assert listed == [spec.name for spec in SPECS], "in the run's order, whatever order they ended in"


def test_a_worker_that_dies_fails_its_episode_and_the_others_go_on(tmp_path: Path) -> None:
    settings = RunSettings("rhp")
    jobs = [Job(spec, settings, tmp_path / f"{spec.index}.json") for spec in SPECS]
    victim = jobs[1].name
    the_pool = pool._Pool(2)
    events: list = []

    def report(event) -> None:
        events.append(event)
        if isinstance(event, Started) and event.job.name == victim:
            worker = next(w for w in the_pool.workers if w.job is not None and w.job.name == victim)
            os.kill(worker.process.pid, signal.SIGKILL)

    the_pool.run(jobs, report)
    failed = [e for e in events if isinstance(e, Failed)]
    assert [(e.job.name, e.reason) for e in failed] == [(victim, "its worker died (exit code -9)")]
    assert sorted(e.job.name for e in events if isinstance(e, Finished)) == sorted(
        j.name for j in jobs if j.name != victim
    )
    assert not any(w.process.is_alive() for w in the_pool.workers), "the workers are gone"


def test_a_failed_episode_is_listed_and_resume_plays_it_again(tmp_path: Path, monkeypatch) -> None:
    real_play = pool.play

    def play_but_the_second(job, team, report):
        if job.name == SPECS[1].name:
            raise RuntimeError("the model server went away\nand more")
        return real_play(job, team, report)

    monkeypatch.setattr(pool, "play", play_but_the_second)
    results = run_suite(SPECS[:3], "rhp", 2, {}, tmp_path, 0, quiet=True, workers=1)
    assert [r.episode for r in results] == [SPECS[0].name, SPECS[2].name]
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["complete"] is False
    assert data["failed"] == [{"episode": SPECS[1].name, "reason": "RuntimeError: the model server went away"}]
    monkeypatch.setattr(pool, "play", real_play)
    stamp = (tmp_path / "traces" / "cwah-test-000.json").stat().st_mtime_ns
    results = run_suite(SPECS[:3], "rhp", 2, {}, tmp_path, 0, quiet=True, resume=True, workers=2)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["complete"] is True and "failed" not in data and len(results) == 3
    assert (tmp_path / "traces" / "cwah-test-000.json").stat().st_mtime_ns == stamp, "not played again"


def test_a_team_that_learns_across_episodes_plays_them_in_order_here(tmp_path: Path, monkeypatch) -> None:
    def no_pool(size: int):
        raise AssertionError("a learning team's episodes went to the pool")

    monkeypatch.setattr(pool, "_Pool", no_pool)
    params = {"store": str(tmp_path / "rules.sqlite")}
    results = run_suite(SPECS[:2], "evocf", 2, params, tmp_path / "run", 0, quiet=True, workers=2)
    assert len({r.store_sha256 for r in results}) == 2, "the second episode learned from the first"


def _workers(pid: int) -> list[int]:
    """The pool's worker processes of process ``pid`` (not multiprocessing's resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return [c for c in found if b"--multiprocessing-fork" in Path(f"/proc/{c}/cmdline").read_bytes()]


def _gone(pids: list[int], within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while [pid for pid in pids if Path(f"/proc/{pid}").exists()]:
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def test_a_stopped_pool_run_names_the_episodes_it_cut_and_leaves_no_worker(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "tdwmat-test", "--team", "pce", "--quiet"]
    proc = subprocess.Popen(
        [*cmd, "--episodes", "0-3", "--workers", "2", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    journals = out / "traces"
    end = time.monotonic() + 120
    while len(list(journals.glob("*.partial.jsonl"))) < 2:
        assert time.monotonic() < end and proc.poll() is None, "two episodes never started"
        time.sleep(0.1)
    workers = _workers(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    data = json.loads((out / "results.json").read_text())
    assert data["stopped"] == "SIGTERM" and len(data["interrupted"]) == 2
    assert all(Path(i["trace"]).exists() for i in data["interrupted"])
    assert len(workers) == 2 and _gone(workers), "no worker left running"


@pytest.mark.skipif(sys.platform != "linux", reason="a worker follows its parent out by Linux's PR_SET_PDEATHSIG")
def test_workers_do_not_outlive_a_parent_killed_outright(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "tdwmat-test", "--team", "pce", "--quiet"]
    proc = subprocess.Popen([*cmd, "--episodes", "0-3", "--workers", "2", "--out", str(out)])
    end = time.monotonic() + 120
    while len(list((out / "traces").glob("*.partial.jsonl"))) < 2:
        assert time.monotonic() < end and proc.poll() is None, "two episodes never started"
        time.sleep(0.1)
    workers = _workers(proc.pid)
    proc.kill()
    proc.wait(timeout=30)
    assert len(workers) == 2 and _gone(workers), "the workers follow their parent out"


def test_coteam_run_whose_episodes_fail_says_how_many_and_exits_1(tmp_path: Path, monkeypatch, capsys) -> None:
    """Not a traceback nor a missing table's key: the failures as they happened, then how many of the run's episodes
    failed, and exit status 1."""
    from coteam.cli import main

    def broken(*args, **kwargs):
        raise RuntimeError("the method fell over")

    monkeypatch.setattr(jobs, "run_episode", broken)
    argv = ["run", "--suite", "cwah-test", "--team", "rhp", "--episodes", "0-1", "--workers", "1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 1
    out = capsys.readouterr().out
    assert "cwah-test/0 failed" in out and "2 of 2 episodes failed (listed in results.json" in out
