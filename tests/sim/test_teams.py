"""Team-level sanity on the fixed suites, and the ``coteam run`` command end to end."""

from __future__ import annotations

import functools
import json
import statistics
from pathlib import Path

import pytest

from coteam.cli import main
from coteam.registry import method_names
from coteam_harness.results import EpisodeResult
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite

pytestmark = pytest.mark.slow

TDW_SUBSET = tuple(range(0, 24, 3))  # both floor plans, every layout, food/stuff, low/high


@functools.cache
def results(suite: str, team: str, n_agents: int, indices: tuple[int, ...] | None = None) -> list[EpisodeResult]:
    specs = get_suite(suite).episodes()
    chosen = specs if indices is None else [specs[i] for i in indices]
    out = []
    for spec in chosen:
        r = run_episode(spec.build(), team, n_agents=n_agents, seed=0, episode_name=spec.name)
        assert r.episode == spec.name and r.team == team and r.agents == n_agents
        assert 0.0 <= r.transport_rate <= 1.0
        assert r.steps <= spec.build().task.horizon
        out.append(r)
    return out


def mean_steps(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.steps for r in rs)


def mean_rate(rs: list[EpisodeResult]) -> float:
    return statistics.fmean(r.transport_rate for r in rs)


def test_registered_methods_include_the_baselines() -> None:
    assert {"oracle", "random", "rhp", "mhp", "pce", "coela"} <= set(method_names())


@pytest.mark.parametrize("team", method_names())
def test_oracle_is_fastest_on_cwah(team: str) -> None:
    oracle = results("cwah-test", "oracle", 2)
    other = results("cwah-test", team, 2)
    assert len(other) == 10
    assert mean_steps(oracle) <= mean_steps(other), (
        f"oracle {mean_steps(oracle):.1f} steps vs {team} {mean_steps(other):.1f}"
    )


def test_oracle_solves_every_cwah_episode() -> None:
    rs = results("cwah-test", "oracle", 2)
    assert all(r.success and r.transport_rate == 1.0 for r in rs), [(r.episode, r.steps) for r in rs]
    for r in rs:
        assert r.steps < 250 and r.messages == 0 and r.tokens == 0


def test_oracle_transports_more_than_rhp_on_tdwmat() -> None:
    oracle = results("tdwmat-test", "oracle", 2, TDW_SUBSET)
    rhp = results("tdwmat-test", "rhp", 2, TDW_SUBSET)
    assert len(oracle) == len(rhp) == 8
    assert mean_rate(oracle) >= mean_rate(rhp), f"oracle {mean_rate(oracle):.3f} vs rhp {mean_rate(rhp):.3f}"
    for r in oracle + rhp:
        assert r.food_rate is not None or r.stuff_rate is not None
        assert (r.food_rate if r.food_rate is not None else r.stuff_rate) == r.transport_rate


def test_random_is_not_faster_than_rhp_on_cwah() -> None:
    assert mean_steps(results("cwah-test", "random", 2)) >= mean_steps(results("cwah-test", "rhp", 2))


def test_two_rhp_agents_are_faster_than_one() -> None:
    one, two = results("cwah-test", "rhp", 1), results("cwah-test", "rhp", 2)
    assert mean_steps(one) > mean_steps(two), f"1 agent {mean_steps(one):.1f} vs 2 agents {mean_steps(two):.1f}"
    assert all(r.messages == 0 for r in one), "a lone agent has nobody to talk to"


def test_failed_episode_counts_the_horizon() -> None:
    for r in results("tdwmat-test", "rhp", 2, TDW_SUBSET) + results("cwah-test", "random", 2):
        horizon = 250 if r.benchmark == "cwah" else 3000
        if not r.success:
            assert r.steps == horizon and r.transport_rate < 1.0


# --- CLI -------------------------------------------------------------------------------------------------------
EPISODE_KEYS = {"steps", "transport_rate", "messages", "message_chars", "tokens"}


