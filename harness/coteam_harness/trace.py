"""JSON episode traces: every step, every primitive, every decision (with its options and rationale), every
message; and a replay that re-executes the recorded primitives and checks the world ends up identical."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coteam.actions import format_action, truncate_message
from coteam.physics import Physics
from coteam.scene_io import scene_from_dict, scene_to_dict
from coteam.skills import SkillOutcome
from coteam.world import Scene
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind, parse_primitive

TRACE_FORMAT = "coteam-trace/1"


def state_digest(sim: Simulator) -> str:
    return hashlib.sha1(json.dumps(sim.world.to_snapshot(), sort_keys=True).encode()).hexdigest()[:16]


class TraceRecorder:
    def __init__(
        self,
        scene: Scene,
        agents: tuple[str, ...],
        team: str,
        params: dict[str, Any],
        seed: int,
        full_observability: bool = False,
    ):
        self.benchmark = scene.benchmark
        self.data: dict[str, Any] = {
            "format": TRACE_FORMAT,
            "scene": scene_to_dict(scene),
            "agents": list(agents),
            "team": team,
            "params": params,
            "seed": seed,
            "full_observability": full_observability,
            "steps": [],
            "decisions": [],
            "outcomes": [],
            "messages": [],
        }

    def add_decision(self, record: dict[str, Any]) -> None:
        """A decision's record (:meth:`coteam.reasoning.AgentBrain.record`, in process or from a ROS planner)."""
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

    def step(
        self, clock_before: int, sim: Simulator, actions: Mapping[str, Primitive], failures: Mapping[str, str]
    ) -> None:
        for sender, prim in actions.items():
            if prim.kind == PrimitiveKind.SEND_MESSAGE and not failures.get(sender):
                self.data["messages"].append(
                    {
                        "sender": sender,
                        "clock": clock_before,
                        "text": truncate_message(prim.text),
                        "payload": prim.payload or None,
                    }
                )
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
    full = bool(trace.get("full_observability", False))
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
