"""Top-down pictures of an episode: the occupancy grid, rooms, fixtures, items, agents and their paths.

Everything is drawn by :func:`draw_world` on a private matplotlib :class:`~matplotlib.figure.Figure` with the
Agg canvas (no pyplot global state, no display needed). :func:`render_trace` draws a recorded episode (final
state plus every agent's path) into a PNG; :func:`render_rgb` draws a live world as an ``(H, W, 3)`` uint8
array for ``CoteamParallelEnv(render_mode="rgb_array")``.

World coordinates are metres with x to the right and y growing with the grid row index, so the picture shows
row 0 at the top (the y axis points down). Headings are degrees from +x towards +y, as in the simulator.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import patheffects
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.offsetbox import AnnotationBbox, TextArea, VPacker
from matplotlib.patches import Circle, Patch, Polygon
from matplotlib.transforms import Bbox

from coteam.agent.goals import GOAL_RADIUS_M
from coteam.domain.scene_io import scene_from_dict
from coteam.domain.world import (
    AgentState,
    Benchmark,
    Container,
    Relation,
    Scene,
    WorldState,
    distance,
    placement_from_json,
)

# Agents are told apart by colour; none of these is used for items or fixtures.
AGENT_COLORS = ("#1f77b4", "#ff7f0e", "#9467bd", "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#4d4d4d")
WALL_COLOR = "#2e3236"
FLOOR_COLOR = "#f2f2f0"  # free cells outside every room (door gaps)
ROOM_TINTS = ("#f7efe1", "#e6eff7", "#eaf4e4", "#f6e8ee", "#efeaf8", "#fbf5dc", "#e3f2f1", "#f3ebe4")
SURFACE_COLOR = "#a8824f"
CONTAINER_COLOR = "#4a5c6e"
ITEM_COLOR = "#9a9a9a"
GOAL_PENDING_COLOR = "#d62728"
GOAL_DONE_COLOR = "#2ca02c"
GOAL_SPARE_COLOR = "#f0a35e"  # of a goal class, but its goal is met: not missing
TARGET_COLOR = "#f0b400"

MAP_INCHES = 8.6  # longer side of the map axes
SIDE_INCHES = 3.1  # legend / goal panel to the right of the map
DPI = 110
AGENT_SIZE_M = 0.32  # length of the heading triangle
PATH_NUDGE_M = 0.07  # sideways shift between agents' paths so overlapping ones stay visible

Point = tuple[float, float]
Pose = tuple[float, float, float]


def agent_color(index: int) -> str:
    return AGENT_COLORS[index % len(AGENT_COLORS)]


# --- public entry points ----------------------------------------------------------------------------------


def render_trace(trace: Mapping[str, Any], out: str | Path) -> Path:
    """Draw a loaded episode trace (final state + agent paths) and save it as a PNG; return its path."""
    scene = scene_from_dict(trace["scene"])
    agents = tuple(trace.get("agents") or (trace.get("final_state") or {}).get("agents", ()))
    world = world_from_snapshot(scene, agents, trace.get("final_state"), trace.get("steps") or ())
    paths = trace_paths(scene, agents, trace.get("steps") or ())
    fig = draw_world(scene, world, paths=paths, title=_trace_title(scene, trace))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=DPI, facecolor="white")
    return out


def render_rgb(scene: Scene, world: WorldState, *, dpi: int = DPI) -> np.ndarray:
    """The same top-down drawing of the current world (no paths) as an ``(H, W, 3)`` uint8 array."""
    done, total = world.progress()
    title = (
        f"{scene.name} — {scene.task.name}",
        f"{scene.benchmark.value} · {len(world.agents)} agents · goal items in place {done}/{total}",
    )
    fig = draw_world(scene, world, title=title, dpi=dpi)
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba(), dtype=np.uint8)[:, :, :3].copy()


# --- trace helpers ----------------------------------------------------------------------------------------


def world_from_snapshot(
    scene: Scene, agents: Sequence[str], snapshot: Mapping[str, Any] | None, steps: Sequence[Mapping[str, Any]] = ()
) -> WorldState:
    """A :class:`WorldState` of ``scene`` set to a ``to_snapshot()`` dict (or to the last recorded poses)."""
    world = WorldState(scene, tuple(agents))
    if snapshot:
        world.placements = {int(k): placement_from_json(v) for k, v in snapshot.get("placements", {}).items()}
        world.is_open.update({int(k): bool(v) for k, v in snapshot.get("open", {}).items()})
        for name, a in snapshot.get("agents", {}).items():
            pos = a["position"]
            hands = list(a.get("hands") or [])
            world.agents[name] = AgentState(
                name, (float(pos[0]), float(pos[1])), int(a.get("heading", 0)), hands or [None, None]
            )
    elif steps:
        for name, (x, y, h) in steps[-1].get("positions", {}).items():
            if name in world.agents:
                world.agents[name].position = (float(x), float(y))
                world.agents[name].heading = int(h)
    return world


def trace_paths(scene: Scene, agents: Sequence[str], steps: Sequence[Mapping[str, Any]]) -> dict[str, list[Pose]]:
    """Each agent's poses: its start pose, then the pose after every recorded step (repeats collapsed)."""
    starts = {s.name: s for s in scene.agent_starts}
    paths: dict[str, list[Pose]] = {}
    for name in agents:
        start = starts.get(name)
        poses: list[Pose] = [(start.position[0], start.position[1], float(start.heading))] if start else []
        for rec in steps:
            p = rec.get("positions", {}).get(name)
            if p is None:
                continue
            pose = (float(p[0]), float(p[1]), float(p[2]))
            if poses and poses[-1] == pose:
                continue
            poses.append(pose)
        paths[name] = poses
    return paths


