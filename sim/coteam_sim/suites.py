"""Episode suites: the fixed test sets (``cwah-test``, ``tdwmat-test``) and fresh generators (``cwah``, ``tdwmat``).

``cwah-test``: 10 episodes, 2 per task, in the papers' task order. ``tdwmat-test``: 24 episodes = 2 floor plans
× 3 layouts × food/stuff × low/high container counts. A fresh suite draws episodes with the same task
distribution from a user seed: episode ``i`` of seed ``N`` is always the same scene.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from coteam.world import Benchmark, Scene
from coteam_sim import catalog
from coteam_sim.generator import add_distractors, generate_cwah, generate_tdwmat


@dataclass(frozen=True)
class EpisodeSpec:
    suite: str
    index: int
    benchmark: Benchmark
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    perception: str = ""  # visual suites: the detector the agents see items with (coteam_sim.camera.PERCEPTION)
    distractors: int = 0  # noisy suites: task-irrelevant items added to the scene (coteam_sim.generator)

    @property
    def name(self) -> str:
        return f"{self.suite}/{self.index}"

    def build(self) -> Scene:
        p = self.params
        if self.benchmark == Benchmark.CWAH:
            scene = generate_cwah(p["seed"], p["task"], self.name)
        else:
            scene = generate_tdwmat(p["floorplan"], p["layout"], p["category"], p["containers"], self.name)
        return add_distractors(scene, self.distractors)


@dataclass(frozen=True)
class Suite:
    name: str
    benchmark: Benchmark
    description: str
    fixed: bool  # True for the test sets; False for seeded generators

    def episodes(self, seed: int = 0, count: int | None = None) -> list[EpisodeSpec]:
        if self.fixed:
            return _TEST_SETS[self.name]()
        n = count if count is not None else (10 if self.benchmark == Benchmark.CWAH else 24)
        return [fresh_episode(self.benchmark, seed, i) for i in range(n)]


def _cwah_test() -> list[EpisodeSpec]:
    out = []
    for i in range(10):
        task = catalog.CWAH_TASKS[i // 2].name
        out.append(EpisodeSpec("cwah-test", i, Benchmark.CWAH, {"seed": f"test-{i}", "task": task}))
    return out


def _tdwmat_test() -> list[EpisodeSpec]:
    out = []
    combos = itertools.product(("A", "B"), range(3), ("food", "stuff"), ("low", "high"))
    for i, (fp, layout, category, containers) in enumerate(combos):
        out.append(
            EpisodeSpec(
                "tdwmat-test",
                i,
                Benchmark.TDWMAT,
                {"floorplan": f"test-{fp}", "layout": layout, "category": category, "containers": containers},
            )
        )
    return out


def _visual(base: str, suite: str) -> list[EpisodeSpec]:
    """The episodes of ``base`` seen through the agents' cameras (ArUco markers)."""
    return [replace(spec, suite=suite, perception="aruco") for spec in _TEST_SETS[base]()]


def _noisy(base: str, count: int) -> list[EpisodeSpec]:
    """The episodes of ``base`` with ``count`` task-irrelevant items each (REVECA's Noisy-C-WAH)."""
    return [replace(spec, suite=f"{base}-noisy{count}", distractors=count) for spec in _TEST_SETS[base]()]


_TEST_SETS = {
    "cwah-test": _cwah_test,
    "tdwmat-test": _tdwmat_test,
    "cwah-test-visual": lambda: _visual("cwah-test", "cwah-test-visual"),
    "tdwmat-test-visual": lambda: _visual("tdwmat-test", "tdwmat-test-visual"),
    "cwah-test-noisy10": lambda: _noisy("cwah-test", 10),
    "cwah-test-noisy20": lambda: _noisy("cwah-test", 20),
}


def fresh_episode(benchmark: Benchmark, seed: int, index: int) -> EpisodeSpec:
    suite = benchmark.value
    if benchmark == Benchmark.CWAH:
        task = catalog.CWAH_TASKS[(index // 2) % len(catalog.CWAH_TASKS)].name
        return EpisodeSpec(suite, index, benchmark, {"seed": f"{seed}-{index}", "task": task})
    containers = ("low", "high")[index % 2]
    category = ("food", "stuff")[(index // 2) % 2]
    return EpisodeSpec(
        suite,
        index,
        benchmark,
        {
            "floorplan": f"{seed}-{index // 12}",
            "layout": f"{seed}-{index}",
            "category": category,
            "containers": containers,
        },
    )


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite("cwah-test", Benchmark.CWAH, "C-WAH test set: 10 episodes, 2 per task, horizon 250 steps", True),
        Suite(
            "tdwmat-test",
            Benchmark.TDWMAT,
            "TDW-MAT test set: 24 episodes (2 floor plans × 3 layouts × food/stuff × low/high containers), "
            "horizon 3000 frames",
            True,
        ),
        Suite(
            "cwah-test-visual",
            Benchmark.CWAH,
            "the C-WAH test set seen through each robot's cameras: items only where ArUco detection finds them",
            True,
        ),
        Suite(
            "tdwmat-test-visual",
            Benchmark.TDWMAT,
            "the TDW-MAT test set seen through each robot's cameras: items only where ArUco detection finds them",
            True,
        ),
        *(
            Suite(
                f"cwah-test-noisy{n}",
                Benchmark.CWAH,
                f"the C-WAH test set with {n} task-irrelevant items added to each episode (Noisy-C-WAH)",
                True,
            )
            for n in (10, 20)
        ),
        Suite("cwah", Benchmark.CWAH, "fresh C-WAH episodes from --seed (same task distribution)", False),
        Suite("tdwmat", Benchmark.TDWMAT, "fresh TDW-MAT episodes from --seed (same task distribution)", False),
    )
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
    return SUITES[name]
