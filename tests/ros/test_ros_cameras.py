"""Perception from cameras over real DDS: the sim bridge renders each robot's head camera (sensor_msgs/Image,
CameraInfo) and publishes the TF chain; the robot's perception node looks the camera up through TF, detects the
ArUco markers, builds its semantic map and adds what it saw to the robot's status, which the planner decides on.
The same frames and detector as the in-process visual suite find the same items."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from coteam_interfaces.msg import RobotStatus, SemanticMap  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from vision_msgs.msg import Detection3DArray  # noqa: E402

from coteam.domain.world import Relation  # noqa: E402
from coteam.senses.vision import CameraPose  # noqa: E402
from coteam_ros.nodes.perception import PerceptionNode  # noqa: E402
from coteam_ros.nodes.planner import PlannerNode  # noqa: E402
from coteam_ros.nodes.sim_bridge import SimBridgeNode  # noqa: E402
from coteam_ros.tf import TransformListener, stamp_ns  # noqa: E402
from coteam_sim.camera import ITEM_SIZE_M, MARKER_SIZE_M, VisualObservations  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:module 'sre_(parse|constants)' is deprecated:DeprecationWarning")

SUITE, EPISODE, ROBOT = "cwah-test-visual", 3, "bob"  # bob's first views hold five goal items
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TIMEOUT_S = 90.0


def _episode(directory: Path) -> list[Parameter]:
    return [
        Parameter("scene_path", value=task_scene(directory, SUITE, EPISODE)),
        Parameter("robots", value=["alice", "bob"]),
    ]


def test_camera_images_become_the_semantic_map_the_planner_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)
    with rclpy_session() as nodes:
        sizes = [Parameter("marker_size_m", value=MARKER_SIZE_M), Parameter("object_depth_m", value=ITEM_SIZE_M / 2)]
        perception = {
            name: PerceptionNode(
                namespace=f"/{name}",
                parameter_overrides=[
                    Parameter("robot", value=name),
                    Parameter("detector", value="aruco"),
                    Parameter("status_from_cameras", value=True),
                    *episode,
                    *sizes,
                ],
            )
            for name in ("alice", "bob")
        }
        planner = PlannerNode(
            namespace=f"/{ROBOT}",
            parameter_overrides=[
                Parameter("robot", value=ROBOT),
                Parameter("method", value="pce"),
                Parameter("executor_timeout_s", value=600.0),
                *episode,
            ],
        )
        test = rclpy.create_node("camera_test")
        tf = TransformListener(test)
        maps: list[SemanticMap] = []
        frames: list[Detection3DArray] = []
        statuses: list[RobotStatus] = []
        test.create_subscription(SemanticMap, f"/{ROBOT}/semantic_map", maps.append, LATCHED)
        test.create_subscription(Detection3DArray, f"/{ROBOT}/detections", frames.append, 10)
        test.create_subscription(RobotStatus, f"/{ROBOT}/status", statuses.append, LATCHED)
        bridge = SimBridgeNode(
            parameter_overrides=[
                *episode,
                Parameter("method", value="pce"),
                Parameter("cameras", value=True),
                Parameter("startup_timeout_s", value=60.0),
            ]
        )
        nodes += [*perception.values(), planner, test, bridge]
        executor = SingleThreadedExecutor()
        for node in nodes:
            executor.add_node(node)
        world = bridge.sim.world
        expected = VisualObservations(world, "aruco").detected(ROBOT)
        assert len(expected) >= 3, "the scene should show the robot some items"

        def remembered() -> set[int]:
            return {i for i in expected if i in planner.brain.memory.objects}

        def first_frames() -> list[Detection3DArray]:
            stamps = {stamp_ns(t) for t in statuses[0].camera_stamps} if statuses else set()
            return [f for f in frames if stamp_ns(f.header.stamp) in stamps]

        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and (remembered() != expected or len(first_frames()) < 6):
            executor.spin_once(timeout_sec=0.05)
        assert remembered() == expected, "the planner's memory holds what the robot's camera saw"

        # the observation the planner decided on: each item on the fixture the world has it in
        for item in expected:
            view = planner.brain.memory.objects[item]
            placement = world.placements[item]
            assert (view.location, view.holder) == (placement.relation, placement.target)
            assert view.location in (Relation.IN, Relation.ON)

        # TF: the robot's pose, and the camera of each view where the renderer put it
        status = statuses[0]
        assert status.step == 0 and len(status.camera_stamps) == 6, "C-WAH: six views round the room"
        agent = world.agents[ROBOT]
        base = tf.lookup("map", f"{ROBOT}/base_link")
        assert np.allclose(base.translation[:2], agent.position)
        camera = VisualObservations(world, "aruco").camera
        for k, stamp in enumerate(status.camera_stamps):
            pose = tf.lookup("map", f"{ROBOT}/camera_optical_frame", stamp).camera_pose()
            rendered = CameraPose.of_robot(agent.position, (agent.heading + 60 * k) % 360, camera.mount)
            assert np.allclose(pose.rotation, rendered.rotation, atol=1e-9)
            assert np.allclose(pose.origin, rendered.origin, atol=1e-9)
        with pytest.raises(LookupError, match="nothing at or before"):
            tf.lookup("map", f"{ROBOT}/camera_optical_frame", Time(sec=0, nanosec=1))

        # one detections message per frame, and the semantic map of the same items, where the world has them
        per_frame = first_frames()
        assert len(per_frame) == 6
        assert {int(d.id) for f in per_frame for d in f.detections} == expected  # vision_msgs: id = object id
        fused = {o.object_id: o for o in maps[-1].objects}
        assert expected <= set(fused)
        for item in expected:
            where = world.position_of(item)
            seen = fused[item].position
            assert math.dist((seen.x, seen.y), where) < 0.5, "on its fixture (items stand in a ring on it)"


def test_the_perception_node_runs_the_configured_detector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``color`` detects the classes in the colours the simulator paints them (or a colours file's); ``onnx`` needs its
    model and class names, and says so in one line."""
    from coteam.senses.vision import ArucoDetector, ColorDetector
    from coteam_sim.suites import get_suite

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)

    def node(*params: Parameter) -> PerceptionNode:
        return PerceptionNode(
            namespace="/alice", parameter_overrides=[Parameter("robot", value="alice"), *episode, *params]
        )

    colours = tmp_path / "colours.yaml"
    colours.write_text("apple: [200, 30, 30]\n")
    with rclpy_session() as nodes:
        nodes.append(node(Parameter("detector", value="aruco")))
        nodes.append(node(Parameter("detector", value="color")))
        nodes.append(node(Parameter("detector", value="color"), Parameter("colours", value=str(colours))))
        aruco, sim_colours, file_colours = (n.detector for n in nodes)
        assert isinstance(aruco, ArucoDetector) and isinstance(sim_colours, ColorDetector)
        scene = get_suite(SUITE).episodes()[EPISODE].build()
        assert {name for name, _ in sim_colours.classes} == {i.name for i in scene.items}
        assert [name for name, _ in file_colours.classes] == ["apple"]
        with pytest.raises(ValueError, match="detector onnx needs model"):
            node(Parameter("detector", value="onnx"))


def test_perception_takes_a_camera_driver_best_effort_and_the_simulator_reliable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A robot's camera driver may publish best effort (a reliable subscription would never match it): on hardware
    the node subscribes best effort; with the simulator, whose step waits for every frame, reliable."""
    from rclpy.qos import ReliabilityPolicy

    isolate_ros(tmp_path, monkeypatch)
    episode = _episode(tmp_path)

    def camera_reliability(*params: Parameter) -> set:
        overrides = [Parameter("robot", value="alice"), Parameter("detector", value="color"), *episode, *params]
        node = PerceptionNode(namespace="/alice", parameter_overrides=overrides)
        nodes.append(node)
        return {s.qos_profile.reliability for s in node.subscriptions if "/camera/" in s.topic_name}

    with rclpy_session() as nodes:
        assert camera_reliability() == {ReliabilityPolicy.BEST_EFFORT}
        assert camera_reliability(Parameter("status_from_cameras", value=True)) == {ReliabilityPolicy.RELIABLE}
