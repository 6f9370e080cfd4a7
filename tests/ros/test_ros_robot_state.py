"""robot_state (real robots): the pose (TF), the detector's vision_msgs detections and the arm's state become the
status that planner and executor read."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from coteam_interfaces.msg import ArmState, RobotStatus  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from vision_msgs.msg import Detection3DArray  # noqa: E402

from coteam.domain.observation import observation_from_dict  # noqa: E402
from coteam.domain.world import Container, ObjectKind, Relation  # noqa: E402
from coteam.senses.perception import Detection, ObservationAssembler  # noqa: E402
from coteam_ros.convert import detections_to_msg  # noqa: E402
from coteam_ros.nodes.robot_state import RobotStateNode  # noqa: E402
from coteam_ros.tf import RigidTransform, TransformPublisher  # noqa: E402
from coteam_sim.suites import get_suite  # noqa: E402

SCENE = get_suite("cwah-test").episodes()[0].build()  # the task of task_scene()


def _catalogue() -> tuple:
    container = next(c for c in SCENE.containers if isinstance(c, Container))
    item, other = SCENE.items[0], SCENE.items[1]
    room = SCENE.floorplan.room(container.room)
    return container, item, other, room


def test_assembler_builds_the_observation_from_detections_the_map_and_the_arm() -> None:
    container, item, other, room = _catalogue()
    asm = ObservationAssembler("robot1", SCENE)
    dets = [
        Detection(item.name, item.id, item.category, room.name, container.name, container.position, 0.9, 3),
        Detection(other.name, other.id, other.category, room.name, "", (1.0, 1.0), 0.9, 3),  # held: the arm says so
        Detection("ghost", 9999, "food", room.name, "", (1.0, 1.0), 1.0, 3),  # not in the catalogue: dropped
    ]
    at = SCENE.floorplan.room_center(room.id)
    obs = asm.observation(3, at, 90.4, dets, holding=[other.id, -1], container_open={container.id: True})
    views = {v.id: v for v in obs.visible}
    in_the_room = {f.id for f in (*SCENE.containers, *SCENE.surfaces) if f.room == room.id}
    assert set(views) == in_the_room | {item.id, other.id}  # the room's furniture is on the map
    assert (views[other.id].location, views[other.id].held_by, views[other.id].position) == (
        Relation.HELD,
        "robot1",
        at,
    )
    assert (views[item.id].location, views[item.id].holder, views[item.id].room) == (
        Relation.IN,
        container.id,
        room.id,
    )
    assert views[container.id].kind == ObjectKind.CONTAINER and views[container.id].is_open is True
    assert obs.holding == (other.id, None)
    assert (obs.room, obs.heading, obs.step, obs.ready) == (room.id, 90, 3, True)
    # as through a camera, no fixture is seen completely: an item not detected now is not taken for gone
    assert obs.complete_fixtures == ()
    right_only = asm.observation(4, at, 0.0, [], holding=[-1, other.id])
    assert right_only.holding == (None, other.id)  # each hand as the arm says: the skills pick hands by it
    closed = asm.observation(4, at, 0.0, [], container_open={container.id: False})
    assert {v.id: v for v in closed.visible}[container.id].is_open is False
    # what the arm put down is where it put it, newer than a sighting; one it holds again is in its hand
    surface = next(f for f in SCENE.surfaces if f.room != room.id)
    put = asm.observation(5, at, 0.0, dets[:1], placed={item.id: (container.id, True), other.id: (surface.id, False)})
    views = {v.id: v for v in put.visible}
    assert (views[item.id].location, views[item.id].holder, views[item.id].position) == (
        Relation.IN,
        container.id,
        container.position,
    )
    assert (views[other.id].location, views[other.id].holder, views[other.id].room) == (
        Relation.ON,
        surface.id,
        surface.room,
    )
    again = asm.observation(6, at, 0.0, [], holding=[other.id, -1], placed={other.id: (surface.id, False)})
    assert {v.id: v for v in again.visible}[other.id].held_by == "robot1"


def test_robot_state_node_publishes_status_from_tf_and_detections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    container, item, _, room = _catalogue()
    other = next(i for i in SCENE.items if i.name != item.name)
    with rclpy_session() as nodes:
        node = RobotStateNode(
            namespace="/robot1",
            parameter_overrides=[
                Parameter("robot", value="robot1"),
                Parameter("robots", value=["robot1", "robot2"]),
                Parameter("scene_path", value=task_scene(tmp_path)),
                Parameter("rate_hz", value=20.0),
            ],
        )
        test = rclpy.create_node("robot_state_test")
        nodes += [node, test]
        statuses: list[RobotStatus] = []
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        test.create_subscription(RobotStatus, "/robot1/status", statuses.append, latched)
        tf = TransformPublisher(test)
        # localisation says where odom is on the map (1 m off), odometry where the robot is in odom
        tf.send_static([RigidTransform.of(1.0, 0.0).stamped("map", "robot1/odom", Time())])
        detections = test.create_publisher(Detection3DArray, "/robot1/detections", 10)
        arm = test.create_publisher(ArmState, "/robot1/arm_state", latched)
        held = next(i for i in SCENE.items if i.name not in (item.name, other.name))
        arm.publish(ArmState(robot="robot1", holding=[held.id, -1]))
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.add_node(test)
        x, y = SCENE.floorplan.room_center(room.id)
        deadline = time.monotonic() + 20
        seen = None
        while time.monotonic() < deadline and seen is None:
            tf.send([RigidTransform.of(x - 1.0, y, yaw_deg=180.0).stamped("robot1/odom", "robot1/base_link", Time())])
            # in the robot's base frame (it faces -x): at the container's place on the map
            cx, cy = container.position
            sighting = Detection(item.name, item.id, "", "", "", (x - cx, y - cy), 1.0, 0)
            by_class = Detection(other.name, -1, "", "", "", (x - cx, y - cy), 1.0, 0)
            detections.publish(detections_to_msg([sighting, by_class], Header(frame_id="robot1/base_link")))
            executor.spin_once(timeout_sec=0.05)
            for status in statuses:
                obs = observation_from_dict(json.loads(status.observation_json))
                if sum(1 for v in obs.visible if v.kind == ObjectKind.ITEM and not v.held_by) == 2:
                    seen = (status, obs)
        assert seen is not None, "no status with the detected object"
        status, obs = seen
        assert status.robot == "robot1" and status.ready and not status.episode_done
        assert (obs.position, obs.heading, obs.room) == ((x, y), 180, room.id)
        views = {v.id: v for v in obs.visible}
        assert views[item.id].location == Relation.IN and views[item.id].holder == container.id
        assert obs.holding == (held.id, None)
        # the class-only detection stands for one of the task's objects of its class, on the same fixture
        (bound,) = (v for v in obs.visible if v.kind == ObjectKind.ITEM and v.id != item.id and not v.held_by)
        assert bound.name == other.name and SCENE.item(bound.id).name == other.name and bound.holder == container.id
        # the detector falls silent: the next statuses re-report no old sighting as new; the arm puts the item
        # it held on the container, and the next status says so, once
        arm.publish(
            ArmState(robot="robot1", holding=[-1, -1], placed=[held.id], placed_on=[container.id], placed_in=[True])
        )
        quiet_from = len(statuses)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(statuses) < quiet_from + 6:
            tf.send([RigidTransform.of(x - 1.0, y, yaw_deg=180.0).stamped("robot1/odom", "robot1/base_link", Time())])
            executor.spin_once(timeout_sec=0.05)
        later = [observation_from_dict(json.loads(s.observation_json)) for s in statuses[quiet_from:]]
        assert [[v.id for v in o.visible if v.kind == ObjectKind.ITEM] for o in later[-2:]] == [[], []]
        put = [v for o in later for v in o.visible if v.id == held.id and not v.held_by]
        assert [(v.location, v.holder) for v in put] == [(Relation.IN, container.id)]
        steps = [s.step for s in statuses]
        assert steps == sorted(steps)


@pytest.mark.parametrize("heading", [None, 0.0, 15.0, 179.999999, 180.0, 270.5])
def test_navigation_goal_pose_round_trip(heading: float | None) -> None:
    from coteam.agent.skills import NavGoal
    from coteam_ros.convert import nav_goal_to_pose, pose_to_nav_goal

    goal = NavGoal((3.25, -1.125), heading)
    back = pose_to_nav_goal(nav_goal_to_pose(goal, (0.0, 0.0)))
    assert back.position == goal.position
    expected = heading if heading is not None else 360 - 19.09  # facing from the robot to the goal
    assert back.heading == pytest.approx(expected % 360, abs=0.01)


def test_assembler_resolves_a_shared_fixture_name_by_position() -> None:
    names: dict[str, list] = {}
    for f in (*SCENE.containers, *SCENE.surfaces):
        names.setdefault(f.name, []).append(f)
    twins = next(fs for fs in names.values() if len(fs) > 1)
    asm = ObservationAssembler("robot1", SCENE)
    for fixture in twins:
        assert asm.fixture_named(fixture.name, fixture.position) == fixture.id
    assert asm.fixture_named("no such thing", (0.0, 0.0)) == -1


def test_the_arm_ledger_says_where_the_arm_put_things() -> None:
    """The executor's account of its own manipulations (a real arm says only whether it succeeded): what each hand
    holds, and where each object it put down went, until it grasps it again."""
    from coteam.agent.skills import Manipulation, ManipulationKind
    from coteam_ros.nodes.executor import ArmLedger

    arm = ArmLedger()
    arm.succeeded(Manipulation(ManipulationKind.GRASP, 21))
    arm.succeeded(Manipulation(ManipulationKind.GRASP, 22, hand=1))
    arm.succeeded(Manipulation(ManipulationKind.PUT_IN, 21, 31))
    arm.succeeded(Manipulation(ManipulationKind.PUT, 22, 40))
    state = arm.to_msg("alice", Header())
    assert list(state.holding) == [-1, -1]
    assert (list(state.placed), list(state.placed_on), list(state.placed_in)) == ([21, 22], [31, 40], [True, False])
    arm.succeeded(Manipulation(ManipulationKind.GRASP, 21))
    arm.succeeded(Manipulation(ManipulationKind.GRASP, 22))
    arm.succeeded(Manipulation(ManipulationKind.DROP, 22))
    state = arm.to_msg("alice", Header())
    assert list(state.holding) == [21, -1]
    assert (list(state.placed), list(state.placed_on), list(state.placed_in)) == ([22], [-1], [False])
    # an arm that says which object it grasped (by the detector's id): the hand holds that one, not the one asked
    arm.succeeded(Manipulation(ManipulationKind.GRASP, 23, hand=1), handled=24)
    arm.succeeded(Manipulation(ManipulationKind.PUT, 24, 40), handled=24)
    assert list(arm.holding) == [21, -1] and arm.placed[24] == (40, False) and 23 not in arm.placed
