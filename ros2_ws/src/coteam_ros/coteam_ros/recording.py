"""Record ROS 2 topics to an MCAP file that Foxglove Studio (and rosbag2 tools) can open.

Pure Python: rclpy delivers each message as serialized CDR bytes (``raw=True``) and the ``mcap`` package
writes them unchanged, with schema encoding ``ros2msg`` (the full ``.msg`` text of the type and all its
dependencies, in the concatenated form rosbag2 writes) and message encoding ``cdr``. No rosbag2 needed.

Run alone::

    python -m coteam_ros.recording --out run.mcap [--topics /team/messages,/alice/*]

Stop with SIGINT (Ctrl-C) or SIGTERM: the file is finished (summary + footer) and the exit code is 0.
See docs/recording.md.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import functools
import importlib
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    # A launcher may stop the recorder while the slow imports below still run: remember the signal here,
    # and main() then still writes a valid (empty) file and exits 0.
    _early_stop: threading.Event | None = threading.Event()
    signal.signal(signal.SIGINT, lambda signum, frame, stop=_early_stop: stop.set())
    signal.signal(signal.SIGTERM, lambda signum, frame, stop=_early_stop: stop.set())
else:
    _early_stop = None

import rclpy
from mcap.well_known import MessageEncoding, Profile, SchemaEncoding
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

__all__ = ["TopicRecorder", "get_message_class", "main", "message_definition", "normalize_type_name"]

# Depth of each recording subscription's queue; the writer keeps up easily, this only absorbs bursts.
QUEUE_DEPTH = 100

# --------------------------------------------------------------------------------------------------
# Message definitions (schema data) from the .msg files installed in the ament prefix (the venv)
# --------------------------------------------------------------------------------------------------

_SEPARATOR = "=" * 80
_BUILTIN_TYPES = frozenset(
    {
        "bool",
        "byte",
        "char",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "string",
        "wstring",
        # ROS 1 leftovers some .msg files may still use
        "time",
        "duration",
    }
)
# IDL names used by rosidl_generator_py's get_fields_and_field_types() -> .msg names
_IDL_TO_MSG = {"boolean": "bool", "octet": "byte", "float": "float32", "double": "float64"}


def normalize_type_name(type_name: str) -> tuple[str, str, str]:
    """``pkg/msg/Type`` or ``pkg/Type`` -> ``(pkg, "msg", Type)`` (interface kind kept if given)."""
    parts = type_name.strip().split("/")
    if len(parts) == 3 and all(parts):
        return parts[0], parts[1], parts[2]
    if len(parts) == 2 and all(parts):
        return parts[0], "msg", parts[1]
    raise ValueError(f"not a ROS 2 message type name: {type_name!r}")


def get_message_class(type_name: str) -> Any:
    """Import the Python class of ``pkg/msg/Type`` (like ``rosidl_runtime_py.utilities.get_message``).

    Also resolves action-internal types such as ``pkg/action/Fibonacci_FeedbackMessage``.
    """
    pkg, kind, name = normalize_type_name(type_name)
    module = importlib.import_module(f"{pkg}.{kind}")
    cls = getattr(module, name, None)
    if cls is None and kind in ("action", "srv") and "_" in name:
        # e.g. Fibonacci_FeedbackMessage -> Fibonacci.Impl.FeedbackMessage, Fibonacci_Goal -> Fibonacci.Goal
        base, _, member = name.partition("_")
        owner = getattr(module, base, None)
        for holder in (owner, getattr(owner, "Impl", None)):
            cls = getattr(holder, member, None) if holder is not None else None
            if cls is not None:
                break
    if cls is None:
        raise ImportError(f"no message class {name} in module {pkg}.{kind}")
    return cls


def _share_dirs(pkg: str) -> list[Path]:
    """Candidate ``share/<pkg>`` directories: the ament index if configured, then this interpreter's prefix."""
    dirs: list[Path] = []
    if os.environ.get("AMENT_PREFIX_PATH"):
        try:
            from ament_index_python.packages import get_package_share_directory

            dirs.append(Path(get_package_share_directory(pkg)))
        except Exception:  # package not in the index, or ament_index_python missing
            pass
        dirs.extend(Path(p) / "share" / pkg for p in os.environ["AMENT_PREFIX_PATH"].split(os.pathsep) if p)
    # The PyPI wheels install into the venv, which is the ament prefix even when AMENT_PREFIX_PATH is unset.
    dirs.append(Path(sys.prefix) / "share" / pkg)
    return list(dict.fromkeys(dirs))


