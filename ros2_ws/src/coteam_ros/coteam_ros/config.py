"""The one loader of team YAML files, shared by ``coteam launch`` (pip installs) and the ``ros2 launch`` files.

A file describes one team run::

    world:            # the simulator; omit it (or write null) on hardware
      suite: cwah-test      # a coteam_sim suite (`coteam suites`)
      episode: 0
      seed: 0
      mode: lockstep        # lockstep | realtime
      tick_hz: 10.0         # realtime only: simulator steps per second
      scene: my_scene.json  # optional: a saved scene (coteam.scene_io) instead of the episode (path relative
                            #   to this file); suite and episode then only label the run
    task:             # hardware only (forbidden with a world, whose suite/episode define the task):
      suite: cwah-test      #   the task definition (goal, horizon) is episode `episode` of `suite`
      episode: 0
      seed: 0               #   optional, default 0: seeds the methods' random choices
    team:
      method: pce           # `coteam methods`
      backend: symbolic     # symbolic | llm
      params: {}            # method hyper-parameters, as `coteam run --set key=value`
      llm:                  # optional, backend llm only: a local model (the local-llm extra) started by
        local: true         #   `coteam launch` on loopback, one per robot (share: robot) or one for all
        share: robot        #   (share: machine); model: a GGUF path (default: the packaged Gemma 3 270M)
    navigation: sim   # sim (the simulator's navigator) | nav2 (each robot's Nav2); default: sim with a world, else nav2
    robots:
      - name: alice
        namespace: /alice   # default "/" + name
        remap: {}           # node-level remappings, e.g. {camera/image_raw: /alice/camera/color/image_raw}
        base_frame: alice/base_link   # hardware: the robot's base frame on /tf (default "<name>/base_link")
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
    security:         # optional; signed team messages (coteam.signing), on by default
      sign: true            # each planner signs what it sends and believes only signed, new messages of the team
      keystore: keys        # `coteam keys init CONFIG` makes it (relative to this file); with a world a missing
                            #   keystore is made at launch, on hardware it must exist
      max_age_s: 120        # a message signed longer ago than this is refused (a replay of an earlier run)

:func:`load_config` validates strictly (unknown keys, wrong types and unknown names raise :class:`ConfigError`
naming the file and the key); :func:`node_list` turns a config into the nodes to start. ROS parameter values are only
``bool``, ``int``, ``float``, ``str`` or non-empty lists of one of them (launch_ros rejects empty lists and rcl
drops them), so mappings travel as JSON strings (``params_json``) and an empty ``teammates`` list is left out (a
one-robot team).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from coteam.signing import DEFAULT_MAX_AGE_S, PUBLIC_KEYS

__all__ = [
    "ConfigError",
    "MethodConfig",
    "NodeSpec",
    "PerceptionConfig",
    "RobotConfig",
    "SecurityConfig",
    "TaskConfig",
    "TeamConfig",
    "WorldConfig",
    "load_config",
    "node_list",
    "parse_config",
    "prepare_keystore",
    "ros_args",
    "write_params_file",
]

MODES = ("lockstep", "realtime")
DETECTORS = ("aruco", "color", "onnx")  # what the perception node runs on camera images (YAML and node parameter)
DETECTOR_KEYS = {  # the perception keys of each detector
    "aruco": ("markers", "marker_size_m", "object_depth_m"),
    "color": ("colours",),
    "onnx": ("model", "classes"),
}
NAVIGATION = ("sim", "nav2")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")  # a robot name: one ROS name token
_NAMESPACE = re.compile(r"^/([A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*)?$")
_TOPIC = re.compile(r"^(~/|/)?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$")

ParamValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str]


class ConfigError(ValueError):
    """A team YAML file is malformed; the message names the file and the key."""


# ----------------------------------------------------------------------------------------------------------------
# Typed configuration


@dataclass(frozen=True)
class WorldConfig:
    suite: str
    episode: int = 0
    seed: int = 0
    mode: str = "lockstep"
    tick_hz: float = 10.0
    scene: str = ""  # a saved scene (coteam.scene_io JSON) run instead of the suite's episode; absolute path


@dataclass(frozen=True)
class TaskConfig:
    suite: str
    episode: int = 0
    seed: int = 0


@dataclass(frozen=True)
class LocalModelConfig:
    """``team.llm``: the local model ``coteam launch`` serves to the planners (see the module docstring)."""

    share: str = "robot"  # robot: one server per robot | machine: one server for the whole team
    model: str | None = None  # GGUF file (relative to the YAML file); None = the packaged Gemma 3 270M


@dataclass(frozen=True)
class MethodConfig:
    method: str
    backend: str = "symbolic"
    params: Mapping[str, Any] = field(default_factory=dict)
    local_llm: LocalModelConfig | None = None  # team.llm.local: true

    def switches(self) -> dict[str, Any]:
        """The method's switches as the planners run them: ``params`` plus the backend (methods with roles)."""
        from coteam.registry import method_class

        if "backend" in method_class(self.method).Config.switch_names():
            return {**self.params, "backend": self.backend}
        return dict(self.params)


