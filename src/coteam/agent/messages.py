"""Structured team messages: the text every teammate reads plus an optional typed payload.

A message's **text** is what the benchmark rules apply to (at most :data:`~coteam.domain.actions.MAX_MESSAGE_CHARS`
characters, the sender's turn, the delivery delay) and what an LLM teammate reads. A method may attach a
**payload**: a pydantic model it declares (``MethodTeam.Payload``) that states in typed form the facts the text
says, so a receiving agent needs no parser for its teammates' wording. On the wire (simulator mail, the ROS
``TeamMessage.payload_json`` field) the payload is a JSON object; the receiving brain validates it against its
method's payload model (:func:`decode_payload`). A payload that is not valid JSON, too large, or does not match the
model is dropped, logged and counted, and the text is still delivered.

:class:`TeamStatus` is the shared status payload (where I am, what I hold, goal items I saw, rooms I explored,
containers I searched, the action I start next and the sub-plan it begins) and its own text rendering, used by every
method that reports its status.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from coteam.agent.memory import AgentMemory
from coteam.domain.actions import MAX_MESSAGE_CHARS

log = logging.getLogger("coteam.agent.messages")

MAX_PAYLOAD_BYTES = 8192  # a payload's JSON text; larger ones are dropped on receipt
SEEN_LIST_LIMIT = 6  # goal-item sightings one status lists
MAX_PLAN_STEPS = 3  # actions a sub-plan names
MAX_LISTED = 64  # holdings / explored rooms a status may list (more never fit in a message's text anyway)


class PayloadError(ValueError):
    """A teammate's payload that cannot be used (the text of its message is still delivered)."""


class ItemRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: int = Field(ge=0)
    name: str = Field(min_length=1, max_length=64)

    def text(self) -> str:
        return f"<{self.name}> ({self.id})"


class Sighting(ItemRef):
    room: str = Field(min_length=1, max_length=64)


