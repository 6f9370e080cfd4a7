"""In-process episode runner: a team's brains decide, skill executors turn decisions into primitives, the
PettingZoo env steps, and everything is recorded in a JSON trace."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coteam.actions import truncate_message
from coteam.physics import Physics
from coteam.reasoning import AgentBrain, EpisodeInfo, StartSkill, Team, agent_turn, make_team
from coteam.world import Benchmark, Scene
from coteam_sim.engine import Simulator
from coteam_sim.env import CoteamParallelEnv
from coteam_sim.executor import SkillExecutor
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.trace import TraceRecorder


@dataclass
class EpisodeResult:
    episode: str
    scene: str
    task: str
    benchmark: str
    agents: int
    team: str
    success: bool
    steps: int  # C-WAH: steps to finish (horizon on failure); TDW-MAT: frames used
    transport_rate: float  # fraction of goal items in place at the end
    food_rate: float | None
    stuff_rate: float | None
    messages: int
    message_chars: int
    tokens: int
    llm_calls: int
    llm_fallbacks: int  # role answers that fell back to the symbolic solver
    decisions: int
    decision_ms_mean: float
    decision_ms_median: float
    decision_ms_p95: float
    wall_s: float
    trace: str | None = None
    failures: dict[str, int] = field(default_factory=dict)


class AgentRuntime:
    """One agent in-process: brain (decides) + skill executor (primitives)."""

    def __init__(self, brain: AgentBrain, executor: SkillExecutor, recorder: TraceRecorder | None):
        self.brain = brain
        self.executor = executor
        self.recorder = recorder
        self.tokens = self.llm_calls = self.llm_fallbacks = 0

    def next_primitive(self) -> Primitive:
        turn = agent_turn(self.brain, self.executor.busy)
        try:
            request = next(turn)
            while True:
                if isinstance(request, StartSkill):
                    decision = request.decision
                    self.tokens += decision.tokens
                    self.llm_calls += decision.llm_calls
                    self.llm_fallbacks += decision.llm_fallbacks
                    if self.recorder:
                        self.recorder.decision(self.brain.agent, self.brain.memory, decision, request.options)
                    self.executor.start(decision.action, self.brain.memory)
                    request = next(turn)
                    continue
                prim, outcome = self.executor.next_primitive()
                if prim is not None:
                    return prim
                assert outcome is not None
                if self.recorder:
                    self.recorder.outcome(self.brain.agent, self.brain.memory.step, outcome)
                request = turn.send(outcome)
        except StopIteration:
            return Primitive(PrimitiveKind.WAIT)


def episode_info(sim: Simulator, seed: int) -> EpisodeInfo:
    """What every agent knows at reset about the simulator's episode."""
    scene = sim.scene
    return EpisodeInfo(scene.benchmark, scene.task, scene.floorplan, sim.agents, seed, sim.landmarks(), sim.config)


