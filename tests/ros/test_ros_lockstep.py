"""The lockstep protocol between the sim bridge and a planner, in process: a robot busy with an action answers each
status with ``OBSERVED``, and the bridge waits for that answer before it steps; a decision published before the
bridge subscribed still reaches its trace.

The status is latched with depth 1. A bridge that stepped past a busy robot's status let the next one replace it
before the planner read it, and the robot's memory missed that step's sightings: on a loaded machine the lockstep
ROS run then parted from the in-process run (``tests/ros/test_ros_team.py``).

What a step waits for goes first, and nothing waits for what it does not need: the bridge sends the statuses before
the rest of the step (and every robot's pose in one TF message); a centralised team's relay whose robot acts on, or
is busy, answers the bridge itself, and the coordinator plays a report that came before its step's turn in order."""

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


def test_a_robot_that_talks_first_is_waited_for_as_at_start_up_until_its_first_action(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A robot whose first answers were a message and an idle step has not yet had an action go through its executor
    and the bridge's action servers, which it meets only once DDS discovery is done (on a loaded machine, seconds):
    the bridge waits for it up to ``startup_timeout_s``, not ``tick_timeout_s``, so the run stays the in-process one.
    After its first action the short timeout applies."""
    from coteam_interfaces.msg import StepTick

    from coteam_ros.nodes.sim_bridge import SimBridgeNode

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        bridge = SimBridgeNode(parameter_overrides=[*episode, Parameter("mode", value="lockstep")])
        nodes.append(bridge)
        alice, bob = bridge.robots["alice"], bridge.robots["bob"]
        bridge._on_tick(alice, StepTick(robot="alice", step=0, kind=StepTick.MESSAGE, text="I take the kitchen"))
        bridge._on_tick(bob, _tick("bob", 0, StepTick.IDLE))
        assert bridge.sim.steps == 1

        bridge._on_tick(bob, _tick("bob", 1, StepTick.IDLE))
        alice.waited_since = time.monotonic() - bridge.tick_timeout_s - 1  # its executor still discovering
        bridge._on_timer()
        assert bridge.sim.steps == 1 and alice.responsive, "waited for as at start-up"

        bridge._on_tick(alice, _tick("alice", 1, StepTick.OBSERVED))  # its action under way
        assert bridge.sim.steps == 2
        bridge._on_tick(bob, _tick("bob", 2, StepTick.IDLE))
        alice.waited_since = time.monotonic() - bridge.tick_timeout_s - 1
        bridge._on_timer()
        assert bridge.sim.steps == 3 and not alice.responsive, "then no longer than tick_timeout_s"


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


def test_a_step_sends_the_statuses_first_and_every_robot_pose_in_one_tf_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_interfaces.msg import StepTick

    from coteam_ros.nodes.sim_bridge import SimBridgeNode

    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as nodes:
        bridge = SimBridgeNode(parameter_overrides=[*_episode(tmp_path), Parameter("mode", value="lockstep")])
        nodes.append(bridge)
        sent: list[tuple[str, object]] = []
        for name, slot in bridge.robots.items():
            for topic in ("status", "odom", "detections"):
                publisher = getattr(slot, topic)
                monkeypatch.setattr(publisher, "publish", lambda m, t=f"{name}/{topic}": sent.append((t, m)))
        monkeypatch.setattr(bridge.clock_publisher, "publish", lambda m: sent.append(("/clock", m)))
        monkeypatch.setattr(bridge.tf._dynamic, "publish", lambda m: sent.append(("/tf", m)))

        for name, slot in bridge.robots.items():
            bridge._on_tick(slot, _tick(name, 0, StepTick.IDLE))
        assert bridge.sim.steps == 1
        topics = [topic for topic, _ in sent]
        assert topics[:3] == ["alice/status", "bob/status", "/clock"], "what the robots wait for goes out first"
        assert topics[3:] == ["alice/odom", "bob/odom", "/tf", "alice/detections", "bob/detections"], (
            "the poses before what the robots see: a detection is placed at its stamp at once"
        )
        tf = next(m for topic, m in sent if topic == "/tf")
        assert [t.child_frame_id for t in tf.transforms] == ["alice/base_link", "bob/base_link"]
        assert all(m.step == 1 for topic, m in sent if topic.endswith("/status"))


def test_a_relay_whose_robot_acts_on_answers_the_bridge_without_waiting_for_the_coordinator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coteam_interfaces.msg import RobotStatus, StepTick, TurnCommand, TurnReport

    from coteam.domain.actions import parse_action
    from coteam_ros.nodes.relay import AHEAD_STEPS, RelayNode
    from coteam_ros.skill_runner import RunningSkill

    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as nodes:
        relay = RelayNode(namespace="/bob", parameter_overrides=[Parameter("robot", value="bob"), *_episode(tmp_path)])
        nodes.append(relay)
        ticks: list[tuple[int, int]] = []
        monkeypatch.setattr(relay, "_tick", lambda kind, *rest: ticks.append((relay.step, kind)))
        reports: list = []
        monkeypatch.setattr(relay.report_publisher, "publish", reports.append)
        relay.skill = RunningSkill(parse_action("go to <kitchen> (1)", relay.benchmark), 2, armed_step=3)
        relay.played = 2  # the coordinator has played step 2

        def status(step: int, ready: bool = True) -> None:
            if relay.skill is not None:
                relay.skill.armed_step = step  # the executor has the step's goal in place
            relay._on_status(RobotStatus(robot="bob", step=step, ready=ready, observation_json="{}"))

        status(3)
        assert [r.action_state for r in reports] == [TurnReport.ACTING], "the coordinator hears how it goes"
        assert ticks == [(3, StepTick.ACT)], "and the bridge its answer, at once"
        relay._on_command(TurnCommand(robot="bob", step=3, seq=1, kind=TurnCommand.END, tick=StepTick.ACT))
        assert ticks == [(3, StepTick.ACT)] and relay.played == 3, "the coordinator's END: no second answer"
        status(4, ready=False)
        assert ticks[-1] == (4, StepTick.OBSERVED), "busy: it has seen, the coordinator has it in the report"
        status(4 + AHEAD_STEPS)
        assert ticks[-1] == (4, StepTick.OBSERVED), "too far ahead of the coordinator: its END is waited for"
        relay._on_command(TurnCommand(robot="bob", step=4 + AHEAD_STEPS, seq=2, kind=TurnCommand.END, tick=2))
        assert ticks[-1] == (4 + AHEAD_STEPS, 2)


def test_the_coordinator_plays_a_report_that_came_before_its_step_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relay that answered the bridge itself reports its next step before the coordinator has played this one (a
    teammate's report of this step still on its way): the early report waits, and the memories take the steps in
    as in process."""
    from coteam_interfaces.msg import RobotStatus, StepTick, TurnReport

    from coteam_ros.nodes.coordinator import CoordinatorNode
    from coteam_ros.nodes.sim_bridge import SimBridgeNode

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        bridge = SimBridgeNode(parameter_overrides=[*episode, Parameter("mode", value="lockstep")])
        coordinator = CoordinatorNode(parameter_overrides=episode)
        nodes += [bridge, coordinator]
        statuses: dict[tuple[str, int], RobotStatus] = {}
        for slot in bridge.robots.values():
            monkeypatch.setattr(slot.status, "publish", lambda m: statuses.setdefault((m.robot, m.step), m))
        for step in (0, 1):  # the statuses of steps 1 and 2
            for name, slot in bridge.robots.items():
                bridge._on_tick(slot, _tick(name, step, StepTick.IDLE))
        ended: list[tuple[str, int, int]] = []
        for robot in coordinator.robots.values():
            monkeypatch.setattr(robot.commands, "publish", lambda c: ended.append((c.robot, c.step, c.tick)))

        def report(robot: str, step: int) -> None:
            status = statuses[robot, step]
            busy = TurnReport(robot=robot, step=step, ready=False, observation_json=status.observation_json)
            coordinator._on_report(coordinator.robots[robot], busy)

        report("alice", 1)
        report("alice", 2)  # before bob's report of step 1
        assert ended == []
        report("bob", 1)
        assert ended == [("alice", 1, StepTick.OBSERVED), ("bob", 1, StepTick.OBSERVED)]
        assert coordinator.robots["alice"].brain.memory.step == 1, "alice's step 2 waits for bob's"
        report("bob", 2)
        assert ended[2:] == [("alice", 2, StepTick.OBSERVED), ("bob", 2, StepTick.OBSERVED)]
        assert [r.brain.memory.step for r in coordinator.robots.values()] == [2, 2]


def test_the_topics_between_coteam_nodes_put_no_qos_event_handler_in_the_wait_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rclpy gives every publisher and subscription two QoS event handlers, which its executor puts in the wait set
    at every wake; on the topics between coteam's own nodes both ends take their QoS from ``coteam_ros.qos``, so a
    lockstep planner has none beyond those of rclpy's own topics (a bare node's)."""
    from rclpy.event_handler import EventHandler

    from coteam_ros.nodes.planner import PlannerNode

    isolate_ros(tmp_path, monkeypatch)
    with rclpy_session() as nodes:
        planner = PlannerNode(
            namespace="/alice", parameter_overrides=[Parameter("robot", value="alice"), *_episode(tmp_path)]
        )
        bare = rclpy.create_node("bare")
        nodes += [planner, bare]

        def handlers(node) -> int:
            return sum(isinstance(w, EventHandler) for w in node.waitables)

        assert handlers(planner) == handlers(bare)