def _find_msg_file(pkg: str, kind: str, name: str) -> Path | None:
    for share in _share_dirs(pkg):
        candidate = share / kind / f"{name}.msg"
        if candidate.is_file():
            return candidate
    return None


def _idl_type_to_msg(idl: str) -> str:
    """One ``get_fields_and_field_types()`` value in .msg syntax: ``sequence<string<5>, 3>`` -> ``string<=5[<=3]``."""
    m = re.fullmatch(r"sequence<(.+?)(?:,\s*(\d+))?>", idl)
    if m:
        bound = f"<={m.group(2)}" if m.group(2) else ""
        return f"{_idl_type_to_msg(m.group(1))}[{bound}]"
    m = re.fullmatch(r"(.+)\[(\d+)\]", idl)
    if m:
        return f"{_idl_type_to_msg(m.group(1))}[{m.group(2)}]"
    m = re.fullmatch(r"(w?string)<(\d+)>", idl)
    if m:
        return f"{m.group(1)}<={m.group(2)}"
    return _IDL_TO_MSG.get(idl, idl)


def _definition_from_class(pkg: str, kind: str, name: str) -> str:
    """Fallback when no .msg file is installed (e.g. action-internal types): rebuild fields from the class.

    Constants are not recoverable this way; they do not affect the CDR layout.
    """
    cls = None
    for candidate in dict.fromkeys((kind, "msg", "action", "srv")):  # a field type `pkg/T` names no kind
        try:
            cls = get_message_class(f"{pkg}/{candidate}/{name}")
            break
        except (ImportError, AttributeError):
            continue
    if cls is None:
        raise ImportError(f"no .msg file and no Python class for {pkg}/{kind}/{name}")
    return "\n".join(f"{_idl_type_to_msg(t)} {n}" for n, t in cls.get_fields_and_field_types().items()) + "\n"


def _field_dependencies(pkg: str, text: str) -> list[str]:
    """Complex field types referenced by a .msg text, as ``pkg/Type``, in order of appearance."""
    deps: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        type_token = line.split()[0]
        base = re.sub(r"\[[^\]]*\]$", "", type_token)  # arrays: [], [N], [<=N]
        base = re.sub(r"<=\d+$", "", base)  # bounded strings: string<=N
        if base in _BUILTIN_TYPES:
            continue
        if "/" in base:
            dep_pkg, _, dep_name = normalize_type_name(base)
        elif base == "Header" and _find_msg_file(pkg, "msg", "Header") is None:
            dep_pkg, dep_name = "std_msgs", "Header"
        else:
            dep_pkg, dep_name = pkg, base
        dep = f"{dep_pkg}/{dep_name}"
        if dep not in deps:
            deps.append(dep)
    return deps


@functools.cache
def _own_definition(pkg: str, kind: str, name: str) -> str:
    path = _find_msg_file(pkg, kind, name)
    if path is not None:
        return path.read_text(encoding="utf-8")
    return _definition_from_class(pkg, kind, name)


@functools.cache
def message_definition(type_name: str) -> str:
    """The complete ``ros2msg`` definition of a message type, as rosbag2 and Foxglove expect it.

    The type's own .msg text first, then for every (recursive) dependency a line of 80 ``=``, a line
    ``MSG: pkg/Type`` and that type's .msg text. Raises ``LookupError`` if a definition cannot be found.
    """
    pkg, kind, name = normalize_type_name(type_name)
    try:
        main_text = _own_definition(pkg, kind, name)
    except Exception as exc:
        raise LookupError(f"no message definition for {type_name}: {exc}") from exc
    parts = [main_text.rstrip("\n")]
    seen: set[str] = {f"{pkg}/{name}"}
    stack = list(reversed(_field_dependencies(pkg, main_text)))
    while stack:  # depth-first, each dependency once
        dep = stack.pop()
        if dep in seen:
            continue
        seen.add(dep)
        dep_pkg, _, dep_name = normalize_type_name(dep)
        try:
            text = _own_definition(dep_pkg, "msg", dep_name)
        except Exception as exc:
            raise LookupError(f"no message definition for {dep} (needed by {type_name}): {exc}") from exc
        parts.append(f"{_SEPARATOR}\nMSG: {dep}\n{text.rstrip(chr(10))}")
        stack.extend(reversed(_field_dependencies(dep_pkg, text)))
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------------------
# QoS matching
# --------------------------------------------------------------------------------------------------


