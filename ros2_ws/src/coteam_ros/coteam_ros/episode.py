"""What the robots' nodes know about the episode they run: the task, the map and the landmarks.

Every node builds the same :class:`~coteam.agent.reasoning.EpisodeInfo` as the in-process runner from the scene file
(``coteam.domain.scene_io`` JSON) of its ``scene_path`` parameter, so all agree on the task and on the objects every
robot knows from the task description. The launcher writes that file from the team file's suite episode (or passes a
saved scene on): the robots' nodes do not need the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from coteam.agent.reasoning import EpisodeInfo
from coteam.domain.scene_io import load_scene
from coteam.domain.world import AGENT_NAMES, Scene
from coteam.home.safety import SafetyGate
from coteam.home.world_file import load_safety_policy


@dataclass(frozen=True)
class EpisodeSetup:
    scene: Scene
    info: EpisodeInfo


def load_episode(scene_path: str, seed: int, robots: list[str], safety_path: str = "") -> EpisodeSetup:
    """The scene saved at ``scene_path`` for ``robots``: in simulation the simulator's agents (alice, bob, ...), on
    hardware any names; with the home's safety policy of ``safety_path`` (a ``coteam-safety/1`` file)."""
    if not scene_path:
        raise ValueError(
            "no scene_path: the task's scene file (coteam.domain.scene_io JSON; `coteam launch` writes it)"
        )
    if not 1 <= len(robots) <= len(AGENT_NAMES):
        raise ValueError(f"a team has 1 to {len(AGENT_NAMES)} robots, got {len(robots)}")
    scene = load_scene(scene_path)
    gate = SafetyGate(load_safety_policy(safety_path), scene.floorplan) if safety_path else None
    info = replace(EpisodeInfo.for_scene(scene, tuple(robots), seed, episode=scene.name), safety=gate)
    return EpisodeSetup(scene, info)
