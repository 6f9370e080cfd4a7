"""The local model on the robot: `coteam llm serve`, and every LLM method answered by a real model (the packaged
Gemma 3 270M behind llama.cpp's OpenAI-compatible server; the local-llm extra, which `make test` installs)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

from coteam.llm.local import LocalLLMError, LocalLLMServer, LocalServerSettings, require_local_llm
from coteam.registry import make_team
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
from local_llm import AGENTS, DATA, HORIZON, METHODS, llm_params, short_episode  # noqa: E402

COTEAM = Path(sys.executable).with_name("coteam")


def test_serve_prints_the_endpoint_and_stops_cleanly_on_sigterm():
    proc = subprocess.Popen([str(COTEAM), "llm", "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("export OPENAI_BASE_URL=http://127.0.0.1:"), first
        url = first.split("=", 1)[1]
        assert proc.stdout.readline().strip() == "export COTEAM_LLM_MODEL=gemma-3-270m"
        with urllib.request.urlopen(url + "/models", timeout=10) as r:
            assert json.load(r)["data"][0]["id"] == "gemma-3-270m"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "# stopped" in out
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/models", timeout=2)  # the server is gone with it


def test_a_missing_model_file_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run(
        [str(COTEAM), "llm", "serve", "--model", str(tmp_path / "none.gguf")], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"coteam llm: error: model file {tmp_path / 'none.gguf'} does not exist"


def test_a_corrupt_model_file_is_reported_with_the_servers_words(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(LocalLLMError, match="exited at start-up"):
        LocalLLMServer(LocalServerSettings(model=str(bad))).start(timeout_s=60)


def test_without_the_extra_the_error_says_how_to_install_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(LocalLLMError, match=r"pip install '\.\[local-llm\]'"):
        require_local_llm()


def test_settings_are_validated():
    with pytest.raises(ValueError, match="context"):
        LocalServerSettings(context=10)
    with pytest.raises(ValueError, match="threads"):
        LocalServerSettings(threads=0)


# reveca asks a relevance letter for every object it meets, mindmap writes a whole mind map every decision and evocf
# asks three roles per round: minutes of a one-thread model that slow the ROS tests beside it; their real-model
# answers are the recorded ones replayed below
LIVE = tuple(m for m in METHODS if m not in ("reveca", "mindmap", "evocf"))


def test_every_llm_method_is_answered_by_the_real_model(tmp_path, monkeypatch):
    """The opening decisions of each LLM method through the real server, answers held to their schemas."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    asked: dict[str, dict[str, int]] = {}
    pce_fallbacks: list[str] = []  # why each PCE answer that fell back did
    # One thread: the other test worker shares the 2 cores, and an oversubscribed llama.cpp slows down many-fold.
    with LocalLLMServer(LocalServerSettings(threads=1)) as server:
        for method in LIVE:
            params = llm_params(server.base_url, server.model_name, "auto")
            trace = tmp_path / f"{method}.json"
            result = run_episode(short_episode(2), make_team(method, params), n_agents=AGENTS, trace_path=trace)
            assert result.llm_calls > 0 and result.tokens > 0
            sources: dict[str, int] = defaultdict(int)
            for d in load_trace(trace)["decisions"]:
                for role, entry in d["rationale"]["roles"].items():
                    assert entry["calls"] >= 1, (role, entry)  # every role went to the model
                    assert entry["prompt"] and entry["source"] in ("llm", "fallback")
                    sources[entry["source"]] += 1
                    if method == "pce" and entry["source"] == "fallback":
                        pce_fallbacks.append(entry["error"])
            asked[method] = dict(sources)
    # PCE's roles are held to the available actions, the tree's depth and the leaves to score: every answer has the
    # schema's form. The only way one falls back is the token limit cutting a rambling free-text field short (the
    # 270M model's output, and so how often that happens, differs between CPUs).
    assert sum(asked["pce"].values()) >= 6 and asked["pce"]["llm"] > len(pce_fallbacks)
    assert all("Unterminated string" in error for error in pce_fallbacks), pce_fallbacks
    for method in LIVE:
        assert asked[method].get("llm", 0) > 0, asked


