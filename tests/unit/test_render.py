"""Top-down rendering of traces (PNG) and of a live env (rgb_array)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import numpy as np
import pytest

from coteam.domain.scene_io import scene_from_dict
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.render import (
    agent_color,
    delivered_items,
    item_statuses,
    render_rgb,
    render_trace,
    trace_paths,
    world_from_snapshot,
)
from coteam_sim.suites import SUITES

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _run(suite: str, index: int, path: Path) -> dict[str, Any]:
    scene = SUITES[suite].episodes()[index].build()
    run_episode(scene, "rhp", n_agents=2, trace_path=path)
    return load_trace(path)


@pytest.fixture(scope="module")
def cwah_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run("cwah-test", 0, tmp_path_factory.mktemp("cwah") / "t.json")


@pytest.fixture(scope="module")
def tdw_trace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run("tdwmat-test", 0, tmp_path_factory.mktemp("tdw") / "t.json")


def _read_png(path: Path) -> np.ndarray:
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[2] in (3, 4)
    h, w = img.shape[:2]
    assert 900 <= w <= 1600 and 500 <= h <= 1400, img.shape
    return (img[:, :, :3] * 255).round().astype(np.int16)


def _count_color(rgb: np.ndarray, color: str, tol: int = 6) -> int:
    target = np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(rgb - target).max(axis=2) <= tol).sum())


def _agent_colors(trace: dict[str, Any]) -> dict[str, str]:
    order = [a[0] for a in trace["scene"]["agent_starts"]]
    return {a: agent_color(order.index(a)) for a in trace["agents"]}


def test_render_trace_writes_png_in_new_directory(cwah_trace: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "deep" / "dir" / "map.png"
    got = render_trace(cwah_trace, out)
    assert Path(got) == out and out.is_file()
    rgb = _read_png(out)
    assert rgb.std() > 10  # not a blank canvas


def test_agent_paths_are_drawn_in_their_colours(cwah_trace: dict[str, Any], tmp_path: Path) -> None:
    with_paths = _read_png(render_trace(cwah_trace, tmp_path / "paths.png"))
    # Same final state, but no recorded steps: only the paths' pixels differ.
    no_steps = _read_png(render_trace({**cwah_trace, "steps": []}, tmp_path / "nopaths.png"))
    for agent, color in _agent_colors(cwah_trace).items():
        drawn = _count_color(with_paths, color)
        assert drawn - _count_color(no_steps, color) > 150, f"{agent}'s path ({color}) not visible"


def test_tdwmat_trace_renders(tdw_trace: dict[str, Any], tmp_path: Path) -> None:
    rgb = _read_png(render_trace(tdw_trace, tmp_path / "tdw.png"))
    for color in _agent_colors(tdw_trace).values():
        assert _count_color(rgb, color) > 150


def test_final_world_and_paths_come_from_the_trace(tdw_trace: dict[str, Any]) -> None:
    scene = scene_from_dict(tdw_trace["scene"])
    world = world_from_snapshot(scene, tdw_trace["agents"], tdw_trace["final_state"])
    assert world.to_snapshot() == tdw_trace["final_state"]
    # Items counted as delivered agree with the simulator's own progress count.
    done, _ = world.progress()
    delivered = delivered_items(world)
    assert (
        sum(min(p.count, sum(world.item(i).name == p.item for i in delivered)) for p in scene.task.predicates) == done
    )
    paths = trace_paths(scene, tdw_trace["agents"], tdw_trace["steps"])
    starts = {s.name: s for s in scene.agent_starts}
    for agent, poses in paths.items():
        assert poses[0][:2] == starts[agent].position
        assert list(poses[-1][:2]) == pytest.approx(world.agents[agent].position, abs=1e-3)
        assert all(a != b for a, b in itertools.pairwise(poses))  # repeats collapsed


def test_the_picture_tells_spare_items_from_missing_goal_items() -> None:
    """An item of a goal class is missing while its goal still wants items, spare once the goal is met."""
    from dataclasses import replace

    from coteam.domain.world import GoalPredicate, Placement, Relation, WorldState

    scene, pred = next(
        (scene, pred)
        for scene in (spec.build() for spec in SUITES["cwah-test"].episodes())
        for pred in scene.task.predicates
        if sum(i.name == pred.item for i in scene.items) > 1
    )
    of_class = [i.id for i in scene.items if i.name == pred.item]
    task = replace(scene.task, predicates=(GoalPredicate(pred.relation, pred.item, pred.target, 1),))
    world = WorldState(replace(scene, task=task), ())
    assert {item_statuses(world)[i] for i in of_class} == {"missing"}
    world.placements[of_class[0]] = Placement(pred.relation, pred.target)
    statuses = item_statuses(world)
    assert statuses[of_class[0]] == "in place"
    assert all(statuses[i] == "spare" for i in of_class[1:]) and len(of_class) > 1
    other = next(i.id for i in scene.items if i.name != pred.item)
    assert statuses[other] == "other" and pred.relation in (Relation.IN, Relation.ON)


def test_env_rgb_array_render() -> None:
    env = CoteamParallelEnv("cwah", 2, render_mode="rgb_array")
    env.reset(seed=3)
    frame = env.render()
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert 400 <= frame.shape[0] <= 1600 and 600 <= frame.shape[1] <= 2000
    assert frame.std() > 10
    assert env.sim is not None
    order = [s.name for s in env.sim.scene.agent_starts]
    for agent in env.possible_agents:  # each agent's heading marker
        assert _count_color(frame.astype(np.int16), agent_color(order.index(agent))) > 20


def test_render_rgb_shows_open_and_closed_containers_differently() -> None:
    env = CoteamParallelEnv("cwah", 1)
    env.reset(seed=0)
    assert env.sim is not None
    world, scene = env.sim.world, env.sim.scene
    container = scene.containers[0]
    world.is_open[container.id] = False
    closed = render_rgb(scene, world)
    world.is_open[container.id] = True
    opened = render_rgb(scene, world)
    assert closed.shape == opened.shape
    assert (closed != opened).any()
