"""How a task ends on real robots, where no simulator says so, and what they claim on the way.

Each robot's planner ends the task when its own map (memory fused from what it saw and what its teammates told it)
shows every goal predicate met by distinct items (:func:`goal_progress`), tells the team, and stops; a teammate's
word that the goal is met stops a robot too; so does the task's time limit. Each planner writes its
:class:`EndReport`; ``coteam launch`` makes the run's ``results.json`` of them
(:func:`coteam_ros.launcher.team_result`).

While they work, the planners tell each other on ``/team/intents`` which container or item each searches or grabs
(:func:`claim_target`); a robot's options leave a teammate's claims out (``coteam.agent.memory.AgentMemory.claims``),
and when two robots start on the same object at once, the one later in name order gives it up.

ROS-free, so it is tested without DDS; robot-side (nothing of the harness).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from coteam.agent.goals import goal_status, satisfies
from coteam.agent.memory import AgentMemory
from coteam.domain.actions import HighLevelAction, Verb
from coteam.domain.observation import ObjectView
from coteam.domain.world import GoalPredicate, Relation

TASK_DONE = "task_done"  # the payload key of the team message of a robot whose map shows the goal met
END_REPORT = "{robot}.end.json"  # a planner's end report, in the run's output folder


TeamPutDown = Mapping[str, Sequence[ObjectView]]  # teammate -> the goal items its own arm put in place, as it says


def goal_progress(memory: AgentMemory, team_put_down: TeamPutDown | None = None) -> tuple[int, int]:
    """(distinct goal items in place, goal items wanted) over the goal's lines (:func:`line_progress`)."""
    lines = line_progress(memory, team_put_down)
    return sum(done for _, done in lines), sum(p.count for p, _ in lines)


def line_progress(memory: AgentMemory, team_put_down: TeamPutDown | None = None) -> list[tuple[GoalPredicate, int]]:
    """Per goal line, the distinct items in place (at most the line's count), never adding up labels across robots:
    a robot whose detector gives classes without ids labels what it sees itself
    (:class:`coteam.senses.perception.CameraPerception`), so a teammate's cup 5 may be the cup my map calls 6. Per goal
    line the count is the larger of two counts, each of distinct items: what my own sight and arm show in place
    (not what my map holds on a teammate's word), and what the robots' arms put there, each where its arm left it,
    mine (``memory.put_down_by_me``) and each teammate's (``team_put_down``, from its intents: one arm's put-downs
    are distinct items, and no arm's are another's)."""
    out = []
    arms = [list(memory.put_down_by_me.values()), *(team_put_down or {}).values()]
    for status in goal_status(memory):
        predicate = status.predicate
        seen = sum(1 for i in status.done if i not in memory.told_by)
        by_arms = sum(1 for views in arms for v in views if satisfies(v, predicate, memory))
        out.append((predicate, min(max(seen, by_arms), predicate.count)))
    return out


def goal_met(memory: AgentMemory, team_put_down: TeamPutDown | None = None) -> bool:
    done, wanted = goal_progress(memory, team_put_down)
    return done >= wanted


def claim_target(action: HighLevelAction) -> int:
    """The container or item a robot claims while it runs ``action``: what it searches or grabs (-1: nothing; the
    goal's destinations are shared, every robot delivers there)."""
    if action.verb in (Verb.CHECK, Verb.GRAB) and action.target is not None:
        return action.target.id
    return -1


Placed = tuple[int, int, bool]  # an item, the fixture it is in or on, and whether in


@dataclass(frozen=True)
class Intent:
    """What a robot's intent tells its team: the object it claims, the goal items its map shows in place that it
    has not said before, every goal item its own arm put in place (the whole list each time), and the containers
    whose state changed since the team last heard of them (container -> open)."""

    claim: int
    in_place: list[Placed] = field(default_factory=list)
    put_down: list[Placed] = field(default_factory=list)
    doors: dict[int, bool] = field(default_factory=dict)


@dataclass
class TeamHeard:
    """What the team has heard from me or told me: goal items in place, and each container's state (as the task
    starts until someone changes it)."""

    in_place: set[int] = field(default_factory=set)
    doors: dict[int, bool] = field(default_factory=dict)


def intent_payload(target: int, memory: AgentMemory, heard: TeamHeard) -> str:
    """An intent's payload (:class:`Intent`): the claim (:func:`claim_target`); the goal items my map shows in place
    that the team has not heard of (``heard``, updated), so that every robot's map shows what the team delivered;
    the goal items my arm put in place (where it left them), which the team counts by robot
    (:func:`goal_progress`), each as ``[item, fixture, into a container]``; and the containers my map shows in
    another state than the team heard of (so that no robot opens a door a teammate opened)."""
    done = {i for s in goal_status(memory) for i in s.done}
    fresh = sorted(done - heard.in_place)
    heard.in_place.update(fresh)
    doors = {
        c: bool(v.is_open)
        for c, v in sorted(memory.objects.items())
        if c in heard.doors and v.is_open is not None and v.is_open != heard.doors[c]
    }
    heard.doors.update(doors)

    def placed(items: list[int]) -> list[list]:
        return [[i, memory.objects[i].holder, memory.objects[i].location == Relation.IN] for i in items]

    predicates = memory.task.predicates
    put_down = [
        [v.id, v.holder, v.location == Relation.IN]
        for _, v in sorted(memory.put_down_by_me.items())
        if any(satisfies(v, p, memory) for p in predicates)
    ]
    payload: dict[str, object] = {"claim": target, "in_place": placed(fresh), "put_down": put_down}
    payload["doors"] = [[c, is_open] for c, is_open in doors.items()]
    return json.dumps({key: value for key, value in payload.items() if value or key == "claim"})


def parse_intent(payload_json: str) -> Intent:
    """The :class:`Intent` of a payload; ValueError when malformed."""
    try:
        payload = json.loads(payload_json)
        return Intent(
            int(payload["claim"]),
            *(
                [(int(i), int(f), bool(into)) for i, f, into in payload.get(key, [])]
                for key in ("in_place", "put_down")
            ),
            {int(c): bool(is_open) for c, is_open in payload.get("doors", [])},
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        raise ValueError("no claim in its payload") from None


def task_done_payload(robot: str, task_id: str = "") -> str:
    """The payload of a robot's word that its map shows the goal met (of the task ``task_id``, on a serving team)."""
    return json.dumps({TASK_DONE: robot, "task": task_id} if task_id else {TASK_DONE: robot})


def task_done_by(payload_json: str, task_id: str = "") -> str | None:
    """The robot a team message's payload says saw the goal met (of the task ``task_id``, on a serving team: a word
    on another task counts for nothing); None for any other payload."""
    try:
        payload = json.loads(payload_json) if payload_json else None
    except json.JSONDecodeError:
        return None
    if isinstance(payload, dict) and isinstance(payload.get(TASK_DONE), str) and payload.get("task", "") == task_id:
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
    retries_blocked: int = 0  # times one of my actions failed the same way again and was blocked (coteam.agent.retries)
    travel_m: float = 0.0  # metres driven, from the robot's pose at each status
    passage_meetings: int = 0  # times my robot met a teammate in a passage and gave way or held (coteam.home.passage)

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def read(cls, path: str | Path) -> EndReport:
        data = json.loads(Path(path).read_text())
        data["goal_items"] = tuple(data["goal_items"])
        return cls(**data)
