"""Test helper: an agent's brain on a simulator scene, as a scenario test sets it up."""

from __future__ import annotations

from typing import Any

from coteam.agent.reasoning import AgentBrain, EpisodeInfo
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


def run_on_loopback(method: str, model, scene, trace_path=None, safety=None, **params: Any):
    """One episode of ``method`` on the ``llm`` backend, answered by ``model`` behind the loopback server (with
    the home's ``safety`` policy): the result, the requests the server got, and the tokens it reported (with no
    retries: a bad answer gets the repair round, then the symbolic answer)."""
    from coteam_harness.runner import run_episode
    from coteam_testkit.llm_server import LoopbackOpenAIServer

    with LoopbackOpenAIServer(model) as server:
        params = {"backend": "llm", "base_url": server.base_url, "max_retries": 0, **params}
        result = run_episode(scene, method, params=params, trace_path=trace_path, safety=safety)
        return result, list(server.requests), sum(u["total_tokens"] for u in server.usages)
