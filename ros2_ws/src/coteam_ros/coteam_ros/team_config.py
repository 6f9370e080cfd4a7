"""The team YAML file, shared by ``coteam launch`` (pip installs) and the ``ros2 launch`` files: its schema
(frozen pydantic models that forbid unknown keys) and :func:`load_config`, which reads it with PyYAML.

A file describes one team run::

    world:            # the simulator; omit it (or write null) on hardware
      suite: cwah-test      # a coteam_sim suite (`coteam suites`)
      episode: 0
      seed: 0
      mode: lockstep        # lockstep | realtime
      tick_hz: 10.0         # realtime only: simulator steps per second
      scene: my_scene.json  # optional: a saved scene (coteam.domain.scene_io) instead of the episode (path relative
                            #   to this file); suite and episode then only label the run
      engine: unity         # a bridge suite (mapthor: AI2-THOR; tdwmat-tdw: TDW) only: its Unity build, or fake
      unity: {thor_platform: CloudRendering}  # optional, engine unity: how to start the build (UnitySection)
    task:             # hardware only (forbidden with a world, whose suite/episode define the task):
      world_file: home.world.yaml  # your home and task (coteam.home.world_file; relative to this file): the robots are
                            #   the file's robots; the run ends when the team's map shows the goal met, or at the
                            #   file's time limit
      # suite: cwah-test    # or: the task definition (goal, horizon) is episode `episode` of `suite`
      # episode: 0
      seed: 0               #   optional, default 0: seeds the methods' random choices
    twin:             # optional, hardware only: simulated robots with a real robot's interfaces (Nav2's
      tick_hz: 5.0          #   navigate_to_pose, an arm, a detector, TF, odometry) run the task instead of real ones
      faults: []            #   what their Nav2 and arms do wrong: [{robot, kind, goal, code}] (coteam_ros.faults)
      robots: {robot1: tiago}  # the real robot each plays (coteam_ros.twin_robots; default generic)
      tf_lag_s: 0.3         #   poses on /tf this late; detections_frame: optical (the camera's) or map, stamped
      detections_delay_s: 0.08  # this long before they are sent
      detector: {ids: true, noise_m: 0.05, miss: 0.1, false_rate: 0.02, range_m: 4, fov_deg: 90}  # what it gets
                            #   wrong: ids false = classes only (its arms take the class in front of them)
      odometry: {drift_m_per_m: 0.02, drift_deg_per_m: 1, localisation_hz: 2, future_s: 0.5}  # drift, AMCL
    execution:        # optional, real robots: when the executor gives up on a goal (a failed action; the method
      no_progress_s: 20     #   decides again): a Nav2 goal whose remaining distance has not shrunk this long,
      arm_timeout_s: 60     #   an arm goal without a result this long,
      skill_overhead_s: 60  #   a whole action after this plus skill_travel_factor times its drive at the robot's
      skill_travel_factor: 3  #  speed (robots[].capabilities.speed_mps); the robot's detector, Nav2 and arm
      wiring_timeout_s: 30  #   must be found within this after start, or the run stops with one line naming them
    team:
      method: pce           # `coteam methods`
      backend: symbolic     # symbolic | llm
      params: {}            # method hyper-parameters, as `coteam run --set key=value`; a learning method's
                            #   `store: learned.sqlite` (relative to this file) outlives the launch: each
                            #   planner keeps its own, learned.<robot>.sqlite
      llm:                  # optional, backend llm only: a local model (the local-llm extra) started by
        local: true         #   `coteam launch` on loopback, one per robot (share: robot) or one for all
        share: robot        #   (share: machine); model: a GGUF path (default: the packaged Gemma 3 270M)
    navigation: sim   # sim (the simulator's navigator) | nav2 (each robot's Nav2); default: sim with a world, else nav2
    robots:
      - name: alice
        namespace: /alice   # default "/" + name
        remap: {}           # node-level remappings, e.g. {camera/image_raw: /alice/camera/color/image_raw}
        base_frame: alice/base_link   # hardware: the robot's base frame on /tf (default "<name>/base_link")
        capabilities:       # optional (coteam.domain.capabilities), or in the world file's robots (not both): the body
          grippers: 2       #   1 or 2; open_needs_free_gripper: false; carry_limit: items held at once;
          speed_mps: 0.5    #   the speed it drives at (the executor's time limits come from it)
        composed: true      # optional: this robot's nodes in one process (default: the top-level composed)
    perception:       # optional: each robot's perception node detects items in its RGB-D camera (a visual suite's
      detector: aruco       #   world turns it on by default; the shorthand `perception: aruco` names only the detector)
      markers: markers.yaml #   hardware: the printed markers (YAML, marker id: class name; relative to this file);
                            #   with a world the simulator's (marker id = object id)
      marker_size_m: 0.05   #   the printed markers' side and how far behind a marker the object's centre is (with a
      object_depth_m: 0.04  #   world: the simulator's); without them a detection is the marker's centre
      # detector: color     # untagged objects by class colour: `colours: colours.yaml` (class: [r, g, b]) on
                            #   hardware; with a world the colours the simulator paints the classes in
      # detector: onnx      # a YOLO-format model: `model: detector.onnx` and `classes: [apple, cup, ...]`
                            #   (color and onnx know classes, not instances: see docs/ros2.md)
    security:         # optional; signed team messages (coteam.home.signing), on by default
      sign: true            # each planner signs what it sends and believes only signed, new messages of the team
      keystore: keys        # `coteam keys init CONFIG` makes it (relative to this file); with a world a missing
                            #   keystore is made at launch, on hardware it must exist
      max_age_s: 120        # a message signed longer ago than this is refused (a replay of an earlier run)
    serve:            # optional (or `coteam launch --serve`): a team that lives in the home and takes tasks while it
      first_task: true      #   runs (`coteam task`): the task node queues the world file's task first (false: none);
      reader: grammar       #   requests in words are read by the grammar (coteam.tasks.words) or by a model (llm:
                            #   llm_base_url / llm_model, else OPENAI_BASE_URL / COTEAM_LLM_MODEL); robots only
    safety: policy.yaml     # optional; the home's safety policy (coteam.home.safety, relative to this file): no-go
                            #   rooms and zones, objects never touched, actions a person approves (`coteam approve`),
                            #   a top speed for Nav2; or in the world file's own safety: section (not both)
    composed: false   # optional: true runs each robot's nodes in one process on one executor, with the same
                      #   names, topics and parameters (robots[].composed overrides it per robot; docs/ros2.md)

An absent key and a null one take the default. :func:`load_config` validates strictly: unknown keys, wrong types and
unknown names raise a :class:`ConfigError` of one line naming the file and the key path. The models hold the file's
relative paths made absolute.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from coteam.domain.capabilities import RobotCapabilities
from coteam.domain.validation import ProblemAt, first_problem, read_yaml
from coteam.home.signing import DEFAULT_MAX_AGE_S, PUBLIC_KEYS
from coteam.home.world_file import World
from coteam.senses.vision import DETECTORS

__all__ = [
    "ConfigError",
    "LocalModelSection",
    "PerceptionSection",
    "RobotSection",
    "SecuritySection",
    "TaskSection",
    "TeamConfig",
    "TeamMethodSection",
    "WorldSection",
    "load_config",
    "parse_config",
]

Mode = Literal["lockstep", "realtime"]
Navigation = Literal["sim", "nav2"]
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")  # a robot name: one ROS name token
_NAMESPACE = re.compile(r"^/([A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*)?$")
_TOPIC = re.compile(r"^(~/|/)?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")
# The names the robots' nodes use, the keys a remap may have (a test reads the nodes' sources against it)
REMAPPABLE = (
    "detections",
    "navigate_to_pose",
    "manipulate",
    "odom",
    "speed_limit",
    "camera/image_raw",
    "camera/depth/image_raw",
    "camera/camera_info",
    "arm_state",
    "status",
    "execute_skill",
    "decision",
    "step_tick",
    "semantic_map",
    "semantic_markers",
    "sim_status",
    "turn_command",
    "turn_report",
    "/tf",
    "/tf_static",
    "/clock",
    "/map",
    "/team/messages",
    "/team/intents",
    "/team/heartbeat",
    "/approve_action",
    "/team/task_assignment",  # a serving team: the task the robots work on, and what they report of it
    "/team/task_progress",
    "/team/task",  # the task node's and coteam task's
    "/team/cancel_task",
    "/team/tasks",
)


class ConfigError(ValueError):
    """A team YAML file is malformed; the message names the file and the key."""


def _beside_the_file(path: str, info: ValidationInfo) -> str:
    """``path`` made absolute, relative to the team file's folder."""
    return str((Path(info.context["source"]).parent / path).resolve())


