"""Simulated RGB-D cameras: what a robot's pinhole camera sees of the world, rendered with numpy.

The world is built of axis-aligned boxes on a floor (z = 0):

* **walls**: the floor plan's wall cells, merged into runs along each row, :data:`WALL_HEIGHT_M` high (on a
  world file's map, blocked cells well inside a room are furniture, :data:`SURFACE_HEIGHT_M` high);
* **fixtures**: a surface is a table (:data:`SURFACE_HEIGHT_M`); a closed container is a cabinet
  (:data:`CONTAINER_HEIGHT_M`) that hides what it holds; an open one is drawn open, as a low base
  (:data:`OPEN_CONTAINER_HEIGHT_M`) whose contents stand on it in view;
* **items**: cubes of :data:`ITEM_SIZE_M` standing on their surface, open container, carrier or the floor, in a
  ring when there are several; each of their four sides shows the item's ArUco marker (``coteam.senses.vision``, marker
  id = object id) inside a white quiet zone, and the top its class colour; items held by a robot are not drawn;
* **robots**: the other agents, as grey boxes.

Every pixel's ray is cast against the boxes whose projection can cover it (the slab method, vectorised per box over
the pixels of its projected bounding rectangle) and against the floor;
the nearest hit gives the pixel's colour (flat colours, shaded by the face's direction) and its depth along the
optical axis. Nothing is random: a frame is a pure function of the world state and the camera. :func:`with_noise`
then adds what a real sensor would, at the documented :data:`NOISE_LEVELS`, reproducibly from a seeded generator.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial

import numpy as np

from coteam.domain.observation import ObjectView, Observation
from coteam.domain.world import FloorPlan, Item, ObjectKind, Relation, WorldState
from coteam.senses.perception import CameraPerception, ObservationAssembler
from coteam.senses.vision import (
    ArucoDetector,
    CameraIntrinsics,
    CameraMount,
    CameraPose,
    ColorDetector,
    MarkerCatalogue,
    OracleDetector,
    RGBDFrame,
    class_colours,
    detections_on_map,
    marker_image,
    places_seen_empty,
)

WALL_HEIGHT_M = 2.5
SURFACE_HEIGHT_M = 0.75
CONTAINER_HEIGHT_M = 1.1
OPEN_CONTAINER_HEIGHT_M = 0.35
FIXTURE_SIZE_M = 0.9
ITEM_SIZE_M = 0.16
ITEM_RING_M = 0.25  # radius of the ring several items on one base stand in
ROBOT_SIZE_M = (0.5, 0.5, 1.3)
MARKER_QUIET_ZONE = 0.15  # white margin around the marker, as a fraction of the face
NEAR_M = 0.05

FLOOR_RGB = (150, 140, 125)
WALL_RGB = (215, 212, 205)
SURFACE_RGB = (140, 120, 100)  # furniture and walls are greyish: only items are vivid (the colour detector)
CONTAINER_RGB = (112, 120, 132)
ROBOT_RGB = (90, 90, 90)
SKY_RGB = (0, 0, 0)
SHADE = {0: 0.8, 1: 0.65, 2: 1.0}  # by the axis of the face's normal: x, y, z

KIND_WALL, KIND_FIXTURE, KIND_ITEM, KIND_ROBOT = 0, 1, 2, 3


@dataclass(frozen=True)
class CameraSpec:
    """A robot's camera: image size, horizontal field of view, mounting."""

    width: int = 640
    height: int = 480
    fov_deg: float = 60.0
    mount: CameraMount = field(default_factory=CameraMount)

    @property
    def intrinsics(self) -> CameraIntrinsics:
        return CameraIntrinsics.from_fov(self.width, self.height, self.fov_deg)


