"""Bridges to the Unity simulators the papers used: an external engine plays the physical primitives while the
embedded simulator keeps the clock, messages, observations, results and traces (``external.BridgedSimulator``).

* ``ai2thor`` (:mod:`.thor`): a multi-agent AI2-THOR session, MAP-THOR-style tasks (suite ``mapthor``).

Each bridge runs here against a fake controller that answers in the library's own format (:mod:`.fake_thor`);
with the Unity build installed the same code drives the real one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol, get_args

from coteam.world import Benchmark, Scene
from coteam_sim.bridges.external import BridgedSimulator, BridgeError, ExternalEngine

if TYPE_CHECKING:
    from coteam_sim.bridges.thor import ThorSettings
    from coteam_sim.suites import EpisodeSpec

__all__ = ["ENGINES", "Bridge", "BridgeError", "BridgedSimulator", "ExternalEngine", "bridge_for"]
Engine = Literal["unity", "fake"]  # the real Unity build, or the stand-in that answers in its format
ENGINES: tuple[str, ...] = get_args(Engine)


class Bridge(Protocol):
    """One episode on an external engine: ``start`` opens the session and gives the scene read from it."""

    benchmark: Benchmark

    @property
    def title(self) -> str:
        """The task, in words."""
        ...

    @property
    def horizon(self) -> int: ...

    def start(self, agents: tuple[str, ...], seed: int) -> tuple[Scene, ExternalEngine]: ...


def bridge_for(spec: EpisodeSpec, engine: Engine, thor: ThorSettings | None = None) -> Bridge:
    """The bridge episode of a bridge suite's ``spec`` on ``engine``."""
    from coteam_sim.bridges.fake_thor import FakeThorController
    from coteam_sim.bridges.thor import MAP_THOR_TASKS, ThorBridge, ThorSettings, controller_factory

    if spec.bridge != "ai2thor":
        raise ValueError(f"{spec.name} is not an episode of a bridge suite")
    task = MAP_THOR_TASKS[spec.params["task"]]
    return ThorBridge(task, FakeThorController if engine == "fake" else controller_factory(thor or ThorSettings()))
