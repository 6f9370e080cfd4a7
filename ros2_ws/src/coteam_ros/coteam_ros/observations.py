"""Detections put on the map, and the camera frames of a sim-bridge status with what the robot's perception
confirmed (or saw empty) in them.

:func:`detector_output_on_map` takes a detector's ``vision_msgs/Detection3DArray`` (positions in any frame TF knows) to
the map: the room the floor plan has there and the fixture within reach that holds the object (the stamp's
transform; a zero stamp takes the latest).

:class:`CameraSightings` collects, per camera frame (by stamp), the ids of the semantic-map objects the frame's
detections added or confirmed (``coteam.perception.CameraPerception``) and adds those objects, as the map has them,
to the observation of the status that announces the frames (the perception node in the visual suites). ROS-free,
so it is tested without DDS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from vision_msgs.msg import Detection3DArray

from coteam.observation import Observation
from coteam.perception import CameraPerception, Detection, FusedFrame, ObservationAssembler
from coteam_ros.convert import detections_from_msg
from coteam_ros.tf import TransformLookup

FIXTURE_REACH_M = 0.6  # an object detected this close to a fixture stands on or in it


def detector_output_on_map(
    message: Detection3DArray,
    step: int,
    assembler: ObservationAssembler,
    transforms: TransformLookup,
    map_frame: str = "map",
    reach_m: float = FIXTURE_REACH_M,
) -> list[Detection]:
    """The message's detections in the map frame (through TF at the message's stamp when they are in another frame),
    each in its room, on the fixture within ``reach_m`` and with the task's category; one outside every room is left
    out. A frame TF cannot
    place raises :class:`~coteam_ros.tf.TransformUnavailable`."""
    out = []
    floorplan = assembler.floorplan
    for frame, detection in detections_from_msg(message, step):
        position, height = detection.position, detection.height_m
        if frame and frame != map_frame:
            x, y, z = transforms.lookup(map_frame, frame, message.header.stamp).apply((*position, height or 0.0))
            position, height = (float(x), float(y)), float(z)
        room = floorplan.room_at(position)
        if room is None:
            continue
        container = assembler.fixture_near(position, reach_m)
        category = assembler.category(detection.name, detection.object_id)
        placed = replace(detection, position=position, height_m=height, room=room.name, container=container)
        out.append(replace(placed, category=category))
    return out


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
