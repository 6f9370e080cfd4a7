"""Detections put on the map, and the camera frames of a sim-bridge status with what the robot's perception
confirmed (or saw empty) in them.

:func:`detector_output_on_map` takes a detector's ``vision_msgs/Detection3DArray`` (positions in any frame TF knows) to
the map: the room the floor plan has there and the fixture within reach that holds the object (the stamp's
transform; a zero stamp takes the latest).

:class:`CameraSightings` collects, per camera frame (by stamp), the ids of the semantic-map objects the frame's
detections added or confirmed (``coteam.senses.perception.CameraPerception``) and adds those objects, as the map has
them, to the observation of the status that announces the frames (the perception node in the visual suites). ROS-free,
so it is tested without DDS.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from vision_msgs.msg import Detection3DArray

from coteam.domain.observation import Observation
from coteam.senses.perception import CameraPerception, Detection, FusedFrame, ObservationAssembler
from coteam_ros.convert import detections_from_msg
from coteam_ros.tf import TransformLookup, TransformUnavailable

FIXTURE_REACH_M = 0.6  # an object detected this close to a fixture stands on or in it
PLACED_KEPT = 4096  # detections whose placing a node keeps (then it starts afresh)


def detector_output_on_map(
    message: Detection3DArray,
    step: int,
    assembler: ObservationAssembler,
    transforms: TransformLookup,
    map_frame: str = "map",
    reach_m: float = FIXTURE_REACH_M,
    placed_before: dict[tuple, Detection | None] | None = None,
) -> list[Detection]:
    """The message's detections in the map frame (through TF at the message's stamp when they are in another frame),
    each in its room, on the fixture within ``reach_m`` and with the task's category; one outside every room is left
    out. A frame TF cannot place raises :class:`~coteam_ros.tf.TransformUnavailable`. ``placed_before``: what
    detections already in the map frame were placed as (a node whose detector sees the same things step after step
    keeps it: each is placed once)."""
    out = []
    floorplan = assembler.floorplan
    for frame, detection in detections_from_msg(message, step):
        in_map = not frame or frame == map_frame
        key = None
        if in_map and placed_before is not None:  # (what detections_from_msg reads of a detection)
            d = detection
            key = (d.name, d.object_id, d.position, d.height_m, d.confidence)
        if key is not None and key in placed_before:
            placed = placed_before[key]
            if placed is not None:
                out.append(replace(placed, step=step))
            continue
        position, height = detection.position, detection.height_m
        if not in_map:
            x, y, z = transforms.lookup(map_frame, frame, message.header.stamp).apply((*position, height or 0.0))
            position, height = (float(x), float(y)), float(z)
        room = floorplan.room_at(position)
        placed = None
        if room is not None:
            container = assembler.fixture_near(position, reach_m)
            category = assembler.category(detection.name, detection.object_id)
            placed = replace(
                detection, position=position, height_m=height, room=room.name, container=container, category=category
            )
            out.append(placed)
        if key is not None:
            if len(placed_before) >= PLACED_KEPT:
                placed_before.clear()
            placed_before[key] = placed
    return out


TF_WAIT_S = 0.5  # how long a detection array waits for a transform that is late
TF_QUEUE = 32  # detection arrays waiting at most
TF_RETRY_S = 0.05  # how often a node tries the waiting arrays against TF again


@dataclass
class _Waiting:
    message: Detection3DArray
    arrived_s: float


class DetectionsAwaitingTf:
    """Detection arrays held until TF can place them at their own stamp, as tf2's message filter holds messages (rclpy
    has none): an array whose transform may still come (a frame not heard of yet, nothing that recent yet) waits up
    to ``wait_s``; one whose transform cannot come (older than the history), one that waited
    too long, and the oldest when more than ``queue`` wait, are dropped. Drops are counted by cause, the cause
    naming the frame (:attr:`drops`); :meth:`place` returns the causes seen for the first time (with an example of
    TF's answer), to be said once."""

    def __init__(self, wait_s: float = TF_WAIT_S, queue: int = TF_QUEUE) -> None:
        self.wait_s, self.queue = wait_s, queue
        self.waiting: deque[_Waiting] = deque()
        self.drops: Counter[str] = Counter()

    def add(self, message: Detection3DArray, now_s: float) -> None:
        self.waiting.append(_Waiting(message, now_s))

    def place(
        self, to_map: Callable[[Detection3DArray], list[Detection]], now_s: float
    ) -> tuple[list[tuple[Detection3DArray, list[Detection]]], list[str]]:
        """Every array TF can place now, with its detections on the map (``to_map``: e.g.
        :func:`detector_output_on_map`), in the order they came; and the causes of drops not seen before."""
        placed: list[tuple[Detection3DArray, list[Detection]]] = []
        new: list[str] = []

        def drop(cause: str, detail: str = "") -> None:
            if cause not in self.drops:
                new.append(f"{cause} ({detail})" if detail else cause)
            self.drops[cause] += 1

        while len(self.waiting) > self.queue:
            drop(f"more than {self.queue} arrays waiting for TF ({self.waiting.popleft().message.header.frame_id})")
        kept: deque[_Waiting] = deque()
        for item in self.waiting:
            try:
                placed.append((item.message, to_map(item.message)))
            except TransformUnavailable as exc:
                frame = item.message.header.frame_id or "(no frame)"
                if not exc.late:
                    drop(f"no transform from {frame} at the array's stamp, nor will there be", str(exc))
                elif now_s - item.arrived_s >= self.wait_s:
                    drop(f"no transform from {frame} within {self.wait_s:g} s of the array", str(exc))
                else:
                    kept.append(item)
        self.waiting = kept
        return placed, new


KEPT_FRAMES = 256  # frames whose sightings are kept while their status is awaited


class CameraSightings:
    """The map objects each camera frame confirmed, added to the observation of the status that announces the frame
    (by stamp, in nanoseconds). Frames no status asked for are kept (a status can arrive after its frames were
    detected in), the newest :data:`KEPT_FRAMES` of them."""

    def __init__(self, perception: CameraPerception) -> None:
        self.perception = perception
        self.frames: dict[int, FusedFrame] = {}
        self.expected: tuple[int, ...] = ()

    def add(self, stamp_ns: int, fused: FusedFrame) -> None:
        self.frames[stamp_ns] = fused
        if len(self.frames) > KEPT_FRAMES:
            for old in sorted(self.frames)[: len(self.frames) - KEPT_FRAMES]:
                if old not in self.expected:
                    del self.frames[old]

    def expect(self, stamps_ns: Iterable[int]) -> None:
        self.expected = tuple(stamps_ns)

    def missing(self) -> list[int]:
        return [t for t in self.expected if t not in self.frames]

    def merged(self, obs: Observation) -> Observation:
        """``obs`` with the map's items that the expected frames confirmed and that it does not already show, and
        those whose places they saw empty; the frames are then forgotten."""
        fused = [f for f in (self.frames.pop(t, None) for t in self.expected) if f is not None]
        self.frames = {t: f for t, f in self.frames.items() if t > max(self.expected, default=-1)}
        self.expected = ()
        confirmed = [i for f in fused for i in f.confirmed]
        return self.perception.merged(obs, confirmed, [i for f in fused for i in f.seen_empty])
