"""Seeing objects in camera images: pinhole intrinsics, the camera's pose, the marker catalogue and detectors.

A :class:`Detector` turns one :class:`RGBDFrame` (an ``H x W x 3`` ``uint8`` RGB image, an ``H x W`` ``float32`` depth
image in metres along the optical axis, 0 where nothing was measured, and the camera's :class:`CameraIntrinsics`) into
:class:`ImageDetection` s in the camera's optical frame (REP 103: x right, y down, z forward). The same interface
serves a simulated camera and a real one.

:class:`ArucoDetector` finds ArUco markers (OpenCV's ``aruco`` module) and names the object each one is on through
a :class:`MarkerCatalogue`: marker id -> object id and class name. The dictionary is ``DICT_4X4_1000`` (4 x 4
cells, ids 0-999); the simulator puts marker ``id`` on the object whose id is ``id`` (``MarkerCatalogue.of_objects``);
on hardware a YAML file lists the printed markers (``MarkerCatalogue.from_file``). A marker's position is the depth
at its centre (the median over the marker's inner area, robust to a pixel of the background at its border),
back-projected through the intrinsics; knowing the markers' printed size, the detector also finds the face's
orientation and reports the centre of the object behind it. :class:`ColorDetector` finds untagged objects by the
colour of their class, :class:`OnnxDetector` with a YOLO-format model the user supplies, and
:class:`OracleDetector` reports a simulated frame's ground truth (its per-pixel labels). :data:`DETECTORS` names the
ones a robot runs (``perception: {detector: ...}`` in a team file) with their settings; :func:`make_detector` makes one.

:class:`CameraPose` is where a camera looks from: the robot's pose on the map and the camera's mounting on the
robot, composed with ``transforms3d`` (``map -> base_link -> camera_link -> camera optical frame``).
:func:`detections_on_map` puts a frame's detections on the map, in their rooms, as the semantic map
(:class:`coteam.senses.perception.SemanticMapFusion`) takes them; :func:`places_seen_empty` says which remembered places
a frame looked through, so that the map lowers its confidence in what it remembered there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from transforms3d.euler import euler2mat

from coteam.domain.world import FloorPlan
from coteam.senses.perception import Detection

ARUCO_DICTIONARY = "DICT_4X4_1000"
MARKER_IDS = 1000

# camera_link (x forward, y left, z up) -> optical frame (x right, y down, z forward): the columns are the optical
# axes expressed in camera_link.
LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


@dataclass(frozen=True)
class CameraIntrinsics:
    """A pinhole camera without distortion (``sensor_msgs/CameraInfo`` K = [fx 0 cx; 0 fy cy; 0 0 1])."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @staticmethod
    def from_fov(width: int, height: int, horizontal_fov_deg: float) -> CameraIntrinsics:
        """Square pixels, the principal point at the image centre."""
        if width <= 0 or height <= 0 or not 0 < horizontal_fov_deg < 180:
            raise ValueError("a camera needs a positive size and a field of view in (0, 180) degrees")
        f = width / 2 / math.tan(math.radians(horizontal_fov_deg) / 2)
        return CameraIntrinsics(width, height, f, f, width / 2, height / 2)

    @property
    def matrix(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def ray(self, u: float, v: float) -> np.ndarray:
        """The optical-frame direction through pixel coordinates (u, v), scaled to depth 1."""
        return np.array([(u - self.cx) / self.fx, (v - self.cy) / self.fy, 1.0])

    def rays(self) -> np.ndarray:
        """``H x W x 3``: the direction through every pixel's centre, scaled to depth 1."""
        u = (np.arange(self.width) + 0.5 - self.cx) / self.fx
        v = (np.arange(self.height) + 0.5 - self.cy) / self.fy
        uu, vv = np.meshgrid(u, v)
        return np.stack([uu, vv, np.ones_like(uu)], axis=-1)


@dataclass(frozen=True)
class CameraMount:
    """Where the camera sits on the robot (``base_link -> camera_link``): metres forward / left / up, and the pitch
    in degrees about camera_link's y axis (REP 103: positive looks down)."""

    x: float = 0.1
    y: float = 0.0
    z: float = 1.2
    pitch_deg: float = 15.0


@dataclass(frozen=True)
class CameraPose:
    """The optical frame in the map frame: ``map_point = rotation @ optical_point + origin``."""

    rotation: np.ndarray  # 3 x 3
    origin: np.ndarray  # 3

    @staticmethod
    def of_robot(position: tuple[float, float], heading_deg: float, mount: CameraMount) -> CameraPose:
        """The robot at ``position`` facing ``heading_deg`` (counter-clockwise from the map's x axis)."""
        map_base = euler2mat(0.0, 0.0, math.radians(heading_deg), "sxyz")
        base_link = euler2mat(0.0, math.radians(mount.pitch_deg), 0.0, "sxyz")
        rotation = map_base @ base_link @ LINK_TO_OPTICAL
        origin = np.array([position[0], position[1], 0.0]) + map_base @ np.array([mount.x, mount.y, mount.z])
        return CameraPose(rotation, origin)

    def to_map(self, point: np.ndarray) -> np.ndarray:
        return self.rotation @ point + self.origin


@dataclass(frozen=True)
class CatalogueEntry:
    object_id: int
    name: str


class MarkerCatalogue:
    """Which object each marker id is on."""

    def __init__(self, entries: Mapping[int, CatalogueEntry]):
        bad = [m for m in entries if not 0 <= m < MARKER_IDS]
        if bad:
            raise ValueError(f"marker ids are 0-{MARKER_IDS - 1} ({ARUCO_DICTIONARY}), got {bad[0]}")
        self.entries = dict(entries)

    @staticmethod
    def of_objects(names: Mapping[int, str]) -> MarkerCatalogue:
        """The simulator's convention: marker ``id`` is on object ``id``."""
        return MarkerCatalogue({i: CatalogueEntry(i, n) for i, n in names.items()})

    @staticmethod
    def from_file(path: str | Path) -> MarkerCatalogue:
        """A YAML mapping of printed marker ids to class names (``12: apple``); the object id is the marker id."""
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"{path}: cannot read the marker catalogue ({exc})") from None
        if not isinstance(data, dict) or not all(isinstance(k, int) and isinstance(v, str) for k, v in data.items()):
            raise ValueError(f"{path}: a marker catalogue maps marker ids to class names, e.g. '12: apple'")
        return MarkerCatalogue({k: CatalogueEntry(k, v) for k, v in data.items()})

    def get(self, marker_id: int) -> CatalogueEntry | None:
        return self.entries.get(marker_id)


