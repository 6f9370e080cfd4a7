"""The one episode meter of every runtime: the in-process runner and the ROS ``sim_bridge`` feed it the
simulator's steps and the agents' decision records (:meth:`coteam.agent.reasoning.AgentBrain.record`), and it makes the
:class:`~coteam_harness.results.EpisodeResult`."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Mapping
from typing import Any

from coteam.domain.actions import truncate_message
from coteam.domain.world import Benchmark
from coteam.llm import estimate_tokens
from coteam_harness.results import EpisodeResult, p95
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind

# What a robot's runtime counts and reports (ROS: each StepTick): teammate payloads and messages refused, teammates
# found lost and back, items lost teammates held, actions the safety policy refused (EpisodeResult has a field of each)
RUNTIME_COUNTS = (
    "payloads_dropped",
    "messages_dropped",
    "teammates_lost",
    "teammates_returned",
    "items_out_of_reach",
    "safety_refusals",
)


class EpisodeMeter:
    def __init__(self, sim: Simulator, episode: str, team: str):
        self.sim = sim
        self.episode = episode
        self.team = team
        self.messages = self.message_chars = self.comm_tokens = 0
        self.failures: dict[str, int] = {}
        self.travel_m = {a: 0.0 for a in sim.agents}
        self.primitives = {a: 0 for a in sim.agents}
        self.runtime: dict[str, dict[str, int]] = {key: {} for key in RUNTIME_COUNTS}  # count -> robot -> so far
        self.decisions: list[Mapping[str, Any]] = []
        self._positions = {a: sim.world.agents[a].position for a in sim.agents}
        self.started = time.perf_counter()
        self.wall_s: float | None = None

    def step(self, actions: Mapping[str, Primitive], failures: Mapping[str, str]) -> None:
        """Count one simulator step (after it ran): primitives, failures, messages and the distance walked."""
        for agent, prim in actions.items():
            reason = failures.get(agent, "")
            if prim.kind != PrimitiveKind.WAIT:
                self.primitives[agent] += 1
            if reason:
                self.failures[reason] = self.failures.get(reason, 0) + 1
            elif prim.kind == PrimitiveKind.SEND_MESSAGE:
                text = truncate_message(prim.text)
                self.messages += 1
                self.message_chars += len(text)
                self.comm_tokens += estimate_tokens(text)
        for agent, before in self._positions.items():
            now = self.sim.world.agents[agent].position
            self.travel_m[agent] += math.dist(before, now)
            self._positions[agent] = now

    def decision(self, record: Mapping[str, Any]) -> None:
        """One decision's trace record (tokens, LLM calls and fallbacks, seconds)."""
        self.decisions.append(record)

    def _latest_per_agent(self, key: str) -> int:
        """A count the decision records carry as each agent's total so far: the team's total."""
        latest: dict[str, int] = {}
        for r in self.decisions:
            latest[r.get("agent", "")] = max(latest.get(r.get("agent", ""), 0), int(r.get(key, 0)))
        return sum(latest.values())

    def reported(self, agent: str, **counts: int) -> None:
        """What ``agent``'s runtime has counted so far (:data:`RUNTIME_COUNTS`): counts only grow, and a restarted
        robot's start again from zero, so the highest report of each stands."""
        for key, value in counts.items():
            per_robot = self.runtime[key]
            per_robot[agent] = max(per_robot.get(agent, 0), value)

    def stop(self) -> None:
        """The episode is over: its wall time stops here."""
        if self.wall_s is None:
            self.wall_s = time.perf_counter() - self.started

    def result(self, trace: str | None = None) -> EpisodeResult:
        sim = self.sim
        scene = sim.scene
        done, total = sim.world.progress()
        success = done == total
        seconds = [float(r.get("seconds", 0.0)) for r in self.decisions]
        total_prims = sum(self.primitives.values())
        rate = done / total
        category = {scene.task.category: rate} if scene.benchmark == Benchmark.TDWMAT else {}
        return EpisodeResult(
            episode=self.episode,
            scene=scene.name,
            task=scene.task.name,
            benchmark=scene.benchmark.value,
            agents=len(sim.agents),
            team=self.team,
            success=success,
            steps=sim.clock if success else sim.horizon,
            transport_rate=rate,
            food_rate=category.get("food"),
            stuff_rate=category.get("stuff"),
            messages=self.messages,
            message_chars=self.message_chars,
            comm_tokens=self.comm_tokens,
            tokens=sum(int(r.get("tokens", 0)) for r in self.decisions),
            llm_calls=sum(int(r.get("llm_calls", 0)) for r in self.decisions),
            llm_fallbacks=sum(int(r.get("llm_fallbacks", 0)) for r in self.decisions),
            llm_deadlines=sum(int(r.get("llm_deadlines", 0)) for r in self.decisions),
            llm_breaker=sum(int(r.get("llm_breaker", 0)) for r in self.decisions),
            rejected_lines=sum(int(r.get("rejected_lines", 0)) for r in self.decisions),
            decisions=len(self.decisions),
            decision_ms_mean=1000 * statistics.fmean(seconds) if seconds else 0.0,
            decision_ms_median=1000 * statistics.median(seconds) if seconds else 0.0,
            decision_ms_p95=1000 * p95(seconds),
            wall_s=self.wall_s if self.wall_s is not None else time.perf_counter() - self.started,
            travel_m={a: round(m, 3) for a, m in self.travel_m.items()},
            primitive_share={a: (n / total_prims if total_prims else 0.0) for a, n in self.primitives.items()},
            **{key: sum(per_robot.values()) for key, per_robot in self.runtime.items()},
            messages_blocked=sum(1 for r in self.decisions if r.get("message_blocked")),
            retries_blocked=self._latest_per_agent("retries_blocked"),
            message_stalls=sum(1 for r in self.decisions if r.get("message_stall")),
            trace=trace,
            failures=dict(self.failures),
        )