def adapted_qos(publisher_qos: list[QoSProfile]) -> QoSProfile:
    """A subscription QoS that matches every given publisher (the rosbag2 "adaptive" rule).

    Reliable only if all publishers are reliable (a best-effort reader matches both kinds, a reliable one
    does not match best-effort writers). Transient-local only if all publishers are transient-local (a
    transient-local reader does not match volatile writers, a volatile reader never gets latched samples).
    """
    all_reliable = bool(publisher_qos) and all(q.reliability == ReliabilityPolicy.RELIABLE for q in publisher_qos)
    all_latched = bool(publisher_qos) and all(q.durability == DurabilityPolicy.TRANSIENT_LOCAL for q in publisher_qos)
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=QUEUE_DEPTH,
        reliability=ReliabilityPolicy.RELIABLE if all_reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if all_latched else DurabilityPolicy.VOLATILE,
    )


def qos_matches_all(sub_qos: QoSProfile, publisher_qos: list[QoSProfile]) -> bool:
    for q in publisher_qos:
        if sub_qos.reliability == ReliabilityPolicy.RELIABLE and q.reliability != ReliabilityPolicy.RELIABLE:
            return False
        if sub_qos.durability == DurabilityPolicy.TRANSIENT_LOCAL and q.durability != DurabilityPolicy.TRANSIENT_LOCAL:
            return False
    return True


def _qos_text(qos: QoSProfile) -> str:
    return f"{qos.reliability.name.lower()}/{qos.durability.name.lower()}"


# --------------------------------------------------------------------------------------------------
# The recorder node
# --------------------------------------------------------------------------------------------------


def _is_hidden(topic: str) -> bool:
    return any(part.startswith("_") for part in topic.split("/"))


def default_output_path() -> str:
    return time.strftime("coteam_%Y%m%d_%H%M%S.mcap")


@dataclass
class _Recorded:
    topic: str
    type_name: str
    channel_id: int
    qos: QoSProfile
    subscription: Any = None
    count: int = 0