def run_episode(
    scene: Scene,
    team: Team | str,
    *,
    n_agents: int = 2,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    config: Physics | None = None,
    trace_path: str | Path | None = None,
    episode_name: str = "",
    on_step: Callable[[int, int], None] | None = None,
) -> EpisodeResult:
    team_obj = make_team(team, params) if isinstance(team, str) else team
    env = CoteamParallelEnv(scene.benchmark, n_agents, config=config, full_observability=team_obj.full_observability)
    start = time.perf_counter()
    obs, _ = env.reset(seed=seed, options={"scene": scene})
    sim = env.sim
    assert sim is not None
    info = episode_info(sim, seed)
    team_obj.reset(info)
    recorder = TraceRecorder(scene, info.agents, team_obj.name, dict(params or {}), seed) if trace_path else None
    runtimes = {
        a: AgentRuntime(
            AgentBrain(a, info, team_obj, sim.nav), SkillExecutor(scene.benchmark, sim.nav, sim.config), recorder
        )
        for a in env.agents
    }
    for a, o in obs.items():
        runtimes[a].brain.observe(o)
    messages = message_chars = 0
    failures: dict[str, int] = {}
    while env.agents:
        actions: dict[str, Primitive] = {}
        for a in env.agents:
            if obs[a].ready:
                actions[a] = runtimes[a].next_primitive()
        clock_before = sim.clock
        obs, _, _, _, infos = env.step(actions)
        for a, prim in actions.items():
            reason = infos[a]["failure"]
            if reason:
                failures[reason] = failures.get(reason, 0) + 1
            elif prim.kind == PrimitiveKind.SEND_MESSAGE:
                text = truncate_message(prim.text)
                messages += 1
                message_chars += len(text)
                if recorder:
                    recorder.message(a, clock_before, text)
        if recorder:
            recorder.step(clock_before, sim, actions, {a: infos[a]["failure"] for a in actions})
        for a, o in obs.items():
            runtimes[a].brain.observe(o)
        if on_step:
            on_step(sim.clock, sim.horizon)
    wall = time.perf_counter() - start
    done, total = sim.world.progress()
    success = done == total
    decision_s = [s for r in runtimes.values() for s in r.brain.decision_seconds]
    rates = category_rates(scene, done, total)
    result = EpisodeResult(
        episode=episode_name or scene.name,
        scene=scene.name,
        task=scene.task.name,
        benchmark=scene.benchmark.value,
        agents=n_agents,
        team=team_obj.name,
        success=success,
        steps=sim.clock if success else sim.horizon,
        transport_rate=done / total,
        food_rate=rates.get("food"),
        stuff_rate=rates.get("stuff"),
        messages=messages,
        message_chars=message_chars,
        tokens=sum(r.tokens for r in runtimes.values()),
        llm_calls=sum(r.llm_calls for r in runtimes.values()),
        llm_fallbacks=sum(r.llm_fallbacks for r in runtimes.values()),
        decisions=len(decision_s),
        decision_ms_mean=1000 * statistics.fmean(decision_s) if decision_s else 0.0,
        decision_ms_median=1000 * statistics.median(decision_s) if decision_s else 0.0,
        decision_ms_p95=1000 * p95(decision_s),
        wall_s=wall,
        failures=failures,
    )
    if recorder and trace_path:
        result.trace = str(trace_path)
        recorder.finish(sim, asdict(result))
        recorder.write(trace_path)
    return result


def category_rates(scene: Scene, done: int, total: int) -> dict[str, float]:
    if scene.benchmark != Benchmark.TDWMAT:
        return {}
    return {scene.task.category: done / total}


def p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def write_results(results: list[EpisodeResult], path: str | Path, meta: Mapping[str, Any]) -> None:
    Path(path).write_text(
        json.dumps(
            {"meta": dict(meta), "summary": summarize(results), "episodes": [asdict(r) for r in results]}, indent=1
        )
    )


def summarize(results: list[EpisodeResult]) -> dict[str, Any]:
    if not results:
        return {}

    def mean(key: str) -> float:
        vals = [getattr(r, key) for r in results if getattr(r, key) is not None]
        return statistics.fmean(vals) if vals else float("nan")

    out = {
        "episodes": len(results),
        "success_rate": mean("success"),
        "steps": mean("steps"),
        "transport_rate": mean("transport_rate"),
        "messages": mean("messages"),
        "message_chars": mean("message_chars"),
        "tokens": mean("tokens"),
        "llm_calls": mean("llm_calls"),
        "llm_fallbacks": mean("llm_fallbacks"),
        "decision_ms_mean": mean("decision_ms_mean"),
        "wall_s": sum(r.wall_s for r in results),
    }
    for cat in ("food", "stuff"):
        vals = [getattr(r, f"{cat}_rate") for r in results if getattr(r, f"{cat}_rate") is not None]
        if vals:
            out[f"{cat}_rate"] = statistics.fmean(vals)
    return out