@dataclass(frozen=True)
class CameraNoise:
    """What a real camera adds: Gaussian pixel noise (``pixel_sigma``, on the 0-255 scale), depth noise growing with
    the square of the distance (standard deviation ``depth_sigma_1m`` metres at 1 m, as structured-light and stereo
    sensors behave), a Gaussian blur (``blur_sigma_px``) and frames lost outright (``missed_frames``, a
    probability)."""

    pixel_sigma: float = 0.0
    depth_sigma_1m: float = 0.0
    blur_sigma_px: float = 0.0
    missed_frames: float = 0.0


NOISE_LEVELS = {
    "clean": CameraNoise(),
    "low": CameraNoise(pixel_sigma=3.0, depth_sigma_1m=0.003, blur_sigma_px=0.5, missed_frames=0.02),
    "high": CameraNoise(pixel_sigma=10.0, depth_sigma_1m=0.012, blur_sigma_px=1.2, missed_frames=0.1),
}


@dataclass(frozen=True)
class Frame(RGBDFrame):
    """A rendered frame: its labels are the object (fixture or item) under each pixel, -1 for walls, floor and
    robots; and where the camera was."""

    pose: CameraPose


@dataclass
class SceneBoxes:
    """The boxes a camera can see, one entry per box in each list (``kind``: KIND_WALL, KIND_FIXTURE, ...)."""

    lo: list[tuple[float, float, float]] = field(default_factory=list)
    hi: list[tuple[float, float, float]] = field(default_factory=list)
    rgb: list[tuple[int, int, int]] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    object_id: list[int] = field(default_factory=list)

    def add(self, lo, hi, rgb, kind: int, object_id: int = -1) -> None:
        self.lo.append(lo)
        self.hi.append(hi)
        self.rgb.append(rgb)
        self.kind.append(kind)
        self.object_id.append(object_id)


MARKER_SIZE_M = ITEM_SIZE_M * (1 - 2 * MARKER_QUIET_ZONE)  # the printed marker's side on an item's face


def item_detector(world: WorldState) -> ArucoDetector:
    """The ArUco detector for this world's items: their markers and sizes, centres half a cube behind a face."""
    catalogue = MarkerCatalogue.of_objects({i.id: i.name for i in world.scene.items})
    return ArucoDetector(catalogue, marker_size_m=MARKER_SIZE_M, depth_behind_m=ITEM_SIZE_M / 2)


def colour_detector(world: WorldState) -> ColorDetector:
    """The colour detector for this world's item classes."""
    return ColorDetector(class_colours(i.name for i in world.scene.items))


@cache
def _marker_face(marker_id: int, side_px: int = 96) -> np.ndarray:
    """The marker with its white quiet zone, ``side_px`` square, as the face of an item shows it."""
    inner = round(side_px * (1 - 2 * MARKER_QUIET_ZONE))
    face = np.full((side_px, side_px), 255, np.uint8)
    start = (side_px - inner) // 2
    face[start : start + inner, start : start + inner] = marker_image(marker_id, inner)
    return face


def _blocked_height(fp: FloorPlan, cx: int, cy: int) -> float:
    """How high the blocked cell stands: a wall; but on a real map (a world file's, with polygon rooms) furniture
    is blocked too, so a blocked cell inside a room, more than a cell from its outline, is furniture of a table's
    height -- the camera sees over it and what stands on it."""
    room = fp.room_of_cell(cx, cy)
    if room is None or not room.polygon:
        return WALL_HEIGHT_M
    centre = (cx + 0.5, cy + 0.5)
    corners = room.polygon
    near_outline = any(
        _distance_to_segment(centre, a, b) <= 1.0 for a, b in zip(corners, (*corners[1:], corners[0]), strict=True)
    )
    return WALL_HEIGHT_M if near_outline else SURFACE_HEIGHT_M


def _distance_to_segment(p: tuple[float, float], a: tuple[float, float], b: tuple[float, float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    t = 0.0 if length2 == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2))
    return math.dist(p, (a[0] + t * dx, a[1] + t * dy))


