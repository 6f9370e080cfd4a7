"""Handling files (coteam.domain.handling_file): a home's handling limits as data, applied by the simulator to any suite
(`coteam run --handling FILE`) and told to nobody; a malformed file is one line naming the file."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from coteam.agent.reasoning import EpisodeInfo
from coteam.domain.handling_file import HandlingFileError, limits_to_dict, load_handling
from coteam.domain.world import HandlingLimits
from coteam_sim.suites import get_suite

COTEAM = Path(sys.executable).with_name("coteam")
TERSE = """format: coteam-handling/1
constraints:
  - when: {verb: grab, item: [apple, cupcake], robot: bob}
    fails: grasp failed
  - when: {verb: grab, place: fridge, hands_in_use: 2}
    fails: grasp failed
"""


def test_a_file_states_constraints_over_the_actions_facts(tmp_path: Path) -> None:
    path = tmp_path / "home.yaml"
    path.write_text(TERSE)
    limits = load_handling(path)
    assert limits.failure("grab", "bob", "apple", "coffeetable", []) == "grasp failed"
    assert limits.failure("grab", "alice", "apple", "coffeetable", []) == ""  # not alice
    assert limits.failure("grab", "alice", "milk", "fridge", ["cup", "plate"]) == "grasp failed"
    assert limits.failure("grab", "alice", "milk", "fridge", ["cup"]) == ""  # one hand in use
    again = tmp_path / "again.yaml"
    again.write_text(json.dumps(limits_to_dict(limits)))
    assert load_handling(again) == limits


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("x: [", "not valid YAML: expected the node content, but found '<stream end>' at line 1 column 5"),
        ("format: coteam-handling/2\nconstraints: []\n", "format: format 'coteam-handling/2', expected"),
        ("format: coteam-handling/1\n", "constraints: required"),
        (
            "format: coteam-handling/1\nconstraints: [{when: {verb: grab, colour: red}, fails: x}]\n",
            "constraints[0].when: unknown fact 'colour'; facts are verb, item, place, robot, held, hands_in_use",
        ),
        (
            "format: coteam-handling/1\nconstraints: [{when: {verb: open}, fails: x}]\n",
            "constraints[0].when: verb 'open' is not checked; handled verbs: grab",
        ),
        ("format: coteam-handling/1\nconstraints: [{when: {hands_in_use: 3}, fails: x}]\n", "hands_in_use '3'"),
        ("format: coteam-handling/1\nconstraints: [{when: {}, fails: x}]\n", "constraints[0].when"),
        ("format: coteam-handling/1\nconstraints: [{when: {item: cup}, fails: ''}]\n", "constraints[0].fails"),
        ("format: coteam-handling/1\nconstraints: [{when: {item: [[cup]]}, fails: x}]\n", "give a word or a list"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(HandlingFileError) as err:
        load_handling(path)
    assert str(err.value).startswith(f"{path}: ") and said in str(err.value) and "\n" not in str(err.value)


def test_coteam_run_applies_a_handling_file_to_a_plain_suite_and_refuses_a_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "home.yaml"
    path.write_text(TERSE)
    run = [str(COTEAM), "run", "--suite", "cwah-test", "--team", "pce", "--episodes", "1", "--quiet"]
    done = subprocess.run([*run, "--handling", str(path), "--out", str(tmp_path / "out")], capture_output=True)
    assert done.returncode == 0, done.stderr
    trace = json.loads((tmp_path / "out" / "traces" / "cwah-test-001.json").read_text())
    failed = {(o["agent"], o["reason"]) for o in trace["outcomes"] if not o["success"]}
    assert ("bob", "grasp failed") in failed and ("alice", "grasp failed") not in failed
    (tmp_path / "bad.yaml").write_text("format: coteam-handling/1\nconstraints: [{when: {size: big}, fails: x}]\n")
    bad = subprocess.run([*run, "--handling", str(tmp_path / "bad.yaml")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown fact 'size'" in bad.stderr


def test_nobody_is_told_the_limits() -> None:
    """What a robot's method gets at reset says nothing of the scene's handling limits."""
    scene = get_suite("cwah-strict").episodes(seed=101, count=1)[0].build()
    info = EpisodeInfo.for_scene(scene, ("alice", "bob"), 0)
    assert scene.handling.constraints
    assert not any(isinstance(getattr(info, f.name), HandlingLimits) for f in dataclasses.fields(info))


def test_the_home_of_our_own_making_fails_its_grasps_by_the_facts_not_the_reason() -> None:
    """bench/handling/soft-grippers.yaml (EvoCF's learning figures): three limits, one terse reason; which one holds
    depends only on the facts of the grasp."""
    limits = load_handling(Path(__file__).resolve().parents[2] / "bench" / "handling" / "soft-grippers.yaml")
    assert {c.fails for c in limits.constraints} == {"grasp failed"}
    assert limits.failure("grab", "alice", "cupcake", "kitchentable", ()) == "grasp failed"
    assert limits.failure("grab", "bob", "cupcake", "kitchentable", ()) == ""
    assert limits.failure("grab", "bob", "juice", "fridge", ("apple",)) == "grasp failed"
    assert limits.failure("grab", "bob", "juice", "fridge", ()) == ""
    assert limits.failure("grab", "bob", "fork", "", ("plate",)) == "grasp failed"
