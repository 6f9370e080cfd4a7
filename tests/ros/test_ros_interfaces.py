"""coteam_interfaces (ros2_ws/src/coteam_interfaces) and the standard interfaces built for pip installs
(ros2_ws/pip: nav2_msgs, vision_msgs): every message and action type round-trips through CDR, the constants have
their documented values, NavigateToPose and Detection3DArray have their packages' released fields, and a TeamMessage
published by another OS process arrives intact.

Skipped only when rclpy itself is missing; when rclpy is there, coteam_interfaces must be too
(`make venv` builds and installs it), so a missing package fails every test here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ros_isolation import isolate_ros

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration, Time  # noqa: E402
from geometry_msgs.msg import Point, Pose, PoseStamped, PoseWithCovariance, Quaternion, Vector3  # noqa: E402
from nav2_msgs.action import NavigateToPose  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from vision_msgs.msg import (  # noqa: E402
    BoundingBox3D,
    Detection3D,
    Detection3DArray,
    ObjectHypothesis,
    ObjectHypothesisWithPose,
)

try:
    from coteam_interfaces import action as ci_action
    from coteam_interfaces import msg as ci_msg
except ImportError as exc:  # fail (not skip): rclpy is importable, so the interface build must have run
    ci_action = ci_msg = None
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

TIMEOUT_S = 20.0

# Loading a type support imports rosidl_generator_py, which imports lark-parser; that warns about sre_* modules.
pytestmark = pytest.mark.filterwarnings("ignore:module 'sre_(parse|constants)' is deprecated:DeprecationWarning")


def _interfaces():
    """The generated `msg` and `action` modules; fails the calling test when they were not built."""
    if _IMPORT_ERROR is not None:
        pytest.fail(
            f"rclpy is importable but coteam_interfaces is not ({_IMPORT_ERROR}); build it with `make venv` or "
            "`pip install --no-build-isolation ros2_ws/src/coteam_interfaces`",
            pytrace=False,
        )
    return ci_msg, ci_action


def _header(frame: str = "map") -> Header:
    return Header(stamp=Time(sec=1_700_000_000, nanosec=250_000_000), frame_id=frame)


def _pose(x: float, y: float) -> PoseStamped:
    return PoseStamped(
        header=_header(),
        pose=Pose(position=Point(x=x, y=y, z=0.0), orientation=Quaternion(x=0.0, y=0.0, z=0.6, w=0.8)),
    )


def _roundtrip(message):
    data = serialize_message(message)
    assert isinstance(data, bytes) and data
    copy = deserialize_message(data, type(message))
    assert copy == message
    assert copy is not message
    return copy


def _samples(msg, action) -> list:
    """One populated instance of every message type and of every action's goal, result and feedback."""
    remembered = msg.SemanticObject(
        name="apple",
        object_id=21,
        category="food",
        room="kitchen",
        container="",
        position=Point(x=1.5, y=-2.25, z=0.75),
        last_seen=Time(sec=12, nanosec=5),
        last_seen_step=40,
        holder="bob",
    )
    return [
        msg.TeamMessage(
            header=_header(""),
            sender="alice",
            receiver=msg.TeamMessage.RECEIVER_ALL,
            text="I take the apple (21) in the fridge; bob, explore the bedroom — danke schön",
            step=17,
        ),
        msg.ArmState(
            header=_header(),
            robot="alice",
            holding=[21, -1],
            containers=[31, 32],
            container_open=[True, False],
            placed=[22],
            placed_on=[31],
            placed_in=[True],
        ),
        msg.StepTick(
            header=_header(),
            robot="alice",
            step=17,
            kind=msg.StepTick.MESSAGE,
            text="bob, is the apple still in the kitchen?",
            payload_json="{}",
            receiver="bob",
        ),
        remembered,
        msg.SemanticMap(header=_header(), robot="bob", objects=[remembered], explored_rooms=["kitchen", "livingroom"]),
        msg.Decision(
            header=_header(),
            robot="alice",
            method="pce",
            backend="scripted",
            step=17,
            action="[gograb] <apple> (21)",
            message="I take the apple.",
            trace_json='{"candidates": ["[gograb] <apple> (21)"], "scores": [0.9]}',
        ),
        action.ExecuteSkill.Goal(action="[goput] <fridge> (31)", step=18),
        action.ExecuteSkill.Result(success=False, failure_reason="target out of reach", steps_taken=9),
        action.ExecuteSkill.Feedback(phase="navigating", progress=0.25),
        action.Manipulate.Goal(operation=action.Manipulate.Goal.PUT_IN, object_id=21, target_id=31, hand="left"),
        action.Manipulate.Goal(operation=action.Manipulate.Goal.GRASP, object_id=21, target_id=-1, hand=""),
        action.Manipulate.Result(success=True, failure_reason=""),
        action.Manipulate.Feedback(phase="grasping", progress=1.0),
        msg.TaskAssignment(
            command=msg.TaskAssignment.START, task_id="task-3", name="put the cups away", goal=["in(cup, cabinet): 2"]
        ),
        msg.TaskProgress(
            robot="robot1", task_id="task-3", progress=["in(cup, cabinet): 1 of 2"], doing="x", goal_met=False
        ),
        action.TeamTask.Goal(request="put two cups in the cabinet", first=True),
        action.TeamTask.Result(outcome="done", reason="", goal=["in(cup, cabinet): 2"], task_id="task-3", seconds=41.5),
        action.TeamTask.Feedback(
            state="running",
            position=0,
            goal=["in(cup, cabinet): 2"],
            task_id="task-3",
            progress=["in(cup, cabinet): 1 of 2"],
            robots=["robot1: [gograb] <cup> (12)"],
        ),
        NavigateToPose.Goal(pose=_pose(3.0, -1.0), behavior_tree=""),
        NavigateToPose.Result(error_code=NavigateToPose.Result.TIMEOUT, error_msg="goal not reached within 120 s"),
        NavigateToPose.Feedback(
            current_pose=_pose(1.0, 0.5),
            navigation_time=Duration(sec=4, nanosec=500_000_000),
            estimated_time_remaining=Duration(sec=6, nanosec=0),
            number_of_recoveries=2,
            distance_remaining=3.5,
        ),
        Detection3DArray(
            header=_header("robot1/camera_optical_frame"),
            detections=[
                Detection3D(
                    header=_header("robot1/camera_optical_frame"),
                    results=[
                        ObjectHypothesisWithPose(
                            hypothesis=ObjectHypothesis(class_id="apple", score=0.92),
                            pose=PoseWithCovariance(pose=_pose(0.1, 0.2).pose),
                        )
                    ],
                    bbox=BoundingBox3D(center=_pose(0.1, 0.2).pose, size=Vector3(x=0.08, y=0.08, z=0.08)),
                    id="21",
                )
            ],
        ),
    ]


