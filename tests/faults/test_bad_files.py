"""Bad scene, team and parameter files: one line naming the file and the problem, exit 2, before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from coteam.domain.scene_io import load_scene, save_scene
from coteam_ros.team_config import ConfigError, load_config
from coteam_sim.suites import get_suite

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scene_file(tmp_path: Path) -> Path:
    path = tmp_path / "scene.json"
    save_scene(get_suite("cwah-test").episodes()[0].build(), path)
    return path


def _corrupt(path: Path, how: str) -> None:
    text = path.read_text()
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
    elif how == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" + bytes(range(256)))
    elif how == "missing key":
        data = json.loads(text)
        del data["task"]
        path.write_text(json.dumps(data))
    elif how == "wrong format":
        path.write_text(json.dumps({**json.loads(text), "format": "something-else/2"}))
    elif how == "wrong type":
        path.write_text(json.dumps({**json.loads(text), "agent_starts": 7}))


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("truncated", "bad JSON at line"),
        ("binary", "not text"),
        ("missing key", "no 'task'"),
        ("wrong format", "format 'something-else/2'"),
        ("wrong type", "not iterable"),
    ],
)
def test_a_bad_scene_file_is_one_line_naming_it(scene_file: Path, how: str, problem: str) -> None:
    _corrupt(scene_file, how)
    with pytest.raises(ValueError) as err:
        load_scene(scene_file)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{scene_file}: not a coteam scene") and problem in message


def _team_yaml(tmp_path: Path, scene: Path) -> Path:
    doc = yaml.safe_load((ROOT / "config" / "team_sim.yaml").read_text())
    doc["world"]["scene"] = str(scene)
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_team_file_naming_a_bad_scene_fails_at_load_and_coteam_launch_exits_2(
    tmp_path: Path, scene_file: Path
) -> None:
    _corrupt(scene_file, "truncated")
    team = _team_yaml(tmp_path, scene_file)
    with pytest.raises(ConfigError, match=r"world\.scene.*bad JSON at line"):
        load_config(team)
    proc = subprocess.run(
        [sys.executable, "-m", "coteam.cli", "launch", str(team), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(scene_file) in lines[0] and "bad JSON" in lines[0], proc.stderr
    assert not (tmp_path / "out" / "results.json").exists()  # no node was started


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("alpha: [1, 2\nbeta: 3\n", "not valid YAML: expected ',' or ']', but got ':' at line 2 column 5"),
        (b"\xff\xfe\x00binary", "not a text file (invalid start byte at byte 0)"),
        ("- 1\n- 2\n", "expected a mapping of parameters"),
    ],
)
def test_a_bad_parameter_file_is_one_line_and_exit_2(tmp_path: Path, content: str | bytes, problem: str) -> None:
    params = tmp_path / "params.yaml"
    params.write_bytes(content if isinstance(content, bytes) else content.encode())
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "cwah-test", "--team", "pce", "--episodes", "0"]
    proc = subprocess.run(
        [*cmd, "--config", str(params), "--out", str(tmp_path / "out"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"coteam run: error: {params}: {problem}"]


def test_a_bad_set_value_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "coteam.cli", "run", "--suite", "cwah-test", "--team", "pce", "--episodes", "0"]
    proc = subprocess.run([*cmd, "--set", "lambda=[1,", "--quiet"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["coteam run: error: --set lambda: '[1,' is not a YAML value"]