@dataclass(frozen=True)
class SecurityConfig:
    """``security``: signed team messages (see the module docstring)."""

    keystore: str  # absolute path of the team's keystore directory
    sign: bool = True
    max_age_s: float = DEFAULT_MAX_AGE_S

    def private_key(self, robot: str) -> Path:
        return Path(self.keystore) / f"{robot}.key"

    @property
    def public_keys(self) -> Path:
        return Path(self.keystore) / PUBLIC_KEYS


@dataclass(frozen=True)
class PerceptionConfig:
    """``perception``: detection in the robots' cameras (see the module docstring)."""

    detector: str
    markers: str = ""  # aruco: absolute path of the marker catalogue; "" with a world (the simulator's markers)
    marker_size_m: float = 0.0  # aruco: 0 = unknown (a detection is the marker's centre)
    object_depth_m: float = 0.0
    colours: str = ""  # color: absolute path of the class colours; "" with a world (the simulator's)
    model: str = ""  # onnx: absolute path of the model
    classes: tuple[str, ...] = ()  # onnx: the model's class names, in its output order


@dataclass(frozen=True)
class RobotConfig:
    name: str
    namespace: str
    remap: Mapping[str, str] = field(default_factory=dict)
    base_frame: str = ""  # "" = "<name>/base_link"


@dataclass(frozen=True)
class TeamConfig:
    team: MethodConfig
    navigation: str
    robots: tuple[RobotConfig, ...]
    security: SecurityConfig
    world: WorldConfig | None = None
    task: TaskConfig | None = None
    perception: PerceptionConfig | None = None
    source: str = "<config>"

    @property
    def episode_ref(self) -> WorldConfig | TaskConfig:
        """Where the task comes from: the simulated world, or the hardware ``task:`` section."""
        ref = self.world or self.task
        assert ref is not None  # guaranteed by parse_config
        return ref

    @property
    def robot_names(self) -> list[str]:
        return [r.name for r in self.robots]


@dataclass(frozen=True)
class NodeSpec:
    """One node to start: the same fields for ``launch_ros.actions.Node`` and for ``coteam launch``."""

    name: str
    executable: str
    namespace: str
    parameters: dict[str, ParamValue]
    remappings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def fqn(self) -> str:
        """Fully-qualified node name, e.g. ``/alice/planner`` or ``/sim_bridge``."""
        return f"{self.namespace.rstrip('/')}/{self.name}"

    @property
    def label(self) -> str:
        """``planner@/alice``: how the launcher prefixes the node's output."""
        return f"{self.name}@{self.namespace}"


