"""``coteam world draw``: a world file drawn over its occupancy map, to check it against the real home.

The picture (PNG, OpenCV) shows the Nav2 map (or, without one, the rooms' free space) in grey, the cells the
planners treat as blocked tinted red, each room's polygon and name, the fixtures (goal targets ringed in gold) with
the items the file puts in or on them, and each robot's start pose as an arrow. North (map +y) is up.
"""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np

from coteam.domain.world import Relation, Vec2
from coteam.home.world_file import World

PX_PER_M = 60
MARGIN_PX = 30
ROOM_COLOURS = ((66, 133, 244), (52, 168, 83), (171, 71, 188), (0, 172, 193), (255, 112, 67), (124, 179, 66))
GOLD = (0, 170, 230)  # BGR
BLOCKED = (60, 60, 200)
FONT = cv2.FONT_HERSHEY_SIMPLEX


def draw_world(world: World, out: str | Path) -> Path:
    scene, fp = world.scene, world.scene.floorplan
    (x0, y0), (x1, y1) = fp.corner_of(0, 0), fp.corner_of(fp.width, fp.height)
    width, height = round((x1 - x0) * PX_PER_M), round((y1 - y0) * PX_PER_M)
    header = 28 * (1 + len(scene.task.predicates))
    canvas = np.full((height + 2 * MARGIN_PX + header, width + 2 * MARGIN_PX, 3), 255, np.uint8)

    def px(pos: Vec2) -> tuple[int, int]:
        return (MARGIN_PX + round((pos[0] - x0) * PX_PER_M), header + MARGIN_PX + round((y1 - pos[1]) * PX_PER_M))

    area = canvas[header + MARGIN_PX : header + MARGIN_PX + height, MARGIN_PX : MARGIN_PX + width]
    area[:] = _background(world, x0, y1, width, height)
    for cy, row in enumerate(fp.rows):  # the planning grid's blocked cells, lightly tinted
        for cx, ch in enumerate(row):
            if ch == "#":
                a, b = px(fp.corner_of(cx, cy + 1)), px(fp.corner_of(cx + 1, cy))
                roi = canvas[a[1] : b[1], a[0] : b[0]]
                roi[:] = (0.75 * roi + 0.25 * np.array(BLOCKED)).astype(np.uint8)

    for i, room in enumerate(fp.rooms):
        colour = ROOM_COLOURS[i % len(ROOM_COLOURS)]
        corners = room.polygon or ((room.x0, room.y0), (room.x1, room.y0), (room.x1, room.y1), (room.x0, room.y1))
        points = np.array([px(fp.corner_of(*c)) for c in corners], np.int32)
        cv2.polylines(canvas, [points], True, colour, 2, cv2.LINE_AA)
        label_at = px(fp.corner_of(min(c[0] for c in corners), max(c[1] for c in corners)))
        _text(canvas, room.name, (label_at[0] + 6, label_at[1] + 18), colour, 0.55, 2)

    targets = {p.target for p in scene.task.predicates}
    holders: dict[int, list[str]] = {}
    for item in scene.items:
        placement = scene.placements[item.id]
        if placement.relation in (Relation.ON, Relation.IN):
            holders.setdefault(placement.target, []).append(item.name)
        elif placement.position is not None:
            cv2.circle(canvas, px(placement.position), 5, (40, 40, 40), -1, cv2.LINE_AA)
            _text(canvas, item.name, (px(placement.position)[0] + 7, px(placement.position)[1] + 4), (40, 40, 40))
    for fixture in (*scene.containers, *scene.surfaces):
        centre = px(fixture.position)
        is_container = fixture in scene.containers
        if fixture.id in targets:
            cv2.circle(canvas, centre, 13, GOLD, 3, cv2.LINE_AA)
        if is_container:
            cv2.rectangle(canvas, (centre[0] - 6, centre[1] - 6), (centre[0] + 6, centre[1] + 6), (30, 30, 30), -1)
        else:
            cv2.circle(canvas, centre, 6, (30, 30, 30), -1, cv2.LINE_AA)
        _text(canvas, fixture.name, (centre[0] + 10, centre[1] - 6), (20, 20, 20), 0.45, 1)
        contents = holders.get(fixture.id)
        if contents:
            counted = sorted({n: contents.count(n) for n in contents}.items())
            line = ("in: " if is_container else "on: ") + ", ".join(f"{n} x{c}" if c > 1 else n for n, c in counted)
            _text(canvas, line, (centre[0] + 10, centre[1] + 10), (90, 90, 90), 0.4, 1)

    for start in scene.agent_starts:
        tail = px(start.position)
        angle = math.radians(start.heading)
        tip = (tail[0] + round(28 * math.cos(angle)), tail[1] - round(28 * math.sin(angle)))
        cv2.circle(canvas, tail, 9, (0, 120, 0), -1, cv2.LINE_AA)
        cv2.arrowedLine(canvas, tail, tip, (0, 120, 0), 3, cv2.LINE_AA, tipLength=0.35)
        _text(canvas, start.name, (tail[0] - 20, tail[1] + 24), (0, 100, 0), 0.5, 2)

    names = scene.names()
    _text(
        canvas, f"{scene.name}: {scene.task.name} ({scene.benchmark.value} rules)", (MARGIN_PX, 22), (0, 0, 0), 0.6, 2
    )
    for i, p in enumerate(scene.task.predicates, start=1):
        line = f"goal: {p.relation.value}({p.item}, {names[p.target]}): {p.count}"
        _text(canvas, line, (MARGIN_PX, 22 + 26 * i), (0, 110, 160), 0.5, 1)
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"cannot write {out}: the drawing is a PNG (name it .png)")
    out.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(out), canvas):
        raise ValueError(f"cannot write {out}")
    return out


def _background(world: World, left: float, top: float, width: int, height: int) -> np.ndarray:
    """The occupancy map resampled to the drawing (free white, occupied black, unknown grey); without a map, the
    planning grid's free cells."""
    fp = world.scene.floorplan
    occupancy = world.occupancy
    if occupancy is None:
        grid = np.array([[200 if ch == "#" else 250 for ch in row] for row in reversed(fp.rows)], np.uint8)
        gray = cv2.resize(grid, (width, height), interpolation=cv2.INTER_NEAREST)
    else:
        image = np.where(occupancy.occupied, 0, np.where(occupancy.free, 255, 205)).astype(np.uint8)
        scale = PX_PER_M * occupancy.resolution
        # the map's top-left pixel is at (origin x, origin y + map height); shift it onto the drawing's corner
        map_top = occupancy.origin[1] + occupancy.size_m[1]
        shift = np.float32(
            [[scale, 0, (occupancy.origin[0] - left) * PX_PER_M], [0, scale, (top - map_top) * PX_PER_M]]
        )
        gray = cv2.warpAffine(image, shift, (width, height), flags=cv2.INTER_NEAREST, borderValue=205)
    return np.repeat(gray[:, :, None], 3, axis=2)


def _text(
    canvas: np.ndarray,
    text: str,
    at: tuple[int, int],
    colour: tuple[int, int, int],
    scale: float = 0.45,
    thick: int = 1,
) -> None:
    cv2.putText(canvas, text, at, FONT, scale, (255, 255, 255), thick + 3, cv2.LINE_AA)  # a halo keeps it legible
    cv2.putText(canvas, text, at, FONT, scale, colour, thick, cv2.LINE_AA)