def _wall_boxes(world: WorldState, boxes: SceneBoxes) -> None:
    for low, high in _blocked_runs(world.scene.floorplan):
        boxes.add(low, high, WALL_RGB if high[2] == WALL_HEIGHT_M else SURFACE_RGB, KIND_WALL)


@cache
def _blocked_runs(fp: FloorPlan) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
    """The floor plan's blocked cells as boxes, merged into runs of one height along each row."""
    cs = fp.cell_size
    ox, oy = fp.origin
    runs = []
    for y, row in enumerate(fp.rows):
        heights = [_blocked_height(fp, x, y) if c == "#" else 0.0 for x, c in enumerate(row)]
        x = 0
        while x < len(row):
            if not heights[x]:
                x += 1
                continue
            start, height = x, heights[x]
            while x < len(row) and heights[x] == height:
                x += 1
            runs.append(((ox + start * cs, oy + y * cs, 0.0), (ox + x * cs, oy + (y + 1) * cs, height)))
    return runs


def _item_base(world: WorldState, item_id: int) -> tuple[float, float, float] | None:
    """Where an item stands (x, y, z of its bottom centre before spreading), None when it is not drawn."""
    chain = world.holder_chain(item_id)
    root = chain[-1]
    if root.relation == Relation.HELD or world.hidden_in_closed(item_id):
        return None
    placement = chain[0]
    if placement.relation == Relation.FLOOR:
        assert placement.position is not None
        return placement.position[0], placement.position[1], 0.0
    if world.is_item(placement.target):  # in a carrier: on top of it
        base = _item_base(world, placement.target)
        return None if base is None else (base[0], base[1], base[2] + ITEM_SIZE_M)
    fixture = world.fixture(placement.target)
    height = SURFACE_HEIGHT_M if placement.relation == Relation.ON else OPEN_CONTAINER_HEIGHT_M
    return fixture.position[0], fixture.position[1], height


def stand_facing(world: WorldState, agent: str, fixture_id: int, distance_m: float) -> bool:
    """Put ``agent`` on the first free spot ``distance_m`` from the fixture, in its room (going round it in 15°
    steps), facing it; False (the agent unmoved) when there is none."""
    fixture = world.fixture(fixture_id)
    fp = world.scene.floorplan
    for angle in range(0, 360, 15):
        x = fixture.position[0] + distance_m * math.cos(math.radians(angle))
        y = fixture.position[1] + distance_m * math.sin(math.radians(angle))
        room = fp.room_at((x, y))
        if fp.is_free(*fp.cell_of((x, y))) and room is not None and room.id == fixture.room:
            world.agents[agent].position = (x, y)
            world.agents[agent].heading = (angle + 180) % 360
            return True
    return False


def scene_boxes(world: WorldState, viewer: str) -> SceneBoxes:
    """Every box the camera of ``viewer`` can see (itself excluded)."""
    boxes = SceneBoxes()
    _wall_boxes(world, boxes)
    h = FIXTURE_SIZE_M / 2
    for f in world.scene.surfaces:
        x, y = f.position
        boxes.add((x - h, y - h, 0.0), (x + h, y + h, SURFACE_HEIGHT_M), SURFACE_RGB, KIND_FIXTURE, f.id)
    for c in world.scene.containers:
        x, y = c.position
        top = OPEN_CONTAINER_HEIGHT_M if world.is_open[c.id] else CONTAINER_HEIGHT_M
        boxes.add((x - h, y - h, 0.0), (x + h, y + h, top), CONTAINER_RGB, KIND_FIXTURE, c.id)
    stacks: dict[tuple[float, float, float], list[Item]] = {}
    for item in world.scene.items:
        base = _item_base(world, item.id)
        if base is not None:
            stacks.setdefault(base, []).append(item)
    s = ITEM_SIZE_M / 2
    colours = class_colours(i.name for i in world.scene.items)
    for (bx, by, z), items in stacks.items():
        for k, item in enumerate(items):  # several on one base stand in a ring, so that most show from any side
            angle = 2 * math.pi * k / len(items) + math.pi / 4
            r = ITEM_RING_M if len(items) > 1 else 0.0
            x, y = bx + r * math.cos(angle), by + r * math.sin(angle)
            boxes.add((x - s, y - s, z), (x + s, y + s, z + ITEM_SIZE_M), colours[item.name], KIND_ITEM, item.id)
    rx, ry, rz = ROBOT_SIZE_M
    for name, agent in world.agents.items():
        if name != viewer:
            x, y = agent.position
            boxes.add((x - rx / 2, y - ry / 2, 0.0), (x + rx / 2, y + ry / 2, rz), ROBOT_RGB, KIND_ROBOT)
    return boxes