def _trace_title(scene: Scene, trace: Mapping[str, Any]) -> tuple[str, str]:
    res = trace.get("result") or {}
    episode = res.get("episode") or scene.name
    task = res.get("task") or scene.task.name
    team = trace.get("team") or res.get("team") or "?"
    n = len(trace.get("agents") or ())
    unit = "frames" if scene.benchmark == Benchmark.TDWMAT else "steps"
    parts = [f"team {team}", f"{n} agents"]
    if res:
        parts.append("success ✓" if res.get("success") else "success ✗")
        parts.append(f"{res.get('steps', '?')} {unit}")
        rate = res.get("transport_rate")
        if rate is not None:
            parts.append(f"transport rate {100 * float(rate):.0f}%")
    return f"{episode} — {task}", " · ".join(parts)


# --- the drawing ------------------------------------------------------------------------------------------


@dataclass
class _Cluster:
    """Items drawn around one anchor (a fixture, an agent's hands, or a spot on the floor)."""

    anchor: Point
    fixture: int | None = None
    agent: str | None = None
    items: list[int] = field(default_factory=list)


def delivered_items(world: WorldState) -> set[int]:
    """Ids of items that currently satisfy a goal predicate."""
    return {i for pred in world.scene.task.predicates for i in world.satisfying_items(pred)}


def item_statuses(world: WorldState) -> dict[int, str]:
    """Each item as the picture tells it: "in place" (it satisfies a goal predicate), "missing" (of a goal class
    whose goal still wants items), "spare" (of a goal class whose goal is met: more such items than the task wants),
    or "other"."""
    delivered = delivered_items(world)
    wanted: dict[str, int] = {}
    for pred in world.scene.task.predicates:
        wanted[pred.item] = wanted.get(pred.item, 0) + pred.count
    in_place = {name: sum(1 for i in delivered if world.item(i).name == name) for name in wanted}
    out = {}
    for item in world.scene.items:
        if item.name not in wanted:
            out[item.id] = "other"
        elif item.id in delivered:
            out[item.id] = "in place"
        else:
            out[item.id] = "spare" if in_place[item.name] >= wanted[item.name] else "missing"
    return out


def _clusters(world: WorldState) -> list[_Cluster]:
    by_key: dict[tuple[Any, ...], _Cluster] = {}
    for f in (*world.scene.containers, *world.scene.surfaces):
        by_key[("fixture", f.id)] = _Cluster(f.position, fixture=f.id)
    for item_id in sorted(world.placements):
        root = world.holder_chain(item_id)[-1]
        if root.relation == Relation.HELD and root.agent in world.agents:
            key: tuple[Any, ...] = ("agent", root.agent)
            if key not in by_key:
                by_key[key] = _Cluster(world.agents[root.agent].position, agent=root.agent)
        elif root.relation in (Relation.ON, Relation.IN) and ("fixture", root.target) in by_key:
            key = ("fixture", root.target)
        elif root.relation == Relation.HELD:
            continue  # held by an agent this world does not track: nowhere to draw it
        else:
            pos = world.position_of(item_id)
            key = ("floor", round(pos[0], 2), round(pos[1], 2))
            if key not in by_key:
                by_key[key] = _Cluster(pos)
        by_key[key].items.append(item_id)
    return list(by_key.values())


