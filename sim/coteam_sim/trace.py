"""JSON episode traces: every step, every primitive, every decision (with its options and rationale), every
message; and a replay that re-executes the recorded primitives and checks the world ends up identical."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from coteam.actions import format_action
from coteam.memory import AgentMemory
from coteam.options import ActionOption
from coteam.physics import Physics
from coteam.reasoning import Decision
from coteam.scene_io import scene_from_dict, scene_to_dict
from coteam.skills import SkillOutcome
from coteam.world import Scene
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, parse_primitive

TRACE_FORMAT = "coteam-trace/1"


def state_digest(sim: Simulator) -> str:
    return hashlib.sha1(json.dumps(sim.world.to_snapshot(), sort_keys=True).encode()).hexdigest()[:16]


def decision_record(agent: str, memory: AgentMemory, decision: Decision, options: list[ActionOption]) -> dict[str, Any]:
    """One decision as a trace records it (JSON-ready)."""
    return {
        "agent": agent,
        "step": memory.step,
        "clock": memory.frames,
        "position": list(memory.position),
        "action": format_action(decision.action, memory.benchmark),
        "options": [o.annotated() for o in options],
        "rationale": decision.rationale,
        "tokens": decision.tokens,
    }


class TraceRecorder:
    def __init__(self, scene: Scene, agents: tuple[str, ...], team: str, params: dict[str, Any], seed: int):
        self.benchmark = scene.benchmark
        self.data: dict[str, Any] = {
            "format": TRACE_FORMAT,
            "scene": scene_to_dict(scene),
            "agents": list(agents),
            "team": team,
            "params": params,
            "seed": seed,
            "steps": [],
            "decisions": [],
            "outcomes": [],
            "messages": [],
        }

    def decision(self, agent: str, memory: AgentMemory, decision: Decision, options: list[ActionOption]) -> None:
        self.data["decisions"].append(decision_record(agent, memory, decision, options))

    def add_decision(self, record: dict[str, Any]) -> None:
        """A decision recorded elsewhere (a ROS planner's :func:`decision_record`)."""
        self.data["decisions"].append(record)

    def outcome(self, agent: str, step: int, outcome: SkillOutcome) -> None:
        self.data["outcomes"].append(
            {
                "agent": agent,
                "step": step,
                "action": format_action(outcome.action, self.benchmark),
                "success": outcome.success,
                "reason": outcome.reason,
                "primitives": outcome.primitives,
            }
        )

    def message(self, sender: str, clock: int, text: str) -> None:
        self.data["messages"].append({"sender": sender, "clock": clock, "text": text})

    def step(self, clock_before: int, sim: Simulator, actions: dict[str, Primitive], failures: dict[str, str]) -> None:
        self.data["steps"].append(
            {
                "step": sim.steps - 1,
                "clock": clock_before,
                "actions": {a: str(p) for a, p in actions.items()},
                "failures": {a: f for a, f in failures.items() if f},
                "positions": {
                    a: [round(s.position[0], 3), round(s.position[1], 3), s.heading]
                    for a, s in sim.world.agents.items()
                },
                "digest": state_digest(sim),
            }
        )

    def finish(self, sim: Simulator, result: dict[str, Any]) -> None:
        self.data["final_state"] = sim.world.to_snapshot()
        self.data["result"] = result

    def write(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(self.data, indent=None, separators=(",", ":")))


def load_trace(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if data.get("format") != TRACE_FORMAT:
        raise ValueError(f"{path}: not a coteam trace (format {data.get('format')!r})")
    return data


class ReplayMismatch(AssertionError):
    pass


def replay(trace: dict[str, Any], config: Physics | None = None) -> Simulator:
    """Re-execute the recorded primitives; raise :class:`ReplayMismatch` at the first divergent step."""
    scene = scene_from_dict(trace["scene"])
    full = trace["team"] == "oracle"
    sim = Simulator(scene, tuple(trace["agents"]), seed=trace["seed"], config=config, full_observability=full)
    for rec in trace["steps"]:
        if sim.clock != rec["clock"]:
            raise ReplayMismatch(f"step {rec['step']}: clock {sim.clock} != recorded {rec['clock']}")
        actions = {a: parse_primitive(p, scene.benchmark) for a, p in rec["actions"].items()}
        failures = sim.step(actions)
        got = {a: f for a, f in failures.items() if f}
        if got != rec["failures"]:
            raise ReplayMismatch(f"step {rec['step']}: failures {got} != recorded {rec['failures']}")
        if state_digest(sim) != rec["digest"]:
            raise ReplayMismatch(f"step {rec['step']}: world state differs from the recording")
    return sim