@dataclass(frozen=True)
class ImageDetection:
    """One object found in one frame."""

    object_id: int
    name: str
    pixel: tuple[float, float]  # (u, v) of its centre
    depth_m: float  # along the optical axis; 0: no depth there
    point: tuple[float, float, float]  # optical frame, metres
    confidence: float
    detector: str


@dataclass(frozen=True)
class RGBDFrame:
    """One frame of an RGB-D camera: what every detector reads."""

    rgb: np.ndarray  # H x W x 3 uint8, RGB
    depth: np.ndarray  # H x W float32, metres along the optical axis; 0 where nothing was measured
    intrinsics: CameraIntrinsics
    labels: np.ndarray | None  # H x W int32, the object id under each pixel (-1: none); only a simulator knows


class Detector(Protocol):
    name: str

    def detect(self, frame: RGBDFrame) -> list[ImageDetection]: ...


def marker_image(marker_id: int, side_px: int) -> np.ndarray:
    """The marker (black and white, ``side_px`` square, no quiet zone) as OpenCV draws it."""
    import cv2

    dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, ARUCO_DICTIONARY))
    return cv2.aruco.generateImageMarker(dictionary, marker_id, side_px)


class ArucoDetector:
    """ArUco markers of :data:`ARUCO_DICTIONARY`, named by a :class:`MarkerCatalogue`; unknown ids are ignored, and
    a marker seen twice in one frame (on two faces of one object) is one detection, from its larger view.

    With the markers' printed side ``marker_size_m`` the marker's orientation comes from its corners (OpenCV's
    ``solvePnP``, ``SOLVEPNP_IPPE_SQUARE``), and a detection is placed ``depth_behind_m`` behind the marker's face,
    along its normal: where the centre of the object carrying it is (half the object's depth for a marker on a
    side). Without them a detection is the marker's centre."""

    name = "aruco"

    def __init__(self, catalogue: MarkerCatalogue, marker_size_m: float | None = None, depth_behind_m: float = 0.0):
        import cv2

        self.catalogue = catalogue
        self.marker_size_m = marker_size_m
        self.depth_behind_m = depth_behind_m
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, ARUCO_DICTIONARY))
        self._detector = cv2.aruco.ArucoDetector(dictionary, cv2.aruco.DetectorParameters())

    def detect(self, frame: RGBDFrame) -> list[ImageDetection]:
        import cv2

        depth, intrinsics = frame.depth, frame.intrinsics
        gray = cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2GRAY)
        corners, ids, _ = self._detector.detectMarkers(gray)
        out: list[ImageDetection] = []
        if ids is None:
            return out
        largest: dict[int, np.ndarray] = {}  # an object showing its marker on two faces: the face seen best
        for quad, marker in zip(corners, ids.ravel(), strict=True):
            quad = quad.reshape(4, 2)
            seen = largest.get(int(marker))
            if seen is None or cv2.contourArea(quad) > cv2.contourArea(seen):
                largest[int(marker)] = quad
        for marker, quad in sorted(largest.items()):
            entry = self.catalogue.get(marker)
            if entry is None:
                continue
            u, v = (float(c) for c in quad.mean(axis=0))
            half_w, half_h = (quad.max(axis=0) - quad.min(axis=0)) / 4  # the marker's inner half
            z = _median_depth(_patch(depth, u, v, half_w, half_h))
            if z <= 0:
                continue  # no depth at the marker: it cannot be placed
            point = intrinsics.ray(u, v) * z
            normal = self._normal(quad, intrinsics)
            if normal is not None:
                point = point - normal * self.depth_behind_m
            out.append(ImageDetection(entry.object_id, entry.name, (u, v), z, _xyz(point), 1.0, self.name))
        return out

    def _normal(self, quad: np.ndarray, intrinsics: CameraIntrinsics) -> np.ndarray | None:
        """The marker face's outward normal in the optical frame (towards the camera), from its corners."""
        if self.marker_size_m is None:
            return None
        import cv2

        half = self.marker_size_m / 2
        # OpenCV's order of the corners: top-left, top-right, bottom-right, bottom-left; z out of the marker
        model = np.array([[-half, half, 0], [half, half, 0], [half, -half, 0], [-half, -half, 0]], np.float32)
        ok, rvec, _ = cv2.solvePnP(
            model, quad.astype(np.float32), intrinsics.matrix, None, flags=cv2.SOLVEPNP_IPPE_SQUARE
        )
        if not ok:
            return None
        rotation, _ = cv2.Rodrigues(rvec)
        return rotation[:, 2]


