"""Episode suites: the fixed test sets (``cwah-test``, ``tdwmat-test``) and fresh generators (``cwah``, ``tdwmat``).

``cwah-test``: 10 episodes, 2 per task, in the papers' task order. ``tdwmat-test``: 24 episodes = 2 floor plans
× 3 layouts × food/stuff × low/high container counts. A fresh suite draws episodes with the same task
distribution from a user seed: episode ``i`` of seed ``N`` is always the same scene. The strict generators
(``cwah-strict``, ``tdwmat-strict``) draw the same scenes with handling limits the robots are not told of (the
handling files of :data:`STRICT_HANDLING`): skills fail on them systematically, by object class and robot, so a method
can learn them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from coteam.domain.handling_file import load_handling
from coteam.domain.world import Benchmark, HandlingLimits, Scene
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
    strict: bool = False  # strict suites: the scene has the handling limits of STRICT_HANDLING
    bridge: str = ""  # bridge suites: the external engine whose session gives the scene (coteam_sim.bridges)
    handling: HandlingLimits | None = None  # a handling file's limits instead of the suite's (coteam run --handling)

    @property
    def name(self) -> str:
        return f"{self.suite}/{self.index}"

    def build(self) -> Scene:
        if self.bridge:
            raise ValueError(f"{self.name} runs on {self.bridge}: its scene comes from the engine's session")
        p = self.params
        if self.benchmark == Benchmark.CWAH:
            scene = generate_cwah(p["seed"], p["task"], self.name)
        else:
            scene = generate_tdwmat(p["floorplan"], p["layout"], p["category"], p["containers"], self.name)
        scene = add_distractors(scene, self.distractors)
        if self.handling is not None:
            return replace(scene, handling=self.handling)
        return strict_scene(scene) if self.strict else scene


# The strict suites' handling files (coteam.domain.handling_file): bottles and pots (C-WAH), a loaf and a pencil bucket
# (TDW-MAT) are lifted with both hands; wall cabinets and shelves are out of reach of every second robot of the team
# (bob, dave, ...).
STRICT_HANDLING = {
    Benchmark.CWAH: Path(__file__).parent / "handling" / "cwah-strict.yaml",
    Benchmark.TDWMAT: Path(__file__).parent / "handling" / "tdwmat-strict.yaml",
}


@cache
def strict_limits(benchmark: Benchmark) -> HandlingLimits:
    """The strict suite's handling limits on ``benchmark``."""
    return load_handling(STRICT_HANDLING[benchmark])


def strict_scene(scene: Scene) -> Scene:
    """``scene`` with the strict suites' handling limits (:data:`STRICT_HANDLING`)."""
    return replace(scene, handling=strict_limits(scene.benchmark))


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
        return [self.fresh(seed, i) for i in range(n)]

    def fresh(self, seed: int, index: int) -> EpisodeSpec:
        """Episode ``index`` of a generator suite drawn from ``seed``."""
        return fresh_episode(self.benchmark, seed, index, strict=self.name.endswith("-strict"))


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


def _mapthor() -> list[EpisodeSpec]:
    """MAP-THOR's bread, lettuce and tomato task on iTHOR kitchens 1-5 (coteam_sim.bridges.thor.MAP_THOR_TASKS)."""
    return [EpisodeSpec("mapthor", i, Benchmark.CWAH, {"task": i}, bridge="ai2thor") for i in range(5)]


def _tdwmat_tdw() -> list[EpisodeSpec]:
    """The tdwmat-test episodes played by TDW (coteam_sim.bridges.tdwmat)."""
    return [replace(spec, suite="tdwmat-tdw", bridge="tdw") for spec in _tdwmat_test()]


_TEST_SETS = {
    "cwah-test": _cwah_test,
    "tdwmat-test": _tdwmat_test,
    "cwah-test-visual": lambda: _visual("cwah-test", "cwah-test-visual"),
    "tdwmat-test-visual": lambda: _visual("tdwmat-test", "tdwmat-test-visual"),
    "cwah-test-noisy10": lambda: _noisy("cwah-test", 10),
    "cwah-test-noisy20": lambda: _noisy("cwah-test", 20),
    "mapthor": _mapthor,
    "tdwmat-tdw": _tdwmat_tdw,
}


def fresh_episode(benchmark: Benchmark, seed: int, index: int, strict: bool = False) -> EpisodeSpec:
    suite = benchmark.value + ("-strict" if strict else "")
    if benchmark == Benchmark.CWAH:
        task = catalog.CWAH_TASKS[(index // 2) % len(catalog.CWAH_TASKS)].name
        return EpisodeSpec(suite, index, benchmark, {"seed": f"{seed}-{index}", "task": task}, strict=strict)
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
        strict=strict,
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
        Suite(
            "mapthor",
            Benchmark.CWAH,
            "MAP-THOR on AI2-THOR: put bread, lettuce and tomato in the fridge, iTHOR kitchens 1-5 (--engine unity "
            "needs AI2-THOR's Unity build; --engine fake runs its stand-in)",
            True,
        ),
        Suite(
            "tdwmat-tdw",
            Benchmark.TDWMAT,
            "the TDW-MAT test set played by TDW, each robot a Replicant (--engine unity needs TDW's Unity build; "
            "--engine fake runs its stand-in)",
            True,
        ),
        Suite("cwah", Benchmark.CWAH, "fresh C-WAH episodes from --seed (same task distribution)", False),
        Suite("tdwmat", Benchmark.TDWMAT, "fresh TDW-MAT episodes from --seed (same task distribution)", False),
        Suite(
            "cwah-strict",
            Benchmark.CWAH,
            "fresh C-WAH episodes from --seed with handling limits the robots are not told of (bottles and the "
            "coffeepot need both hands; the second robot cannot reach wall cabinets or the bookshelf)",
            False,
        ),
        Suite(
            "tdwmat-strict",
            Benchmark.TDWMAT,
            "fresh TDW-MAT episodes from --seed with handling limits the robots are not told of (a loaf and a "
            "pencil bucket need both hands; the second robot cannot reach shelves, cabinet tops or the rack)",
            False,
        ),
    )
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; known suites: {', '.join(SUITES)}")
    return SUITES[name]