Text = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]
PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False)]
FileRelativePath = Annotated[Text, AfterValidator(_beside_the_file)]  # made absolute


def _one_of(value: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(_not_one_of(choices, value))
    return value


def _not_one_of(choices: Sequence[str], value: Any) -> str:
    return f"expected one of {', '.join(choices)}, got {value!r}"


def _existing_file(key: str, path: str | None) -> str:
    if path is None:
        raise ProblemAt(key, "required")
    if not Path(path).is_file():
        raise ProblemAt(key, f"no such file: {path}")
    return path


def _has_backend_switch(method: object) -> bool:
    """Whether ``method`` has LLM roles (a ``backend`` switch)."""
    from coteam.registry import method_class, method_names

    return method in method_names() and "backend" in method_class(str(method)).Config.switch_names()


# ----------------------------------------------------------------------------------------------------------------
# The sections of the file


class _Section(BaseModel):
    """One mapping of the file: unknown keys are errors, and an absent or null key takes its default."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _given_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return cls._defaults({k: v for k, v in data.items() if v is not None})
        return data

    @classmethod
    def _defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with the defaults that depend on its other keys."""
        return data


class TaskSection(_Section):
    """``task`` (hardware): a world file (your home and task, ``coteam.home.world_file``), or episode ``episode`` of
    ``suite``; ``seed`` seeds the methods."""

    suite: Text | None = None
    episode: Count = 0
    seed: Count = 0
    world_file: FileRelativePath | None = None

    @field_validator("suite")
    @classmethod
    def _known_suite(cls, suite: str) -> str:
        from coteam_sim.suites import get_suite

        try:
            get_suite(suite)
        except KeyError as exc:
            raise ValueError(str(exc.args[0])) from None
        return suite

    @field_validator("world_file")
    @classmethod
    def _a_world_file(cls, path: str) -> str:
        from coteam.home.world_file import load_world

        load_world(path)  # a one-line WorldFileError naming the file and the place
        return path

    @model_validator(mode="after")
    def _episode_of_the_suite(self) -> TaskSection:
        if (self.suite is None) == (self.world_file is None):
            raise ValueError("name the task: a world_file (your home), or a suite and its episode")
        if self.suite is None:
            return self
        from coteam_sim.suites import get_suite

        suite = get_suite(self.suite)
        if suite.fixed and self.episode >= (count := len(suite.episodes())):
            raise ProblemAt("episode", f"{self.suite} has {count} episodes (0-{count - 1}), got {self.episode}")
        return self

    @property
    def world(self) -> World | None:
        """The world file's home and task (read once), None for a suite episode."""
        if self.world_file is None:
            return None
        from coteam.home.world_file import load_world

        if self.world_file not in _worlds:
            _worlds[self.world_file] = load_world(self.world_file)
        return _worlds[self.world_file]


_worlds: dict[str, World] = {}


class TwinDetectorSection(_Section):
    """``twin.detector``: what the twin's object detectors get wrong (coteam_ros.twin_robots.TwinDetector)."""

    ids: bool = True  # false: classes without ids, and arms that take the object of the asked class in front of them
    noise_m: float = Field(0.0, ge=0, le=1.0)  # the position error's standard deviation, per axis
    miss: float = Field(0.0, ge=0, lt=1.0)  # the chance an object in view is missed in a frame
    false_rate: float = Field(0.0, ge=0, le=1.0)  # the chance of a false detection in a frame (ids: false only)
    range_m: PositiveNumber | None = None  # nothing farther is seen
    fov_deg: float | None = Field(None, gt=0, le=360)  # the camera's horizontal field of view; its head pans


class TwinOdometrySection(_Section):
    """``twin.odometry``: how the twin's odometry drifts and its localisation corrects it
    (coteam_ros.twin_robots.TwinOdometry); no drift: ``map -> odom`` is a static identity."""

    drift_m_per_m: float = Field(0.0, ge=0, le=0.5)  # position error added per metre driven
    drift_deg_per_m: float = Field(0.0, ge=0, le=30.0)  # heading error added per metre driven
    localisation_hz: PositiveNumber = 2.0  # map -> odom this often
    future_s: float = Field(0.5, ge=0, le=5.0)  # stamped this far ahead (AMCL's transform_tolerance)


class TwinSection(_Section):
    """``twin`` (hardware only): simulated robots with a real robot's interfaces run the task (``coteam launch``
    starts them; see the ``twin`` node, coteam_ros.nodes.twin)."""

    tick_hz: PositiveNumber = 5.0  # simulator steps per second: C-WAH walks 0.27 m a step
    faults: list[dict[str, Any]] = []  # coteam_ros.faults.TwinFault: what the twin's Nav2 and arms do wrong
    robots: dict[str, str] = {}  # robot -> the real robot it plays (coteam_ros.twin_robots); default generic
    tf_lag_s: float = Field(0.0, ge=0, le=5.0)  # each pose on /tf this long after its stamp (a localisation behind)
    robots_block: bool = False  # the robots' bases are obstacles to each other (docs/hardware.md)
    detections_frame: Literal["map", "optical"] = "map"  # optical: the camera's frame, as a camera's detector says
    detections_delay_s: float = Field(0.0, ge=0, le=5.0)  # optical: arrays stamped this long before they are sent
    detector: TwinDetectorSection = TwinDetectorSection()
    odometry: TwinOdometrySection = TwinOdometrySection()

    @field_validator("robots")
    @classmethod
    def _known_robots(cls, robots: dict[str, str]) -> dict[str, str]:
        from coteam_ros.twin_robots import twin_robot

        for robot, profile in robots.items():
            try:
                twin_robot(profile)
            except ValueError as exc:
                raise ProblemAt(robot, str(exc)) from None
        return robots

    @field_validator("faults")
    @classmethod
    def _known_faults(cls, faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from coteam_ros.faults import TwinFault

        TwinFault.parse(faults)  # a one-line ValueError
        return faults


class ExecutionSection(_Section):
    """``execution`` (real robots): when the executor gives up on a Nav2 goal, an arm goal or a whole action, and how
    long the robots' nodes wait for their detector, Nav2 and arm to be found."""

    no_progress_s: PositiveNumber = 20.0  # a Nav2 goal whose remaining distance has not shrunk this long is canceled
    arm_timeout_s: PositiveNumber = 60.0  # an arm goal without a result this long is canceled
    # an action's time limit (coteam.agent.skills.TimeLimit): skill_overhead_s plus skill_travel_factor times its drive
    skill_overhead_s: PositiveNumber = 60.0
    skill_travel_factor: PositiveNumber = 3.0
    wiring_timeout_s: PositiveNumber = (
        30.0  # every remapped topic and action has its other end by then, or the run stops
    )
    # a Nav2 goal that fails with a teammate this close is a meeting in a passage (coteam.home.passage): the robot
    # later in name order backs off and waits up to passage_wait_s for the other to go by; passage_tries such meetings
    # an action
    passage_near_m: PositiveNumber = 1.5
    passage_wait_s: PositiveNumber = 20.0
    passage_tries: int = Field(3, ge=0)


class UnitySection(_Section):
    """``world.unity``: how the sim_bridge starts a bridge suite's Unity build, as ``coteam run``'s options do:
    AI2-THOR's own build (``thor_executable``) and platform (``thor_platform``); TDW's port (``tdw_port``) and whether
    the controller launches the build (``tdw_launch``; false: a build started by hand connects to the port)."""

    thor_executable: Text | None = None
    thor_platform: Text | None = None
    tdw_port: int = Field(1071, ge=1, le=65535)
    tdw_launch: bool = True


class WorldSection(TaskSection):
    """``world``: the simulator, whose suite episode (or saved ``scene``) is the task."""

    suite: Text
    mode: Mode = "lockstep"

    @field_validator("world_file")
    @classmethod
    def _no_world_file(cls, path: str) -> str:
        raise ValueError("only in task: (real robots or the twin); a world's task is its suite episode or scene")

    tick_hz: PositiveNumber = 10.0
    scene: FileRelativePath | None = (
        None  # a saved scene (coteam.domain.scene_io JSON) run instead of the suite's episode
    )
    engine: Literal["unity", "fake"] = "unity"  # a bridge suite's engine (coteam_sim.bridges)
    unity: UnitySection = UnitySection()

    @field_validator("scene")
    @classmethod
    def _a_scene_file(cls, scene: str) -> str:
        from coteam.domain.scene_io import load_scene

        if not Path(scene).is_file():
            raise ValueError(f"no scene file {scene}")
        load_scene(scene)  # a one-line ValueError naming the file
        return scene


class LocalModelSection(_Section):
    """``team.llm``: the local model ``coteam launch`` serves to the planners (see the module docstring)."""

    local: bool = False
    share: Literal["robot", "machine"] = "robot"  # robot: one server per robot | machine: one for the whole team
    model: FileRelativePath | None = None  # a GGUF file; None = the packaged Gemma 3 270M

    @field_validator("model")
    @classmethod
    def _a_model_file(cls, model: str) -> str:
        if not Path(model).is_file():
            raise ValueError(f"model file {model} does not exist")
        return model


class TeamMethodSection(_Section):
    """``team``: the method every planner runs, its backend and its switches (``coteam.kit.MethodConfig``)."""

    method: Text
    backend: Text = "symbolic"
    params: dict[str, Any] = {}  # the method's switches, without the backend
    llm: LocalModelSection | None = None

    @classmethod
    def _defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``params: {backend: ...}`` sets the backend of a method with LLM roles, as ``backend:`` does."""
        params = data.get("params")
        if not (isinstance(params, Mapping) and "backend" in params and _has_backend_switch(data.get("method"))):
            return data
        backend = params["backend"]
        if data.get("backend", backend) != backend:
            raise ProblemAt("params", f"backend {backend!r} contradicts team.backend {data['backend']!r}")
        return {**data, "backend": backend, "params": {k: v for k, v in params.items() if k != "backend"}}

    @field_validator("method")
    @classmethod
    def _registered(cls, method: str) -> str:
        from coteam.registry import method_names

        return _one_of(method, method_names())

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, backend: str) -> str:
        from coteam.llm import backends

        return _one_of(backend, backends())

    @field_validator("params")
    @classmethod
    def _json_like(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        try:
            json.dumps(params, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must be plain JSON-like values: {exc}") from None
        if isinstance(params.get("store"), str):  # a learning method's store file, beside the team file
            params = {**params, "store": _beside_the_file(params["store"], info)}
        return params

    def store_of(self, robot: str, robots: Sequence[str]) -> str | None:
        """The store file of ``robot``'s planner: ``params.store``, with the robot's name before its suffix when
        several planners each run their own team (``learner.sqlite`` -> ``learner.alice.sqlite``)."""
        from coteam.registry import method_class

        store = self.params.get("store")
        if not isinstance(store, str) or len(robots) == 1 or method_class(self.method).centralised:
            return store
        path = Path(store)
        return str(path.with_name(f"{path.stem}.{robot}{path.suffix}"))

    @model_validator(mode="after")
    def _runnable(self) -> TeamMethodSection:
        from coteam.registry import method_class

        if self.backend != "symbolic" and not _has_backend_switch(self.method):
            raise ProblemAt("backend", f"{self.method} has no LLM roles: it runs without a backend")
        if self.local_llm is not None and self.backend != "llm":
            raise ProblemAt(
                ("llm", "local"), f"a local model serves the llm backend, but team.backend is {self.backend!r}"
            )
        try:
            method_class(self.method).Config.parse_switches(self.method, self.switches())
        except ValueError as exc:
            raise ProblemAt("params", str(exc)) from None
        if "store" in self.params and method_class(self.method).store_schema is None:
            raise ProblemAt(("params", "store"), f"{self.method} keeps nothing across episodes")
        return self

    @property
    def local_llm(self) -> LocalModelSection | None:
        """``llm`` when it asks for a local model."""
        return self.llm if self.llm is not None and self.llm.local else None

    def switches(self) -> dict[str, Any]:
        """The method's switches as the planners run them: ``params`` plus the backend (methods with LLM roles)."""
        return {**self.params, "backend": self.backend} if _has_backend_switch(self.method) else dict(self.params)


COMPOSED = (
    "true: each robot's nodes (robot_state, perception, planner or relay, executor) run in one process on one rclpy "
    "executor, with the names, namespaces, parameters, remappings and topics they have as separate processes"
)
COMPOSED_ROBOT = "this robot's nodes in one process (true) or one process each (false); default: the file's composed"


class RobotSection(_Section):
    """One of ``robots``."""

    name: Text
    namespace: Text  # default "/" + name
    remap: dict[str, str] = {}
    base_frame: Text  # default "<name>/base_link"
    capabilities: RobotCapabilities | None = None  # the robot's body; None: the world file's, or the defaults
    composed: bool | None = Field(None, description=COMPOSED_ROBOT)

    @classmethod
    def _defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        name = data.get("name")
        if isinstance(name, str):
            return {"namespace": "/" + name, "base_frame": f"{name}/base_link", **data}
        return data

    @field_validator("name")
    @classmethod
    def _ros_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"{name!r} is not a valid ROS name (letters, digits, _)")
        return name

    @field_validator("namespace")
    @classmethod
    def _absolute_namespace(cls, namespace: str, info: ValidationInfo) -> str:
        if not _NAMESPACE.match(namespace) or namespace == "/":
            example = "/" + info.data.get("name", "robot")
            raise ValueError(f"{namespace!r} is not an absolute ROS namespace like {example}")
        return namespace

    @field_validator("remap")
    @classmethod
    def _topic_names(cls, remap: dict[str, str]) -> dict[str, str]:
        for src, dst in remap.items():
            for name in (src, dst):
                if not _TOPIC.match(name):
                    raise ProblemAt(src, f"{name!r} is not a valid ROS topic/action name")
            if src not in REMAPPABLE:
                close = difflib.get_close_matches(src, REMAPPABLE, n=1)
                hint = f"did you mean {close[0]}?" if close else f"the robots' nodes use {', '.join(REMAPPABLE)}"
                raise ProblemAt(src, f"no node of a robot uses {src!r}: {hint}")
        return remap

    @field_validator("base_frame")
    @classmethod
    def _frame_name(cls, base_frame: str) -> str:
        if not _TOPIC.match(base_frame.lstrip("/")):
            raise ValueError(f"{base_frame!r} is not a valid frame name")
        return base_frame


class PerceptionSection(_Section):
    """``perception``: detection in the robots' cameras (see the module docstring)."""

    detector: str  # what the perception node runs on camera images (coteam.senses.vision.DETECTORS)
    markers: FileRelativePath | None = None  # aruco on hardware: the marker catalogue
    marker_size_m: PositiveNumber | None = None  # aruco: None = unknown (a detection is the marker's centre)
    object_depth_m: PositiveNumber | None = None
    colours: FileRelativePath | None = None  # color on hardware: the class colours
    model: FileRelativePath | None = None  # onnx: the model
    classes: tuple[Text, ...] = Field((), strict=False)  # onnx: the model's class names, in its output order

    @model_validator(mode="after")
    def _keys_of_the_detector(self) -> PerceptionSection:
        if self.detector not in DETECTORS:
            raise ProblemAt("detector", f"expected one of {', '.join(DETECTORS)}, got {self.detector!r}")
        for other, kind in DETECTORS.items():
            for key in kind.settings:
                if other != self.detector and key in self.model_fields_set:
                    raise ProblemAt(key, f"only with detector {other}")
        if self.detector == "onnx":
            _existing_file("model", self.model)
            if not self.classes:
                raise ProblemAt("classes", "required: the model's class names in its output order, e.g. [apple, cup]")
        return self

    def in_simulation(self) -> PerceptionSection:
        """This section with a world: the simulator prints the markers (aruco: of the simulator's size unless the
        file says otherwise) and paints the classes (color)."""
        for key, what in (("markers", "prints the markers"), ("colours", "paints the classes")):
            if key in self.model_fields_set:
                raise ProblemAt(key, f"only on hardware (with a world, the simulator {what})")
        if self.detector != "aruco":
            return self
        from coteam_sim.camera import ITEM_SIZE_M, MARKER_SIZE_M  # an item's centre is half a cube behind its face

        return self.model_copy(
            update={
                "marker_size_m": self.marker_size_m or MARKER_SIZE_M,
                "object_depth_m": self.object_depth_m or ITEM_SIZE_M / 2,
            }
        )

    def check_hardware_files(self, world_file: bool = False) -> None:
        """On hardware the detector's files must be readable: the printed markers (aruco; with a world file they may
        be left out: marker id = the object's id in the file), the class colours (color)."""
        from coteam.senses.vision import MarkerCatalogue, load_class_colours

        if self.detector == "aruco":
            if self.markers is None and world_file:
                return
            if self.markers is None:
                raise ProblemAt("markers", "required on hardware: a YAML of the printed marker ids and their classes")
            key, read = "markers", MarkerCatalogue.from_file
        elif self.detector == "color":
            key, read = "colours", load_class_colours
        else:
            return
        path = _existing_file(key, getattr(self, key))
        try:
            read(path)
        except ValueError as exc:
            raise ProblemAt(key, str(exc)) from None


class SecuritySection(_Section):
    """``security``: signed team messages (see the module docstring)."""

    sign: bool = True
    keystore: FileRelativePath = Field("keys", validate_default=True)  # the team's keystore directory
    max_age_s: PositiveNumber = DEFAULT_MAX_AGE_S

    def private_key(self, robot: str) -> Path:
        return Path(self.keystore) / f"{robot}.key"

    @property
    def public_keys(self) -> Path:
        return Path(self.keystore) / PUBLIC_KEYS


class ServeSection(_Section):
    """``serve``: the robots keep running and take people's tasks (the task node, ``coteam task``)."""

    first_task: bool = True
    reader: Literal["grammar", "llm"] = "grammar"
    llm_base_url: Text | None = None
    llm_model: Text | None = None


class TeamConfig(_Section):
    """A team file (see the module docstring)."""

    world: WorldSection | None = None
    task: TaskSection | None = Field(None, validate_default=True)
    twin: TwinSection | None = None
    execution: ExecutionSection = ExecutionSection()
    team: TeamMethodSection = Field(examples=["{method: ..., backend: ..., params: {}}"])
    navigation: Navigation  # default: sim with a world, else nav2
    robots: tuple[RobotSection, ...] = Field(min_length=1, strict=False)
    perception: PerceptionSection | None = Field(None, validate_default=True)  # default: the world's suite's
    security: SecuritySection
    safety: FileRelativePath | None = None  # the home's safety policy (a coteam-safety/1 file, coteam.home.safety)
    serve: ServeSection | None = None  # a serving team: tasks given while it runs
    composed: bool = Field(False, description=COMPOSED)
    _source: str = PrivateAttr("<config>")

    def model_post_init(self, context: Any) -> None:
        if context:
            self._source = context["source"]

    @classmethod
    def _defaults(cls, data: dict[str, Any]) -> dict[str, Any]:
        if isinstance(data.get("perception"), str):  # the shorthand `perception: aruco`
            data = {**data, "perception": {"detector": data["perception"]}}
        return {"navigation": "sim" if "world" in data else "nav2", "security": {}, **data}

    @field_validator("team")
    @classmethod
    def _seeing_all_needs_a_world(cls, team: TeamMethodSection, info: ValidationInfo) -> TeamMethodSection:
        from coteam.registry import observes_world

        if "world" in info.data and info.data["world"] is None and observes_world(team.method, team.switches()):
            raise ProblemAt(
                ("params", "full_observability"),
                f"{team.method} sees the whole world, which only the simulator shows: false on robots",
            )
        return team

    @field_validator("task")
    @classmethod
    def _task_without_a_world(cls, task: TaskSection | None, info: ValidationInfo) -> TaskSection | None:
        if "world" not in info.data:  # the world is wrong, which says more
            return task
        if info.data["world"] is not None and task is not None:
            raise ValueError("only without a world (with a world, world.suite and world.episode are the task)")
        if info.data["world"] is None and task is None:
            raise ValueError("required without a world (name the task definition: {suite: ..., episode: ...})")
        return task

    @field_validator("safety")
    @classmethod
    def _a_policy(cls, path: str | None, info: ValidationInfo) -> str | None:
        from coteam.home.world_file import load_safety_policy

        if path is None:
            return path
        task = info.data.get("task")
        world_file = task.world if task is not None else None
        if world_file is not None and world_file.safety is not None:
            raise ValueError(f"{Path(task.world_file).name} has its own safety: section: keep one policy")
        load_safety_policy(path)  # a file that cannot be read, or no policy, is said here, before any node starts
        return path

    @field_validator("serve")
    @classmethod
    def _serving_robots(cls, serve: ServeSection | None, info: ValidationInfo) -> ServeSection | None:
        from coteam.registry import method_class

        if serve is None:
            return serve
        if info.data.get("world") is not None:
            raise ValueError("only without a world: a serving team is robots (or their twin) in a home")
        team = info.data.get("team")
        if team is not None and method_class(team.method).centralised:
            raise ValueError(f"{team.method} plans centrally: a serving team needs a method of per-robot planners")
        return serve

    @field_validator("twin")
    @classmethod
    def _twin_without_a_world(cls, twin: TwinSection | None, info: ValidationInfo) -> TwinSection | None:
        if twin is not None and info.data.get("world") is not None:
            raise ValueError("only without a world: the twin stands in for real robots, the world is the simulator")
        return twin

    @field_validator("navigation")
    @classmethod
    def _nav2_without_a_world(cls, navigation: str, info: ValidationInfo) -> str:
        if "world" in info.data and info.data["world"] is None and navigation != "nav2":
            raise ValueError("must be nav2 without a world (sim navigation needs the simulator)")
        return navigation

    @field_validator("robots")
    @classmethod
    def _distinct_robots(cls, robots: tuple[RobotSection, ...], info: ValidationInfo) -> tuple[RobotSection, ...]:
        for key in ("name", "namespace"):
            values = [getattr(r, key) for r in robots]
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                raise ValueError(f"duplicate {key}: {', '.join(dupes)}")
        task = info.data.get("task")
        world_file = task.world if task is not None else None
        if world_file is not None:
            twice = [r.name for r in robots if r.capabilities is not None and r.name in world_file.capabilities]
            if twice:
                raise ValueError(
                    f"{twice[0]}'s capabilities are in {Path(task.world_file).name} too: describe each body once"
                )
            names = {r.name for r in robots}
            expected = {a.name for a in world_file.scene.agent_starts}
            if names != expected:
                raise ValueError(
                    f"the robots of {Path(task.world_file).name} are {', '.join(sorted(expected))}; "
                    f"got {', '.join(sorted(names))}"
                )
        twin = info.data.get("twin")
        unknown = sorted(set(twin.robots) - {r.name for r in robots}) if twin is not None else []
        if unknown:
            raise ValueError(f"twin.robots names {', '.join(unknown)}, who is not in robots")
        if info.data.get("world") is not None and any(r.capabilities is not None for r in robots):
            raise ValueError("capabilities only on robots (a simulated world's robots are the benchmark's)")
        twin_of_a_suite = info.data.get("twin") is not None and task is not None and task.suite is not None
        if info.data.get("world") is not None or twin_of_a_suite:
            from coteam.domain.world import AGENT_NAMES

            names = [r.name for r in robots]
            expected = list(AGENT_NAMES[: len(robots)])
            if len(robots) > len(AGENT_NAMES) or names != expected:
                raise ValueError(
                    f"with a simulated suite episode the robots are its agents, in order: {', '.join(expected)} "
                    f"(at most {len(AGENT_NAMES)}); got {', '.join(names)}"
                )
        return robots

    @field_validator("perception")
    @classmethod
    def _perception_of_the_world(
        cls, perception: PerceptionSection | None, info: ValidationInfo
    ) -> PerceptionSection | None:
        if "world" not in info.data:
            return perception
        world = info.data["world"]
        if world is None:
            if perception is not None:
                task = info.data.get("task")
                perception.check_hardware_files(world_file=task is not None and task.world_file is not None)
            return perception
        if perception is None:  # a visual suite sees through cameras
            from coteam_sim.suites import get_suite

            detector = get_suite(world.suite).episodes()[0].perception
            return PerceptionSection(detector=detector).in_simulation() if detector else None
        return perception.in_simulation()

    @property
    def source(self) -> str:
        """The file the config was read from (``<config>`` when unnamed)."""
        return self._source

    @property
    def episode_ref(self) -> TaskSection:
        """Where the task comes from: the simulated world, or the hardware ``task:`` section."""
        ref = self.world or self.task
        assert ref is not None  # guaranteed by validation
        return ref

    @property
    def safety_path(self) -> str | None:
        """The file holding the home's safety policy: the team file's ``safety:``, or the world file when its
        ``safety:`` section has one; None without a policy."""
        world = self.task.world if self.task is not None else None
        if world is not None and world.safety is not None:
            return str(world.path)
        return self.safety

    def composes(self, robot: RobotSection) -> bool:
        """Whether ``robot``'s nodes run in one process: its own ``composed``, else the file's."""
        return self.composed if robot.composed is None else robot.composed

    @property
    def robot_names(self) -> list[str]:
        return [r.name for r in self.robots]

    @property
    def capabilities(self) -> dict[str, RobotCapabilities]:
        """Every robot's body: the team file's ``capabilities``, else its world file's, else the defaults."""
        world = self.task.world if self.task is not None else None
        described = world.capabilities if world is not None else {}
        return {r.name: r.capabilities or described.get(r.name) or RobotCapabilities() for r in self.robots}

    @property
    def rest_rooms(self) -> dict[str, str]:
        """The room each robot returns to between a serving team's tasks (its world file's ``rest``); a robot not
        named keeps still where it stopped."""
        world = self.task.world if self.task is not None else None
        return world.rest_rooms if world is not None else {}

    @property
    def time_limit_s(self) -> float | None:
        """A hardware task's time limit (its world file's); None without one."""
        world = self.task.world if self.task is not None else None
        return world.time_limit_s if world is not None else None


# ----------------------------------------------------------------------------------------------------------------
# Loading


class _NoDuplicateKeysLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _NoDuplicateKeysLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_NoDuplicateKeysLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_config(path: str | os.PathLike[str]) -> TeamConfig:
    """Read and validate a team YAML file (see the module docstring for the schema)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"team config not found: {path}")
    data = read_yaml(path, ConfigError, _NoDuplicateKeysLoader)
    return parse_config(data, source=str(path))


def parse_config(data: Any, source: str = "<config>") -> TeamConfig:
    """Validate an already-parsed YAML document (``source`` names it in error messages; relative paths are
    relative to its folder)."""
    try:
        return TeamConfig.model_validate(data, context={"source": source})
    except ValidationError as exc:
        raise ConfigError(f"{source}: {first_problem(exc, schema=TeamConfig)}") from None
