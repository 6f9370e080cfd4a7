"""PettingZoo ``ParallelEnv`` over the simulator: ``reset(seed=, options=)`` / ``step({agent: primitive})``.

Actions are primitives (:class:`~coteam_sim.primitives.Primitive` or their text form). A malformed or foreign
primitive is not executed: the agent loses its turn, ``infos[agent]["failure"]`` says why and the reward is the
failure penalty. Observations are :class:`~coteam.domain.observation.Observation` objects.

``options``: ``{"scene": Scene}`` runs that scene; ``{"episode": EpisodeSpec}`` one suite episode; ``{"bridge":
Bridge}`` an episode on an external engine (AI2-THOR: ``coteam_sim.bridges``), whose session gives the scene and plays
the physical primitives; with none, a fresh episode of the env's benchmark is generated from ``seed``.
``{"end_at_goal": False}`` goes on once the goal is met, until the horizon (the twin: in a real home the robots must
see for themselves that they are done).
"""

from __future__ import annotations

import functools
import string
from typing import Any, ClassVar

import gymnasium
from pettingzoo import ParallelEnv

from coteam.domain.observation import Observation
from coteam.domain.physics import Physics
from coteam.domain.world import AGENT_NAMES, MAX_AGENTS, Benchmark, Scene
from coteam_sim.bridges import Bridge, BridgedSimulator
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveError, parse_primitive

FAILURE_PENALTY = -0.1


class ObservationSpace(gymnasium.spaces.Space):
    """The space of :class:`Observation` objects (structured, not sampleable)."""

    def __init__(self) -> None:
        super().__init__(shape=None, dtype=None)

    def contains(self, x: Any) -> bool:
        return isinstance(x, Observation)

    def sample(self, mask: Any = None, probability: Any = None) -> Observation:
        raise NotImplementedError("observations are produced by the simulator, not sampled")


class CoteamParallelEnv(ParallelEnv):
    metadata: ClassVar[dict[str, Any]] = {
        "name": "coteam_household_v0",
        "render_modes": ["rgb_array"],
        "is_parallelizable": True,
        "render_fps": 4,
    }

    def __init__(
        self,
        benchmark: Benchmark | str = Benchmark.CWAH,
        n_agents: int = 2,
        *,
        config: Physics | None = None,
        full_observability: bool = False,
        render_mode: str | None = None,
    ):
        if not 1 <= n_agents <= MAX_AGENTS:
            raise ValueError(f"n_agents must be between 1 and {MAX_AGENTS}, got {n_agents}")
        self.benchmark = Benchmark(benchmark)
        self.possible_agents = list(AGENT_NAMES[:n_agents])
        self.agents: list[str] = []
        self.config = config or Physics()
        self.full_observability = full_observability
        self.render_mode = render_mode
        self.sim: Simulator | None = None
        self._progress = 0

    @functools.cache  # noqa: B019  (spaces must be the same object per agent)
    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return ObservationSpace()

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return gymnasium.spaces.Text(max_length=600, charset=string.printable)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        options = options or {}
        self.close()  # an engine's session of an earlier episode
        if options.get("bridge") is not None:
            return self._reset_on(options["bridge"], seed or 0, bool(options.get("end_at_goal", True)))
        scene: Scene | None = options.get("scene")
        if scene is None and options.get("episode") is not None:
            scene = options["episode"].build()
        if scene is None:
            from coteam_sim.suites import fresh_episode

            scene = fresh_episode(self.benchmark, seed or 0, 0).build()
        if scene.benchmark != self.benchmark:
            raise ValueError(f"scene {scene.name!r} is {scene.benchmark.value}, this env is {self.benchmark.value}")
        self.scene = scene
        self.end_at_goal = bool(options.get("end_at_goal", True))
        self.sim = Simulator(
            scene,
            tuple(self.possible_agents),
            seed=seed or 0,
            config=self.config,
            full_observability=self.full_observability,
        )
        return self._started()

    def _reset_on(self, bridge: Bridge, seed: int, end_at_goal: bool):
        if bridge.benchmark != self.benchmark:
            raise ValueError(f"the bridge plays {bridge.benchmark.value}, this env is {self.benchmark.value}")
        agents = tuple(self.possible_agents)
        scene, engine = bridge.start(agents, seed)
        self.scene = scene
        self.end_at_goal = end_at_goal
        try:
            self.sim = BridgedSimulator(
                scene, agents, engine, seed=seed, config=self.config, full_observability=self.full_observability
            )
        except BaseException:
            engine.close()
            raise
        return self._started()

    def _started(self):
        assert self.sim is not None
        self.agents = list(self.possible_agents)
        self._progress = self.sim.world.progress()[0]
        obs = {a: self.sim.observe(a) for a in self.agents}
        infos = {a: self._info(a, "") for a in self.agents}
        return obs, infos

    def _info(self, agent: str, failure: str) -> dict[str, Any]:
        assert self.sim is not None
        done, total = self.sim.world.progress()
        return {
            "failure": failure,
            "progress": (done, total),
            "clock": self.sim.clock,
            "ready": self.sim.is_ready(agent),
        }

    def step(self, actions: dict[str, Primitive | str | None]):
        if self.sim is None or not self.agents:
            raise RuntimeError("step() called before reset() or after the episode ended")
        prims: dict[str, Primitive | None] = {}
        invalid: dict[str, str] = {}
        for agent, action in actions.items():
            if agent not in self.agents:
                raise KeyError(f"unknown or finished agent {agent!r}")
            if action is None or not self.sim.is_ready(agent):
                continue
            try:
                prims[agent] = parse_primitive(action, self.benchmark)
            except PrimitiveError as exc:
                invalid[agent] = f"invalid primitive: {exc}"
        failures = self.sim.step(prims)
        failures.update(invalid)
        for agent, reason in invalid.items():
            self.sim.last_failure[agent] = reason
        done, _ = self.sim.world.progress()
        gained = done - self._progress
        self._progress = done
        goal = self.sim.world.goal_done()
        timeout = self.sim.out_of_time()
        obs = {a: self.sim.observe(a) for a in self.agents}
        rewards = {a: float(gained) + (FAILURE_PENALTY if failures.get(a) else 0.0) for a in self.agents}
        ends = goal and self.end_at_goal
        terminations = dict.fromkeys(self.agents, ends)
        truncations = dict.fromkeys(self.agents, timeout and not ends)
        infos = {a: self._info(a, failures.get(a, "")) for a in self.agents}
        if ends or timeout:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def state(self) -> dict[str, Any]:
        assert self.sim is not None
        return self.sim.world.to_snapshot()

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        from coteam_sim.render import render_rgb

        assert self.sim is not None
        return render_rgb(self.sim.scene, self.sim.world)

    def close(self) -> None:
        if isinstance(self.sim, BridgedSimulator):
            self.sim.engine.close()
        self.sim = None