class TopicRecorder(Node):
    """Subscribe to every (or every selected) topic and write the serialized messages to an MCAP file.

    Parameters: ``out`` (file path; default ``coteam_<date>_<time>.mcap`` in the working directory),
    ``topics`` (string array of names or fnmatch patterns such as ``/alice/*``; empty = every topic except
    hidden ones like ``/x/_action/feedback``), ``discovery_period_s`` (default 0.5).

    The file is finished by :meth:`close`, which runs on :meth:`destroy_node` and on shutdown of the node's
    rclpy context, so the MCAP summary and footer are always written on a clean stop.
    """

    def __init__(self, node_name: str = "coteam_recorder", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_parameter("out", "")
        self.declare_parameter("topics", Parameter.Type.STRING_ARRAY)
        self.declare_parameter("discovery_period_s", 0.5)

        out = self.get_parameter("out").value or default_output_path()
        topics_param = self.get_parameter_or("topics", Parameter("topics", Parameter.Type.STRING_ARRAY, []))
        patterns = [t.strip() for t in (topics_param.value or []) if t and t.strip()]
        self._patterns = [p if p.startswith("/") else "/" + p for p in patterns]
        period = float(self.get_parameter("discovery_period_s").value)
        if period <= 0:
            raise ValueError("discovery_period_s must be > 0")

        self.out_path = Path(out).expanduser().resolve()
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        if self.out_path.exists():
            self.get_logger().warning(f"overwriting {self.out_path}")
        self._lock = threading.Lock()
        self._file = open(self.out_path, "wb")  # noqa: SIM115 - closed in close()
        self._writer: McapWriter | None = McapWriter(self._file, compression=CompressionType.ZSTD)
        self._writer.start(profile=Profile.ROS2, library="coteam_ros.recording (mcap python)")
        self._schemas: dict[str, int] = {}
        self._recorded: dict[str, _Recorded] = {}
        self._ignored: set[tuple[str, str]] = set()

        self.context.on_shutdown(self.close)
        self._timer = self.create_timer(period, self._discover)
        self.get_logger().info(
            f"recording {'topics ' + ', '.join(self._patterns) if self._patterns else 'all topics'} to {self.out_path}"
        )
        self._discover()

    # ---- public API ------------------------------------------------------------------------------

    @property
    def recorded_topics(self) -> dict[str, str]:
        """Topic -> type of every topic subscribed so far."""
        return {t: r.type_name for t, r in self._recorded.items()}

    def message_counts(self) -> dict[str, int]:
        with self._lock:
            return {t: r.count for t, r in self._recorded.items()}

    @property
    def closed(self) -> bool:
        return self._writer is None

    def close(self) -> None:
        """Finish the MCAP file (summary, footer) and close it. Idempotent and thread-safe."""
        with self._lock:
            writer, self._writer = self._writer, None
            if writer is None:
                return
            try:
                writer.finish()
            finally:
                self._file.close()
            counts = {t: r.count for t, r in self._recorded.items()}
        total = sum(counts.values())
        summary = ", ".join(f"{t}: {n}" for t, n in sorted(counts.items())) or "no topics"
        with contextlib.suppress(Exception):  # logging may already be shut down
            self.get_logger().info(f"wrote {total} messages to {self.out_path} ({summary})")

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()

    # ---- discovery -------------------------------------------------------------------------------

    def _wanted(self, topic: str) -> bool:
        if not self._patterns:
            return not _is_hidden(topic)
        return any(fnmatch.fnmatchcase(topic, p) for p in self._patterns)

    def _warn_once(self, topic: str, type_name: str, text: str) -> None:
        if (topic, type_name) not in self._ignored:
            self._ignored.add((topic, type_name))
            self.get_logger().warning(f"not recording {topic}: {text}")

    def _discover(self) -> None:
        if self.closed:
            return
        for topic, types in self.get_topic_names_and_types():
            if not self._wanted(topic):
                continue
            if len(types) != 1:
                self._warn_once(topic, ",".join(types), f"several types on one topic ({', '.join(types)})")
                continue
            type_name = types[0]
            publishers = [info.qos_profile for info in self.get_publishers_info_by_topic(topic)]
            if not publishers:
                continue  # subscribe once a publisher is known, so its QoS can be matched
            rec = self._recorded.get(topic)
            if rec is None:
                self._start_recording(topic, type_name, adapted_qos(publishers))
            elif rec.type_name != type_name:
                self._warn_once(topic, type_name, f"type changed from {rec.type_name} to {type_name}")
            elif not qos_matches_all(rec.qos, publishers):
                # A publisher appeared that the current subscription cannot match (e.g. best-effort after
                # reliable ones): subscribe again with a QoS matching all of them.
                qos = adapted_qos(publishers)
                self.get_logger().info(f"{topic}: re-subscribing as {_qos_text(qos)} to match a new publisher")
                self.destroy_subscription(rec.subscription)
                rec.qos = qos
                rec.subscription = self._subscribe(rec)

    def _start_recording(self, topic: str, type_name: str, qos: QoSProfile) -> None:
        try:
            get_message_class(type_name)
            schema_id = self._schema_id(type_name)
        except Exception as exc:
            self._warn_once(topic, type_name, str(exc))
            return
        with self._lock:
            if self._writer is None:
                return
            channel_id = self._writer.register_channel(
                topic=topic, message_encoding=MessageEncoding.CDR, schema_id=schema_id
            )
        rec = _Recorded(topic=topic, type_name=type_name, channel_id=channel_id, qos=qos)
        rec.subscription = self._subscribe(rec)
        self._recorded[topic] = rec
        self.get_logger().info(f"recording {topic} [{type_name}] ({_qos_text(qos)})")

    def _schema_id(self, type_name: str) -> int:
        pkg, kind, name = normalize_type_name(type_name)
        key = f"{pkg}/{kind}/{name}"
        if key not in self._schemas:
            data = message_definition(key).encode("utf-8")
            with self._lock:
                if self._writer is None:
                    raise RuntimeError("recorder is closed")
                self._schemas[key] = self._writer.register_schema(name=key, encoding=SchemaEncoding.ROS2, data=data)
        return self._schemas[key]

    def _subscribe(self, rec: _Recorded) -> Any:
        return self.create_subscription(
            get_message_class(rec.type_name),
            rec.topic,
            functools.partial(self._on_message, rec),
            rec.qos,
            raw=True,
            # Expected while publishers with different QoS come and go; the next discovery re-subscribes.
            event_callbacks=SubscriptionEventCallbacks(
                incompatible_qos=lambda event: self.get_logger().debug(
                    f"{rec.topic}: incompatible publisher ({event.last_policy_kind}), adapting"
                )
            ),
        )

    def _on_message(self, rec: _Recorded, data: bytes, info: Any) -> None:
        receive_ns = self.get_clock().now().nanoseconds
        try:  # DDS source timestamp: when the publisher wrote the sample
            publish_ns = int(info["source_timestamp"])
        except (KeyError, TypeError, ValueError):
            publish_ns = 0
        with self._lock:
            if self._writer is None:
                return
            self._writer.add_message(
                channel_id=rec.channel_id,
                log_time=receive_ns,
                publish_time=publish_ns or receive_ns,
                data=bytes(data),
                sequence=rec.count & 0xFFFFFFFF,
            )
            rec.count += 1


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m coteam_ros.recording",
        description="Record ROS 2 topics to an MCAP file (open it in Foxglove Studio). Stop with Ctrl-C.",
        epilog="ROS arguments may follow --ros-args, e.g. --ros-args -p discovery_period_s:=1.0",
    )
    parser.add_argument("--out", "-o", help="output .mcap file (default: coteam_<date>_<time>.mcap)")
    parser.add_argument(
        "--topics",
        "-t",
        action="append",
        default=None,
        help="comma-separated topic names or patterns (/alice/*); repeatable; default: all topics",
    )
    parser.add_argument("--discovery-period", type=float, default=None, help="seconds between topic scans")
    return parser.parse_args(argv)


