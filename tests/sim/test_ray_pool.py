"""A run's episodes on a Ray cluster (``--ray``, ``coteam_harness.ray_pool``), here a local cluster of two nodes
made with Ray's own test utilities: the serial run's results and traces, a Ray worker that dies failing only its
episode, an episode that raises failing with its reason, and the model endpoint's rate limit kept across the
cluster's workers (as across a local pool's)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from test_pool import SPECS, _outcome, _trace  # noqa: E402

from coteam.methods.pce.scripted import scripted_pce_model  # noqa: E402
from coteam_harness.cli import run_suite  # noqa: E402
from coteam_harness.jobs import Failed, Finished, Job, RunSettings  # noqa: E402
from coteam_harness.pool import run_jobs  # noqa: E402
from coteam_testkit.llm_server import LoopbackOpenAIServer  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each (one episode at a time on each), the test process connected as the driver."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    c = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": 100 * 2**20},
    )
    c.add_node(num_cpus=1, object_store_memory=100 * 2**20)
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="warning")
    yield c
    ray.shutdown()
    c.shutdown()


def test_a_run_on_a_two_node_ray_cluster_is_the_serial_run(tmp_path: Path, cluster) -> None:
    run_suite(SPECS, "pce", 2, {}, tmp_path / "serial", 0, quiet=True, workers=1)
    run_suite(SPECS, "pce", 2, {}, tmp_path / "ray", 0, quiet=True, ray_address=cluster.address)
    assert _outcome(tmp_path / "ray" / "results.json") == _outcome(tmp_path / "serial" / "results.json")
    for trace in sorted((tmp_path / "serial" / "traces").glob("*.json")):
        assert _trace(tmp_path / "ray" / "traces" / trace.name) == _trace(trace), trace.name


def _ray_task_processes() -> list[int]:
    """The Ray worker processes playing an episode now (Ray titles them after the task)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if (proc / "cmdline").read_bytes().startswith(b"ray::_play_remote"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def test_a_ray_worker_that_dies_fails_its_episode_and_an_error_fails_only_its_own(tmp_path: Path, cluster) -> None:
    jobs = [Job(spec, RunSettings("rhp"), tmp_path / f"{spec.index}.json") for spec in SPECS[:3]]
    broken = replace(SPECS[3], params={})  # its scene cannot be made: the episode raises
    jobs.append(Job(broken, RunSettings("rhp"), tmp_path / "broken.json"))
    events: list = []
    killed: list[int] = []

    def kill_the_first_player() -> None:
        end = time.monotonic() + 60
        while not killed and time.monotonic() < end:
            if playing := _ray_task_processes():
                os.kill(playing[0], signal.SIGKILL)
                killed.append(playing[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_first_player)
    killer.start()
    run_jobs(jobs, 1, events.append, ray_address=cluster.address)
    killer.join()
    assert killed, "no Ray worker was seen playing an episode"
    failed = {e.job.name: e.reason for e in events if isinstance(e, Failed)}
    finished = [e.job.name for e in events if isinstance(e, Finished)]
    assert failed[broken.name] == "KeyError: 'seed'"
    died = [name for name, reason in failed.items() if reason.startswith("its Ray worker died")]
    assert len(died) == 1 and len(finished) == 2, (failed, finished)
    assert sorted([*died, *finished]) == sorted(j.name for j in jobs[:3])


@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_the_model_endpoints_rate_limit_holds_across_every_worker(tmp_path: Path, cluster, engine: str) -> None:
    arrivals: list[float] = []

    def answer(request: dict) -> str:
        arrivals.append(time.monotonic())
        return scripted_pce_model(request)

    per_minute = 240  # a request every 0.25 s for the whole team of workers (two workers unshared: twice that)
    with LoopbackOpenAIServer(answer) as server:
        params = {
            "backend": "hybrid",
            "hybrid_margin": 1.0,  # every decision asks the model
            "base_url": server.base_url,
            "requests_per_minute": per_minute,
        }
        where = {"ray_address": cluster.address} if engine == "ray" else {"workers": 2}
        results = run_suite(SPECS, "pce", 2, params, tmp_path, 0, quiet=True, **where)
    assert len(results) == len(SPECS) and sum(r.llm_calls for r in results) == len(arrivals) >= 10
    # the limit spaces the requests' sends; their arrivals here jitter by a connection's set-up
    span = arrivals[-1] - arrivals[0]
    assert span >= (len(arrivals) - 1) * 60 / per_minute * 0.9, "no faster than the limit for the whole run"


def test_a_run_on_ray_stopped_by_sigterm_saves_what_it_finished(tmp_path: Path, cluster) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "tdwmat-test", "--team", "pce", "--quiet"]
    proc = subprocess.Popen(
        [*cmd, "--episodes", "0-9", "--ray", cluster.address, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    results = out / "results.json"
    end = time.monotonic() + 180
    while not (results.exists() and json.loads(results.read_text())["episodes"]):
        assert time.monotonic() < end and proc.poll() is None, "no episode finished"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()[-2000:]  # as a local run (not Ray's handler)
    data = json.loads(results.read_text())
    assert data["stopped"] == "SIGTERM" and data["complete"] is False and data["episodes"]
