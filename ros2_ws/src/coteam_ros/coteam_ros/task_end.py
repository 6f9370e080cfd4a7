"""How a task ends on real robots, where no simulator says so, and what they claim on the way.

Each robot's planner ends the task when its own map (memory fused from what it saw and what its teammates told it)
shows every goal predicate met, tells the team, and stops; a teammate's word that the goal is met stops a robot
too; so does the task's time limit. Each planner writes its :class:`EndReport`; ``coteam launch`` makes the run's
``results.json`` of them (:func:`coteam_ros.launcher.team_result`).

While they work, the planners tell each other on ``/team/intents`` which container or item each searches or grabs
(:func:`claim_target`); a robot's options leave a teammate's claims out (``coteam.memory.AgentMemory.claims``), and
when two robots start on the same object at once, the one later in name order gives it up.

ROS-free, so it is tested without DDS; robot-side (nothing of the harness).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from coteam.actions import HighLevelAction, Verb
from coteam.goals import goal_status
from coteam.memory import AgentMemory
from coteam.world import Relation

TASK_DONE = "task_done"  # the payload key of the team message of a robot whose map shows the goal met
END_REPORT = "{robot}.end.json"  # a planner's end report, in the run's output folder


def goal_progress(memory: AgentMemory) -> tuple[int, int]:
    """(goal items my map shows in place, goal items wanted)."""
    statuses = goal_status(memory)
    wanted = sum(s.predicate.count for s in statuses)
    return sum(min(len(s.done), s.predicate.count) for s in statuses), wanted


def goal_met(memory: AgentMemory) -> bool:
    done, wanted = goal_progress(memory)
    return done >= wanted


def claim_target(action: HighLevelAction) -> int:
    """The container or item a robot claims while it runs ``action``: what it searches or grabs (-1: nothing; the
    goal's destinations are shared, every robot delivers there)."""
    if action.verb in (Verb.CHECK, Verb.GRAB) and action.target is not None:
        return action.target.id
    return -1


def intent_payload(target: int, memory: AgentMemory, told: set[int]) -> str:
    """An intent's payload: the claim (:func:`claim_target`), and the goal items my map shows in place that the team
    has not heard of from me or told me (``told``, updated): ``[item, fixture, into a container]`` each, so that
    every robot's map shows what the team delivered, and the first to see the whole goal met can end the task."""
    fresh = sorted({i for s in goal_status(memory) for i in s.done} - told)
    told.update(fresh)
    views = [memory.objects[i] for i in fresh]
    in_place = [[v.id, v.holder, v.location == Relation.IN] for v in views]
    return json.dumps({"claim": target, **({"in_place": in_place} if in_place else {})})


def parse_intent(payload_json: str) -> tuple[int, list[tuple[int, int, bool]]]:
    """(the claimed object, the items said in place as (item, fixture, into)); ValueError when malformed."""
    try:
        payload = json.loads(payload_json)
        target = int(payload["claim"])
        in_place = [(int(i), int(f), bool(into)) for i, f, into in payload.get("in_place", [])]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise ValueError("no claim in its payload") from None
    return target, in_place


def task_done_payload(robot: str) -> str:
    return json.dumps({TASK_DONE: robot})


def task_done_by(payload_json: str) -> str | None:
    """The robot a team message's payload says saw the goal met; None for any other payload."""
    try:
        payload = json.loads(payload_json) if payload_json else None
    except json.JSONDecodeError:
        return None
    if isinstance(payload, dict) and isinstance(payload.get(TASK_DONE), str):
        return payload[TASK_DONE]
    return None


@dataclass
class EndReport:
    """One robot's end of the task, as its planner saw it."""

    robot: str
    ended: str  # why: "goal met on my map", "robot2 saw the goal met", "time limit", "stopped"
    goal_met: bool  # by this robot's map (or its teammate's word)
    goal_items: tuple[int, int]  # (in place on my map, wanted)
    wall_s: float  # from the robot's first status to the end
    statuses: int
    decisions: int
    decision_ms: list[float] = field(default_factory=list)
    messages: int = 0
    message_chars: int = 0
    messages_dropped: int = 0
    failures: dict[str, int] = field(default_factory=dict)  # failed actions by reason
    teammates_lost: int = 0  # times a teammate was silent past its lease (coteam_ros.heartbeat)
    teammates_returned: int = 0
    items_out_of_reach: int = 0  # items lost teammates held when they were found lost
    safety_refusals: int = 0  # my actions the safety policy refused, or a person did not approve
    retries_blocked: int = 0  # times one of my actions failed the same way again and was blocked (coteam.retries)
    travel_m: float = 0.0  # metres driven, from the robot's pose at each status
    passage_meetings: int = 0  # times my robot met a teammate in a passage and gave way or held (coteam.passage)

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def read(cls, path: str | Path) -> EndReport:
        data = json.loads(Path(path).read_text())
        data["goal_items"] = tuple(data["goal_items"])
        return cls(**data)