def test_the_recorded_real_model_runs_replay_offline():
    """The constrained runs of bench/local_llm.py, replayed from their transcripts: the same results."""
    recorded = json.loads((DATA / "results.json").read_text())
    assert recorded["horizon"] == HORIZON
    for method in METHODS:
        params = {"backend": "llm", "replay": str(DATA / f"{method}.jsonl")}
        result = run_episode(short_episode(), make_team(method, params), n_agents=AGENTS)
        got = {k: getattr(result, k) for k in ("steps", "llm_calls", "tokens", "llm_fallbacks")}
        assert got == recorded[method], method


def test_the_recorded_full_real_model_episodes_replay_offline(tmp_path):
    """bench/local_llm_episodes.py's full episodes, replayed from their transcripts: the same results. An episode
    that a later change of shared behaviour made diverge (``replay_prefix`` in its row, until it is re-recorded) is
    replayed for the steps that still match: every request of those steps finds its recorded answer."""
    from local_llm_episodes import EPISODES, RESULT_FIELDS, episode, replay_params

    recorded = json.loads((EPISODES / "results.json").read_text())
    for method, row in recorded["runs"].items():
        params = replay_params(method, tmp_path / f"{method}.jsonl")
        if "replay_prefix" not in row:
            result = run_episode(episode(), make_team(method, params), n_agents=AGENTS)
            assert {k: getattr(result, k) for k in RESULT_FIELDS} == recorded[method], method
            continue
        trace = tmp_path / f"{method}-trace.json"
        run_episode(episode(), make_team(method, params), n_agents=AGENTS, trace_path=trace)
        prefix = [d for d in load_trace(trace)["decisions"] if d["step"] < row["replay_prefix"]["steps"]]
        missing = [
            (d["step"], role)
            for d in prefix
            for role, entry in d["rationale"].get("roles", {}).items()
            if "no recorded answer" in (entry.get("error") or "")
        ]
        assert prefix and not missing, (method, missing[:3])


def test_an_episode_played_in_sittings_is_timed_per_model_token(tmp_path):
    """bench/local_llm_episodes.py: a stopped sitting is closed at its last answer (a line it left cut short does not
    count), a replayed one asks nothing; one sitting is timed by the clock, several per model token."""
    from local_llm_episodes import close_segment, episode_wall, open_segment

    segments, transcript = tmp_path / "segments.json", tmp_path / "t.jsonl"
    calls = [(True, 500), (False, 300), (False, 100)]  # (answered from the cache, tokens)
    transcript.write_text(
        "".join(
            json.dumps({"key": "k", "model": "m", "text": "", "cached": c, "usage": {"total_tokens": t}}) + "\n"
            for c, t in calls
        )
        + '{"cach'
    )
    open_segment(segments)
    start = json.loads(segments.read_text())[0]["started"]
    close_segment(segments, transcript, start + 40.0)  # stopped: its last answer came 40 s in
    close_segment(segments, transcript, start + 99.0)  # already closed: unchanged
    assert episode_wall(segments, 900) == 40.0  # one sitting: its own time, whatever the cache answered
    open_segment(segments)
    close_segment(segments, tmp_path / "none.jsonl", start + 60.0)  # everything from the cache
    first, second = json.loads(segments.read_text())
    assert (first["live_calls"], first["live_tokens"], first["seconds"]) == (2, 400, 40.0)
    assert second["live_calls"] == 0
    assert episode_wall(segments, 900) == 90.0  # 0.1 s per token the model handled
    unmeasured = tmp_path / "unmeasured.json"
    unmeasured.write_text(json.dumps([{"started": 0, "live_calls": 0, "live_tokens": 0, "seconds": 5}] * 2))
    assert episode_wall(unmeasured, 900) is None


def test_coteam_launch_serves_one_local_model_for_the_team_and_stops_it():
    from coteam_ros.launcher import local_models
    from coteam_ros.team_config import parse_config

    doc = {
        "world": {"suite": "cwah-test", "episode": 0},
        "team": {"method": "pce", "backend": "llm", "llm": {"local": True, "share": "machine"}},
        "robots": [{"name": "alice"}, {"name": "bob"}],
    }
    with local_models(parse_config(doc, "inline")) as endpoints:
        assert endpoints["alice"] == endpoints["bob"]
        assert endpoints["alice"]["model"] == "gemma-3-270m"
        url = endpoints["alice"]["base_url"]
        with urllib.request.urlopen(url + "/models", timeout=10) as r:
            assert r.status == 200
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/models", timeout=2)
