"""The lockstep protocol between the sim bridge and a planner, in process: a robot busy with an action answers each
status with ``OBSERVED``, and the bridge waits for that answer before it steps; a decision published before the
bridge subscribed still reaches its trace.

The status is latched with depth 1. A bridge that stepped past a busy robot's status let the next one replace it
before the planner read it, and the robot's memory missed that step's sightings: on a loaded machine the lockstep
ROS run then parted from the in-process run (``tests/ros/test_ros_team.py``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402


def _episode(directory: Path) -> list[Parameter]:
    return [Parameter("scene_path", value=task_scene(directory, "tdwmat-test")), Parameter("seed", value=0)]


def _tick(robot: str, step: int, kind: int):
    from coteam_interfaces.msg import StepTick

    return StepTick(robot=robot, step=step, kind=kind)


def test_the_bridge_steps_only_once_a_busy_robot_has_taken_in_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_interfaces.msg import StepTick

    from coteam_ros.nodes.sim_bridge import SimBridgeNode

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        bridge = SimBridgeNode(parameter_overrides=[*episode, Parameter("mode", value="lockstep")])
        nodes.append(bridge)  # without cameras it publishes step 0's status at once
        alice, bob = bridge.robots["alice"], bridge.robots["bob"]
        monkeypatch.setattr(bridge.sim, "is_ready", lambda name: name == "alice")  # bob is in the middle of an action

        bridge._on_tick(alice, _tick("alice", 0, StepTick.IDLE))
        assert bridge.sim.steps == 0, "bob has not taken in the status of step 0 yet"
        bridge._on_tick(bob, _tick("bob", 0, StepTick.OBSERVED))
        assert bridge.sim.steps == 1

        # a busy robot that stays silent is waited for only up to the tick timeout, then the team goes on
        bridge._on_tick(alice, _tick("alice", 1, StepTick.IDLE))
        assert bridge.sim.steps == 1
        bob.waited_since = time.monotonic() - bridge.tick_timeout_s - 1
        bridge._on_timer()
        assert bridge.sim.steps == 2 and not bob.responsive


def test_a_busy_planner_answers_observed_once_the_status_is_in_its_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_interfaces.msg import RobotStatus, StepTick

    from coteam_ros.nodes.planner import PlannerNode
    from coteam_ros.nodes.sim_bridge import SimBridgeNode
    from coteam_ros.qos import LATCHED

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        bridge = SimBridgeNode(parameter_overrides=episode)
        planner = PlannerNode(namespace="/bob", parameter_overrides=[Parameter("robot", value="bob"), *episode])
        test = rclpy.create_node("lockstep_test")
        nodes += [bridge, planner, test]
        statuses: list[RobotStatus] = []
        ticks: list[StepTick] = []
        test.create_subscription(RobotStatus, "/bob/status", statuses.append, LATCHED)
        test.create_subscription(StepTick, "/bob/step_tick", ticks.append, LATCHED)
        executor = SingleThreadedExecutor()
        executor.add_node(test)
        deadline = time.monotonic() + 20
        while not statuses and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert statuses, "the bridge's status of step 0"
        status = statuses[0]
        status.step, status.ready = 3, False  # bob, busy at step 3, sees what he saw at step 0

        assert planner.brain.memory.room == -1
        planner._on_status(status)
        assert planner.brain.memory.room >= 0, "the observation is in bob's memory"
        while not ticks and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert [(t.step, t.kind) for t in ticks] == [(3, StepTick.OBSERVED)]


def test_a_decision_made_before_the_bridge_subscribed_is_still_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planner decides as soon as it hears the first status, which can be before it has discovered the bridge's
    ``decision`` subscription: the topic keeps the recent decisions for a subscriber that matches late."""
    from coteam_interfaces.msg import Decision

    from coteam_ros.nodes.planner import PlannerNode
    from coteam_ros.nodes.sim_bridge import SimBridgeNode

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        planner = PlannerNode(namespace="/alice", parameter_overrides=[Parameter("robot", value="alice"), *episode])
        nodes.append(planner)
        record = {"agent": "alice", "step": 0, "action": "[wait]"}
        planner.decision_publisher.publish(Decision(robot="alice", step=0, trace_json=json.dumps(record)))
        bridge = SimBridgeNode(parameter_overrides=episode)
        nodes.append(bridge)
        executor = SingleThreadedExecutor()
        executor.add_node(bridge)
        deadline = time.monotonic() + 20
        while not bridge.meter.decisions and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert bridge.meter.decisions == [record]


def test_an_action_the_episode_cut_short_is_not_logged_as_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from coteam.domain.actions import parse_action
    from coteam_ros.nodes.planner import PlannerNode, RunningSkill

    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as nodes:
        planner = PlannerNode(namespace="/alice", parameter_overrides=_episode(tmp_path))
        nodes.append(planner)
        said: list[str] = []
        monkeypatch.setattr(planner, "get_logger", lambda: SimpleNamespace(info=said.append))
        action = parse_action("go to <kitchen> (1)", planner.benchmark)
        for reason in ("episode over", "not reachable"):
            result = SimpleNamespace(success=False, failure_reason=reason, steps_taken=3, meetings=0, holding=[])
            planner._on_skill_result(
                RunningSkill(action, 0), SimpleNamespace(result=lambda r=result: SimpleNamespace(result=r))
            )
        assert said == ["go to <kitchen> (1) failed: not reachable"]