class ColorDetector:
    """Untagged objects by the colour of their class: pixels within ``hue_tolerance`` (OpenCV hue units, 0-179) of a
    class colour and saturated and bright enough are segmented, and every connected blob of at least
    ``min_area_px`` pixels is one object of that class. It knows classes, not instances: a detection's
    ``object_id`` is -1 (the semantic map associates it by class and distance). Its depth is the median over the
    blob; its confidence grows with the blob's area (1.0 from ``4 * min_area_px``)."""

    name = "color"

    def __init__(self, colours: Mapping[str, tuple[int, int, int]], hue_tolerance: int = 2, min_area_px: int = 40):
        import cv2

        self.min_area_px = min_area_px
        self.hue_tolerance = hue_tolerance
        rgb = np.array([list(colours.values())], np.uint8)
        hues = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)[0, :, 0].astype(int)
        self.classes = list(zip(colours, hues, strict=True))

    def detect(self, frame: RGBDFrame) -> list[ImageDetection]:
        import cv2

        depth, intrinsics = frame.depth, frame.intrinsics
        hsv = cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2HSV)
        hue = hsv[..., 0].astype(int)
        vivid = (hsv[..., 1] >= 120) & (hsv[..., 2] >= 100)
        out: list[ImageDetection] = []
        for name, class_hue in self.classes:
            off = np.abs(hue - class_hue)
            mask = (vivid & (np.minimum(off, 180 - off) <= self.hue_tolerance)).astype(np.uint8)
            count, labels, stats, centroids = cv2.connectedComponentsWithStats(mask, connectivity=8)
            for k in range(1, count):
                area = int(stats[k, cv2.CC_STAT_AREA])
                if area < self.min_area_px:
                    continue
                z = _median_depth(depth[labels == k])
                if z <= 0:
                    continue
                u, v = (float(c) for c in centroids[k])
                confidence = min(1.0, area / (4 * self.min_area_px))
                out.append(ImageDetection(-1, name, (u, v), z, _xyz(intrinsics.ray(u, v) * z), confidence, self.name))
        return out


