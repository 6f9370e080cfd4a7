"""Grid navigation shared by reasoners (distance annotations), the simulator's skill executor and the ROS
navigation fallback: 8-connected A*, Dijkstra distance fields and path smoothing on a :class:`FloorPlan`."""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Iterator
from functools import lru_cache

from coteam.domain.world import FloorPlan, Vec2

Cell = tuple[int, int]
_SQRT2 = math.sqrt(2.0)
_STEPS = (
    (1, 0, 1.0),
    (-1, 0, 1.0),
    (0, 1, 1.0),
    (0, -1, 1.0),
    (1, 1, _SQRT2),
    (1, -1, _SQRT2),
    (-1, 1, _SQRT2),
    (-1, -1, _SQRT2),
)


class NoPathError(RuntimeError):
    """Raised when two points are not connected on the free space of the floor plan."""


class NavGrid:
    """Path queries on a floor plan. Distance fields are cached per start cell (bounded LRU)."""

    def __init__(self, floorplan: FloorPlan, cache_size: int = 256):
        self.floorplan = floorplan
        self._free = {
            (x, y) for y in range(floorplan.height) for x in range(floorplan.width) if floorplan.is_free(x, y)
        }
        self._fields: OrderedDict[Cell, dict[Cell, float]] = OrderedDict()
        self._cache_size = cache_size
        # Each free cell's moves, worked out once: distance fields are a hot path of the value model.
        self._moves = {cell: tuple(self._reachable_moves(cell)) for cell in self._free}

    def is_free(self, cell: Cell) -> bool:
        return cell in self._free

    def neighbours(self, cell: Cell) -> tuple[tuple[Cell, float], ...]:
        """The cells one move away from ``cell`` and the moves' lengths in cells (none for a blocked cell)."""
        return self._moves.get(cell, ())

    def _reachable_moves(self, cell: Cell) -> Iterator[tuple[Cell, float]]:
        x, y = cell
        for dx, dy, cost in _STEPS:
            nxt = (x + dx, y + dy)
            if nxt not in self._free:
                continue
            # No corner cutting: a diagonal move needs both orthogonal cells free.
            if dx and dy and ((x + dx, y) not in self._free or (x, y + dy) not in self._free):
                continue
            yield nxt, cost

    def nearest_free(self, pos: Vec2) -> Cell:
        """The free cell closest to ``pos`` (the cell itself when free): :func:`nearest_free_cell`."""
        return nearest_free_cell(self.floorplan, pos)

    def distance_field(self, start: Cell) -> dict[Cell, float]:
        """Shortest path length in cells from ``start`` to every reachable cell (Dijkstra)."""
        cached = self._fields.get(start)
        if cached is not None:
            self._fields.move_to_end(start)
            return cached
        dist: dict[Cell, float] = {start: 0.0}
        heap = [(0.0, start)]
        pop, push, moves, inf = heapq.heappop, heapq.heappush, self._moves, math.inf
        while heap:
            d, cell = pop(heap)
            if d > dist[cell]:
                continue
            for nxt, cost in moves.get(cell, ()):
                nd = d + cost
                if nd < dist.get(nxt, inf):
                    dist[nxt] = nd
                    push(heap, (nd, nxt))
        self._fields[start] = dist
        if len(self._fields) > self._cache_size:
            self._fields.popitem(last=False)
        return dist

    def cell_distance(self, a: Cell, b: Cell) -> float | None:
        """Shortest path length in cells between two cells (None when unconnected), from whichever end already
        has a cached distance field (paths are symmetric), else from ``a``."""
        field = self._fields.get(b)
        if field is None:
            field = self.distance_field(a)
            return field.get(b)
        self._fields.move_to_end(b)
        return field.get(a)

    def path_length(self, a: Vec2, b: Vec2) -> float:
        """Travel distance in metres from ``a`` to ``b`` along the grid; ``inf`` when unreachable."""
        field = self.distance_field(self.nearest_free(a))
        cells = field.get(self.nearest_free(b))
        return math.inf if cells is None else cells * self.floorplan.cell_size

    def astar(self, start: Cell, goal: Cell) -> list[Cell]:
        """Cells from ``start`` to ``goal`` inclusive. Raises :class:`NoPathError` when unreachable."""
        if start == goal:
            return [start]

        def h(c: Cell) -> float:
            dx, dy = abs(c[0] - goal[0]), abs(c[1] - goal[1])
            return (dx + dy) + (_SQRT2 - 2) * min(dx, dy)

        came: dict[Cell, Cell] = {}
        g: dict[Cell, float] = {start: 0.0}
        heap = [(h(start), 0.0, start)]
        while heap:
            _, d, cell = heapq.heappop(heap)
            if cell == goal:
                path = [cell]
                while cell in came:
                    cell = came[cell]
                    path.append(cell)
                return path[::-1]
            if d > g[cell]:
                continue
            for nxt, cost in self.neighbours(cell):
                nd = d + cost
                if nd < g.get(nxt, math.inf):
                    g[nxt] = nd
                    came[nxt] = cell
                    heapq.heappush(heap, (nd + h(nxt), nd, nxt))
        raise NoPathError(f"no path from cell {start} to cell {goal}")

    def path(self, a: Vec2, b: Vec2) -> list[Vec2]:
        """Waypoints (cell centres, then ``b`` itself) from ``a`` to ``b``."""
        cells = self.astar(self.nearest_free(a), self.nearest_free(b))
        pts = [self.floorplan.center_of(c) for c in cells[1:]]
        pts.append(b)
        return pts

    def lane_path(self, a: Vec2, b: Vec2, turn_cost: float = 2.0) -> list[Cell]:
        """4-connected cell path from ``a`` to ``b`` that penalises turns (A* over cell × heading).

        Following it with axis-aligned moves of one cell never crosses a wall, whatever the agent's offset
        inside its cell — the controller of robots that move in fixed steps and turn in fixed increments.
        """
        start, goal = self.nearest_free(a), self.nearest_free(b)
        if start == goal:
            return [start]
        dirs = ((1, 0), (0, 1), (-1, 0), (0, -1))

        def h(c: Cell) -> float:
            return abs(c[0] - goal[0]) + abs(c[1] - goal[1])

        State = tuple[Cell, int]
        g: dict[State, float] = {(start, -1): 0.0}
        came: dict[State, State] = {}
        heap: list[tuple[float, float, Cell, int]] = [(h(start), 0.0, start, -1)]
        while heap:
            _, d, cell, k = heapq.heappop(heap)
            if cell == goal:
                path, state = [cell], (cell, k)
                while state in came:
                    state = came[state]
                    path.append(state[0])
                return path[::-1]
            if d > g[(cell, k)]:
                continue
            for nk, (dx, dy) in enumerate(dirs):
                nxt = (cell[0] + dx, cell[1] + dy)
                if nxt not in self._free:
                    continue
                nd = d + 1.0 + (turn_cost if k not in (-1, nk) else 0.0)
                if nd < g.get((nxt, nk), math.inf):
                    g[(nxt, nk)] = nd
                    came[(nxt, nk)] = (cell, k)
                    heapq.heappush(heap, (nd + h(nxt), nd, nxt, nk))
        raise NoPathError(f"no path from cell {start} to cell {goal}")

    def line_of_sight(self, a: Vec2, b: Vec2) -> bool:
        """True when the straight segment a→b stays on free cells (sampled at a quarter cell)."""
        length = math.dist(a, b)
        n = max(1, int(length / (self.floorplan.cell_size * 0.25)))
        for i in range(n + 1):
            t = i / n
            p = (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)
            if self.floorplan.cell_of(p) not in self._free:
                return False
        return True


