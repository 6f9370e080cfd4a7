"""Methods through the simulator bridges: the "Simulator bridges" section of docs/benchmarks.md.

    python bench/bridges.py --out docs/benchmarks.md   # about 2 minutes on 2 cores

Every method (symbolic backend, two robots) plays the ``mapthor`` suite (MAP-THOR's bread, lettuce and tomato task
on kitchens 1-5) through the AI2-THOR bridge against its fake controller (``coteam_sim.bridges.fake_thor``), which
answers in AI2-THOR's metadata format without Unity. Measured per method: episodes done, mean steps, the engine's
actions per episode (every ``Controller.step`` the bridge sent: walks, looks round, faces, opens, pickups, puts) and
decisions a second through the bridge (the team's decisions over the episode's wall time, bridge and fake included).
The real table comes from the same command line with ``--engine unity`` where AI2-THOR's build runs (see
docs/simulator.md).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from coteam_harness.runner import run_episode
from coteam_sim.bridges.fake_thor import FakeThorController
from coteam_sim.bridges.thor import MAP_THOR_TASKS, ThorBridge

TITLE = "## Simulator bridges"
METHODS = ("pce", "coela", "cobel", "reveca", "mindmap", "evocf", "mhp", "rhp", "random", "oracle")


class _Sessions:
    """Makes the fake controllers, and keeps them to count their actions."""

    def __init__(self) -> None:
        self.made: list[FakeThorController] = []

    def __call__(self, **kwargs: Any) -> FakeThorController:
        self.made.append(FakeThorController(**kwargs))
        return self.made[-1]


def _row(method: str) -> str:
    done, steps, actions, decisions, wall = 0, [], [], 0, 0.0
    for task in MAP_THOR_TASKS:
        sessions = _Sessions()
        start = time.perf_counter()
        result = run_episode(ThorBridge(task, sessions), method)
        wall += time.perf_counter() - start
        done += result.success
        steps.append(result.steps)
        actions.append(len(sessions.made[0].calls))
        decisions += result.decisions
    row = (
        f"| {method} | ai2thor (fake) | {done} / {len(MAP_THOR_TASKS)} | {statistics.mean(steps):.1f} | "
        f"{statistics.mean(actions):.0f} | {decisions / wall:.0f} |"
    )
    print(row, flush=True)
    return row


def section(command: str) -> str:
    lines = [
        TITLE,
        "",
        f"Made by `{command}`; what is measured is in the script's docstring. Each method (symbolic, two robots) "
        "plays the `mapthor` suite (MAP-THOR's bread, lettuce and tomato task, kitchens 1-5) through the AI2-THOR "
        "bridge against its fake controller, which answers in AI2-THOR's metadata format without Unity.",
        "",
        "| method | bridge | episodes done | mean steps | engine actions / episode | decisions / s |",
        "|---|---|---|---|---|---|",
        *(_row(method) for method in METHODS),
        "",
        "How to read it: every method runs unchanged through the bridge and finishes every kitchen. *Engine "
        "actions* are the `Controller.step` calls the bridge sent (a walk is a teleport and a look round, four "
        "quarter turns; an interaction first faces the object); on a Unity build each costs a rendered frame, so "
        "decisions a second there are bounded by the build's frame rate, not by the methods. The real table: "
        "`coteam bench --suite mapthor --engine unity` on a machine with AI2-THOR's build (docs/simulator.md).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from ros_team import section_main  # bench/ is on sys.path when this file runs as a script

    return section_main(argv, "bench/bridges.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
