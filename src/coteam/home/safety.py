"""A home's safety policy, which no decision crosses: whatever a method, a model or a teammate's message asks for,
the robot never enters a no-go room or zone, never touches what it must not, and asks a person before the actions
the policy names (the runtime's ``approve``; no answer counts as no).

The policy is written by names (rooms, items, fixtures), in a world file's ``safety:`` section or a file of its own
(``format: coteam-safety/1`` and the same section), and bound to a home by :class:`SafetyGate`, which every layer
asks: the options offered to a method leave out what the policy refuses (so a plan goes round it), and the executor
checks every action before it starts and every navigation and manipulation goal before anything moves (so nothing
physical happens even when a refused action comes from elsewhere).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, field_validator

from coteam.domain.actions import HighLevelAction, Verb
from coteam.domain.validation import first_problem
from coteam.domain.world import FloorPlan, Scene, Task, Vec2

FORMAT = "coteam-safety/1"
REFUSED = "refused by the safety policy: "  # how a refused action's failure reason starts
NOT_APPROVED = "not approved: "  # how an action a person did not approve fails
# what each action does to its target, in the policy's words
_DOES = {
    Verb.GOTO: "enter",
    Verb.EXPLORE: "enter",
    Verb.CHECK: "open",
    Verb.GRAB: "grab",
    Verb.PUT: "put",
    Verb.PUT_IN: "put",
    Verb.TRANSPORT: "put",
}


class SafetyPolicyError(ValueError):
    """A policy that cannot be read or does not fit its home; the message is one line naming the problem."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Zone(_Strict):
    """An area no robot drives into (map frame, metres; corners in order)."""

    name: str
    polygon: tuple[tuple[float, float], ...] = Field(min_length=3)

    def contains(self, point: Vec2) -> bool:
        """Even-odd rule (a point exactly on an edge may fall on either side)."""
        x, y = point
        inside = False
        corners = self.polygon
        for (x1, y1), (x2, y2) in zip(corners, corners[1:] + corners[:1], strict=True):
            if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
                inside = not inside
        return inside


class ApprovalRule(_Strict):
    """Actions a person must approve: ``verb`` (enter a room, open a container, grab an item, put something in or
    on a place) on ``object`` (a name; omitted: anything)."""

    verb: Literal["enter", "open", "grab", "put"]
    object: str | None = None


class SafetyPolicy(_Strict):
    no_go: tuple[str, ...] = ()  # rooms no robot enters
    no_go_zones: tuple[Zone, ...] = ()
    never_touch: tuple[str, ...] = ()  # items and fixtures never grabbed, opened, or put into or onto
    ask_before: tuple[ApprovalRule, ...] = ()
    approval_timeout_s: PositiveFloat = 30.0  # a robot waits this long for a person's answer (ROS): then no
    max_speed_mps: PositiveFloat | None = None  # the robots' top speed, passed to Nav2 (``speed_limit``)

    @field_validator("no_go", "never_touch")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if any(not n.strip() for n in names):
            raise ValueError("names must not be empty")
        return names


def parse_policy(data: Any, source: str) -> SafetyPolicy:
    """The policy of a mapping (a world file's ``safety:`` section), or one line saying what is wrong."""
    try:
        return SafetyPolicy.model_validate(data)
    except ValidationError as exc:
        raise SafetyPolicyError(f"{source}: {first_problem(exc, 'safety', SafetyPolicy)}") from None


