"""Perception from the simulated cameras: the "Perception" section of docs/benchmarks.md.

    python bench/perception.py --out docs/benchmarks.md   # ~3 min on 2 cores

Views: in each of the first ``EPISODES`` episodes of cwah-test and tdwmat-test, with every container opened (so that
every item is somewhere in view), a robot stands 1.5, 2.5 and 3.5 m from each of the first ``FIXTURES`` fixtures that
hold items, in the fixture's room, facing it (the first free spot going round it). Each view is rendered once
(``coteam_sim.camera.render``, 640 x 480, 60 degrees) and detected at every noise level of
``coteam_sim.camera.NOISE_LEVELS`` (noise seeded per view and level).

Detectors: ``aruco`` (the items' markers, ``coteam_sim.camera.item_detector``), ``color`` (the class colours of the
items' tops, ``colour_detector``: class, not instance) and ``oracle`` (the frame's ground-truth labels, at least 20
pixels; its noise is only the depth's). Ground truth: an item is *in view* when at least
``MIN_PIXELS`` pixels of the frame show it and it is within ``MAX_RANGE_M`` of the camera. A detection is *correct*
when an item visible in the frame (any pixel) matches it within ``MATCH_RADIUS_M`` on the map: the item it names by
id, or for a class-only detection the nearest visible item of its class not matched yet. Recall counts the in-view
items matched, precision the correct detections; the localisation error is the distance on the map between a
detection and the centre of its item's cube. A lost frame (``missed_frames``) counts its
in-view items as missed. Timing: ``render`` and ``detect`` per frame, median and 95th percentile.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time

import numpy as np

from coteam.domain.world import Relation
from coteam.senses.vision import OracleDetector
from coteam_sim import camera as cam
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite

TITLE = "## Perception"
EPISODES = 5
FIXTURES = 4
DISTANCES_M = (1.5, 2.5, 3.5)
MIN_PIXELS = 150
MAX_RANGE_M = 4.0
MATCH_RADIUS_M = 0.5
DETECTORS = {
    "aruco": cam.item_detector,
    "color": cam.colour_detector,
    "oracle": lambda world: OracleDetector({i.id: i.name for i in world.scene.items}),
}


def _match(found, visible: dict[int, str], centres: dict[int, np.ndarray], pose) -> list[tuple[int, float]]:
    """Each detection's item (the one it names by id, or for a class-only detection the nearest unmatched visible
    item of its class) within ``MATCH_RADIUS_M`` on the map, and the distance; (-1, nan) when there is none."""
    taken: set[int] = set()
    out = []
    for d in found:
        on_map = pose.to_map(np.array(d.point))
        candidates = [
            (float(np.linalg.norm(on_map - centres[i])), i)
            for i, name in visible.items()
            if i not in taken and (i == d.object_id if d.object_id >= 0 else name == d.name)
        ]
        best = min(candidates, default=(math.inf, -1))
        if best[0] <= MATCH_RADIUS_M:
            taken.add(best[1])
            out.append((best[1], best[0]))
        else:
            out.append((-1, math.nan))
    return out


def measure() -> dict:
    camera = cam.CameraSpec()
    counts = {
        (detector, level): {"in_view": 0, "found": 0, "detections": 0, "correct": 0, "errors": [], "lost": 0}
        for detector in DETECTORS
        for level in cam.NOISE_LEVELS
    }
    render_s: list[float] = []
    detect_s: dict[str, list[float]] = {name: [] for name in DETECTORS}
    views = 0
    for suite in ("cwah-test", "tdwmat-test"):
        for index, spec in enumerate(get_suite(suite).episodes()[:EPISODES]):
            scene = spec.build()
            world = Simulator(scene, tuple(a.name for a in scene.agent_starts)).world
            world.is_open.update(dict.fromkeys(world.is_open, True))
            detectors = {name: make(world) for name, make in DETECTORS.items()}
            names = {i.id: i.name for i in scene.items}
            holders = sorted(
                {
                    p.target
                    for p in world.placements.values()
                    if p.relation in (Relation.ON, Relation.IN) and world.is_fixture(p.target)
                }
            )[:FIXTURES]
            for fixture_id in holders:
                for distance in DISTANCES_M:
                    if not cam.stand_facing(world, "alice", fixture_id, distance):
                        continue
                    start = time.perf_counter()
                    frame = cam.render(world, "alice", camera)
                    render_s.append(time.perf_counter() - start)
                    boxes = cam.scene_boxes(world, "alice")
                    centres = {
                        oid: (np.array(lo) + np.array(hi)) / 2
                        for lo, hi, oid, kind in zip(boxes.lo, boxes.hi, boxes.object_id, boxes.kind, strict=True)
                        if kind == cam.KIND_ITEM
                    }
                    ids, pixels = np.unique(frame.labels, return_counts=True)
                    visible = {int(i): names[int(i)] for i in ids if int(i) in centres}
                    near = {
                        int(i)
                        for i, n in zip(ids, pixels, strict=True)
                        if int(i) in centres
                        and n >= MIN_PIXELS
                        and np.linalg.norm(centres[int(i)] - frame.pose.origin) <= MAX_RANGE_M
                    }
                    views += 1
                    for k, (level, noise) in enumerate(cam.NOISE_LEVELS.items()):
                        noisy = cam.with_noise(frame, noise, np.random.default_rng([index, views, k]))
                        for name, detector in detectors.items():
                            c = counts[name, level]
                            c["in_view"] += len(near)
                            if noisy is None:
                                c["lost"] += 1
                                continue
                            start = time.perf_counter()
                            found = detector.detect(noisy)
                            if level == "clean":
                                detect_s[name].append(time.perf_counter() - start)
                            matched = _match(found, visible, centres, frame.pose)
                            c["detections"] += len(found)
                            c["correct"] += sum(item >= 0 for item, _ in matched)
                            c["errors"] += [error for item, error in matched if item >= 0]
                            c["found"] += len({item for item, _ in matched} & near)
    return {"counts": counts, "views": views, "render_s": render_s, "detect_s": detect_s}


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank); NaN for no values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)] if ordered else float("nan")


def section(command: str) -> str:
    load = os.getloadavg()[0]
    data = measure()
    rows = [
        "| detector | noise | frames lost | items in view | recall | detections | precision | median error m "
        "| 95th pct error m |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (detector, level), c in data["counts"].items():
        errors = c["errors"]
        rows.append(
            f"| {detector} | {level} | {c['lost']} | {c['in_view']} | {c['found'] / max(1, c['in_view']):.3f} | "
            f"{c['detections']} | {c['correct'] / max(1, c['detections']):.3f} | "
            f"{statistics.median(errors) if errors else float('nan'):.3f} | {p95(errors):.3f} |"
        )
    levels = "; ".join(
        f"{name}: pixel σ {n.pixel_sigma:g}, depth σ {n.depth_sigma_1m:g} m at 1 m (× distance²), blur σ "
        f"{n.blur_sigma_px:g} px, {n.missed_frames:.0%} frames lost"
        for name, n in cam.NOISE_LEVELS.items()
        if name != "clean"
    )
    lines = [
        TITLE,
        "",
        f"Produced by `{command}`. {data['views']} views of items on furniture (the first {EPISODES} episodes of "
        f"cwah-test and tdwmat-test, every container open, a robot {', '.join(f'{d:g}' for d in DISTANCES_M)} m "
        "from each of the first fixtures holding items, facing it), 640 x 480 at 60°, each detected at every noise "
        f"level ({levels}). In view: at least {MIN_PIXELS} pixels of the item and within {MAX_RANGE_M:g} m; error: "
        "map distance from a detection to the centre of the item's cube. Method and definitions: the script's "
        "docstring.",
        "",
        *rows,
        "",
        f"Time per 640 x 480 frame on this 2-core machine (1-minute load average {load:.1f} before the run):",
        "",
        "| stage | median ms | 95th pct ms |",
        "|---|---|---|",
        *(
            f"| {stage} | {1000 * statistics.median(t):.0f} | {1000 * p95(t):.0f} |"
            for stage, t in [("render", data["render_s"])]
            + [(f"detect: {name}", t) for name, t in data["detect_s"].items()]
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/perception.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
