"""The hardware configuration of the robots' nodes, end to end, against the twin (simulated robots offering a real
robot's interfaces): `coteam launch config/team_twin.yaml` in the example flat. The team ends the task by itself
when its map shows the goal met; the twin's own account (what really happened in the simulated home) agrees."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from ros_isolation import isolate_ros
from ros_team_run import assert_never_a_third_identical_failure

pytestmark = pytest.mark.team  # starts a team of ROS 2 processes: `make test` runs these apart

pytest.importorskip("rclpy")

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
TIMEOUT_S = 420  # the slow robots (0.26 m/s) take up to 2 min alone, more under a loaded machine
TOP_SPEED_MPS = 1.35  # the twin's robots without a speed limit: a C-WAH walk step (0.27 m) a step, 5 steps a second
SETTLE_STEPS = 25  # twin steps (5 s at 5 Hz): news of a claim, and the next status of the robot that gives way (a
# loaded machine delays both by seconds)


def _team_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edit: dict | None = None,
    interrupt_once: tuple[str, ...] = (),
    world_edit: dict | None = None,
) -> tuple[subprocess.CompletedProcess, Path]:
    """``coteam launch`` of the twin team (``edit`` changes its file, ``world_edit`` the world file), stopped by
    Ctrl-C once its log has shown every line of ``interrupt_once``, if given."""
    isolate_ros(tmp_path, monkeypatch)
    for name in ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(CONFIG / name, tmp_path / name)
    for name, changes in (("team_twin.yaml", edit), ("flat.world.yaml", world_edit)):
        if changes:
            data = yaml.safe_load((tmp_path / name).read_text())
            (tmp_path / name).write_text(yaml.safe_dump({**data, **changes}))
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "coteam.cli", "launch", str(tmp_path / "team_twin.yaml"), "--out", str(out)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path) as launcher:
        try:
            if interrupt_once:
                stdout = _read_until(launcher, interrupt_once)
                launcher.send_signal(signal.SIGINT)
                rest, stderr = launcher.communicate(timeout=TIMEOUT_S)
                stdout += rest
            else:
                stdout, stderr = launcher.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:  # stop it as Ctrl-C would, so that it stops its nodes (no orphans)
            launcher.send_signal(signal.SIGTERM)
            stdout, stderr = launcher.communicate(timeout=60)
            pytest.fail(f"the run did not end within {TIMEOUT_S} s:\n{(stdout + stderr)[-4000:]}")
    return subprocess.CompletedProcess(argv, launcher.returncode, stdout, stderr), out


def _finished_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: dict) -> tuple[dict, Path, str]:
    """A twin run (``edit`` to the team file) that must end with the goal met, as the twin's truth confirms: the
    twin's results, the run's folder and its log."""
    proc, out = _team_run(tmp_path, monkeypatch, edit)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    twin = json.loads((out / "twin.json").read_text())
    (truth,) = twin["episodes"]
    assert truth["success"], truth
    return twin, out, log


def _read_until(launcher: subprocess.Popen, lines: tuple[str, ...]) -> str:
    """The launch's output up to the first time every one of ``lines`` has shown (within ``TIMEOUT_S``)."""
    assert launcher.stdout is not None
    seen: list[str] = []
    with ThreadPoolExecutor(1) as reader:  # a read that never returns must not hang the test
        deadline = time.monotonic() + TIMEOUT_S
        while not all(any(want in line for line in seen) for want in lines):
            line = reader.submit(launcher.stdout.readline).result(timeout=max(0.0, deadline - time.monotonic()))
            assert line, "the launch ended before: " + "".join(seen)[-3000:]
            seen.append(line)
    return "".join(seen)