def class_colours(names: Iterable[str]) -> dict[str, tuple[int, int, int]]:
    """A saturated colour per item class of a scene: hues spread evenly over the classes in name order, so that the
    colour detector tells them apart (a scene has a few dozen classes at most). The simulator paints its items' tops
    in these colours, so a robot that knows the task's classes knows them too."""
    import cv2

    classes = sorted(set(names))
    hues = np.array([[[round(180 * k / max(1, len(classes))), 230, 230] for k in range(len(classes))]], np.uint8)
    rgb = cv2.cvtColor(hues, cv2.COLOR_HSV2RGB)[0]
    return {name: (int(r), int(g), int(b)) for name, (r, g, b) in zip(classes, rgb, strict=True)}


def load_class_colours(path: str | Path) -> dict[str, tuple[int, int, int]]:
    """A YAML mapping of class names to RGB colours (``apple: [200, 30, 30]``): the colours of the untagged objects
    a robot's colour detector looks for."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the class colours ({exc})") from None

    def rgb(value: object) -> bool:
        return isinstance(value, list) and len(value) == 3 and all(isinstance(x, int) and 0 <= x <= 255 for x in value)

    if not isinstance(data, dict) or not data or not all(isinstance(k, str) and rgb(v) for k, v in data.items()):
        raise ValueError(f"{path}: class colours map class names to RGB triples of 0-255, e.g. 'apple: [200, 30, 30]'")
    return {k: (v[0], v[1], v[2]) for k, v in data.items()}


class OnnxDetector:
    """A YOLO-format object detector in an ONNX file the user supplies, run with OpenCV's ``dnn`` module.

    The image is resized to the model's ``input_size`` (RGB, scaled to [0, 1]). The output is read in either common
    layout: YOLOv8-style ``(1, 4 + C, N)`` or ``(1, N, 4 + C)`` (box centre x, y, width, height in input pixels,
    then one score per class) or YOLOv5-style ``(1, N, 5 + C)`` (an objectness score before the class scores,
    multiplied in), with ``C = len(class_names)``. Boxes scoring below ``score_threshold`` are dropped, overlapping
    ones of a class reduced by non-maximum suppression (``nms_threshold``, intersection over union). Like the
    colour detector it knows classes, not instances (``object_id`` -1); its depth is the median over the inner half
    of the box."""

    name = "onnx"

    def __init__(
        self,
        model_path: str,
        class_names: list[str],
        input_size: tuple[int, int] = (640, 640),
        score_threshold: float = 0.25,
        nms_threshold: float = 0.45,
    ):
        import cv2

        try:
            self._net = cv2.dnn.readNetFromONNX(str(model_path))
        except cv2.error as exc:
            why = str(exc).strip().splitlines()[-1]
            raise ValueError(f"{model_path}: not an ONNX model OpenCV can run ({why})") from None
        self.class_names = list(class_names)
        self.input_size = input_size
        self.score_threshold = score_threshold
        self.nms_threshold = nms_threshold

    def detect(self, frame: RGBDFrame) -> list[ImageDetection]:
        import cv2

        rgb, depth, intrinsics = frame.rgb, frame.depth, frame.intrinsics
        h, w = rgb.shape[:2]
        self._net.setInput(cv2.dnn.blobFromImage(rgb, 1 / 255.0, self.input_size, swapRB=False, crop=False))
        rows = self._rows(np.asarray(self._net.forward()))
        sx, sy = w / self.input_size[0], h / self.input_size[1]
        boxes, scores, classes = [], [], []
        for row in rows:
            k = int(np.argmax(row[4:]))
            score = float(row[4 + k])
            if score < self.score_threshold:
                continue
            cx, cy, bw, bh = (float(v) for v in row[:4])
            boxes.append([(cx - bw / 2) * sx, (cy - bh / 2) * sy, bw * sx, bh * sy])
            scores.append(score)
            classes.append(k)
        out: list[ImageDetection] = []
        for k in sorted(set(classes)):
            mine = [i for i, c in enumerate(classes) if c == k]
            keep = cv2.dnn.NMSBoxes(
                [boxes[i] for i in mine], [scores[i] for i in mine], self.score_threshold, self.nms_threshold
            )
            for j in np.asarray(keep).ravel():
                x, y, bw, bh = boxes[mine[int(j)]]
                u, v = x + bw / 2, y + bh / 2
                z = _median_depth(_patch(depth, u, v, bw / 4, bh / 4))  # the box's inner half
                if z <= 0:
                    continue
                score = scores[mine[int(j)]]
                point = _xyz(intrinsics.ray(u, v) * z)
                out.append(ImageDetection(-1, self.class_names[k], (u, v), z, point, score, self.name))
        return out

    def _rows(self, output: np.ndarray) -> np.ndarray:
        """The model's output as one row per candidate box: 4 box numbers, then one score per class."""
        c = len(self.class_names)
        output = output.reshape(output.shape[-2], output.shape[-1])
        if output.shape[0] == 4 + c and output.shape[1] != 4 + c:
            output = output.T
        if output.shape[1] == 5 + c:  # objectness, then class scores
            return np.hstack([output[:, :4], output[:, 5:] * output[:, 4:5]])
        if output.shape[1] != 4 + c:
            raise ValueError(
                f"the model's output {output.shape} has neither 4 + {c} nor 5 + {c} numbers per box "
                f"for the {c} class names given"
            )
        return output


