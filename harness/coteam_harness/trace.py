"""JSON episode traces: every step, every primitive, every decision (with its options and rationale), every
message; and a replay that re-executes the recorded primitives and checks the world ends up identical.

While an episode runs, the recorder also keeps a *journal* next to the trace (``<name>.partial.jsonl``: a header
line, then one line per decision, outcome, message and step, flushed every step). The finished trace replaces it;
a run killed mid-episode leaves it, and :func:`load_trace` reads it as a trace marked ``incomplete`` (the steps
done, which :func:`replay` re-executes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coteam.agent.skills import SkillOutcome
from coteam.domain.actions import format_action, truncate_message
from coteam.domain.physics import Physics
from coteam.domain.scene_io import scene_from_dict, scene_to_dict
from coteam.domain.world import Scene
from coteam_harness.results import atomic_write_text
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind, parse_primitive

TRACE_FORMAT = "coteam-trace/1"
JOURNAL_FORMAT = "coteam-trace-journal/1"
JOURNAL_SUFFIX = ".partial.jsonl"
_RECORDS = {"step": "steps", "decision": "decisions", "outcome": "outcomes", "message": "messages"}


def journal_path(trace_path: str | Path) -> Path:
    """Where the journal of the trace at ``trace_path`` is kept while its episode runs."""
    p = Path(trace_path)
    return p.with_name(p.stem + JOURNAL_SUFFIX)


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
        journal: str | Path | None = None,
    ):
        """``journal``: the path of the journal to keep while the episode runs (none when None)."""
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
        self._journal = None
        if journal is not None:
            Path(journal).parent.mkdir(parents=True, exist_ok=True)
            self._journal = Path(journal).open("w")  # noqa: SIM115 (open for the whole episode; write() closes it)
            header = {k: v for k, v in self.data.items() if k not in _RECORDS.values()}
            self._journal.write(json.dumps({**header, "format": JOURNAL_FORMAT}, separators=(",", ":")) + "\n")
            self._journal.flush()

    def _add(self, kind: str, record: dict[str, Any]) -> None:
        self.data[_RECORDS[kind]].append(record)
        if self._journal is not None:
            self._journal.write(json.dumps([kind, record], separators=(",", ":")) + "\n")

    def add_decision(self, record: dict[str, Any]) -> None:
        """A decision's record (:meth:`coteam.agent.reasoning.AgentBrain.record`, in process or from a ROS planner)."""
        self._add("decision", record)

    def outcome(self, agent: str, step: int, outcome: SkillOutcome) -> None:
        self._add(
            "outcome",
            {
                "agent": agent,
                "step": step,
                "action": format_action(outcome.action, self.benchmark),
                "success": outcome.success,
                "reason": outcome.reason,
                "primitives": outcome.primitives,
            },
        )

    def step(
        self, clock_before: int, sim: Simulator, actions: Mapping[str, Primitive], failures: Mapping[str, str]
    ) -> None:
        for sender, prim in actions.items():
            if prim.kind == PrimitiveKind.SEND_MESSAGE and not failures.get(sender):
                self._add(
                    "message",
                    {
                        "sender": sender,
                        "clock": clock_before,
                        "text": truncate_message(prim.text),
                        "payload": prim.payload or None,
                        **({"to": prim.receiver} if prim.receiver else {}),
                    },
                )
        self._add(
            "step",
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
            },
        )
        if self._journal is not None:
            self._journal.flush()

    def finish(self, sim: Simulator, result: dict[str, Any]) -> None:
        self.data["final_state"] = sim.world.to_snapshot()
        self.data["result"] = result

    def write(self, path: str | Path) -> None:
        """The whole trace at ``path`` (atomically); the journal, its job done, is removed."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.data, indent=None, separators=(",", ":")))
        if self._journal is not None:
            self._journal.close()
            Path(self._journal.name).unlink(missing_ok=True)
            self._journal = None


def load_trace(path: str | Path) -> dict[str, Any]:
    """A trace, or the journal of an episode that did not finish (marked ``"incomplete": true``)."""
    text = Path(path).read_text()
    first, _, rest = text.partition("\n")
    try:
        head = json.loads(first)
    except ValueError:
        head = None
    if isinstance(head, dict) and head.get("format") == JOURNAL_FORMAT:
        return _from_journal(path, head, rest.splitlines())
    try:
        data = head if head is not None and not rest.strip() else json.loads(text)
    except ValueError as e:
        raise ValueError(f"{path}: not a coteam trace ({e})") from None
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        fmt = data.get("format") if isinstance(data, dict) else None
        raise ValueError(f"{path}: not a coteam trace (format {fmt!r})")
    return data


def _from_journal(path: str | Path, head: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    data = {**head, "format": TRACE_FORMAT, "incomplete": True, **{v: [] for v in _RECORDS.values()}}
    for n, line in enumerate(lines, 2):
        try:
            kind, record = json.loads(line)
            data[_RECORDS[kind]].append(record)
        except (ValueError, KeyError, TypeError):
            if n == len(lines) + 1:
                break  # cut short by the kill
            raise ValueError(f"{path}:{n}: not a journal line") from None
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
