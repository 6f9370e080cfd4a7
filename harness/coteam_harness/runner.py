"""In-process episode runner: a team's brains decide, skill executors turn decisions into primitives, the
PettingZoo env steps, and everything is recorded in a JSON trace."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from coteam.agent.reasoning import AgentBrain, EpisodeInfo, EpisodeOutcome, StartSkill, Team, agent_turn
from coteam.domain.observation import Observation
from coteam.domain.physics import Physics
from coteam.domain.world import Scene
from coteam.home.safety import SafetyGate, SafetyPolicy, is_refusal
from coteam.registry import make_team
from coteam_harness.executor import SkillExecutor
from coteam_harness.meter import EpisodeMeter
from coteam_harness.results import EpisodeResult
from coteam_harness.trace import TraceRecorder, journal_path
from coteam_sim.bridges import Bridge
from coteam_sim.camera import VisualObservations
from coteam_sim.engine import Simulator
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.primitives import Primitive, PrimitiveKind


class AgentRuntime:
    """One agent in-process: brain (decides) + skill executor (primitives)."""

    def __init__(self, brain: AgentBrain, executor: SkillExecutor, meter: EpisodeMeter, recorder: TraceRecorder | None):
        self.brain = brain
        self.executor = executor
        self.meter = meter
        self.recorder = recorder
        self.refusals = 0  # actions the safety policy refused (or a person did not approve)

    def next_primitive(self) -> Primitive:
        turn = agent_turn(self.brain, self.executor.busy)
        try:
            request = next(turn)
            while True:
                if isinstance(request, StartSkill):
                    record = self.brain.record(request.decision, request.options)
                    self.meter.decision(record)
                    if self.recorder:
                        self.recorder.add_decision(record)
                    self.executor.start(request.decision.action, self.brain.memory)
                    request = next(turn)
                    continue
                prim, outcome = self.executor.next_primitive()
                if prim is not None:
                    return prim
                assert outcome is not None
                if is_refusal(outcome.reason):
                    self.refusals += 1
                    self.meter.reported(self.brain.agent, safety_refusals=self.refusals)
                if self.recorder:
                    self.recorder.outcome(self.brain.agent, self.brain.memory.step, outcome)
                request = turn.send(outcome)
        except StopIteration:
            return Primitive(PrimitiveKind.WAIT)


def episode_info(sim: Simulator, seed: int, episode: str = "") -> EpisodeInfo:
    """What every agent knows at reset about the simulator's episode."""
    return EpisodeInfo.for_scene(sim.scene, sim.agents, seed, sim.config, episode)


def run_episode(
    scene: Scene | Bridge,
    team: Team | str,
    *,
    n_agents: int = 2,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    config: Physics | None = None,
    trace_path: str | Path | None = None,
    episode_name: str = "",
    on_step: Callable[[int, int], None] | None = None,
    perception: str = "",
    safety: SafetyPolicy | None = None,
    approve: Callable[[str], bool] | None = None,
) -> EpisodeResult:
    """One episode of ``team`` in ``scene``, or on an external engine's session (a :class:`Bridge`: AI2-THOR), which
    is closed at the end (a team object lives for a whole run: it is reset here, not rebuilt; a method name builds a
    team for this episode only). ``safety``: the home's policy, which the robots know and their executors enforce;
    ``approve`` answers the questions it asks a person (None: every answer is no)."""
    if not isinstance(team, str) and params is not None:
        raise ValueError("params go to make_team: a team object already has its validated config")
    team_obj = make_team(team, params) if isinstance(team, str) else team
    env = CoteamParallelEnv(scene.benchmark, n_agents, config=config, full_observability=team_obj.full_observability)
    with contextlib.closing(env):
        obs, _ = env.reset(seed=seed, options={"scene": scene} if isinstance(scene, Scene) else {"bridge": scene})
        sim = env.sim
        assert sim is not None
        scene = sim.scene
        name = episode_name or scene.name
        gate = SafetyGate(safety, scene.floorplan) if safety is not None else None
        info = replace(episode_info(sim, seed, name), safety=gate)
        team_obj.reset(info)
        meter = EpisodeMeter(sim, name, team_obj.name)
        recorder = (
            TraceRecorder(
                scene,
                info.agents,
                team_obj.name,
                method_params(team_obj),
                seed,
                team_obj.full_observability,
                journal=journal_path(trace_path),
            )
            if trace_path
            else None
        )
        runtimes = {
            a: AgentRuntime(
                AgentBrain(a, info, team_obj, sim.nav),
                SkillExecutor(scene.benchmark, sim.nav, sim.config, safety=gate, approve=approve),
                meter,
                recorder,
            )
            for a in env.agents
        }
        visual = VisualObservations(sim.world, perception) if perception else None
        if visual is not None:
            obs = visual(obs)
        shared = team_obj.centralised and not team_obj.full_observability  # its robots see what each of them sees

        def deliver(observations: Mapping[str, Observation]) -> None:
            for a, o in observations.items():
                runtimes[a].brain.observe(o)
            if shared:
                for a, o in observations.items():
                    for b, rt in runtimes.items():
                        if b != a:
                            rt.brain.absorb(o)

        deliver(obs)
        while env.agents:
            actions: dict[str, Primitive] = {}
            for a in env.agents:
                if obs[a].ready:
                    actions[a] = runtimes[a].next_primitive()
            clock_before = sim.clock
            obs, _, _, _, infos = env.step(actions)
            failures = {a: infos[a]["failure"] for a in actions}
            meter.step(actions, failures)
            if recorder:
                recorder.step(clock_before, sim, actions, failures)
            if visual is not None:
                obs = visual(obs)
            deliver(obs)
            if on_step:
                on_step(sim.clock, sim.horizon)
        meter.stop()
        for a, rt in runtimes.items():
            meter.reported(a, payloads_dropped=rt.brain.payloads_dropped)
        result = meter.result(str(trace_path) if trace_path else None)
        memories = [rt.brain.memory for rt in runtimes.values()]
        team_obj.end_episode(EpisodeOutcome.of(name, result.success, result.steps, result.transport_rate, memories))
        store = getattr(team_obj, "store", None)
        if store is not None and store.persisted:
            result = replace(result, store_sha256=store.digest())
        if recorder and trace_path:
            recorder.finish(sim, asdict(result))
            recorder.write(trace_path)
        return result


def method_params(team: Team) -> dict[str, Any]:
    """The team's validated switches as a trace records them (secrets left out; {} for a team without a config)."""
    config = getattr(team, "config", None)
    return config.recorded() if config is not None else {}
