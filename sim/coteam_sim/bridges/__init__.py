"""Bridges to the Unity simulators the papers used: an external engine plays the physical primitives while the
embedded simulator keeps the clock, messages, observations, results and traces (``external.BridgedSimulator``).

* ``ai2thor`` (:mod:`.thor`): a multi-agent AI2-THOR session, MAP-THOR-style tasks (suite ``mapthor``).
* ``tdw`` (:mod:`.tdwmat`): TDW-MAT's transport challenge on ThreeDWorld, each robot a Replicant (suite
  ``tdwmat-tdw``).

Each bridge runs here against a stand-in that answers in the library's own format (:mod:`.fake_thor`: AI2-THOR's
events; :mod:`.fake_tdw`: a build speaking TDW's wire protocol and output data to TDW's real controller); with
the Unity build installed the same code drives the real one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from coteam.domain.world import Benchmark, Scene
from coteam_sim.bridges.external import BridgedSimulator, BridgeError, ExternalEngine
from coteam_sim.bridges.settings import UnitySettings

if TYPE_CHECKING:
    from coteam_sim.suites import EpisodeSpec

__all__ = ["ENGINES", "Bridge", "BridgeError", "BridgedSimulator", "ExternalEngine", "UnitySettings", "bridge_for"]
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

    @property
    def known_scene(self) -> Scene | None:
        """The scene when it is known without a session (else ``start`` reads it from the engine's)."""
        ...

    def start(self, agents: tuple[str, ...], seed: int) -> tuple[Scene, ExternalEngine]: ...


def bridge_for(spec: EpisodeSpec, engine: Engine, unity: UnitySettings | None = None) -> Bridge:
    """The bridge episode of a bridge suite's ``spec`` on ``engine`` (``unity``'s settings for the real builds)."""
    unity = unity or UnitySettings()
    if spec.bridge == "ai2thor":
        from coteam_sim.bridges.fake_thor import FakeThorController
        from coteam_sim.bridges.thor import MAP_THOR_TASKS, ThorBridge, controller_factory

        task = MAP_THOR_TASKS[spec.params["task"]]
        return ThorBridge(task, FakeThorController if engine == "fake" else controller_factory(unity.thor))
    if spec.bridge == "tdw":
        try:
            from coteam_sim.bridges import tdwmat
        except ImportError as exc:
            raise BridgeError(f"the TDW bridge cannot import tdw ({exc}): pip install -e '.[tdw]'") from None
        scene = replace(spec, bridge="").build()  # the embedded episode's house, built in TDW
        if engine == "fake":
            from coteam_sim.bridges.fake_tdw import FakeTdwController

            return tdwmat.TdwBridge(scene, FakeTdwController(), unity.tdw)
        return tdwmat.TdwBridge(scene, tdwmat.controller_factory(unity.tdw), unity.tdw)
    raise ValueError(f"{spec.name} is not an episode of a bridge suite")