def render(world: WorldState, viewer: str, camera: CameraSpec, heading: float | None = None) -> Frame:
    """What ``viewer``'s camera sees now (turned to ``heading`` instead of the robot's, when given)."""
    agent = world.agents[viewer]
    intrinsics = camera.intrinsics
    pose = CameraPose.of_robot(agent.position, agent.heading if heading is None else heading, camera.mount)
    boxes = scene_boxes(world, viewer)
    lo, hi = np.array(boxes.lo, float), np.array(boxes.hi, float)
    kinds, ids = np.array(boxes.kind), np.array(boxes.object_id)
    colours = np.array(boxes.rgb, float)
    h, w = intrinsics.height, intrinsics.width
    directions = intrinsics.rays() @ pose.rotation.T  # H x W x 3: map-frame direction per unit of optical depth
    origin = pose.origin
    t, box, axis = _cast(origin, directions, lo, hi, pose, intrinsics)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_floor = np.where(directions[..., 2] < 0, -origin[2] / directions[..., 2], np.inf)
    floor = t_floor < t
    t = np.where(floor, t_floor, t)
    hit = np.isfinite(t)
    on_box = hit & ~floor
    rgb = np.zeros((h, w, 3))
    rgb[...] = SKY_RGB
    rgb[floor] = FLOOR_RGB
    b = box[on_box]
    shade = np.choose(axis[on_box], [SHADE[0], SHADE[1], SHADE[2]])
    rgb[on_box] = colours[b] * shade[:, None]
    object_ids = np.full((h, w), -1, np.int32)
    object_ids[on_box] = np.where(kinds[b] == KIND_WALL, -1, ids[b])
    sides = on_box & (kinds[np.maximum(box, 0)] == KIND_ITEM) & (axis != 2)
    if sides.any():
        points = origin + directions[sides] * t[sides, None]
        rgb[sides] = _marker_pixels(points, box[sides], axis[sides], directions[sides], lo, hi, ids)
    return Frame(
        rgb=np.clip(rgb, 0, 255).astype(np.uint8),
        depth=np.where(hit, t, 0.0).astype(np.float32),
        intrinsics=intrinsics,
        labels=object_ids,
        pose=pose,
    )