def test_the_hardware_nodes_finish_the_task_against_the_twin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    proc, out = _team_run(tmp_path, monkeypatch)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "every robot ended its task: the run ends" in log

    # the team's own account: a robot's map showed the goal met, it said so, and its teammate stopped on its word
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is True, results.get("stopped")
    (episode,) = results["episodes"]
    assert episode["success"] and episode["transport_rate"] == 1.0 and episode["episode"] == "example-flat"
    reports = {r: json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")}
    endings = sorted(r["ended"] for r in reports.values())
    assert endings[0] == "goal met on my map" or endings == ["goal met on my map"] * 2, endings
    assert all(r["goal_met"] for r in reports.values())
    assert episode["messages"] >= 1  # at least the word that the goal is met

    # what really happened: every goal item is where the task wants it, and the robots used Nav2 and their arms
    twin = json.loads((out / "twin.json").read_text())
    (truth,) = twin["episodes"]
    assert truth["transport_rate"] == 1.0 and truth["success"], truth
    goals = twin["meta"]["goals"]
    assert set(goals) == {"robot1", "robot2"}
    assert sum(g.get("navigation goals", 0) for g in goals.values()) > 0
    assert sum(g.get("manipulations succeeded", 0) for g in goals.values()) >= 6  # 3 items: grab, put, and a door
    # the metres the robots drove, from their own poses at each status: what the twin walked them, less the corners
    # cut between two statuses and the way after the last (the twin runs until the launch stops it)
    truth_m, said_m = sum(truth["travel_m"].values()), sum(episode["travel_m"].values())
    assert set(episode["travel_m"]) == {"robot1", "robot2"} and truth_m > 0, episode["travel_m"]
    assert 0.75 * truth_m <= said_m <= 1.02 * truth_m, (said_m, truth_m)
    # the arm moves only once the base has stopped: after Nav2 ended the canceled goal, not when it took the cancel
    assert not any(g.get("manipulations while driving") for g in goals.values()), goals
    speeds = twin["meta"]["speeds"]
    assert all(s == {"top_mps": TOP_SPEED_MPS, "limit_mps": 0.0} for s in speeds.values()), speeds

    # two robots never work the same container or item at once (rooms may be shared)
    trace = json.loads((out / "twin_trace.json").read_text())
    assert_no_shared_targets(trace)


def test_the_world_files_speed_limit_reaches_nav2_and_the_twin_keeps_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The home's safety policy in the world file's own ``safety:`` section, with a top speed: each robot's executor
    sends it to Nav2's controller (``speed_limit``, ``nav2_msgs/SpeedLimit``), and the twin, which keeps to the limit
    it hears as a Nav2 controller does, never drives faster; the team still ends the task."""
    limit = 0.5  # m/s, below the twin's top speed (TOP_SPEED_MPS)
    proc, out = _team_run(tmp_path, monkeypatch, world_edit={"safety": {"max_speed_mps": limit}})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert f"top speed {limit:g} m/s on speed_limit" in log  # both executors say where the limit goes
    twin = json.loads((out / "twin.json").read_text())
    (truth,) = twin["episodes"]
    assert truth["success"], truth
    speeds = twin["meta"]["speeds"]
    assert all(s["limit_mps"] == limit and s["top_mps"] <= limit for s in speeds.values()), speeds
    assert max(s["top_mps"] for s in speeds.values()) > 0, "the robots drove"


def test_robots_that_detect_in_their_camera_images_finish_the_task_against_the_twin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """With `perception:` the twin offers RGB-D images instead of detections (its robots' heads look round once a
    second) and each robot's own perception node finds the items by their markers: the team still ends the task by
    itself, with what its arms put down on its maps and its teammates' deliveries told on /team/intents."""
    proc, out = _team_run(tmp_path, monkeypatch, {"perception": {"detector": "aruco"}})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "aruco on camera images" in log
    results = json.loads((out / "results.json").read_text())
    (episode,) = results["episodes"]
    assert results["complete"] is True and episode["success"], results
    reports = {r: json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")}
    assert "goal met on my map" in {r["ended"] for r in reports.values()}
    (truth,) = json.loads((out / "twin.json").read_text())["episodes"]
    assert truth["success"], truth


# as a learned detector sees: classes without ids (two apples on one table look alike), a 90 degree camera panning,
# 4 m range, 5 cm position error, one object in ten missed a frame, a false detection in one frame of twenty
CLASS_ONLY = {"ids": False, "noise_m": 0.05, "miss": 0.1, "false_rate": 0.05, "range_m": 4.0, "fov_deg": 90.0}


@pytest.mark.parametrize(
    ("kinds", "detector"),
    [(("tiago", "tiago_dual"), {}), (("stretch3", "fetch"), CLASS_ONLY), (("hsr", "locobot"), {})],
    ids=["tiago-tiago_dual", "stretch3-fetch-classes_only", "hsr-locobot"],
)
def test_robots_of_documented_kinds_finish_the_task_each_keeping_to_its_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kinds: tuple[str, str], detector: dict
):
    """Every robot the twin plays (coteam_ros.twin_robots), in mixed pairs: one or two grippers, a door that needs a
    free one, fast and slow (a Stretch at 0.26 m/s); the team file describes each body as its maker does. The
    one-armed robot sets its item down to open a closed fridge, no arm is asked for what it cannot do, no robot drives
    faster than its Nav2 does, and the team finishes by itself.

    The Stretch and the Fetch see as a learned detector does (:data:`CLASS_ONLY`), and their arms take the object of
    the asked class in front of them (Manipulate's object_class and object_position), not a named one. Each robot
    labels what it sees itself; the team counts distinct items (its arms' put-downs, its own sight), never a
    teammate's label added to its own, so the goal it declares met is met in the twin's truth."""
    from coteam_ros.twin_robots import TWIN_ROBOTS

    playing = dict(zip(("robot1", "robot2"), kinds, strict=True))
    bodies = {name: TWIN_ROBOTS[kind].capabilities() for name, kind in playing.items()}
    edit = {
        "twin": {"tick_hz": 5.0, "robots": playing, **({"detector": detector} if detector else {})},
        "robots": [{"name": name, "capabilities": body} for name, body in bodies.items()],
    }
    twin, out, log = _finished_run(tmp_path, monkeypatch, edit)
    assert twin["meta"]["robots"] == playing
    refused = [line for line in log.splitlines() if "arm refuses" in line]
    assert not refused, "\n".join(refused)
    speeds = twin["meta"]["speeds"]
    assert all(0 < speeds[name]["top_mps"] <= body["speed_mps"] for name, body in bodies.items()), speeds
    goals = twin["meta"]["goals"]
    assert not any(g.get("manipulation goals without the object's class or place") for g in goals.values()), goals
    reports = [json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")]
    (truth,) = twin["episodes"]
    assert all(r["goal_items"][0] <= round(truth["transport_rate"] * r["goal_items"][1]) for r in reports), reports


def test_a_centralised_team_on_robots_ends_the_task_by_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """EvoCF decides for the whole team in one coordinator: on robots nothing says when the task is over, so the
    coordinator ends it when the team's map shows the goal met, tells every planner (END_TASK), and each writes its
    end report and ends, as a decentralised team's planners do."""
    edit = {"team": {"method": "evocf", "backend": "symbolic"}, "twin": {"tick_hz": 5.0}}
    twin, out, log = _finished_run(tmp_path, monkeypatch, edit)
    assert "task over: goal met on the team's map" in log
    reports = [json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")]
    assert {r["ended"] for r in reports} == {"goal met on the team's map"}, reports
    assert all(r["goal_met"] and r["goal_items"][0] == r["goal_items"][1] for r in reports), reports
    (episode,) = json.loads((out / "results.json").read_text())["episodes"]
    # the relays count their robots' travel from odometry: a robot the joint plan kept still has none
    moved = {name: speed["top_mps"] > 0 for name, speed in twin["meta"]["speeds"].items()}
    assert episode["success"] and any(moved.values()), (episode, moved)
    assert {name: m > 0 for name, m in episode["travel_m"].items()} == moved, (episode["travel_m"], moved)


def test_robots_face_to_face_in_a_hallway_give_way_by_name_and_both_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Robots are obstacles to each other in the twin: one whose way another robot's base blocks stands, and Nav2
    aborts its goal (105, failed to make progress). Carrying their items past each other through a 1 m hallway,
    the robots meet; robot2 (later in name order) backs off out of the hallway and waits, robot1 drives on, and the
    team finishes (coteam.home.passage). The home is config/hallway.world.yaml."""
    shutil.copy(CONFIG / "hallway.world.yaml", tmp_path)
    edit = {"task": {"world_file": "hallway.world.yaml"}, "twin": {"tick_hz": 5.0, "robots_block": True}}
    twin, out, log = _finished_run(tmp_path, monkeypatch, edit)
    goals = twin["meta"]["goals"]
    assert sum(g.get("navigation held by a robot", 0) for g in goals.values()) >= 1, goals
    (episode,) = json.loads((out / "results.json").read_text())["episodes"]
    assert episode["passage_meetings"] >= 1, episode
    gave_way = [line for line in log.splitlines() if "is in my way" in line]
    assert any("robot2" in line and "robot1 is in my way" in line and "I give way" in line for line in gave_way), (
        gave_way
    )


def test_a_detector_in_the_cameras_frame_stamped_before_its_late_tf_still_sees_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """As real robots publish them: odometry that drifts (3 cm and 2 degrees per metre driven) corrected by a
    localisation's map -> odom twice a second, stamped 0.5 s ahead (AMCL's transform_tolerance); poses on /tf 0.2 s
    after their stamp; detections in the camera's optical frame stamped 80 ms before they are sent, so every array
    comes before the transform that places it. robot_state holds each array until TF can place it at its own
    stamp, and the team finishes (dropping the arrays, as a lookup that does not wait would, the robots would see
    nothing). Only the arrays tf2's message filter would drop are dropped: those from before the first localisation,
    and on a loaded machine one whose transform came later than the wait (``tf_wait_s``); each node says why once,
    and at most one array in ten is lost."""
    twin = {"tick_hz": 5.0, "tf_lag_s": 0.2, "detections_frame": "optical", "detections_delay_s": 0.08}
    twin["odometry"] = {"drift_m_per_m": 0.03, "drift_deg_per_m": 2.0, "localisation_hz": 2.0, "future_s": 0.5}
    proc, out = _team_run(tmp_path, monkeypatch, {"twin": twin})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    (truth,) = json.loads((out / "twin.json").read_text())["episodes"]
    assert truth["success"], truth
    dropped = [re.sub(r"\[\d+\.\d+\] ", "", line) for line in log.splitlines() if "detections dropped" in line]
    assert len(dropped) == len(set(dropped)), "\n".join(dropped)  # each node says a cause once, frames named
    as_tf2_would = ("nothing at or before", "are not connected (yet)", "s of the array (")
    assert all(any(cause in line for cause in as_tf2_would) for line in dropped), "\n".join(dropped)
    for placed, lost in re.findall(r"detection arrays: (\d+) placed, (\d+) dropped", log):
        assert int(lost) <= 0.1 * int(placed), (placed, lost)


def test_robots_stopped_with_their_team_cancel_the_goals_they_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The team's nodes stopped as Ctrl-C or a time-out stops them, while robot1's Nav2 goal runs (the twin accepts
    it and the robot never moves): its executor cancels the goal before it goes, so no robot drives on without its
    team; the twin, stopped after them, has no goal of theirs still running."""
    import threading

    from coteam_harness.trace import journal_path
    from coteam_ros.launcher import child_env, plan, run
    from coteam_ros.team_config import load_config

    isolate_ros(tmp_path, monkeypatch)
    for name in ("team_twin.yaml", "flat.world.yaml", "flat.map.yaml", "flat.pgm"):
        shutil.copy(CONFIG / name, tmp_path / name)
    data = yaml.safe_load((tmp_path / "team_twin.yaml").read_text())
    data["twin"]["faults"] = [{"robot": "robot1", "kind": "nav_stall", "goal": 1}]
    data["execution"] = {"no_progress_s": 120.0}
    (tmp_path / "team_twin.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    out.mkdir()
    children = plan(load_config(tmp_path / "team_twin.yaml"), tmp_path, results_path=out / "results.json")
    (twin,) = [c for c in children if c.label == "twin@/"]
    robots = [c for c in children if c is not twin]
    env = child_env()
    with subprocess.Popen(twin.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as bridge:
        lines: list[str] = []
        driving = threading.Event()
        stop = threading.Event()

        def watch(line: str) -> None:
            lines.append(line)
            if "planner for robot1" in line:
                driving.set()

        team = threading.Thread(target=lambda: run(robots, env=env, stop=stop, write=watch, sigint_grace=10.0))
        team.start()
        journal = journal_path(out / "twin_trace.json")  # the decisions reach the twin's trace as they are taken
        try:
            assert driving.wait(120), "\n".join(lines[-30:])
            _wait(lambda: journal.exists() and '"agent":"robot1"' in journal.read_text(), 120)
            time.sleep(3.0)  # robot1 sends its first Nav2 goal, which the twin holds (the stall)
        finally:
            stop.set()
            team.join(60)
            bridge.send_signal(signal.SIGINT)
            twin_out, _ = bridge.communicate(timeout=60)
    log = "".join(f"{line}\n" for line in lines)
    assert "[executor@/robot1]" in log and "stopping: 1 running goal(s) canceled" in log, log[-4000:]
    goals = json.loads((out / "twin.json").read_text())["meta"]["goals"]
    assert goals["robot1"].get("navigation stalled") == 1 and goals["robot1"]["navigation canceled"] >= 1, goals
    assert all(g["still running"] == 0 for g in goals.values()), (goals, twin_out[-2000:])


FAULTS = [
    {"robot": "robot1", "kind": "nav_abort", "goal": 1, "code": 9003},
    {"robot": "robot2", "kind": "nav_reject", "goal": 1},
    {"robot": "robot1", "kind": "nav_stall", "goal": 2},
    {"robot": "robot2", "kind": "arm_silent", "goal": 1},
]


def test_hardware_faults_have_their_outcome_and_the_team_still_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Nav2 aborting with an error code, refusing a goal, a robot that makes no progress, an arm that never answers:
    each fails its action with its reason, counted in the results; the method decides again (never the same goal
    again at once) and the team still ends the task."""
    edit = {"twin": {"tick_hz": 5.0, "faults": FAULTS}, "execution": {"no_progress_s": 3.0, "arm_timeout_s": 3.0}}
    proc, out = _team_run(tmp_path, monkeypatch, edit)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    (truth,) = json.loads((out / "twin.json").read_text())["episodes"]
    assert truth["success"], "the team finishes in spite of the faults"
    failures = {r: json.loads((out / f"{r}.end.json").read_text())["failures"] for r in ("robot1", "robot2")}
    assert failures["robot1"].get("not reachable (Nav2 9003: timeout: aborted by the twin's fault)") == 1
    assert failures["robot1"].get("not reachable (no progress for 3 s)") == 1
    assert failures["robot2"].get("not reachable (Nav2 refused the goal)") == 1
    assert failures["robot2"].get("manipulation timed out") == 1
    (team,) = json.loads((out / "results.json").read_text())["episodes"]
    assert sum(team["failures"].values()) >= 4  # every fault counted in the run's results
    goals = json.loads((out / "twin.json").read_text())["meta"]["goals"]
    assert goals["robot2"]["navigation rejected"] == 1 and goals["robot2"]["manipulations unanswered"] == 1
    assert goals["robot1"]["navigation stalled"] == 1
    assert goals["robot2"]["manipulations canceled"] == 1  # the executor gave up on the silent arm
    # never a loop of identical goals: an action that failed the same way twice is not decided again next
    assert_never_a_third_identical_failure(json.loads((out / "twin_trace.json").read_text())["decisions"])


def test_a_robot_whose_odometry_and_detector_fall_silent_waits_and_its_teammate_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """robot1's odometry and TF stop after 2 s, and its detector: its status is held (it waits, said once), the
    detector's last batch is dropped; robot2 finishes the task and robot1 stops on its word."""
    faults = [
        {"robot": "robot1", "kind": "detections_stop", "after_s": 1.0},
        {"robot": "robot1", "kind": "odom_stop", "after_s": 2.0},
    ]
    proc, out = _team_run(tmp_path, monkeypatch, {"twin": {"tick_hz": 5.0, "faults": faults}})
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    robot1 = [line for line in log.splitlines() if line.startswith("[robot_state@/robot1]")]
    for sensor in ("odometry", "detections"):  # said once per change (a loaded machine may delay a message 2 s)
        changes = [
            "stale" if f"no {sensor} for a while" in line else "back"
            for line in robot1
            if f"no {sensor} for a while" in line or f"{sensor} is back" in line
        ]
        assert changes and changes[-1] == "stale", changes
        assert all(a != b for a, b in itertools.pairwise(changes)), changes
    assert any("no odometry for a while: the robot's status is held" in line for line in robot1)
    reports = {r: json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")}
    assert (
        reports["robot2"]["ended"] == "goal met on my map" and reports["robot1"]["ended"] == "robot2 saw the goal met"
    )
    (truth,) = json.loads((out / "twin.json").read_text())["episodes"]
    assert truth["success"]


def test_a_run_stopped_before_the_task_ends_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Stopped by Ctrl-C once every robot's planner is up, before the goal is met: every robot's end report says
    "stopped", and the results are marked incomplete. (Not by a short ``--timeout``: under load the nodes may
    still be starting when it strikes, and a planner that never started has nothing to report.)"""
    proc, out = _team_run(tmp_path, monkeypatch, interrupt_once=("planner for robot1", "planner for robot2"))
    assert proc.returncode == 128 + signal.SIGINT, (proc.stdout + proc.stderr)[-3000:]
    reports = [json.loads((out / f"{r}.end.json").read_text()) for r in ("robot1", "robot2")]
    assert [r["ended"] for r in reports] == ["stopped", "stopped"]
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is False and results["stopped"] == "stopped before the task ended"


def _wait(check, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def assert_no_shared_targets(trace: dict) -> None:
    """From the decisions, each robot's spans searching or grabbing (a decision until its next one, on the twin's
    clock: each robot counts its own steps); no two robots' spans on the same object overlap, but for the moment two
    that started on it at once take to settle it (the later in name order gives it up at its next status)."""
    objects = {c[0] for c in trace["scene"]["containers"]} | {i[0] for i in trace["scene"]["items"]}
    by_robot: dict[str, list[tuple[int, str]]] = {}
    for d in trace["decisions"]:
        by_robot.setdefault(d["agent"], []).append((d["twin_step"], d["action"]))
    spans: list[tuple[str, int, int, int]] = []  # robot, target, from, to
    for robot, decisions in by_robot.items():
        for (step, action), following in zip(decisions, [*decisions[1:], (10**9, "")], strict=True):
            verb = action.split("]", 1)[0].lstrip("[")
            target = int(action.rsplit("(", 1)[1].rstrip(")")) if action.endswith(")") else -1
            if verb in ("gocheck", "gograb") and target in objects:
                spans.append((robot, target, step, following[0]))
    for i, (robot, target, start, end) in enumerate(spans):
        for other, other_target, other_start, other_end in spans[i + 1 :]:
            if other != robot and other_target == target:
                overlap = min(end, other_end) - max(start, other_start)
                assert overlap <= SETTLE_STEPS, f"{robot} and {other} both on {target} for {overlap} twin steps"
