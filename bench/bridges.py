"""Methods through the simulator bridges: the "Simulator bridges" section of docs/benchmarks.md.

    python bench/bridges.py --out docs/benchmarks.md   # about 8 minutes on 2 cores

Every method (symbolic backend, two robots) plays
* the ``mapthor`` suite (MAP-THOR's bread, lettuce and tomato task on kitchens 1-5) through the AI2-THOR bridge
  against its fake controller (``coteam_sim.bridges.fake_thor``), which answers in AI2-THOR's metadata format;
* the first :data:`TDW_EPISODES` episodes of ``tdwmat-tdw`` (TDW-MAT's test episodes) through the TDW bridge: TDW's
  real controller and Replicant add-on against the stand-in build (``coteam_sim.bridges.fake_tdw``), which answers
  in TDW's output-data format; the same episodes on the embedded simulator give the reference transport rate.
Measured per method and bridge: episodes done, mean transport rate, mean steps (frames in TDW-MAT), the engine's
work per episode (AI2-THOR: every ``Controller.step`` the bridge sent; TDW: every frame, ``Controller.communicate``)
and decisions a second through the bridge (the team's decisions over the episodes' wall time, bridge and stand-in
included). The real table comes from ``coteam bench`` with ``--engine unity`` where the Unity builds run (see
docs/simulator.md).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from coteam_harness.runner import run_episode
from coteam_sim.bridges import bridge_for
from coteam_sim.bridges.fake_thor import FakeThorController
from coteam_sim.bridges.thor import MAP_THOR_TASKS, ThorBridge
from coteam_sim.suites import get_suite

TITLE = "## Simulator bridges"
METHODS = ("pce", "coela", "cobel", "reveca", "mindmap", "evocf", "mhp", "rhp", "random", "oracle")
TDW_EPISODES = 2


class _Sessions:
    """Makes the fake controllers, and keeps them to count their actions."""

    def __init__(self) -> None:
        self.made: list[FakeThorController] = []

    def __call__(self, **kwargs: Any) -> FakeThorController:
        self.made.append(FakeThorController(**kwargs))
        return self.made[-1]


def _thor(method: str) -> tuple[list[Any], list[int], float]:
    """The method's mapthor episodes: results, engine actions per episode, wall time."""
    results, work, wall = [], [], 0.0
    for task in MAP_THOR_TASKS:
        sessions = _Sessions()
        start = time.perf_counter()
        results.append(run_episode(ThorBridge(task, sessions), method))
        wall += time.perf_counter() - start
        work.append(len(sessions.made[0].calls))
    return results, work, wall


def _tdw(method: str) -> tuple[list[Any], list[int], float, list[float]]:
    """The method's first tdwmat-tdw episodes: results, frames per episode, wall time, embedded transport rates."""
    results, work, wall, embedded = [], [], 0.0, []
    tests = get_suite("tdwmat-test").episodes()
    for spec in get_suite("tdwmat-tdw").episodes()[:TDW_EPISODES]:
        bridge = bridge_for(spec, "fake")
        start = time.perf_counter()
        results.append(run_episode(bridge, method))
        wall += time.perf_counter() - start
        work.append(bridge.make_controller.build.frame)
        embedded.append(run_episode(tests[spec.index].build(), method).transport_rate)
    return results, work, wall, embedded


def _row(method: str, bridge: str, results: list[Any], work: list[int], wall: float, reference: str) -> str:
    row = (
        f"| {method} | {bridge} | {sum(r.success for r in results)} / {len(results)} | "
        f"{statistics.mean(r.transport_rate for r in results):.2f}{reference} | "
        f"{statistics.mean(r.steps for r in results):.0f} | {statistics.mean(work):.0f} | "
        f"{sum(r.decisions for r in results) / wall:.0f} |"
    )
    print(row, flush=True)
    return row


def _rows(method: str) -> tuple[list[str], bool]:
    """The method's two rows, and whether its TDW transport rate is the embedded simulator's."""
    thor = _row(method, "ai2thor (fake)", *_thor(method), "")
    results, work, wall, embedded = _tdw(method)
    tdw = _row(method, "tdw (stand-in build)", results, work, wall, f" ({statistics.mean(embedded):.2f})")
    return [thor, tdw], [r.transport_rate for r in results] == embedded


def section(command: str) -> str:
    measured = [_rows(method) for method in METHODS]
    same = sum(match for _, match in measured)
    lines = [
        TITLE,
        "",
        f"Made by `{command}`; what is measured is in the script's docstring. Each method (symbolic, two robots) "
        "plays the `mapthor` suite (MAP-THOR's bread, lettuce and tomato task, kitchens 1-5) through the AI2-THOR "
        f"bridge against its fake controller, and the first {TDW_EPISODES} `tdwmat-tdw` episodes (TDW-MAT's test "
        "episodes) through the TDW bridge, TDW's own controller and Replicants against a stand-in build; neither "
        "needs Unity.",
        "",
        "| method | bridge | episodes done | transport rate (embedded) | mean steps | engine work / episode | "
        "decisions / s |",
        "|---|---|---|---|---|---|---|",
        *(row for rows, _ in measured for row in rows),
        "",
        "How to read it:",
        "",
        "- Every method runs unchanged through both bridges; on AI2-THOR every kitchen is finished.",
        "- *Engine work*: AI2-THOR's `Controller.step` calls (a walk is a teleport and a look round of four quarter "
        "turns; an interaction first faces the object); TDW's frames (the Replicant add-on plays a step, a turn or "
        "a grasp frame by frame until it ends).",
        "- On TDW the steps are TDW-MAT frames (3,000 at most). The transport rate in brackets is the same "
        f"episodes' on the embedded simulator: {same} of {len(METHODS)} methods move exactly as much. The bridge "
        "keeps the benchmark's rules, but TDW leaves things a little elsewhere (a dropped object lands 0.1 m ahead "
        "of the robot; poses come back as 32-bit floats), so a method's later choices can part, either way.",
        "- On a Unity build every action or frame is rendered, so decisions a second there are bounded by the "
        "build, not by the methods. The real table: `coteam bench --suite mapthor --engine unity` and `coteam bench "
        "--suite tdwmat-tdw --engine unity` on a machine with the builds (docs/simulator.md).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/bridges.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
