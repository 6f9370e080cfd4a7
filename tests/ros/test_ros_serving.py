"""A serving team against the twin: `coteam launch config/team_twin.yaml --serve`, and people's tasks given while it
runs with `coteam task` -- one in words, one as a goal line, one canceled while it runs (Ctrl-C of the person following
it), one while it waits (`coteam task --cancel`) -- and a person's word on where a thing is (`coteam tell`). The tasks
run in the order given, the done ones are done in the twin's truth, the canceled one's robots stop, and what the robots
learnt of the home in one task spares them a search in the next. Between tasks each robot walks to the room its world
file names for it to rest in (config/flat.world.yaml: robot1 the kitchen, robot2 the living room)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ros_isolation import isolate_ros

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart

pytest.importorskip("rclpy")

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
TIMEOUT_S = 480


def _coteam(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coteam.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
    )


def _wait_for(path: Path, text: str, launcher: subprocess.Popen, deadline: float) -> None:
    """Until the launch's log (``path``) shows ``text``."""
    while text not in path.read_text():
        assert launcher.poll() is None, path.read_text()[-4000:]
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{path.read_text()[-4000:]}"
        time.sleep(0.5)


def _placed(snapshot: dict, scene, relation: str, item: str, target: str) -> int:
    """How many ``item``s the twin's final state has ``relation`` ``target``."""
    names = scene.names()
    target_id = next(i for i, n in names.items() if n == target)
    return sum(
        1
        for i, p in snapshot["placements"].items()
        if names.get(int(i)) == item and p["relation"] == relation and p["target"] == target_id
    )


def test_a_serving_team_takes_tasks_in_words_and_goals_one_after_another_and_a_canceled_one_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam.home.world_file import load_world

    isolate_ros(tmp_path, monkeypatch)
    for name in ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(CONFIG / name, tmp_path / name)
    team = yaml.safe_load((tmp_path / "team_twin.yaml").read_text())
    team["serve"] = {"first_task": False}  # the file's own task is not queued: only what people ask
    (tmp_path / "team_twin.yaml").write_text(yaml.safe_dump(team))
    out, log = tmp_path / "run", tmp_path / "launch.log"
    deadline = time.monotonic() + TIMEOUT_S
    with log.open("w") as sink:
        argv = [sys.executable, "-m", "coteam.cli", "launch", str(tmp_path / "team_twin.yaml"), "--out", str(out)]
        launcher = subprocess.Popen([*argv, "--serve"], stdout=sink, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
        try:
            _wait_for(log, "task desk for", launcher, deadline)
            told = _coteam(
                "tell", str(tmp_path / "team_twin.yaml"), "the toothbrush is in the bathroom cabinet", cwd=tmp_path
            )
            plates = _coteam("task", "please put the plates on the bed", cwd=tmp_path)  # into the bedroom ...
            _wait_for(log, "task-1 starts", launcher, deadline)
            cupcake = _coteam("task", "--goal", "in(cupcake, fridge): 1", cwd=tmp_path)  # ... where the cupcake is
            _wait_for(log, "task-2: 'in(cupcake, fridge): 1'", launcher, deadline)  # queued second
            toothbrush = _coteam("task", "put the toothbrush in the kitchen cabinet", cwd=tmp_path)
            _wait_for(log, "task-3: 'put the toothbrush", launcher, deadline)
            apples = _coteam("task", "put the apples in the fridge", cwd=tmp_path)
            _wait_for(log, "task-4: 'put the apples", launcher, deadline)
            status = _coteam("task", "--status", cwd=tmp_path).communicate(timeout=60)[0]
            waiting = _coteam("task", "--cancel", "task-4", cwd=tmp_path)  # canceled while it waits
            _wait_for(log, "robot1 takes task-3", launcher, deadline)
            _wait_for(log, "robot2 takes task-3", launcher, deadline)
            time.sleep(1.0)  # the robots are on their way
            toothbrush.send_signal(signal.SIGINT)  # Ctrl-C of the person following it: canceled while it runs
            clients = {"plates": plates, "cupcake": cupcake, "toothbrush": toothbrush, "apples": apples}
            clients.update(cancel=waiting, tell=told)
            said = {n: p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0] for n, p in clients.items()}
            codes = {n: p.returncode for n, p in clients.items()}
            _wait_for(log, "task-3 stopped by the task node", launcher, deadline)
            _wait_for(log, "robot1 rests in the kitchen", launcher, deadline)
            _wait_for(log, "robot2 rests in the livingroom", launcher, deadline)
            time.sleep(2.0)
        finally:
            launcher.send_signal(signal.SIGINT)
            try:
                launcher.wait(timeout=90)
            except subprocess.TimeoutExpired:
                launcher.kill()
    text = log.read_text()
    assert codes == {"plates": 0, "cupcake": 0, "toothbrush": 6, "apples": 6, "cancel": 0, "tell": 0}, (
        said,
        text[-4000:],
    )
    # a person's word, signed with the operator's key, reached both robots' memories
    assert text.count("a person says toothbrush in or on bathroomcabinet (a hint for my search)") == 2, said["tell"]
    assert "on(plate, bed): 2" in said["plates"] and "task-3: canceled" in said["toothbrush"]
    assert "task-4: canceled" in said["apples"]
    assert all(t in status for t in ("task-1", "task-2", "task-3", "task-4", "running", "waiting")), status
    records = sorted(
        (json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()), key=lambda r: r["id"]
    )
    assert [(r["id"], r["outcome"]) for r in records] == [
        ("task-1", "done"),
        ("task-2", "done"),
        ("task-3", "canceled"),
        ("task-4", "canceled"),
    ]
    assert records[0]["read_by"] == "symbolic" and records[1]["read_by"] == "goal"
    assert records[0]["started_s"] < records[1]["started_s"] < records[2]["started_s"]  # the order they were given
    # the robots learnt where the cupcake is while they put the plates on the bed: a robot goes straight for it, with
    # no search first (a fresh team must look for it: bench/serving.py measures both)
    started = sorted((t, action) for robot in records[1]["work"].values() for t, action in robot["actions"])
    fetched = next(t for t, action in started if action.startswith("[gograb] <cupcake>"))
    assert fetched <= 5.0 and not any("bedroom" in action for _, action in started), started
    # the twin's truth: what really happened in the simulated home
    final = json.loads((out / "twin_trace.json").read_text())["final_state"]
    home = load_world(tmp_path / "flat.world.yaml").scene
    assert _placed(final, home, "on", "plate", "bed") == 2
    assert _placed(final, home, "in", "cupcake", "fridge") == 1
    assert _placed(final, home, "in", "toothbrush", "kitchencabinet") == 0
    assert text.count("task-3 stopped by the task node") == 2  # both robots stopped, then walked to rest
    rooms = [home.floorplan.room_at(agent["position"]) for agent in final["agents"].values()]  # robot1's first
    assert [room.name if room else None for room in rooms] == ["kitchen", "livingroom"]
