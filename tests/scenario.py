"""Test helper: an agent's brain on a simulator scene, as a scenario test sets it up."""

from __future__ import annotations

from typing import Any

from coteam.reasoning import AgentBrain, EpisodeInfo
from coteam.registry import make_team
from coteam_sim.engine import Simulator


def method_brain(sim: Simulator, agent: str = "alice", method: str = "pce", params: dict[str, Any] | None = None):
    """``agent``'s brain running symbolic ``method`` on ``sim``'s scene, after its first observation."""
    scene = sim.scene
    info = EpisodeInfo(scene.benchmark, scene.task, scene.floorplan, sim.agents, 0, sim.landmarks(), sim.config)
    team = make_team(method, params)
    team.reset(info)
    brain = AgentBrain(agent, info, team, sim.nav)
    brain.observe(sim.observe(agent))
    return brain


def pce_brain(sim: Simulator, agent: str = "alice") -> AgentBrain:
    """``agent``'s brain running symbolic pce on ``sim``'s scene, after its first observation."""
    return method_brain(sim, agent, "pce")