def _ring(anchor: Point, n: int, radius: float, centred: bool) -> list[Point]:
    """Positions for ``n`` item markers around ``anchor`` (on it when ``centred`` and alone)."""
    if n == 1 and centred:
        return [anchor]
    out = []
    per_ring = 8
    for i in range(n):
        ring, k = divmod(i, per_ring)
        count = min(per_ring, n - ring * per_ring)
        r = radius * (1 + 0.6 * ring)
        a = -math.pi / 2 + 2 * math.pi * k / count + ring * math.pi / per_ring
        out.append((anchor[0] + r * math.cos(a), anchor[1] + r * math.sin(a)))
    return out


class _LabelPlacer:
    """Greedy label placement: try offsets around a point until the label overlaps nothing placed so far."""

    OFFSETS = ((8, 0), (-8, 0), (0, 8), (0, -8), (7, 7), (-7, 7), (7, -7), (-7, -7))

    def __init__(self, ax: Any, renderer: Any):
        self.ax = ax
        self.renderer = renderer
        self.area = ax.get_window_extent(renderer)
        self.boxes: list[Bbox] = []

    def block_point(self, xy: Point, radius_px: float) -> None:
        x, y = self.ax.transData.transform(xy)
        self.boxes.append(Bbox.from_extents(x - radius_px, y - radius_px, x + radius_px, y + radius_px))

    def _free(self, bb: Bbox) -> bool:
        inside = bb.x0 >= self.area.x0 and bb.x1 <= self.area.x1 and bb.y0 >= self.area.y0 and bb.y1 <= self.area.y1
        return inside and not any(bb.overlaps(b) for b in self.boxes)

    def place(
        self,
        xy: Point,
        box: Any,
        frame: dict[str, Any] | None = None,
        *,
        candidates: Sequence[tuple[float, float, bool]] | None = None,
        zorder: float = 9,
    ) -> AnnotationBbox:
        """Add ``box`` (an offsetbox) near data point ``xy`` at the first free candidate offset.

        Candidates are ``(dx, dy, leader)`` in points on screen (``leader`` draws a line back to ``xy``); by
        default, eight directions at growing distances. If none is free, the first one is used anyway.
        """
        if candidates is None:
            candidates = [(dx * k, dy * k, k > 1.0) for k in (1.0, 2.2, 3.6, 5.2) for dx, dy in self.OFFSETS]
        for dx, dy, leader in candidates:
            ab = self._make(xy, box, dx, dy, leader=leader, frame=frame, zorder=zorder)
            bb = self._extent(ab)
            if self._free(bb):
                self.boxes.append(bb)
                return ab
            ab.remove()
        dx, dy, leader = candidates[0]
        ab = self._make(xy, box, dx, dy, leader=leader, frame=frame, zorder=zorder)
        self.boxes.append(self._extent(ab))
        return ab

    def _extent(self, ab: AnnotationBbox) -> Bbox:
        """The label's box on screen (without its leader line), with a little margin."""
        ab.update_positions(self.renderer)
        return ab.patch.get_window_extent(self.renderer).padded(2.0)

    def _make(
        self,
        xy: Point,
        box: Any,
        dx: float,
        dy: float,
        *,
        leader: bool,
        frame: dict[str, Any] | None,
        zorder: float,
    ) -> AnnotationBbox:
        # Screen y points up while the map's y axis points down: a positive dy is "above" on screen.
        align = (0.0 if dx > 0 else 1.0 if dx < 0 else 0.5, 0.0 if dy > 0 else 1.0 if dy < 0 else 0.5)
        arrow = {"arrowstyle": "-", "color": "#777777", "lw": 0.6, "shrinkA": 0, "shrinkB": 2}
        ab = AnnotationBbox(
            box,
            xy,
            xybox=(dx, dy),
            xycoords="data",
            boxcoords="offset points",
            box_alignment=align,
            frameon=frame is not None,
            bboxprops=frame or {},
            pad=0.25 if frame else 0.0,
            zorder=zorder,
            arrowprops=arrow if leader else None,
        )
        self.ax.add_artist(ab)
        return ab