class TeamStatus(BaseModel):
    """What one agent reports of itself: room, holdings, goal items seen (not held), explored rooms, checked
    containers."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("status", pattern="^status$")
    agent: str = Field(min_length=1, max_length=64)
    room: str | None = Field(None, max_length=64)
    holding: tuple[ItemRef, ...] = Field((), max_length=MAX_LISTED)
    seen: tuple[Sighting, ...] = Field((), max_length=SEEN_LIST_LIMIT)
    seen_complete: bool = True  # every goal item the sender knows of (and does not hold) is listed
    explored: tuple[str, ...] = Field((), max_length=MAX_LISTED)
    checked: tuple[ItemRef, ...] = Field((), max_length=MAX_LISTED)  # containers opened and searched
    intent: str | None = Field(None, max_length=160)  # the action I start next, in the benchmark's action grammar
    plan: tuple[Annotated[str, Field(min_length=1, max_length=160)], ...] = Field((), max_length=MAX_PLAN_STEPS)
    # my sub-plan: the actions I take next, in order, the first being ``intent`` (in the action grammar)

    @model_validator(mode="after")
    def _plan_starts_with_intent(self) -> TeamStatus:
        if self.plan and self.intent is None:
            object.__setattr__(self, "intent", self.plan[0])
        elif self.plan and self.plan[0] != self.intent:
            raise ValueError("a sub-plan starts with the announced next action (intent)")
        return self

    @classmethod
    def of(cls, memory: AgentMemory, intent: str | None = None) -> TeamStatus:
        """My status now (and the action I start next, when given); sightings beyond :data:`SEEN_LIST_LIMIT` are
        left out (``seen_complete`` false)."""
        wanted = memory.task.needed_names()
        seen = [v for v in memory.items() if v.name in wanted and not v.held_by]
        status = cls(
            agent=memory.agent,
            room=memory.room_name(memory.room) if memory.room >= 0 else None,
            holding=tuple(ItemRef(id=v.id, name=v.name) for v in memory.held_items())[:MAX_LISTED],
            seen=tuple(Sighting(id=v.id, name=v.name, room=memory.room_name(v.room)) for v in seen[:SEEN_LIST_LIMIT]),
            seen_complete=len(seen) < SEEN_LIST_LIMIT,
            explored=tuple(memory.room_name(r.id) for r in memory.floorplan.rooms if memory.is_explored(r.id))[
                :MAX_LISTED
            ],
            checked=tuple(ItemRef(id=c, name=memory.objects[c].name) for c in sorted(memory.checked))[:MAX_LISTED],
            intent=intent,
        )
        return status.fitted(MAX_MESSAGE_CHARS)

    def facts(self) -> set[str]:
        """What the report states of its sender's world (goal items seen, rooms explored, what it holds), as facts
        that compare across reports."""
        return (
            {f"seen {s.id}" for s in self.seen}
            | {f"explored {r}" for r in self.explored}
            | {"holding " + ",".join(sorted(str(h.id) for h in self.holding))}
        )

    def news(self, memory: AgentMemory) -> set[str]:
        """The facts this report states that the status reports I sent before (``memory.sent``) did not."""
        told = set().union(*(s.payload.facts() for s in memory.sent if isinstance(s.payload, TeamStatus)))
        return self.facts() - told

    def text(self) -> str:
        """The status in words (``alice: in the kitchen; holding <apple> (12); seen <wine> (27) in the bedroom;
        explored kitchen, bedroom; checked <fridge> (5).``)."""
        parts = [f"{self.agent}: in the {self.room}" if self.room else self.agent]
        parts.append("holding " + (", ".join(h.text() for h in self.holding) if self.holding else "nothing"))
        if self.seen:
            parts.append("seen " + ", ".join(f"{s.text()} in the {s.room}" for s in self.seen))
        if self.explored:
            parts.append("explored " + ", ".join(self.explored))
        if self.checked:
            parts.append("checked " + ", ".join(c.text() for c in self.checked))
        if self.intent:
            parts.append(f"next I do {self.intent}" + "".join(f", then {step}" for step in self.plan[1:]))
        return "; ".join(parts) + "."

    def fitted(self, limit: int) -> TeamStatus:
        """This status shortened (checked containers, explored rooms, then sightings dropped from the end) until its
        text fits."""
        status = self
        while len(status.text()) > limit and (status.checked or status.explored or status.seen):
            if status.checked:
                status = status.model_copy(update={"checked": status.checked[:-1]})
            elif status.explored:
                status = status.model_copy(update={"explored": status.explored[:-1]})
            else:
                status = status.model_copy(update={"seen": status.seen[:-1], "seen_complete": False})
        return status


def encode_payload(payload: BaseModel | None) -> str:
    """A payload's wire form: compact JSON ("" for none)."""
    return "" if payload is None else payload.model_dump_json()


def decode_payload(raw: Any, schemas: Sequence[type[BaseModel]]) -> BaseModel | None:
    """The first of ``schemas`` that validates ``raw`` (JSON text or an already-decoded object); ``None`` for no
    payload. Raises :class:`PayloadError` saying what is wrong."""
    if raw is None or (isinstance(raw, str | bytes | bytearray | dict) and not raw):
        return None
    if isinstance(raw, BaseModel):
        raw = raw.model_dump(mode="json")
    if isinstance(raw, bytes | bytearray):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PayloadError("payload is not UTF-8 text") from None
    if isinstance(raw, str):
        if len(raw.encode("utf-8", "replace")) > MAX_PAYLOAD_BYTES:
            raise PayloadError(f"payload of {len(raw)} characters exceeds {MAX_PAYLOAD_BYTES} bytes")
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise PayloadError(f"payload is not JSON: {exc.msg} at character {exc.pos}") from None
        if raw == {}:
            return None
    if not isinstance(raw, dict):
        raise PayloadError(f"payload must be a JSON object, got {type(raw).__name__}")
    if not schemas:
        raise PayloadError("this method expects no payload")
    problems = []
    for schema in schemas:
        try:
            return schema.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "(top level)"
            problems.append(f"{schema.__name__}: {where}: {first.get('msg', 'invalid')}")
    raise PayloadError("payload matches no expected type (" + "; ".join(problems) + ")")