def _drain(executor: SingleThreadedExecutor, recorder: TopicRecorder, max_s: float = 1.0) -> None:
    """Write the messages that already arrived (taken from the DDS reader queues) before closing."""
    deadline = time.monotonic() + max_s
    idle = 0
    while idle < 3 and time.monotonic() < deadline:
        before = sum(recorder.message_counts().values())
        executor.spin_once(timeout_sec=0.0)
        idle = idle + 1 if sum(recorder.message_counts().values()) == before else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse_args(remove_ros_args(["recording", *argv])[1:])

    overrides: list[Parameter] = []
    if args.out:
        overrides.append(Parameter("out", Parameter.Type.STRING, args.out))
    if args.topics is not None:
        topics = [t.strip() for chunk in args.topics for t in chunk.split(",") if t.strip()]
        overrides.append(Parameter("topics", Parameter.Type.STRING_ARRAY, topics))
    if args.discovery_period is not None:
        overrides.append(Parameter("discovery_period_s", Parameter.Type.DOUBLE, args.discovery_period))

    # Own signal handling: the handlers only set a flag, so a signal can never interrupt a half-written
    # record; the spin loop then finishes the file.
    global _early_stop
    stop, _early_stop = (_early_stop or threading.Event()), None

    def _request_stop(signum: int, frame: Any) -> None:
        stop.set()

    rclpy.init(args=["recording", *argv], signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, _request_stop)
    signal.signal(signal.SIGTERM, _request_stop)
    recorder: TopicRecorder | None = None
    try:
        recorder = TopicRecorder(parameter_overrides=overrides)
        executor = SingleThreadedExecutor()
        executor.add_node(recorder)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
        if rclpy.ok():
            _drain(executor, recorder)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if recorder is not None:
            recorder.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
