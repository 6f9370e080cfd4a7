"""The home's safety policy on ROS (team file ``safety:``): the planners never choose what it refuses, the executors
refuse it whoever asks, and an action it wants approved waits for a person's answer on ``/approve_action``.

* a lockstep team under a policy is step for step the in-process run under it (nothing forbidden handled);
* approvals answered by ``coteam approve --answer no`` are the in-process run whose every answer is no;
* a planner that does not know the policy (as a forged or buggy command would) asks for the forbidden grab: the
  executor refuses it before anything moves, and the refusal is counted.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ros_isolation import isolate_ros
from ros_team_run import RUN_TIMEOUT_S, comparable, write_config

rclpy = pytest.importorskip("rclpy")

from coteam.home.world_file import load_safety_policy  # noqa: E402
from coteam_harness.runner import run_episode  # noqa: E402
from coteam_harness.trace import load_trace  # noqa: E402
from coteam_ros.approval import ask_person  # noqa: E402
from coteam_ros.launcher import child_env, launch, plan, run  # noqa: E402
from coteam_ros.team_config import load_config  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart

SCENE = get_suite("cwah-test").episodes()[0].build()
LOCKSTEP = "suite: cwah-test, episode: 0, seed: 0, mode: lockstep"


def _team(tmp_path: Path, policy: str) -> Path:
    (tmp_path / "policy.yaml").write_text(f"format: coteam-safety/1\nsafety: {policy}\n")
    config = write_config(tmp_path / "team.yaml", LOCKSTEP)
    config.write_text(config.read_text() + "safety: policy.yaml\n")
    return config


def _handled(trace: dict, names: set[str]) -> list[str]:
    ids = {str(o.id) for o in (*SCENE.items, *SCENE.containers) if o.name in names}
    return [a for s in trace["steps"] for a in s["actions"].values() if set(a.split()[1:]) & ids and "walk" not in a]


def _stop(approver: subprocess.Popen) -> str:
    """Stop ``coteam approve`` as a person would (Ctrl-C) and return what it said. Killed if it has not stopped
    within 20 s (under the full suite's load it once sat on a signal: what it answered is what is checked here)."""
    approver.send_signal(signal.SIGINT)
    try:
        return approver.communicate(timeout=20)[0]
    except subprocess.TimeoutExpired:
        approver.kill()
        return approver.communicate()[0]


def _same_as_in_process(tmp_path: Path, config: Path, approve) -> dict:
    expected = run_episode(
        SCENE,
        "pce",
        safety=load_safety_policy(tmp_path / "policy.yaml"),
        approve=approve,
        trace_path=tmp_path / "in_process.json",
    )
    code, results = launch(config, tmp_path, out_dir=tmp_path / "ros", timeout=RUN_TIMEOUT_S)
    assert code == 0 and results is not None
    got = json.loads(results.read_text())["episodes"][0]
    for key in ("success", "steps", "transport_rate", "decisions", "safety_refusals"):
        assert got[key] == getattr(expected, key), key
    ours = comparable(load_trace(tmp_path / "ros" / "trace.json"))
    assert ours == comparable(load_trace(tmp_path / "in_process.json"))
    return got


def test_a_lockstep_team_under_a_policy_is_the_in_process_run_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    config = _team(tmp_path, "{never_touch: [wine, fridge], no_go: [bathroom]}")
    got = _same_as_in_process(tmp_path, config, None)
    assert not _handled(load_trace(tmp_path / "ros" / "trace.json"), {"wine", "fridge"})
    assert got["transport_rate"] < 1.0, "the wine is a goal item: the task cannot be finished, and is not"


def test_approvals_answered_no_by_coteam_approve_are_the_in_process_run_answered_no(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    config = _team(tmp_path, "{ask_before: [{verb: grab, object: apple}], approval_timeout_s: 20}")
    approver = subprocess.Popen(
        [sys.executable, "-m", "coteam.cli", "approve", "--answer", "no"],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        got = _same_as_in_process(tmp_path, config, lambda _question: False)
    finally:
        said = _stop(approver)
    assert got["safety_refusals"] > 0
    assert "may I grab apple?" in said and ": no" in said, said
    assert not _handled(load_trace(tmp_path / "ros" / "trace.json"), {"apple"})


def test_the_executor_refuses_a_forbidden_action_its_planner_asks_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    config = _team(tmp_path, "{never_touch: [wine]}")
    out = tmp_path / "out"
    out.mkdir()
    children = plan(load_config(config), tmp_path, results_path=out / "results.json")
    for child in children:  # the planners do not know the policy: they will want the wine
        if child.label.startswith("planner@"):
            params_file = Path(child.argv[child.argv.index("--params-file") + 1])
            params = yaml.safe_load(params_file.read_text())
            for section in params.values():
                section["ros__parameters"].pop("safety_path")
            params_file.write_text(yaml.safe_dump(params))
    assert run(children, timeout=RUN_TIMEOUT_S, env=child_env(), write=lambda _: None) == 0
    result = json.loads((out / "results.json").read_text())["episodes"][0]
    assert result["safety_refusals"] > 0
    trace = load_trace(out / "trace.json")
    assert not _handled(trace, {"wine"})
    said = "failed: refused by the safety policy: wine is never touched"
    assert any(d["previous"] and d["previous"][1] == said for d in trace["decisions"]), "the trace says why"


def test_a_person_answers_on_the_terminal_and_silence_is_no() -> None:
    read, write = os.pipe()
    with os.fdopen(read) as answers, os.fdopen(write, "w") as typed:
        typed.write("y\n")
        typed.flush()
        assert ask_person("[alice] may I grab apple?", 5.0, answers, io.StringIO())
        shown = io.StringIO()
        assert not ask_person("[alice] may I grab wine?", 0.2, answers, shown)
        assert shown.getvalue().endswith("no answer: no\n")


def test_a_team_file_whose_policy_cannot_be_read_is_refused_in_one_line(tmp_path: Path) -> None:
    from coteam_ros.team_config import ConfigError

    config = _team(tmp_path, "{never_touch: wine}")
    with pytest.raises(ConfigError, match="safety") as exc:
        load_config(config)
    assert "\n" not in str(exc.value) and "never_touch" in str(exc.value)


def test_a_world_files_policy_goes_to_every_node_and_a_second_policy_is_refused(tmp_path: Path) -> None:
    """On hardware the home's policy may be the world file's ``safety:`` section: the planners and executors get the
    world file as their ``safety_path``. A team file naming a policy of its own as well is refused in one line."""
    from coteam_ros.node_graph import node_list
    from coteam_ros.team_config import ConfigError

    config_dir = Path(__file__).resolve().parents[2] / "config"
    for name in ("team_twin.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(config_dir / name, tmp_path / name)
    world = yaml.safe_load((config_dir / "flat.world.yaml").read_text())
    (tmp_path / "flat.world.yaml").write_text(yaml.safe_dump({**world, "safety": {"no_go": ["bedroom"]}}))
    cfg = load_config(tmp_path / "team_twin.yaml")
    assert cfg.safety_path == str(tmp_path / "flat.world.yaml")
    given = {(s.name, s.namespace): s.parameters.get("safety_path") for s in node_list(cfg, tmp_path / "scene.json")}
    assert {k: v for k, v in given.items() if k[0] in ("planner", "executor")} == {
        (node, f"/{robot}"): cfg.safety_path for node in ("planner", "executor") for robot in ("robot1", "robot2")
    }
    (tmp_path / "policy.yaml").write_text("format: coteam-safety/1\nsafety: {never_touch: [wine]}\n")
    team = tmp_path / "team_twin.yaml"
    team.write_text(team.read_text() + "safety: policy.yaml\n")
    with pytest.raises(ConfigError, match=r"flat\.world\.yaml has its own safety: section: keep one policy") as exc:
        load_config(team)
    assert "\n" not in str(exc.value)