def policy_of_file(data: Any, path: Path, *, or_else: str = "") -> SafetyPolicy:
    """The policy of a policy file's YAML (``format: coteam-safety/1`` and a ``safety:`` section only); ``or_else``
    names what else the file could have been, in the error."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or set(data) != {"format", "safety"}:
        raise SafetyPolicyError(
            f"{path}: a safety policy is a file of `format: {FORMAT}` and a `safety:` section only{or_else}"
        )
    return parse_policy(data["safety"], str(path))


def policy_summary(policy: SafetyPolicy) -> str:
    """One line of what ``policy`` forbids and asks (``coteam world check``)."""
    parts = [
        f"no-go rooms: {', '.join(policy.no_go)}" if policy.no_go else "",
        f"no-go zones: {', '.join(z.name for z in policy.no_go_zones)}" if policy.no_go_zones else "",
        f"never touched: {', '.join(policy.never_touch)}" if policy.never_touch else "",
        "ask before: " + ", ".join(f"{r.verb} {r.object or 'anything'}" for r in policy.ask_before)
        if policy.ask_before
        else "",
        f"top speed {policy.max_speed_mps:g} m/s" if policy.max_speed_mps is not None else "",
    ]
    return "; ".join(p for p in parts if p) or "nothing forbidden"


def is_refusal(reason: str) -> bool:
    """Whether an action failed because the safety policy refused it or a person did not approve it."""
    return reason.startswith((REFUSED, NOT_APPROVED))


@dataclass(frozen=True)
class Verdict:
    """What the policy says of one action: ``refused`` (why; '' when allowed) or ``ask`` (the question a person must
    answer yes to first; '' when none)."""

    refused: str = ""
    ask: str = ""


ALLOWED = Verdict()


class SafetyGate:
    """``policy`` bound to a home's floor plan: the checks every layer makes."""

    def __init__(self, policy: SafetyPolicy, floorplan: FloorPlan):
        rooms = {r.name: r.id for r in floorplan.rooms}
        unknown = [n for n in policy.no_go if n not in rooms]
        if unknown:
            raise SafetyPolicyError(f"safety.no_go: no room named {unknown[0]!r} (rooms: {', '.join(rooms)})")
        self.policy = policy
        self.floorplan = floorplan
        self.no_go_rooms = frozenset(rooms[n] for n in policy.no_go)
        self.room_names = {r.id: r.name for r in floorplan.rooms}
        self._never_touch = frozenset(policy.never_touch)

    def place_refused(self, position: Vec2) -> str:
        """Why no robot may drive to ``position`` ('' when it may)."""
        room = self.floorplan.room_of_cell(*self.floorplan.cell_of(position))
        if room is not None and room.id in self.no_go_rooms:
            return f"{room.name} is a no-go room"
        zone = next((z for z in self.policy.no_go_zones if z.contains(position)), None)
        return f"{position[0]:.2f}, {position[1]:.2f} is in the no-go zone {zone.name}" if zone is not None else ""

    def touch_refused(self, name: str) -> str:
        """Why no robot may handle the item or fixture ``name`` ('' when it may)."""
        return f"{name} is never touched" if name in self._never_touch else ""

    def task_refused(self, task: Task, home: Scene) -> str:
        """Why the robots may not take ``task`` at all ('' when they may): it asks them to handle a thing or a place
        the policy never lets them touch, or to bring things to a place in a no-go room or zone. Said before
        anything moves."""
        for predicate in task.predicates:
            target = home.fixture(predicate.target)
            for name in (predicate.item, target.name):
                if why := self.touch_refused(name):
                    return f"the task needs {name}, and {why} (safety policy)"
            if target.room in self.no_go_rooms:
                room = self.room_names[target.room]
                return f"the task needs {target.name}, in the {room}, a no-go room (safety policy)"
            if why := self.place_refused(target.position):
                return f"the task needs {target.name}, at {why} (safety policy)"
        return ""

    def check_action(self, action: HighLevelAction, positions: Mapping[int, Vec2], rooms: Mapping[int, int]) -> Verdict:
        """The verdict on ``action`` before it starts; ``positions`` and ``rooms`` are where the robot knows its
        objects to be (object id -> position, room id)."""
        does = _DOES.get(action.verb)
        if does is None:  # a message moves nothing
            return ALLOWED
        for ref in (action.target, action.container):
            if ref is None:
                continue
            if does != "enter" and (why := self.touch_refused(ref.name)):
                return Verdict(refused=why)
            room = ref.id if does == "enter" else rooms.get(ref.id)
            if room in self.no_go_rooms:
                return Verdict(refused=f"{self.room_names[room]} is a no-go room")
            if ref.id in positions and (why := self.place_refused(positions[ref.id])):
                return Verdict(refused=why)
        target = action.target.name if action.target is not None else None
        for rule in self.policy.ask_before:
            if rule.verb == does and rule.object in (None, target):
                return Verdict(ask=f"may I {does} {target or 'it'}?")
        return ALLOWED