def test_every_type_roundtrips_through_cdr():
    msg, action = _interfaces()
    samples = _samples(msg, action)
    covered = {type(sample) for sample in samples}
    expected = (
        {
            msg.TeamMessage,
            msg.ArmState,
            msg.StepTick,
            msg.SemanticObject,
            msg.SemanticMap,
            msg.Decision,
            msg.TaskAssignment,
            msg.TaskProgress,
        }
        | {
            getattr(a, part)
            for a in (action.ExecuteSkill, action.Manipulate, action.TeamTask, NavigateToPose)
            for part in ("Goal", "Result", "Feedback")
        }
        | {Detection3DArray}
    )
    assert covered == expected
    for sample in samples:
        copy = _roundtrip(sample)
        for field in sample.get_fields_and_field_types():
            assert getattr(copy, field) == getattr(sample, field), (type(sample).__name__, field)


def test_nested_fields_survive_roundtrip():
    msg, _ = _interfaces()
    semantic = msg.SemanticMap(
        header=_header(),
        robot="alice",
        objects=[msg.SemanticObject(name=f"obj{i}", object_id=i, position=Point(x=float(i))) for i in range(5)],
    )
    copy = _roundtrip(semantic)
    assert [o.name for o in copy.objects] == [f"obj{i}" for i in range(5)]
    assert copy.objects[4].position.x == 4.0
    assert copy.header.stamp.nanosec == 250_000_000 and copy.header.frame_id == "map"
    semantic_map = _roundtrip(msg.SemanticMap(robot="bob", explored_rooms=["kitchen", "bathroom"]))
    assert list(semantic_map.explored_rooms) == ["kitchen", "bathroom"]
    assert list(semantic_map.objects) == []