class OracleDetector:
    """The simulator's ground truth as a detector: every object of ``names`` that at least ``min_pixels`` pixels of
    the frame show (its labels), at the median depth of those pixels, with confidence 1. It needs a simulated frame."""

    name = "oracle"

    def __init__(self, names: Mapping[int, str], min_pixels: int = 20):
        self.names = dict(names)
        self.min_pixels = min_pixels

    def detect(self, frame: RGBDFrame) -> list[ImageDetection]:
        if frame.labels is None:
            raise ValueError("the oracle detector reads a simulated frame's labels; a real camera has none")
        out: list[ImageDetection] = []
        ids, counts = np.unique(frame.labels, return_counts=True)
        for oid, count in zip(ids.tolist(), counts.tolist(), strict=True):
            if oid not in self.names or count < self.min_pixels:
                continue
            mask = (frame.labels == oid) & (frame.depth > 0)
            vs, us = np.nonzero(mask)
            if vs.size == 0:
                continue
            u, v = float(us.mean()) + 0.5, float(vs.mean()) + 0.5
            z = _median_depth(frame.depth[mask])
            point = _xyz(frame.intrinsics.ray(u, v) * z)
            out.append(ImageDetection(oid, self.names[oid], (u, v), z, point, 1.0, self.name))
        return out


Settings = Mapping[str, object]  # a detector's settings by name (team file keys, node parameters)


@dataclass(frozen=True)
class DetectorKind:
    """A detector a robot's perception runs on its camera images, by name (:data:`DETECTORS`): the settings it takes
    (name -> type: ``str``, ``float`` or ``list`` of names; unset ones are empty) and how it is made from them and
    the task's item classes (by id)."""

    settings: Mapping[str, type]
    make: Callable[[Settings, Mapping[int, str]], Detector]


def _aruco(settings: Settings, items: Mapping[int, str]) -> ArucoDetector:
    """Markers from a catalogue file (hardware), else the simulator's: marker ``id`` on object ``id``."""
    markers = str(settings.get("markers") or "")
    catalogue = MarkerCatalogue.from_file(markers) if markers else MarkerCatalogue.of_objects(items)
    size = float(settings.get("marker_size_m") or 0.0)
    return ArucoDetector(catalogue, size or None, float(settings.get("object_depth_m") or 0.0))


def _colour(settings: Settings, items: Mapping[int, str]) -> ColorDetector:
    """Class colours from a file (hardware), else the simulator's paint (:func:`class_colours`)."""
    colours = str(settings.get("colours") or "")
    return ColorDetector(load_class_colours(colours) if colours else class_colours(items.values()))


def _onnx(settings: Settings, _items: Mapping[int, str]) -> OnnxDetector:
    model, classes = str(settings.get("model") or ""), list(settings.get("classes") or [])  # type: ignore[call-overload]
    if not model or not classes:
        raise ValueError("detector onnx needs model (an ONNX file) and classes (its class names)")
    return OnnxDetector(model, [str(c) for c in classes])


DETECTORS: dict[str, DetectorKind] = {
    "aruco": DetectorKind({"markers": str, "marker_size_m": float, "object_depth_m": float}, _aruco),
    "color": DetectorKind({"colours": str}, _colour),
    "onnx": DetectorKind({"model": str, "classes": list}, _onnx),
}