@lru_cache(maxsize=1024)
def nearest_free_cell(floorplan: FloorPlan, pos: Vec2) -> Cell:
    """The free cell whose centre is nearest ``pos`` (its own cell when free; ties: the lowest cell), searched in
    growing squares round its cell until no nearer one can come."""
    cx, cy = floorplan.cell_of(pos)
    if floorplan.is_free(cx, cy):
        return (cx, cy)
    best: tuple[float, Cell] | None = None
    for radius in range(max(floorplan.width, floorplan.height) + 2):
        if best is not None and (radius - 1) * floorplan.cell_size > best[0]:
            return best[1]
        for x in range(cx - radius, cx + radius + 1):
            for y in range(cy - radius, cy + radius + 1):
                if max(abs(x - cx), abs(y - cy)) == radius and floorplan.is_free(x, y):
                    candidate = (math.dist(floorplan.center_of((x, y)), pos), (x, y))
                    best = candidate if best is None else min(best, candidate)
    if best is None:
        raise NoPathError(f"no free cell on the map near {pos}")
    return best[1]


def walk_along(path: list[Vec2], start: Vec2, step: float) -> tuple[Vec2, list[Vec2]]:
    """Advance ``step`` metres from ``start`` along the polyline ``path``; returns new position and rest."""
    pos = start
    remaining = step
    rest = list(path)
    while rest and remaining > 1e-9:
        target = rest[0]
        d = math.dist(pos, target)
        if d <= remaining:
            pos = target
            remaining -= d
            rest.pop(0)
        else:
            t = remaining / d
            pos = (pos[0] + (target[0] - pos[0]) * t, pos[1] + (target[1] - pos[1]) * t)
            remaining = 0.0
    return pos, rest