def test_action_wrapper_messages_roundtrip():
    _, action = _interfaces()
    goal_id = list(uuid.uuid4().bytes)
    request = action.ExecuteSkill.Impl.SendGoalService.Request()
    request.goal_id.uuid = goal_id
    request.goal = action.ExecuteSkill.Goal(action="[goexplore] <kitchen> (11)", step=3)
    copy = _roundtrip(request)
    assert list(copy.goal_id.uuid) == goal_id
    feedback = NavigateToPose.Impl.FeedbackMessage()
    feedback.goal_id.uuid = goal_id
    feedback.feedback = NavigateToPose.Feedback(number_of_recoveries=1, distance_remaining=0.5)
    assert _roundtrip(feedback).feedback.distance_remaining == 0.5


def test_constants():
    msg, action = _interfaces()
    assert msg.TeamMessage.RECEIVER_ALL == "all"
    goal = action.Manipulate.Goal
    assert (goal.GRASP, goal.PUT, goal.OPEN, goal.CLOSE, goal.DROP, goal.PUT_IN) == (0, 1, 2, 3, 4, 5)
    result = NavigateToPose.Result
    assert (result.NONE, result.UNKNOWN, result.FAILED_TO_LOAD_BEHAVIOR_TREE, result.TIMEOUT) == (0, 9000, 9001, 9003)
    assert result.TF_ERROR == 9002
    assert result().error_code == result.NONE
    assert action.Manipulate.Goal().target_id == -1  # "no target" unless set
    assert action.Manipulate.Result().object_id == -1  # an arm that names no object


def test_navigate_to_pose_is_nav2s():
    """Kilted's nav2_msgs (1.4) fields; the executor also talks to a Jazzy Nav2, whose fields are the same."""
    nav = NavigateToPose
    assert nav.__module__.startswith("nav2_msgs.")
    assert nav.Goal.get_fields_and_field_types() == {
        "pose": "geometry_msgs/PoseStamped",
        "behavior_tree": "string",
    }
    assert nav.Result.get_fields_and_field_types() == {"error_code": "uint16", "error_msg": "string"}
    assert nav.Feedback.get_fields_and_field_types() == {
        "current_pose": "geometry_msgs/PoseStamped",
        "navigation_time": "builtin_interfaces/Duration",
        "estimated_time_remaining": "builtin_interfaces/Duration",
        "number_of_recoveries": "int16",
        "distance_remaining": "float",
    }


def test_detections_are_vision_msgs():
    """vision_msgs 4.1 (Jazzy, Kilted): what every ROS 2 detector publishes."""
    assert Detection3DArray.get_fields_and_field_types() == {
        "header": "std_msgs/Header",
        "detections": "sequence<vision_msgs/Detection3D>",
    }
    assert Detection3D.get_fields_and_field_types() == {
        "header": "std_msgs/Header",
        "results": "sequence<vision_msgs/ObjectHypothesisWithPose>",
        "bbox": "vision_msgs/BoundingBox3D",
        "id": "string",
    }
    assert ObjectHypothesisWithPose.get_fields_and_field_types() == {
        "hypothesis": "vision_msgs/ObjectHypothesis",
        "pose": "geometry_msgs/PoseWithCovariance",
    }
    assert ObjectHypothesis.get_fields_and_field_types() == {"class_id": "string", "score": "double"}