@pytest.mark.parametrize(
    ("suite", "team", "episodes", "expected"),
    [
        ("cwah-test", "rhp", "0-1", [0, 1]),
        ("cwah-test", "random", "3,5", [3, 5]),
        ("tdwmat-test", "oracle", "7", [7]),
    ],
)
def test_cli_run_writes_results_and_traces(
    tmp_path: Path, suite: str, team: str, episodes: str, expected: list[int]
) -> None:
    out = tmp_path / "run"
    rc = main(["run", "--suite", suite, "--team", team, "--episodes", episodes, "--out", str(out), "--quiet"])
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["team"] == team and data["meta"]["agents"] == 2
    eps = data["episodes"]
    assert [e["episode"] for e in eps] == [f"{suite}/{i}" for i in expected]
    assert data["summary"]["episodes"] == len(expected)
    traces = sorted((out / "traces").glob("*.json"))
    assert len(traces) == len(eps)
    for e in eps:
        assert set(e) >= EPISODE_KEYS, EPISODE_KEYS - set(e)
        assert isinstance(e["steps"], int) and 0 < e["steps"] <= (250 if suite == "cwah-test" else 3000)
        assert 0.0 <= e["transport_rate"] <= 1.0
        assert 0 <= e["message_chars"] <= 500 * e["messages"]
        assert e["tokens"] == 0
        trace = load_trace(e["trace"])
        assert Path(e["trace"]).parent == out / "traces"
        assert trace["team"] == team
        assert trace["result"]["steps"] == e["steps"]
    assert statistics.fmean(e["steps"] for e in eps) == pytest.approx(data["summary"]["steps"])


def test_an_earlier_run_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A named --out holding results is refused without --resume; the default folder moves on to the next free one."""
    out = tmp_path / "run"
    argv = ["run", "--suite", "cwah-test", "--team", "oracle", "--episodes", "0", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    before = (out / "results.json").read_text()
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds an earlier run's results: add --resume" in err[0]
    assert (out / "results.json").read_text() == before
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0 and main(argv) == 0
    assert "writing to runs/cwah-test-oracle-x2-2" in capsys.readouterr().out
    assert (tmp_path / "runs" / "cwah-test-oracle-x2" / "results.json").exists()
    assert (tmp_path / "runs" / "cwah-test-oracle-x2-2" / "results.json").exists()


def test_coteam_demo_runs_the_team_of_the_ros_demo() -> None:
    import yaml

    from coteam_harness.cli import DEMO_TEAM

    ros_demo = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "team_sim.yaml").read_text())
    assert ros_demo["team"]["method"] == DEMO_TEAM and ros_demo["team"]["backend"] == "symbolic"
    assert ros_demo["world"]["suite"] in ("cwah-test", "tdwmat-test") and ros_demo["world"]["episode"] == 0


def test_cli_unknown_team_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    rc = main(
        ["run", "--suite", "cwah-test", "--team", "no_such_team", "--episodes", "0", "--out", str(out), "--quiet"]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert "unknown method 'no_such_team'" in err
    assert "rhp" in err and "oracle" in err, "the message lists the known methods"
    assert not (out / "results.json").exists()


@pytest.mark.parametrize("episodes", ["0-99", "10", "5-2", "abc", "1-x", "-1", "3-", ","])
def test_cli_bad_episode_range_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], episodes: str) -> None:
    out = tmp_path / "run"
    rc = main(["run", "--suite", "cwah-test", "--team", "rhp", f"--episodes={episodes}", "--out", str(out), "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("coteam run: error:")
    assert "episode" in err.lower(), f"unclear message for --episodes={episodes!r}: {err.strip()}"
    assert not (out / "results.json").exists()


def test_cli_a_model_endpoint_it_cannot_use_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    argv = ["run", "--suite", "cwah-test", "--team", "pce", "--backend", "llm", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("coteam run: error: no API key for the default OpenAI endpoint"), err


def test_cli_bad_agent_count_and_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--suite", "cwah-test", "--agents", "0", "--out", str(tmp_path), "--quiet"]) == 2
    assert "--agents" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["run", "--suite", "no-such-suite", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "no-such-suite" in capsys.readouterr().err