def _room_image(scene: Scene) -> np.ndarray:
    """RGB image of the grid: dark walls, one tint per room, and cells of a "near" goal area shaded gold."""
    fp = scene.floorplan
    tints = {room.id: _rgb(ROOM_TINTS[i % len(ROOM_TINTS)]) for i, room in enumerate(fp.rooms)}
    areas = [scene.fixture(p.target) for p in scene.task.predicates if p.relation == Relation.NEAR]
    gold = np.array(_rgb(TARGET_COLOR))
    img = np.empty((fp.height, fp.width, 3), dtype=float)
    wall, floor = _rgb(WALL_COLOR), _rgb(FLOOR_COLOR)
    for cy, row in enumerate(fp.rows):
        for cx, ch in enumerate(row):
            if ch == "#":
                img[cy, cx] = wall
                continue
            room = fp.room_of_cell(cx, cy)
            img[cy, cx] = tints[room.id] if room else floor
            centre = fp.center_of((cx, cy))
            if room and any(f.room == room.id and distance(centre, f.position) <= GOAL_RADIUS_M for f in areas):
                img[cy, cx] = 0.78 * img[cy, cx] + 0.22 * gold
    return img


def _rgb(color: str) -> tuple[float, float, float]:
    c = color.lstrip("#")
    return (int(c[0:2], 16) / 255, int(c[2:4], 16) / 255, int(c[4:6], 16) / 255)


def _triangle(pose: Pose, size: float) -> list[Point]:
    x, y, h = pose
    dx, dy = math.cos(math.radians(h)), math.sin(math.radians(h))
    nx, ny = -dy, dx
    tip = (x + size * dx, y + size * dy)
    back = (x - 0.55 * size * dx, y - 0.55 * size * dy)
    return [
        tip,
        (back[0] + 0.6 * size * nx, back[1] + 0.6 * size * ny),
        (back[0] - 0.6 * size * nx, back[1] - 0.6 * size * ny),
    ]


def _path_length(poses: Sequence[Pose]) -> float:
    return sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in itertools.pairwise(poses))