# ----------------------------------------------------------------------------------------------------------------
# Loading and validation


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _Reader:
    """Checks one mapping of the file; every error names ``<file>: <key path>``."""

    def __init__(self, source: str, data: Any, where: str, allowed: tuple[str, ...]):
        self.source = source
        self.where = where
        if not isinstance(data, Mapping):
            raise self.error(where or "top level", f"expected a mapping, got {_kind(data)}")
        unknown = [k for k in data if k not in allowed]
        if unknown:
            raise self.error(self.key(str(unknown[0])), f"unknown key (allowed here: {', '.join(allowed)})")
        self.data = data

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {key}: {problem}")

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def text(self, name: str, default: str | None = None, choices: tuple[str, ...] | None = None) -> str:
        value = self.data.get(name)
        if value is None:  # absent or null: the default
            value = default
        if value is None:
            raise self.error(self.key(name), "required")
        if not isinstance(value, str) or not value:
            raise self.error(self.key(name), f"expected a non-empty string, got {_kind(value)}")
        if choices is not None and value not in choices:
            raise self.error(self.key(name), f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, name: str, default: int, minimum: int = 0) -> int:
        value = self.data.get(name)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(self.key(name), f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.error(self.key(name), f"must be >= {minimum}, got {value}")
        return value

    def number(self, name: str, default: float) -> float:
        value = self.data.get(name)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(self.key(name), f"expected a number, got {_kind(value)}")
        value = float(value)  # YAML `10` is an int; ROS would then refuse it for a double parameter
        if not math.isfinite(value) or value <= 0:
            raise self.error(self.key(name), f"must be a positive number, got {value}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, bool | int | float):
        return f"{type(value).__name__} {value!r}"
    return f"a {type(value).__name__}"


def load_config(path: str | os.PathLike[str]) -> TeamConfig:
    """Read and validate a team YAML file (see the module docstring for the schema)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"team config not found: {path}")
    from coteam_harness.yamlfile import load_yaml

    try:
        data = load_yaml(path, _StrictLoader)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return parse_config(data, source=str(path))


def parse_config(data: Any, source: str = "<config>") -> TeamConfig:
    """Validate an already-parsed YAML document (``source`` names it in error messages)."""
    top = _Reader(source, data, "", ("world", "task", "team", "navigation", "robots", "perception", "security"))

    world = _parse_world(top, source) if top.has("world") else None
    task = _parse_task(top, source) if top.has("task") else None
    if world is not None and task is not None:
        raise top.error("task", "only without a world (with a world, world.suite and world.episode are the task)")
    if world is None and task is None:
        raise top.error("task", "required without a world (name the task definition: {suite: ..., episode: ...})")

    team = _parse_team(top, source)
    navigation = top.text("navigation", "sim" if world else "nav2", NAVIGATION)
    if world is None and navigation != "nav2":
        raise top.error("navigation", "must be nav2 without a world (sim navigation needs the simulator)")
    robots = _parse_robots(top, source)
    if world is not None:
        from coteam.world import AGENT_NAMES

        expected = list(AGENT_NAMES[: len(robots)])
        if len(robots) > len(AGENT_NAMES) or [r.name for r in robots] != expected:
            raise top.error(
                "robots",
                f"with a world the robots are the simulator's agents, in order: {', '.join(expected)} "
                f"(at most {len(AGENT_NAMES)}); got {', '.join(r.name for r in robots)}",
            )
    security = _parse_security(top, source)
    perception = _parse_perception(top, source, world)
    return TeamConfig(
        team=team,
        navigation=navigation,
        robots=robots,
        security=security,
        world=world,
        task=task,
        perception=perception,
        source=source,
    )


def _parse_perception(top: _Reader, source: str, world: WorldConfig | None) -> PerceptionConfig | None:
    data = top.data.get("perception")
    if data is None:
        if world is None:
            return None
        from coteam_sim.suites import get_suite

        detector = get_suite(world.suite).episodes()[0].perception  # a visual suite sees through cameras
        return _sim_perception(detector) if detector else None
    if isinstance(data, str):
        data = {"detector": data}
    r = _Reader(source, data, "perception", ("detector", *(k for keys in DETECTOR_KEYS.values() for k in keys)))
    detector = r.text("detector", None, DETECTORS)
    for other, keys in DETECTOR_KEYS.items():
        for key in keys:
            if other != detector and r.has(key):
                raise r.error(r.key(key), f"only with detector {other}")
    if detector == "onnx":
        model = _existing_file(r, "model", source)
        classes = r.data.get("classes")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) and c for c in classes):
            raise r.error(r.key("classes"), "required: the model's class names in its output order, e.g. [apple, cup]")
        return PerceptionConfig(detector, model=model, classes=tuple(classes))
    if detector == "color":
        if world is not None:
            if r.has("colours"):
                raise r.error(r.key("colours"), "only on hardware (with a world, the simulator paints the classes)")
            return PerceptionConfig(detector)
        colours = _existing_file(r, "colours", source)
        from coteam.vision import load_class_colours

        try:
            load_class_colours(colours)
        except ValueError as exc:
            raise r.error(r.key("colours"), str(exc)) from None
        return PerceptionConfig(detector, colours=colours)
    if world is not None:
        if r.has("markers"):
            raise r.error(r.key("markers"), "only on hardware (with a world, the simulator prints the markers)")
        sim = _sim_perception(detector)
        return PerceptionConfig(
            detector, "", r.number("marker_size_m", sim.marker_size_m), r.number("object_depth_m", sim.object_depth_m)
        )
    if not r.has("markers"):
        raise r.error(r.key("markers"), "required on hardware: a YAML of the printed marker ids and their classes")
    markers = (Path(source).parent / r.text("markers")).resolve()
    from coteam.vision import MarkerCatalogue

    try:
        MarkerCatalogue.from_file(markers)
    except ValueError as exc:
        raise r.error(r.key("markers"), str(exc)) from None
    size = r.number("marker_size_m", math.inf) if r.has("marker_size_m") else 0.0
    depth = r.number("object_depth_m", math.inf) if r.has("object_depth_m") else 0.0
    return PerceptionConfig(detector, str(markers), size, depth)


def _existing_file(r: _Reader, key: str, source: str) -> str:
    """The absolute path of the file ``key`` names (relative to the team file), which must exist."""
    if not r.has(key):
        raise r.error(r.key(key), "required")
    path = (Path(source).parent / r.text(key)).resolve()
    if not path.is_file():
        raise r.error(r.key(key), f"no such file: {path}")
    return str(path)


def _sim_perception(detector: str) -> PerceptionConfig:
    """The simulator's markers: their size on an item's face, the item's centre half a cube behind."""
    from coteam_sim.camera import ITEM_SIZE_M, MARKER_SIZE_M

    return PerceptionConfig(detector, "", MARKER_SIZE_M, ITEM_SIZE_M / 2)


def _parse_security(top: _Reader, source: str) -> SecurityConfig:
    r = _Reader(source, top.data.get("security") or {}, "security", ("sign", "keystore", "max_age_s"))
    sign = r.data.get("sign", True)
    if not isinstance(sign, bool):
        raise r.error(r.key("sign"), f"expected true or false, got {_kind(sign)}")
    keystore = (Path(source).parent / r.text("keystore", "keys")).resolve()
    return SecurityConfig(keystore=str(keystore), sign=sign, max_age_s=r.number("max_age_s", DEFAULT_MAX_AGE_S))


def prepare_keystore(cfg: TeamConfig) -> None:
    """Make sure the planners of ``cfg`` can sign: with a world (one machine runs the whole simulated team) a missing
    keystore or key is made now; on hardware every robot's key and the team's public keys must exist already."""
    sec = cfg.security
    if not sec.sign:
        return
    from coteam.signing import init_keystore

    names = cfg.robot_names
    missing = [str(p) for p in [sec.public_keys, *map(sec.private_key, names)] if not p.is_file()]
    if not missing:
        return
    if cfg.world is None:
        raise ConfigError(
            f"{cfg.source}: security: no {missing[0]}; make the team's keys with `coteam keys init {cfg.source}` "
            "and give each robot its own"
        )
    init_keystore(sec.keystore, names)


def _check_episode(reader: _Reader, suite_name: str, episode: int) -> None:
    from coteam_sim.suites import get_suite

    try:
        suite = get_suite(suite_name)
    except KeyError as exc:
        raise reader.error(reader.key("suite"), str(exc.args[0])) from None
    if suite.fixed:
        count = len(suite.episodes())
        if episode >= count:
            raise reader.error(
                reader.key("episode"), f"{suite_name} has {count} episodes (0-{count - 1}), got {episode}"
            )


def _parse_world(top: _Reader, source: str) -> WorldConfig:
    r = _Reader(source, top.data["world"], "world", ("suite", "episode", "seed", "mode", "tick_hz", "scene"))
    scene = ""
    if r.data.get("scene") is not None:  # relative to the YAML file
        scene = str((Path(source).parent / r.text("scene")).resolve())
        if not Path(scene).is_file():
            raise r.error(r.key("scene"), f"no scene file {scene}")
        from coteam.scene_io import load_scene

        try:
            load_scene(scene)
        except ValueError as exc:
            raise r.error(r.key("scene"), str(exc)) from None
    world = WorldConfig(
        suite=r.text("suite"),
        episode=r.integer("episode", 0),
        seed=r.integer("seed", 0),
        mode=r.text("mode", "lockstep", MODES),
        tick_hz=r.number("tick_hz", 10.0),
        scene=scene,
    )
    _check_episode(r, world.suite, world.episode)
    return world


def _parse_task(top: _Reader, source: str) -> TaskConfig:
    r = _Reader(source, top.data["task"], "task", ("suite", "episode", "seed"))
    task = TaskConfig(suite=r.text("suite"), episode=r.integer("episode", 0), seed=r.integer("seed", 0))
    _check_episode(r, task.suite, task.episode)
    return task


def _parse_team(top: _Reader, source: str) -> MethodConfig:
    if not top.has("team"):
        raise top.error("team", "required (team: {method: ..., backend: ..., params: {}})")
    r = _Reader(source, top.data["team"], "team", ("method", "backend", "params", "llm"))
    from coteam.llm import backends
    from coteam.registry import method_class, method_names

    method = r.text("method", None, tuple(method_names()))
    backend = r.text("backend", "symbolic", tuple(backends()))
    params = r.data.get("params") or {}
    if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
        raise r.error(r.key("params"), f"expected a mapping of hyper-parameters, got {_kind(params)}")
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise r.error(r.key("params"), f"must be plain JSON-like values: {exc}") from None
    if "backend" in method_class(method).Config.switch_names():
        if r.has("backend") and params.get("backend", backend) != backend:
            raise r.error(r.key("params"), f"backend {params['backend']!r} contradicts team.backend {backend!r}")
        backend = params.get("backend", backend)
    elif backend != "symbolic":
        raise r.error(r.key("backend"), f"{method} has no LLM roles: it runs without a backend")
    local = _parse_local_model(r, source, backend)
    team = MethodConfig(
        method=method, backend=backend, params={k: v for k, v in params.items() if k != "backend"}, local_llm=local
    )
    try:
        method_class(method).Config.parse_switches(method, team.switches())
    except ValueError as exc:
        raise r.error(r.key("params"), str(exc)) from None
    return team


def _parse_local_model(team: _Reader, source: str, backend: str) -> LocalModelConfig | None:
    if not team.has("llm") or team.data["llm"] is None:
        return None
    r = _Reader(source, team.data["llm"], team.key("llm"), ("local", "share", "model"))
    local = r.data.get("local", False)
    if not isinstance(local, bool):
        raise r.error(r.key("local"), f"expected true or false, got {_kind(local)}")
    if not local:
        return None
    if backend != "llm":
        raise r.error(r.key("local"), f"a local model serves the llm backend, but team.backend is {backend!r}")
    share = r.text("share", "robot", ("robot", "machine"))
    model = r.text("model") if r.data.get("model") is not None else None
    if model is not None:
        path = Path(model) if Path(model).is_absolute() else Path(source).parent / model
        if not path.is_file():
            raise r.error(r.key("model"), f"model file {path} does not exist")
        model = str(path.resolve())
    return LocalModelConfig(share=share, model=model)


def _parse_robots(top: _Reader, source: str) -> tuple[RobotConfig, ...]:
    items = top.data.get("robots")
    if not isinstance(items, list) or not items:
        raise top.error("robots", f"expected a non-empty list of robots, got {_kind(items)}")
    robots: list[RobotConfig] = []
    for i, item in enumerate(items):
        r = _Reader(source, item, f"robots[{i}]", ("name", "namespace", "remap", "base_frame"))
        name = r.text("name")
        if not _NAME.match(name):
            raise r.error(r.key("name"), f"{name!r} is not a valid ROS name (letters, digits, _)")
        namespace = r.text("namespace", "/" + name)
        if not _NAMESPACE.match(namespace) or namespace == "/":
            raise r.error(r.key("namespace"), f"{namespace!r} is not an absolute ROS namespace like /{name}")
        remap = r.data.get("remap") or {}
        if not isinstance(remap, Mapping):
            raise r.error(r.key("remap"), f"expected a mapping from: to, got {_kind(remap)}")
        for src, dst in remap.items():
            for what in (src, dst):
                if not isinstance(what, str) or not _TOPIC.match(what):
                    raise r.error(f"{r.key('remap')}.{src}", f"{what!r} is not a valid ROS topic/action name")
        base_frame = r.text("base_frame", f"{name}/base_link")
        if not _TOPIC.match(base_frame.lstrip("/")):
            raise r.error(r.key("base_frame"), f"{base_frame!r} is not a valid frame name")
        robots.append(RobotConfig(name=name, namespace=namespace, remap=dict(remap), base_frame=base_frame))
    for key, values in (("name", [r.name for r in robots]), ("namespace", [r.namespace for r in robots])):
        dupes = sorted({v for v in values if values.count(v) > 1})
        if dupes:
            raise top.error("robots", f"duplicate {key}: {', '.join(dupes)}")
    return tuple(robots)


# ----------------------------------------------------------------------------------------------------------------
# Nodes


def model_groups(cfg: TeamConfig) -> list[tuple[str, ...]]:
    """The robots served by each local model server of ``team.llm`` (none without it)."""
    local = cfg.team.local_llm
    if local is None:
        return []
    names = tuple(cfg.robot_names)
    return [(n,) for n in names] if local.share == "robot" else [names]


def node_list(cfg: TeamConfig, endpoints: Mapping[str, Mapping[str, str]] | None = None) -> list[NodeSpec]:
    """The nodes of a team run, in start order: the ``sim_bridge`` (with a world), then per robot its
    ``robot_state`` (without a world), ``perception``, ``planner`` and ``executor`` in the robot's namespace.
    ``endpoints`` (robot -> ``{"base_url", "model"}``) point each planner at its model server."""
    ref = cfg.episode_ref
    episode: dict[str, ParamValue] = {"suite": ref.suite, "episode": ref.episode, "seed": ref.seed}
    if cfg.world is not None and cfg.world.scene:
        episode["scene_path"] = cfg.world.scene
    names = cfg.robot_names
    specs: list[NodeSpec] = []
    if cfg.world is not None:
        w = cfg.world
        specs.append(
            NodeSpec(
                "sim_bridge",
                "sim_bridge",
                "/",
                {
                    **episode,
                    "mode": w.mode,
                    "tick_hz": w.tick_hz,
                    "robots": list(names),
                    "namespaces": [r.namespace for r in cfg.robots],
                    "method": cfg.team.method,
                    "params_json": json.dumps(cfg.team.switches(), sort_keys=True),
                    "cameras": cfg.perception is not None,
                },
            )
        )
    perception: dict[str, ParamValue] = {}
    if cfg.perception is not None:
        pc = cfg.perception
        perception = {"detector": pc.detector, "robots": list(names), **episode}
        if cfg.world is not None:  # the bridge's status goes through perception, which adds what the cameras saw
            perception["status_from_cameras"] = True
        if pc.markers:
            perception["markers"] = pc.markers
        if pc.marker_size_m:
            perception["marker_size_m"] = pc.marker_size_m
        if pc.object_depth_m:
            perception["object_depth_m"] = pc.object_depth_m
        if pc.colours:
            perception["colours"] = pc.colours
        if pc.model:
            perception.update(model=pc.model, classes=list(pc.classes))
    for robot in cfg.robots:
        remappings = list(robot.remap.items())
        teammates = [n for n in names if n != robot.name]
        planner: dict[str, ParamValue] = {"robot": robot.name, "robots": list(names)}
        if teammates:  # an empty list is not a valid ROS parameter value (one-robot team: left out)
            planner["teammates"] = teammates
        planner.update(
            method=cfg.team.method,
            backend=cfg.team.backend,
            params_json=json.dumps({**cfg.team.params, **(endpoints or {}).get(robot.name, {})}, sort_keys=True),
            **episode,
        )
        if cfg.security.sign:
            planner.update(
                signing_key=str(cfg.security.private_key(robot.name)),
                team_keys=str(cfg.security.public_keys),
                max_message_age_s=cfg.security.max_age_s,
            )
        if cfg.world is None:  # a real robot: its status comes from its odometry and detector
            planner["message_delivery"] = "arrival"
            specs.append(
                NodeSpec(
                    "robot_state",
                    "robot_state",
                    robot.namespace,
                    {"robot": robot.name, "robots": list(names), "base_frame": robot.base_frame, **episode},
                    list(remappings),
                )
            )
        specs += [
            NodeSpec(
                "perception",
                "perception",
                robot.namespace,
                {"robot": robot.name, **perception},
                list(remappings),
            ),
            NodeSpec("planner", "planner", robot.namespace, planner, list(remappings)),
            NodeSpec(
                "executor",
                "executor",
                robot.namespace,
                {"robot": robot.name, "robots": list(names), "navigation": cfg.navigation, **episode},
                list(remappings),
            ),
        ]
    for spec in specs:
        for key, value in spec.parameters.items():
            _check_param(spec, key, value)
    return specs


def _check_param(spec: NodeSpec, key: str, value: Any) -> None:
    ok = isinstance(value, bool | int | float | str)
    if isinstance(value, list) and value:
        kinds = {bool if isinstance(v, bool) else type(v) for v in value}
        ok = len(kinds) == 1 and kinds <= {bool, int, float, str}
    if not ok:
        raise TypeError(f"{spec.label}: parameter {key}={value!r} is not a valid ROS parameter value")


# ----------------------------------------------------------------------------------------------------------------
# Command-line arguments for a node process (what ros2 launch does for launch_ros.actions.Node)


def _yaml_scalar(value: ParamValue) -> str:
    """A value as rcl's YAML parser reads it back with the same type (strings quoted when ambiguous)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return text.removesuffix("\n...\n").strip()  # a plain scalar document ends with "..."


def write_params_file(spec: NodeSpec, directory: str | os.PathLike[str], extra: Mapping[str, ParamValue] = ()) -> Path:
    """Write ``<fqn>: {ros__parameters: ...}`` for one node; returns the file's path."""
    params = {**spec.parameters, **dict(extra)}
    path = Path(directory) / f"{spec.fqn.strip('/').replace('/', '__')}.params.yaml"
    path.write_text(yaml.safe_dump({spec.fqn: {"ros__parameters": params}}, sort_keys=False, allow_unicode=True))
    return path


def ros_args(
    spec: NodeSpec,
    params_dir: str | os.PathLike[str] | None = None,
    extra: Mapping[str, ParamValue] = (),
) -> list[str]:
    """``--ros-args`` for a node process: name, namespace, parameters, remappings.

    With ``params_dir`` the parameters go to a per-node params file there (``--params-file``, as ros2 launch
    does); without it each is a ``-p key:=value`` with a YAML value that rcl parses back to the same type.
    ``extra`` adds parameters (the launcher's ``results_path``).
    """
    args = ["--ros-args", "-r", f"__node:={spec.name}", "-r", f"__ns:={spec.namespace}"]
    params = {**spec.parameters, **dict(extra)}
    if params_dir is not None:
        args += ["--params-file", str(write_params_file(spec, params_dir, extra))]
    else:
        for key, value in params.items():
            args += ["-p", f"{key}:={_yaml_scalar(value)}"]
    for src, dst in spec.remappings:
        args += ["-r", f"{src}:={dst}"]
    return args