def test_field_types():
    msg, action = _interfaces()
    assert msg.TeamMessage.get_fields_and_field_types() == {
        "header": "std_msgs/Header",
        "sender": "string",
        "receiver": "string",
        "text": "string",
        "step": "int32",
        "payload_json": "string",
        "seq": "int64",
        "signature": "string",
    }
    assert msg.RobotStatus.get_fields_and_field_types()["transport_rate"] == "float"
    assert msg.ArmState.get_fields_and_field_types()["holding"] == "sequence<int32>"
    assert msg.SemanticMap.get_fields_and_field_types()["explored_rooms"] == "sequence<string>"
    assert msg.SemanticObject.get_fields_and_field_types()["last_seen"] == "builtin_interfaces/Time"
    assert action.Manipulate.Goal.get_fields_and_field_types()["operation"] == "uint8"
    assert action.ExecuteSkill.Result.get_fields_and_field_types() == {
        "success": "boolean",
        "failure_reason": "string",
        "steps_taken": "int32",
        "meetings": "int32",
        "holding": "sequence<int32>",
    }
    assert action.Manipulate.Goal.get_fields_and_field_types()["object_position"] == "geometry_msgs/PointStamped"
    assert action.Manipulate.Result.get_fields_and_field_types()["object_class"] == "string"


_PUBLISHER = """
import sys

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from coteam_interfaces.msg import TeamMessage

topic, text = sys.argv[1], sys.argv[2]
rclpy.init()
node = rclpy.create_node("team_message_publisher")
qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
publisher = node.create_publisher(TeamMessage, topic, qos)
message = TeamMessage(sender="alice", receiver="bob", text=text, step=42)
message.header.stamp = node.get_clock().now().to_msg()
message.header.frame_id = "map"
publisher.publish(message)
print("published", flush=True)
sys.stdin.readline()  # keep the transient-local sample available until the test closes stdin
node.destroy_node()
rclpy.try_shutdown()
"""


def test_team_message_crosses_processes(tmp_path: Path, monkeypatch):
    msg, _ = _interfaces()
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions

    domain = isolate_ros(tmp_path, monkeypatch)
    topic = f"/coteam_test/team_{uuid.uuid4().hex[:12]}"  # unique, so a colliding domain cannot cross-talk
    text = "I take the apple (21); bob, check the fridge — ok?"
    script = tmp_path / "publisher.py"
    script.write_text(_PUBLISHER)

    context = Context()
    rclpy.init(context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO)
    proc = subprocess.Popen(
        [sys.executable, str(script), topic, text],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    received: list = []
    try:
        node = rclpy.create_node("team_message_listener", context=context)
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(msg.TeamMessage, topic, received.append, qos)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + TIMEOUT_S
        while not received and time.monotonic() < deadline and proc.poll() is None:
            executor.spin_once(timeout_sec=0.1)
        if not received:
            state = "exited" if proc.poll() is not None else "still running"
            proc.kill()
            out, err = proc.communicate(timeout=TIMEOUT_S)
            pytest.fail(f"no TeamMessage within {TIMEOUT_S} s (publisher {state}); stdout={out!r} stderr={err!r}")
        executor.shutdown()
        node.destroy_node()
    finally:
        if proc.poll() is None:
            proc.stdin.close()
        try:
            proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        context.try_shutdown()

    assert proc.returncode == 0, proc.stderr.read()
    message = received[0]
    assert (message.sender, message.receiver, message.text, message.step) == ("alice", "bob", text, 42)
    assert message.header.frame_id == "map"
    assert message.header.stamp.sec > 0