def make_detector(name: str, settings: Settings, items: Mapping[int, str]) -> Detector:
    """The detector called ``name`` (:data:`DETECTORS`) with ``settings``, for a task whose items are ``items``
    (id -> class); a one-line ValueError for an unknown name or missing settings."""
    kind = DETECTORS.get(name)
    if kind is None:
        raise ValueError(f"detector must be one of {', '.join(DETECTORS)}, not {name!r}")
    return kind.make(settings, items)


def draw_detections(rgb: np.ndarray, found: Iterable[ImageDetection]) -> np.ndarray:
    """A copy of ``rgb`` with each detection marked by a numbered ring at its pixel, and a legend in the top-left
    corner: number, class, id and depth."""
    import cv2

    out = np.ascontiguousarray(rgb.copy())
    font, ring = cv2.FONT_HERSHEY_SIMPLEX, (255, 255, 0)

    def text(label: str, org: tuple[int, int]) -> None:
        cv2.putText(out, label, org, font, 0.45, (0, 0, 0), 3, cv2.LINE_AA)
        cv2.putText(out, label, org, font, 0.45, (255, 255, 255), 1, cv2.LINE_AA)

    for k, d in enumerate(sorted(found, key=lambda d: d.pixel), start=1):
        u, v = round(d.pixel[0]), round(d.pixel[1])
        cv2.circle(out, (u, v), 12, ring, 2, cv2.LINE_AA)
        text(str(k), (u + 12, v - 10))
        label = f"{k}: {d.name}" + (f" ({d.object_id})" if d.object_id >= 0 else "")
        text(label + (f", {d.depth_m:.1f} m" if d.depth_m > 0 else ""), (8, 4 + 18 * k))
    return out


def _patch(depth: np.ndarray, u: float, v: float, half_w: float, half_h: float) -> np.ndarray:
    """The depth pixels within ``half_w`` / ``half_h`` of (u, v), clipped to the image."""
    h, w = depth.shape
    return depth[
        max(0, int(v - half_h)) : min(h, int(v + half_h) + 1), max(0, int(u - half_w)) : min(w, int(u + half_w) + 1)
    ]


def _median_depth(values: np.ndarray) -> float:
    """The median of the measured (positive) depths among ``values``; 0 when none was measured."""
    measured = values[values > 0]
    return float(np.median(measured)) if measured.size else 0.0


def _xyz(point: np.ndarray) -> tuple[float, float, float]:
    return float(point[0]), float(point[1]), float(point[2])


def detections_on_map(
    found: Iterable[ImageDetection],
    pose: CameraPose,
    floorplan: FloorPlan,
    step: int,
    categories: Mapping[str, str] | None = None,
) -> list[Detection]:
    """``found`` in one frame, put on the map (the optical-frame point through ``pose``) and in the room the floor
    plan has there, as the semantic map takes them (:class:`coteam.senses.perception.Detection`); ``categories`` maps a
    class name to its category. A detection outside every room, or without a finite position, is left out."""
    out = []
    for d in found:
        x, y, z = pose.to_map(np.array(d.point))
        if not np.isfinite((x, y, z)).all():
            continue  # a degenerate marker pose or depth: no place to put it
        room = floorplan.room_at((float(x), float(y)))
        if room is None:
            continue
        category = (categories or {}).get(d.name, "")
        at = (float(x), float(y))
        out.append(Detection(d.name, d.object_id, category, room.name, "", at, d.confidence, step, height_m=float(z)))
    return out


def places_seen_empty(
    places: Mapping[int, tuple[float, float, float]],
    pose: CameraPose,
    intrinsics: CameraIntrinsics,
    depth: np.ndarray,
    margin_m: float = 0.3,
) -> list[int]:
    """Which of ``places`` (id -> map point) this frame looked through: the point is in the image, in front of the
    camera, and the depth measured at its pixel lies more than ``margin_m`` beyond it -- the camera saw past the
    place, so whatever was there is not. A place hidden behind something nearer, or with nothing measured, is not
    seen."""
    out = []
    for key, point in places.items():
        cam = pose.rotation.T @ (np.array(point) - pose.origin)
        if cam[2] <= 0:
            continue
        u = intrinsics.fx * cam[0] / cam[2] + intrinsics.cx
        v = intrinsics.fy * cam[1] / cam[2] + intrinsics.cy
        if not (0 <= u < intrinsics.width and 0 <= v < intrinsics.height):
            continue
        measured = float(depth[int(v), int(u)])
        if measured > cam[2] + margin_m:
            out.append(key)
    return sorted(out)