def _cast(origin, directions, lo, hi, pose: CameraPose, intrinsics: CameraIntrinsics):
    """Nearest entry of each pixel's ray into any box: (t, box index, axis of the face entered), t = inf for a
    miss. Each box is tested only on the pixels of its projection's bounding rectangle, one axis at a time."""
    h, w = intrinsics.height, intrinsics.width
    t_best = np.full((h, w), np.inf)
    box_best = np.full((h, w), -1)
    axis_best = np.zeros((h, w), int)
    with np.errstate(divide="ignore"):
        inverse = [1.0 / directions[..., k] for k in range(3)]
    for i in range(len(lo)):
        rect = _screen_rect(lo[i], hi[i], pose, intrinsics)
        if rect is None:
            continue
        u0, u1, v0, v1 = rect
        near, far = [], []
        with np.errstate(invalid="ignore"):  # 0 * inf: a ray in a slab's plane; fmin / fmax skip the NaN
            for k in range(3):
                inv = inverse[k][v0:v1, u0:u1]
                t1 = (lo[i, k] - origin[k]) * inv
                t2 = (hi[i, k] - origin[k]) * inv
                near.append(np.fmin(t1, t2))
                far.append(np.fmax(t1, t2))
        t_in = np.fmax(np.fmax(near[0], near[1]), near[2])
        t_out = np.fmin(np.fmin(far[0], far[1]), far[2])
        best = t_best[v0:v1, u0:u1]
        closer = (t_in <= t_out) & (t_in > NEAR_M) & (t_in < best)
        if not closer.any():
            continue
        best[closer] = t_in[closer]
        box_best[v0:v1, u0:u1][closer] = i
        entered = np.where(near[0] >= t_in, 0, np.where(near[1] >= t_in, 1, 2))
        axis_best[v0:v1, u0:u1][closer] = entered[closer]
    return t_best, box_best, axis_best


# the 12 edges of a box, as pairs of corner indices (corner index = 4 * x + 2 * y + z, each 0 for lo, 1 for hi)
_BOX_EDGES = [(a, a | bit) for a in range(8) for bit in (1, 2, 4) if not a & bit]


def _screen_rect(lo, hi, pose: CameraPose, intrinsics: CameraIntrinsics):
    """The pixel rectangle (u0, u1, v0, v1) a box can cover; None when it is behind the camera or off the image."""
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    cam = (corners - pose.origin) @ pose.rotation  # optical frame
    z = cam[:, 2]
    if (z <= NEAR_M).all():
        return None
    w, h = intrinsics.width, intrinsics.height
    front = z > NEAR_M
    if not front.all():  # straddles the near plane: its part in front ends where the edges cross it
        crossings = [
            cam[a] + (NEAR_M - z[a]) / (z[b] - z[a]) * (cam[b] - cam[a]) for a, b in _BOX_EDGES if front[a] != front[b]
        ]
        cam = np.vstack([cam[front], crossings])
        z = cam[:, 2]
    u = intrinsics.fx * cam[:, 0] / z + intrinsics.cx
    v = intrinsics.fy * cam[:, 1] / z + intrinsics.cy
    u0, u1 = max(0, int(np.floor(u.min()))), min(w, int(np.ceil(u.max())) + 1)
    v0, v1 = max(0, int(np.floor(v.min()))), min(h, int(np.ceil(v.max())) + 1)
    return None if u0 >= u1 or v0 >= v1 else (u0, u1, v0, v1)


def _marker_pixels(points, box, axis, d, lo, hi, ids) -> np.ndarray:
    """The colour of item side faces at ``points``: the item's marker, as seen from outside the face."""
    out = np.zeros((len(points), 3))
    centre = (lo[box] + hi[box]) / 2
    size = hi[box] - lo[box]
    # outward normal: against the ray along the face's axis
    sign = -np.sign(d[np.arange(len(d)), axis])
    # right (seen from outside, up = +z): x faces -> +-y, y faces -> -+x
    right = np.zeros_like(points)
    right[axis == 0, 1] = sign[axis == 0]
    right[axis == 1, 0] = -sign[axis == 1]
    rel = points - centre
    width = np.where(axis == 0, size[:, 1], size[:, 0])
    u = 0.5 + (rel * right).sum(axis=1) / width
    v = 0.5 - rel[:, 2] / size[:, 2]
    shade = np.where(axis == 0, SHADE[0], SHADE[1])
    for b in np.unique(box):
        face = _marker_face(int(ids[b]))
        side = face.shape[0]
        mine = box == b
        px = np.clip((u[mine] * side).astype(int), 0, side - 1)
        py = np.clip((v[mine] * side).astype(int), 0, side - 1)
        out[mine] = (face[py, px] * (0.75 + 0.25 * shade[mine]))[:, None]
    return out


