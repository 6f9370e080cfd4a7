"""Same seed ⇒ same trace; traces replay to their recorded final state; tampering is detected; scenes
survive a JSON round trip unchanged."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coteam.domain.scene_io import load_scene, save_scene, scene_from_dict, scene_to_dict
from coteam.domain.world import Placement, Relation, placement_from_json, placement_to_json
from coteam_harness.runner import run_episode
from coteam_harness.trace import ReplayMismatch, load_trace, replay
from coteam_sim.suites import fresh_episode, get_suite

WALL_TIME_FIELDS = ("wall_s", "decision_ms_mean", "decision_ms_median", "decision_ms_p95", "trace")
EPISODES = [("cwah-test", 3), ("tdwmat-test", 5)]
TEAMS = ("rhp", "random", "pce")


def _strip(trace: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(trace)
    for key in WALL_TIME_FIELDS:
        out["result"].pop(key, None)
    for decision in out["decisions"]:
        decision.pop("seconds")
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """rhp, random and pce traces (pce sends messages) for one episode of each benchmark, recorded twice."""
    out = tmp_path_factory.mktemp("traces")
    paths = {}
    for suite, index in EPISODES:
        spec = get_suite(suite).episodes()[index]
        for team in TEAMS:
            for run in ("a", "b"):
                p = out / f"{suite}-{team}-{run}.json"
                result = run_episode(spec.build(), team, n_agents=2, seed=7, trace_path=p, episode_name=spec.name)
                assert result.trace == str(p)
                paths[(f"{suite}:{team}", run)] = p
    return paths


CASES = [f"{suite}:{team}" for suite, _ in EPISODES for team in TEAMS]


@pytest.mark.parametrize("case", CASES)
def test_same_seed_gives_identical_trace(traces: dict, case: str) -> None:
    a, b = load_trace(traces[(case, "a")]), load_trace(traces[(case, "b")])
    assert a["result"]["wall_s"] >= 0
    assert _strip(a) == _strip(b)
    assert len(a["steps"]) > 0 and len(a["decisions"]) > 0


def test_different_seed_gives_different_trace(tmp_path: Path) -> None:
    spec = get_suite("cwah-test").episodes()[3]
    for seed in (7, 8):
        run_episode(spec.build(), "random", seed=seed, trace_path=tmp_path / f"{seed}.json")
    a, b = load_trace(tmp_path / "7.json"), load_trace(tmp_path / "8.json")
    assert a["steps"] != b["steps"]


_SUBPROCESS = """
import sys
from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite
for suite, index in ((\"cwah-test\", 3), (\"tdwmat-test\", 5)):
    spec = get_suite(suite).episodes()[index]
    run_episode(spec.build(), "rhp", seed=7, trace_path=f"{sys.argv[1]}/{suite}.json")
"""


def test_trace_is_independent_of_the_hash_seed(tmp_path: Path) -> None:
    """Fresh interpreters with different string-hash seeds produce the same traces (no set-order leaks)."""
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / hash_seed
        out.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run([sys.executable, "-c", _SUBPROCESS, str(out)], check=True, env=env, timeout=120)
        outs.append(out)
    for suite, _ in EPISODES:
        a, b = (load_trace(o / f"{suite}.json") for o in outs)
        assert _strip(a) == _strip(b)


@pytest.mark.parametrize("case", CASES)
def test_replay_ends_in_recorded_final_state(traces: dict, case: str) -> None:
    trace = load_trace(traces[(case, "a")])
    sim = replay(trace)
    assert json.loads(json.dumps(sim.world.to_snapshot())) == trace["final_state"]
    assert sim.steps == len(trace["steps"])
    result = trace["result"]
    done, total = sim.world.progress()
    assert done / total == pytest.approx(result["transport_rate"])
    if result["success"]:
        assert sim.clock == result["steps"]


def _tamper(trace: dict[str, Any], benchmark: str, late: bool) -> tuple[dict[str, Any], int]:
    """Change one successful movement action of alice (the first, or one in the second half of the episode)."""
    moving = "[walkto]" if benchmark == "cwah" else "[move_forward]"
    replacement = "[wait]" if benchmark == "cwah" else "[turn_left]"
    candidates = [
        k
        for k, rec in enumerate(trace["steps"])
        if rec["actions"].get("alice", "").startswith(moving) and "alice" not in rec["failures"]
    ]
    assert candidates
    k = candidates[-1] if late else candidates[0]
    tampered = copy.deepcopy(trace)
    tampered["steps"][k]["actions"]["alice"] = replacement
    return tampered, k


@pytest.mark.parametrize("late", [False, True], ids=["first-move", "late-move"])
@pytest.mark.parametrize("case", CASES)
def test_tampered_trace_raises_replay_mismatch(traces: dict, case: str, late: bool) -> None:
    trace = load_trace(traces[(case, "a")])
    tampered, k = _tamper(trace, trace["scene"]["benchmark"], late)
    with pytest.raises(ReplayMismatch, match=rf"step {tampered['steps'][k]['step']}\b"):
        replay(tampered)


def test_tampered_failure_record_raises(traces: dict) -> None:
    trace = load_trace(traces[("cwah-test:rhp", "a")])
    tampered = copy.deepcopy(trace)
    tampered["steps"][0]["failures"] = {"alice": "too far"}
    with pytest.raises(ReplayMismatch):
        replay(tampered)


def test_load_trace_rejects_other_json(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError):
        load_trace(p)


# --- scene JSON ------------------------------------------------------------------------------------------------
def _all_suite_scenes():
    for suite in ("cwah-test", "tdwmat-test"):
        for spec in get_suite(suite).episodes():
            yield spec.build()


def test_scene_round_trip_is_lossless_for_every_suite_scene(tmp_path: Path) -> None:
    n = 0
    for scene in _all_suite_scenes():
        d = scene_to_dict(scene)
        back = scene_from_dict(json.loads(json.dumps(d)))
        assert back == scene, scene.name
        assert scene_to_dict(back) == d
        # Tuples stay tuples (a list would still compare unequal in a frozen dataclass field).
        assert all(isinstance(p.position, tuple) for p in back.placements.values() if p.position is not None)
        path = tmp_path / f"{n}.json"
        save_scene(scene, path)
        assert load_scene(path) == scene
        n += 1
    assert n == 34


@pytest.mark.parametrize("benchmark", ["cwah", "tdwmat"])
def test_fresh_scene_round_trip_with_open_containers(benchmark: str) -> None:
    from coteam.domain.world import Benchmark

    scene = fresh_episode(Benchmark(benchmark), 123, 4).build()
    if scene.containers:
        scene = dataclasses.replace(scene, initially_open=frozenset({scene.containers[0].id}))
    assert scene_from_dict(json.loads(json.dumps(scene_to_dict(scene)))) == scene


def test_scene_from_dict_rejects_other_formats() -> None:
    d = scene_to_dict(get_suite("cwah-test").episodes()[0].build())
    d["format"] = "coteam-scene/0"
    with pytest.raises(ValueError):
        scene_from_dict(d)


coords = st.floats(min_value=-100, max_value=100, allow_nan=False, allow_infinity=False)
placements = st.one_of(
    st.builds(Placement.held, st.sampled_from(["alice", "bob", "carol"]), st.integers(0, 1)),
    st.builds(Placement, st.sampled_from([Relation.ON, Relation.IN]), st.integers(0, 10**6)),
    st.builds(lambda t, x, y: Placement(Relation.FLOOR, t, position=(x, y)), st.integers(1, 8), coords, coords),
)


@settings(max_examples=100, deadline=None)
@given(placements)
def test_placement_json_round_trip(p: Placement) -> None:
    assert placement_from_json(json.loads(json.dumps(placement_to_json(p)))) == p
