"""Lossless JSON (de)serialisation of :class:`~coteam.domain.world.Scene`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coteam.domain.handling_file import HANDLING_FORMAT, limits_from_dict, limits_to_dict
from coteam.domain.world import (
    AgentStart,
    Benchmark,
    Container,
    FloorPlan,
    GoalPredicate,
    HandlingLimits,
    Item,
    Relation,
    Room,
    Scene,
    Surface,
    Task,
    placement_from_json,
    placement_to_json,
)

SCENE_FORMAT = "coteam-scene/1"


def scene_to_dict(scene: Scene) -> dict[str, Any]:
    fp = scene.floorplan
    return {
        "format": SCENE_FORMAT,
        "name": scene.name,
        "benchmark": scene.benchmark.value,
        "seed": scene.seed,
        "floorplan": {
            "cell_size": fp.cell_size,
            "rows": list(fp.rows),
            "rooms": [
                [r.id, r.name, r.x0, r.y0, r.x1, r.y1, *([[list(c) for c in r.polygon]] if r.polygon else [])]
                for r in fp.rooms
            ],
            "origin": list(fp.origin),
        },
        "containers": [[c.id, c.name, c.room, list(c.position), c.capacity, c.openable] for c in scene.containers],
        "surfaces": [[s.id, s.name, s.room, list(s.position)] for s in scene.surfaces],
        "items": [[i.id, i.name, i.category, i.capacity] for i in scene.items],
        "placements": {str(k): placement_to_json(v) for k, v in sorted(scene.placements.items())},
        "agent_starts": [[a.name, list(a.position), a.heading] for a in scene.agent_starts],
        "task": {
            "name": scene.task.name,
            "category": scene.task.category,
            "horizon": scene.task.horizon,
            "predicates": [[p.relation.value, p.item, p.target, p.count] for p in scene.task.predicates],
        },
        "initially_open": sorted(scene.initially_open),
        "handling": limits_to_dict(scene.handling),
    }


def scene_from_dict(d: dict[str, Any]) -> Scene:
    if d.get("format") != SCENE_FORMAT:
        raise ValueError(f"format {d.get('format')!r}, expected {SCENE_FORMAT!r}")
    benchmark = Benchmark(d["benchmark"])
    fp = d["floorplan"]
    t = d["task"]
    return Scene(
        name=d["name"],
        benchmark=benchmark,
        seed=int(d["seed"]),
        floorplan=FloorPlan(
            float(fp["cell_size"]),
            tuple(fp["rows"]),
            tuple(_room(r) for r in fp["rooms"]),
            (float(fp.get("origin", (0, 0))[0]), float(fp.get("origin", (0, 0))[1])),
        ),
        containers=tuple(Container(c[0], c[1], c[2], (c[3][0], c[3][1]), c[4], c[5]) for c in d["containers"]),
        surfaces=tuple(Surface(s[0], s[1], s[2], (s[3][0], s[3][1])) for s in d["surfaces"]),
        items=tuple(Item(*i) for i in d["items"]),
        placements={int(k): placement_from_json(v) for k, v in d["placements"].items()},
        agent_starts=tuple(AgentStart(a[0], (a[1][0], a[1][1]), a[2]) for a in d["agent_starts"]),
        task=Task(
            t["name"],
            benchmark,
            tuple(GoalPredicate(Relation(p[0]), p[1], p[2], p[3]) for p in t["predicates"]),
            t["category"],
            int(t["horizon"]),
        ),
        initially_open=frozenset(d.get("initially_open", ())),
        handling=_handling(d.get("handling")),
    )


def _handling(d: dict[str, Any] | None) -> HandlingLimits:
    """A scene file's handling limits: a handling document (:mod:`coteam.domain.handling_file`), or the heavy / high /
    short lists scene files had before it."""
    if not d:
        return HandlingLimits()
    if "format" in d:
        return limits_from_dict(d)
    heavy, high, short = (sorted(d.get(key, ())) for key in ("heavy", "high", "short"))
    constraints = [
        *(
            [{"when": {"verb": "grab", "place": high, "robot": short}, "fails": "out of reach"}]
            if high and short
            else []
        ),
        *([{"when": {"verb": "grab", "held": heavy}, "fails": "hands busy with a heavy object"}] if heavy else []),
        *(
            [{"when": {"verb": "grab", "item": heavy, "hands_in_use": ["1", "2"]}, "fails": "needs both hands"}]
            if heavy
            else []
        ),
    ]
    return limits_from_dict({"format": HANDLING_FORMAT, "constraints": constraints})


def _room(entry: list[Any]) -> Room:
    """``[id, name, x0, y0, x1, y1]``, and a polygonal room's corners (grid units) as a seventh element."""
    polygon = tuple((float(x), float(y)) for x, y in entry[6]) if len(entry) > 6 else ()
    return Room(*entry[:6], polygon=polygon)


def save_scene(scene: Scene, path: str | Path) -> None:
    Path(path).write_text(json.dumps(scene_to_dict(scene), indent=1))


def load_scene(path: str | Path) -> Scene:
    """The scene saved at ``path``; a file that cannot be read as one raises a one-line :class:`ValueError`
    naming the file (and :class:`FileNotFoundError` when there is none)."""
    try:
        return scene_from_dict(json.loads(Path(path).read_bytes()))
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not a coteam scene: not text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        raise ValueError(f"{path}: not a coteam scene: bad JSON at {where} ({e.msg})") from None
    except KeyError as e:
        raise ValueError(f"{path}: not a coteam scene: no {e.args[0]!r}") from None
    except (ValueError, TypeError, IndexError, AttributeError) as e:
        raise ValueError(f"{path}: not a coteam scene: {e}") from None