def with_noise(frame: Frame, noise: CameraNoise, rng: np.random.Generator) -> Frame | None:
    """``frame`` as a camera with ``noise`` delivers it (None: the frame was lost). ``rng`` makes it reproducible:
    seed it from the episode's seed, the robot and the step."""
    import cv2

    if rng.random() < noise.missed_frames:
        return None
    rgb = frame.rgb.astype(np.float32)
    if noise.blur_sigma_px > 0:
        rgb = cv2.GaussianBlur(rgb, (0, 0), noise.blur_sigma_px)
    if noise.pixel_sigma > 0:
        rgb = rgb + rng.normal(0.0, noise.pixel_sigma, rgb.shape)
    depth = frame.depth
    if noise.depth_sigma_1m > 0:
        measured = depth > 0
        jitter = rng.normal(0.0, 1.0, depth.shape) * noise.depth_sigma_1m * depth**2
        depth = np.where(measured, np.maximum(depth + jitter, NEAR_M), 0.0).astype(np.float32)
    return replace(frame, rgb=np.clip(np.rint(rgb), 0, 255).astype(np.uint8), depth=depth)


PERCEPTION = ("aruco", "color", "oracle")  # the detectors a visual suite can run (color knows classes only)
CWAH_VIEWS = 6  # a C-WAH robot sees its whole room: its camera looks round in this many views
REACH_M = 1.0  # what stands in or on a fixture this close the hand camera sees


