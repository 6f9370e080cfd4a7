"""What the robots' nodes know about the episode they run: the task, the map and the landmarks.

Planner and executor build the same :class:`~coteam.reasoning.EpisodeInfo` as the in-process runner, from the
suite episode (or a saved scene file) named by their parameters, so all three agree on the task and on the
objects every robot knows from the task description.
"""

from __future__ import annotations

from dataclasses import dataclass

from coteam.reasoning import EpisodeInfo
from coteam.scene_io import load_scene
from coteam.world import AGENT_NAMES, Scene
from coteam_sim.suites import get_suite


@dataclass(frozen=True)
class EpisodeSetup:
    name: str
    scene: Scene
    info: EpisodeInfo


def load_episode(suite: str, episode: int, seed: int, robots: list[str], scene_path: str = "") -> EpisodeSetup:
    """The episode ``episode`` of ``suite`` (or the scene saved at ``scene_path``) for ``robots``: in simulation
    the simulator's agents (alice, bob, ...), on hardware any names."""
    if scene_path:
        scene = load_scene(scene_path)
        name = scene.name
    else:
        spec = get_suite(suite).episodes()[episode]
        scene, name = spec.build(), spec.name
    if not 1 <= len(robots) <= len(AGENT_NAMES):
        raise ValueError(f"a team has 1 to {len(AGENT_NAMES)} robots, got {len(robots)}")
    return EpisodeSetup(name, scene, EpisodeInfo.for_scene(scene, tuple(robots), seed, episode=name))
