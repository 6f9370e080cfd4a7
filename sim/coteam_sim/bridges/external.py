"""The simulator with an external engine (AI2-THOR, TDW) as its physics: the same clock, messages, observations,
results and traces as the embedded simulator, while every physical primitive is played by the engine and the
engine's state is then mirrored into the world model. The embedded rules still plan each walking step (its
navigator over the floor plan the engine's free space gave), so a method, a skill and a trace do not know which
engine ran.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from coteam.domain.geometry import bearing
from coteam.domain.observation import Observation
from coteam.domain.physics import Physics
from coteam.domain.world import Scene, Vec2, WorldState
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind

_WALKS = (PrimitiveKind.WALK, PrimitiveKind.WALK_TO)
_HANDLING = (PrimitiveKind.GRASP, PrimitiveKind.PUT_INTO_CARRIER, PrimitiveKind.DROP)


def unity_yaw(heading: float) -> float:
    """The simulator's heading (0 = +x, counter-clockwise; map y is Unity's z) as a Unity yaw (0 = +z, clockwise
    seen from above), as AI2-THOR and TDW turn."""
    return (90.0 - heading) % 360.0


def heading_from_yaw(yaw: float) -> int:
    """A Unity yaw as the simulator's heading (whole degrees)."""
    return round(90.0 - yaw) % 360


class BridgeError(ValueError):
    """An external engine that cannot be reached or stopped answering; the message is one line saying what is
    missing or what it did not answer (a ValueError: the command line reports it as a bad setting, in one line)."""


class ExternalEngine(Protocol):
    """What :class:`BridgedSimulator` asks of an engine. Ids are the scene's (the engine maps them to its own)."""

    def move(self, agent: str, position: Vec2, heading: int) -> str:
        """Put ``agent`` at (or at the engine's free place nearest to) ``position``, facing ``heading`` (degrees,
        0 = +x, counter-clockwise); '' or the failure reason."""
        ...

    def act(self, agent: str, prim: Primitive) -> str:
        """Play any other primitive (open, grab, put; TDW-MAT's steps, turns, grasps); '' or the failure reason
        (in the simulator's words: ``too far``, ``container closed``, ...)."""
        ...

    def mirror(self, world: WorldState) -> None:
        """Write the engine's state (poses, hands, where every item is, what is open) into ``world``."""
        ...

    def visible_ids(self, agent: str) -> list[int] | None:
        """The objects ``agent`` sees now, by the engine's own visibility; None: the embedded simulator's sight on
        the mirrored poses (an engine the bridge takes no images from)."""
        ...

    def close(self) -> None: ...


class BridgedSimulator(Simulator):
    """A :class:`Simulator` whose physical primitives ``engine`` plays (see the module docstring). Observations are
    a camera's: an object not shown may just be out of view (``complete_fixtures=()``)."""

    def __init__(
        self,
        scene: Scene,
        agents: tuple[str, ...],
        engine: ExternalEngine,
        *,
        seed: int = 0,
        config: Physics | None = None,
        full_observability: bool = False,
    ) -> None:
        super().__init__(scene, agents, seed=seed, config=config, full_observability=full_observability)
        self.engine = engine
        engine.mirror(self.world)

    def _apply(self, agent: str, prim: Primitive) -> str:
        if prim.kind in (PrimitiveKind.WAIT, PrimitiveKind.SEND_MESSAGE):
            return super()._apply(agent, prim)
        if prim.kind in _WALKS:
            start = self.world.agents[agent].position
            failure = super()._apply(agent, prim)  # the embedded navigator plans the stride
            end = self.world.agents[agent].position
            if not failure and end != start:
                failure = self.engine.move(agent, end, round(bearing(start, end)) % 360)
        else:
            # TDW-MAT's bookkeeping (hands, containers) and a grasp's sight and handling limits are the benchmark's
            # rules, not the engine's physics (the engine decides the reach)
            refusal = self.handling_refusal(agent, prim) if prim.kind in _HANDLING else ""
            if not refusal and prim.kind == PrimitiveKind.GRASP:
                refusal = self.grasp_refusal(agent, prim.args[0])
            failure = refusal or self.engine.act(agent, prim)
        self.engine.mirror(self.world)  # the engine's state is the truth
        return failure

    def _visible_ids(self, agent: str) -> list[int]:
        seen = None if self.full_observability else self.engine.visible_ids(agent)
        if seen is None:  # the oracle, or an engine without images: the embedded sight on the mirrored state
            return super()._visible_ids(agent)
        return sorted(seen)

    def observe(self, agent: str) -> Observation:
        return replace(super().observe(agent), complete_fixtures=())