class VisualObservations:
    """Observations as a robot with cameras has them (the visual suites). Each agent's head-camera frames go through
    its perception (:class:`coteam.senses.perception.CameraPerception`: the detector's detections put on the map and on
    their fixtures, fused into the agent's semantic map), and an item not held by a robot is in the agent's
    observation only as that map has it, when this step's frames confirmed it, or when it is in or on a fixture within
    :data:`REACH_M` (the hand camera looks into what the robot works at). C-WAH agents see their whole room, so the
    head camera (60°) looks round in :data:`CWAH_VIEWS` views; TDW-MAT agents see 90° ahead. Fixtures, rooms,
    teammates and held items pass unchanged. The perception node does the same over ROS 2."""

    def __init__(self, world: WorldState, detector: str, camera: CameraSpec | None = None):
        if detector not in PERCEPTION:
            raise ValueError(f"perception must be one of {', '.join(PERCEPTION)}, not {detector!r}")
        from coteam.domain.world import Benchmark

        self.world = world
        cwah = world.scene.benchmark == Benchmark.CWAH
        self.camera = camera or CameraSpec(fov_deg=60.0 if cwah else 90.0)
        self.offsets = tuple(360.0 * k / CWAH_VIEWS for k in range(CWAH_VIEWS)) if cwah else (0.0,)
        names = {i.id: i.name for i in world.scene.items}
        self.detector: ArucoDetector | ColorDetector | OracleDetector = (
            item_detector(world)
            if detector == "aruco"
            else colour_detector(world)
            if detector == "color"
            else OracleDetector(names)
        )
        self.categories = {i.name: i.category for i in world.scene.items}
        self.perception = {a: CameraPerception(ObservationAssembler(a, world.scene)) for a in world.agents}

    def __call__(self, observations: Mapping[str, Observation]) -> dict[str, Observation]:
        out = {}
        for agent, obs in observations.items():
            candidates = {v.id for v in obs.visible if self._needs_camera(agent, v)}
            confirmed, emptied = self.perceive(agent, candidates)
            out[agent] = self.perception[agent].merged(self.observe(agent, obs), confirmed, emptied)
        return out

    def _needs_camera(self, agent: str, view: ObjectView) -> bool:
        """An item only the head camera can reveal: not held, not at hand."""
        if view.kind != ObjectKind.ITEM or view.held_by:
            return False
        here = self.world.agents[agent].position
        return view.holder < 0 or math.dist(self.world.position_of(view.holder), here) > REACH_M

    def observe(self, agent: str, obs: Observation) -> Observation:
        """``obs`` as the hand camera alone shows it: held items, the items at hand and everything that is not an
        item (the sim bridge's status when the robots' perception nodes detect in the head camera's images); a
        camera's view, complete only for the fixtures at hand whose contents it sees (surfaces, open containers)."""
        here = self.world.agents[agent].position
        at_hand = tuple(
            f.id
            for f in (*self.world.scene.containers, *self.world.scene.surfaces)
            if math.dist(f.position, here) <= REACH_M and self.world.is_open.get(f.id, True)
        )
        kept = tuple(v for v in obs.visible if not self._needs_camera(agent, v))
        return replace(obs, visible=kept, complete_fixtures=at_hand)

    def frames(self, agent: str) -> list[tuple[float, Frame]]:
        """The head camera's views now, each with the camera's pan from the robot's heading in degrees."""
        heading = self.world.agents[agent].heading
        return [(pan, render(self.world, agent, self.camera, heading=(heading + pan) % 360)) for pan in self.offsets]

    def perceive(self, agent: str, among: set[int]) -> tuple[list[int], list[int]]:
        """Fuse what the agent's head camera detects now into its semantic map: the ids of the map objects this
        step's frames added or confirmed, and of those whose place they saw empty. Only the views that can show one
        of the items ``among`` or a place the map remembers (to see it empty) are rendered."""
        perception = self.perception[agent]
        room = self.world.scene.floorplan.room_at(self.world.agents[agent].position)
        remembered = [
            (o.position[0], o.position[1], o.height_m)
            for o in perception.fusion.objects()
            if o.height_m is not None and not o.holder
        ]
        confirmed: list[int] = []
        emptied: list[int] = []
        for frame in self._views(agent, among, remembered):
            found = [d for d in self.detector.detect(frame) if d.object_id < 0 or self.world.is_item(d.object_id)]
            on_map = detections_on_map(found, frame.pose, self.world.scene.floorplan, 0, self.categories)
            fused = perception.frame(
                on_map,
                room.name if room else "",
                partial(places_seen_empty, pose=frame.pose, intrinsics=frame.intrinsics, depth=frame.depth),
            )
            confirmed += fused.confirmed
            emptied += fused.seen_empty
        return confirmed, emptied

    def detected(self, agent: str, among: set[int] | None = None) -> set[int]:
        """The items the agent's head camera's detector finds now (nothing is fused; a class-only detector finds no
        instance)."""
        return {
            d.object_id
            for frame in self._views(agent, among)
            for d in self.detector.detect(frame)
            if self.world.is_item(d.object_id)
        }

    def _views(
        self, agent: str, among: set[int] | None, points: Iterable[tuple[float, float, float]] = ()
    ) -> Iterator[Frame]:
        """The head camera's views now; with ``among``, only those in which one of those items' boxes or one of
        ``points`` lies (a view that cannot show one cannot find one: the detections are the same, much faster, as
        the renderer tests each box only inside its screen rectangle too)."""
        agent_state = self.world.agents[agent]
        watched = [(p, p) for p in points]
        if among is not None:
            boxes = scene_boxes(self.world, agent)
            watched += [
                (lo, hi)
                for lo, hi, kind, oid in zip(boxes.lo, boxes.hi, boxes.kind, boxes.object_id, strict=True)
                if kind == KIND_ITEM and oid in among
            ]
        for pan in self.offsets:
            heading = (agent_state.heading + pan) % 360
            if among is not None:
                pose = CameraPose.of_robot(agent_state.position, heading, self.camera.mount)
                if not any(_screen_rect(lo, hi, pose, self.camera.intrinsics) for lo, hi in watched):
                    continue
            yield render(self.world, agent, self.camera, heading=heading)