def draw_world(
    scene: Scene,
    world: WorldState,
    *,
    paths: Mapping[str, Sequence[Pose]] | None = None,
    title: tuple[str, str] = ("", ""),
    dpi: int = DPI,
) -> Figure:
    """Draw ``world`` (and optionally agents' ``paths``) on a new Agg-backed figure and return it."""
    paths = paths or {}
    fp = scene.floorplan
    (x0, y0), (x1, y1) = fp.corner_of(0, 0), fp.corner_of(fp.width, fp.height)
    fig, ax, side = _layout(fp.width, fp.height, dpi)
    ax.imshow(_room_image(scene), extent=(x0, x1, y1, y0), interpolation="nearest", zorder=0)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)  # row 0 at the top
    ax.set_aspect("equal")
    ax.tick_params(labelsize=7, length=2, colors="#555555")
    ax.set_xlabel("x [m]", fontsize=8, color="#555555", labelpad=1)
    ax.set_ylabel("y [m]", fontsize=8, color="#555555", labelpad=1)
    for spine in ax.spines.values():
        spine.set_color(WALL_COLOR)
    ax.apply_aspect()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    placer = _LabelPlacer(ax, renderer)
    px_per_m = float(ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])
    order = {s.name: i for i, s in enumerate(scene.agent_starts)}
    colors = {name: agent_color(order.get(name, i)) for i, name in enumerate((*world.agents, *paths))}

    targets = _draw_targets(ax, scene)
    _draw_paths(ax, paths, colors, placer)
    _draw_fixtures(ax, scene, world, placer)
    for name, st in world.agents.items():
        tri = _triangle((st.position[0], st.position[1], st.heading), AGENT_SIZE_M)
        ax.add_patch(Polygon(tri, closed=True, fc=colors[name], ec="white", lw=1.2, zorder=8))
        placer.block_point(st.position, 0.6 * AGENT_SIZE_M * px_per_m)
    needed = scene.task.needed_names()
    statuses = item_statuses(world)
    colour_of = {"other": ITEM_COLOR, "in place": GOAL_DONE_COLOR, "missing": GOAL_PENDING_COLOR}
    colour_of["spare"] = GOAL_SPARE_COLOR

    def item_color(item_id: int) -> str:
        return colour_of[statuses[item_id]]

    clusters = _clusters(world)
    for cl in clusters:
        _draw_items(ax, world, cl, needed, item_color, placer)

    # Labels, most important first: room names near the room centres, agents, then one card per cluster.
    room_offsets = [(0.0, 0.0, False)] + [
        (dx, dy, False) for d in (11, 22, 33, 44) for dx, dy in ((0, -d), (0, d), (2.5 * d, 0), (-2.5 * d, 0))
    ]
    for room in fp.rooms:
        text = TextArea(
            room.name.upper(), textprops={"fontsize": 11, "weight": "bold", "color": "#8a8a8a", "alpha": 0.8}
        )
        placer.place(fp.room_center(room.id), text, candidates=room_offsets, zorder=2.5)
    for name, st in world.agents.items():
        placer.place(
            st.position,
            _card([(name, colors[name], "bold", 8.5)]),
            frame={"boxstyle": "round,pad=0.25", "fc": "white", "ec": colors[name], "lw": 1.0, "alpha": 0.9},
        )
    for cl in sorted(clusters, key=lambda c: (c.agent is not None, -len(c.items))):
        lines: list[tuple[str, str, str, float]] = []
        if cl.fixture is not None:
            f = scene.fixture(cl.fixture)
            closed = isinstance(f, Container) and not world.is_open.get(f.id, True)
            star = " ★" if f.id in targets else ""
            lines.append((f"{f.name}{star}{' (closed)' if closed else ''}", "#222222", "bold", 7))
        elif cl.agent is not None:
            lines.append((f"{cl.agent} holds", colors[cl.agent], "bold", 7))
        for item_id, depth in _nested(world, cl.items):
            it = world.item(item_id)
            goal = it.name in needed
            lines.append(
                (
                    f"{'   ' * depth}{'↳ ' if depth else ''}{it.name} #{it.id}",
                    item_color(item_id) if goal else "#555555",
                    "bold" if goal else "normal",
                    6.5,
                )
            )
        if not lines or (cl.agent is not None and len(lines) == 1):
            continue
        placer.place(
            cl.anchor,
            _card(lines),
            frame={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#bbbbbb", "lw": 0.5, "alpha": 0.85},
        )

    _side_panel(side, fig, renderer, scene, world, paths, colors, targets)
    for text, top_in, size, weight, colour in (
        (title[0], 0.28, 13, "bold", "#222222"),
        (title[1], 0.58, 10, "normal", "#444444"),
    ):
        fig.text(
            ax.get_position().x0,
            1 - top_in / fig.get_figheight(),
            text,
            fontsize=size,
            weight=weight,
            va="center",
            ha="left",
            color=colour,
        )
    return fig


def _layout(cols: int, rows: int, dpi: int) -> tuple[Figure, Any, Any]:
    """A figure with the map axes (its aspect matches the grid) and a side panel for legend and goals."""
    scale = MAP_INCHES / max(cols, rows)
    map_w, map_h = cols * scale, rows * scale
    left, right, gap, top, bottom = 0.6, 0.15, 0.25, 0.85, 0.5
    fig_w = left + map_w + gap + SIDE_INCHES + right
    fig_h = top + max(map_h, 5.5) + bottom
    fig = Figure(figsize=(fig_w, fig_h), dpi=dpi, facecolor="white")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((left / fig_w, (fig_h - top - map_h) / fig_h, map_w / fig_w, map_h / fig_h))
    side = fig.add_axes(
        ((left + map_w + gap) / fig_w, bottom / fig_h, SIDE_INCHES / fig_w, (fig_h - top - bottom) / fig_h)
    )
    side.set_axis_off()
    return fig, ax, side


def _draw_targets(ax: Any, scene: Scene) -> dict[int, Relation]:
    """Gold rings on goal target fixtures; for "near" goals also the goal radius (clipped to the target's room)."""
    targets: dict[int, Relation] = {}
    for pred in scene.task.predicates:
        targets.setdefault(pred.target, pred.relation)
    fixture_ids = {f.id for f in (*scene.containers, *scene.surfaces)}
    fp = scene.floorplan
    for tid, rel in targets.items():
        if tid not in fixture_ids:
            continue
        f = scene.fixture(tid)
        if rel == Relation.NEAR:  # the area itself is shaded in the grid image; here its outline
            room = fp.room(f.room)
            corners = room.polygon or ((room.x0, room.y0), (room.x1, room.y0), (room.x1, room.y1), (room.x0, room.y1))
            clip = Polygon([fp.corner_of(*c) for c in corners], closed=True, transform=ax.transData)
            ring = Circle(f.position, GOAL_RADIUS_M, fill=False, ec=TARGET_COLOR, lw=1.4, ls="--", zorder=1)
            ax.add_patch(ring)
            ring.set_clip_path(clip)
        ax.add_patch(Circle(f.position, 0.42, fill=False, ec=TARGET_COLOR, lw=3.0, zorder=3))
    return targets


def _draw_paths(ax: Any, paths: Mapping[str, Sequence[Pose]], colors: Mapping[str, str], placer: _LabelPlacer) -> None:
    """Each agent's path, nudged a few centimetres per agent so shared corridors show every colour."""
    outline = [patheffects.withStroke(linewidth=3.6, foreground="white")]
    names = [n for n, poses in paths.items() if poses]
    for i, name in enumerate(names):
        poses = paths[name]
        nudge = PATH_NUDGE_M * (i - (len(names) - 1) / 2)
        xs, ys = [p[0] + nudge for p in poses], [p[1] + nudge for p in poses]
        ax.plot(
            xs,
            ys,
            color=colors[name],
            lw=2.0,
            solid_capstyle="round",
            solid_joinstyle="round",
            zorder=2,
            path_effects=outline,
        )
        ax.plot(poses[0][0], poses[0][1], marker="o", ms=8, mfc="white", mec=colors[name], mew=2.2, zorder=6)
        placer.block_point((poses[0][0], poses[0][1]), 6)


def _draw_fixtures(ax: Any, scene: Scene, world: WorldState, placer: _LabelPlacer) -> None:
    """Containers are squares (filled = closed, hollow = open); surfaces are brown diamonds."""
    for c in scene.containers:
        is_open = world.is_open.get(c.id, True)
        ax.plot(
            *c.position,
            marker="s",
            ms=10,
            mec=CONTAINER_COLOR,
            mew=2.0,
            mfc="white" if is_open else CONTAINER_COLOR,
            zorder=4,
        )
        placer.block_point(c.position, 7)
    for s in scene.surfaces:
        ax.plot(*s.position, marker="D", ms=9, mec="#6d5230", mew=1.0, mfc=SURFACE_COLOR, zorder=4)
        placer.block_point(s.position, 7)


def _draw_items(
    ax: Any, world: WorldState, cl: _Cluster, needed: set[str], item_color: Any, placer: _LabelPlacer
) -> None:
    """Item markers around their anchor: goal items red/green and larger, carriers as squares."""
    ordered = [i for i, _ in _nested(world, cl.items)]
    around = cl.fixture is not None or cl.agent is not None
    radius = (0.3 if around else 0.22) * max(1.0, len(ordered) / 6)
    spots = _ring(cl.anchor, len(ordered), radius, centred=not around)
    for item_id, spot in zip(ordered, spots, strict=True):
        it = world.item(item_id)
        goal = it.name in needed
        ax.plot(
            *spot,
            marker="s" if it.is_carrier else "o",
            ms=(7.5 if goal else 6) + (1.5 if it.is_carrier else 0),
            mfc=item_color(item_id),
            mec="white" if goal else "#555555",
            mew=0.8,
            zorder=7 if goal else 5,
        )
        placer.block_point(spot, 4)


def _nested(world: WorldState, items: Sequence[int]) -> list[tuple[int, int]]:
    """``items`` in display order with their nesting depth: each carrier is followed by its contents."""
    members = set(items)
    children: dict[int, list[int]] = {}
    roots = []
    for item_id in sorted(items):
        p = world.placements[item_id]
        if p.relation == Relation.IN and p.target in members:
            children.setdefault(p.target, []).append(item_id)
        else:
            roots.append(item_id)
    out: list[tuple[int, int]] = []

    def visit(item_id: int, depth: int) -> None:
        out.append((item_id, depth))
        for child in children.get(item_id, ()):
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    return out


def _card(lines: Sequence[tuple[str, str, str, float]]) -> VPacker:
    areas = [
        TextArea(text, textprops={"color": color, "weight": weight, "fontsize": size})
        for text, color, weight, size in lines
    ]
    return VPacker(children=areas, align="left", pad=0, sep=0.5)


def _side_panel(
    side: Any,
    fig: Figure,
    renderer: Any,
    scene: Scene,
    world: WorldState,
    paths: Mapping[str, Sequence[Pose]],
    colors: Mapping[str, str],
    targets: Mapping[int, Relation],
) -> None:
    """Legend (agents first) and, below it, the goal predicates with how many items are in place."""
    handles: list[Any] = []
    for name, st in world.agents.items():
        poses = paths.get(name)
        label = name + (f" — path {_path_length(poses):.1f} m" if poses else "") + f", heading {st.heading}°"
        handles.append(
            Line2D(
                [],
                [],
                color=colors[name],
                lw=2.0 if poses else 0,
                marker=">",
                ms=9,
                mfc=colors[name],
                mec="white",
                label=label,
            )
        )
    if paths:
        handles.append(Line2D([], [], ls="", marker="o", ms=8, mfc="white", mec="#555555", mew=2, label="start pose"))
    if scene.containers:
        handles.append(
            Line2D([], [], ls="", marker="s", ms=9, mfc="white", mec=CONTAINER_COLOR, mew=2, label="container (open)")
        )
        handles.append(
            Line2D(
                [],
                [],
                ls="",
                marker="s",
                ms=9,
                mfc=CONTAINER_COLOR,
                mec=CONTAINER_COLOR,
                mew=2,
                label="container (closed)",
            )
        )
    if scene.surfaces:
        handles.append(Line2D([], [], ls="", marker="D", ms=8, mfc=SURFACE_COLOR, mec="#6d5230", label="surface"))
    handles.append(Line2D([], [], ls="", marker="o", ms=13, mfc="none", mec=TARGET_COLOR, mew=3, label="goal target ★"))
    if any(r == Relation.NEAR for r in targets.values()):
        handles.append(
            Patch(
                fc=(*_rgb(TARGET_COLOR), 0.3),
                ec=TARGET_COLOR,
                ls="--",
                label=f"goal area (≤ {GOAL_RADIUS_M:g} m, same room)",
            )
        )
    handles.append(
        Line2D([], [], ls="", marker="o", ms=7.5, mfc=GOAL_PENDING_COLOR, mec="white", label="goal item, not in place")
    )
    handles.append(
        Line2D([], [], ls="", marker="o", ms=7.5, mfc=GOAL_DONE_COLOR, mec="white", label="goal item, in place")
    )
    handles.append(
        Line2D([], [], ls="", marker="o", ms=7.5, mfc=GOAL_SPARE_COLOR, mec="white", label="spare (its goal is met)")
    )
    handles.append(Line2D([], [], ls="", marker="o", ms=6, mfc=ITEM_COLOR, mec="#555555", label="other item"))
    if any(it.is_carrier for it in scene.items):
        handles.append(
            Line2D(
                [], [], ls="", marker="s", ms=7.5, mfc=ITEM_COLOR, mec="#555555", label="carrier item (↳ its contents)"
            )
        )
    legend = side.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, 1.0),
        fontsize=8,
        numpoints=1,
        frameon=True,
        framealpha=1.0,
        edgecolor="#cccccc",
        borderaxespad=0.0,
        labelspacing=0.7,
        handlelength=2.2,
        alignment="left",
        title="Legend",
        title_fontproperties={"weight": "bold", "size": 9},
    )

    # Goal status under the legend, one line per predicate.
    to_axes = side.transAxes.inverted()
    y = legend.get_window_extent(renderer).transformed(to_axes).y0 - 0.04
    done, total = world.progress()
    t = side.text(
        0.0,
        y,
        f"Goal: {scene.task.name}  ({done}/{total})",
        fontsize=9,
        weight="bold",
        va="top",
        transform=side.transAxes,
        color="#222222",
    )
    for pred in scene.task.predicates:
        y = t.get_window_extent(renderer).transformed(to_axes).y0 - 0.008
        n = world.satisfied(pred)
        ok = n >= pred.count
        text = (
            f"{'✓' if ok else '•'} {pred.item} {pred.relation.value} {scene.object_name(pred.target)}: {n}/{pred.count}"
        )
        t = side.text(
            0.02,
            y,
            text,
            fontsize=8,
            va="top",
            transform=side.transAxes,
            color=GOAL_DONE_COLOR if ok else GOAL_PENDING_COLOR,
        )
