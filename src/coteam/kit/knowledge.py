"""What the hybrid backend asks a model because the belief state cannot know it (rather than doubts about a choice):

* **An unfamiliar object class.** A goal item whose name the common-sense tables (:mod:`coteam.domain.priors`) lack has
  no prior of its own: the belief spreads it evenly over the home. :data:`CLASSIFY` asks which kind of thing it is
  (one of the tables' kinds, or none); :class:`~coteam.kit.roles.RoleKit` keeps the answer for the whole run (every
  agent, every episode: one question per name) and puts it in the memory's ``learned_categories``, so the priors
  of that kind apply to it.
* **A teammate's free-text message.** A message without a typed payload (from a person, another system, or a
  model that wrote it) tells the symbolic belief nothing. :data:`READ_MESSAGE` reads it into a
  :class:`~coteam.agent.messages.TeamStatus` (the sender's room, holdings, sightings, explored rooms) that is attached
  to the message in memory as its payload, so the belief uses it like any status report. The prompt fences the text
  as data, not instructions.

Both are always in doubt (gap 0): with the hybrid backend the model is asked whenever one comes up; the symbolic
answers (no kind; nothing read) leave the belief as it was.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import MAX_LISTED, SEEN_LIST_LIMIT, ItemRef, Sighting, TeamStatus
from coteam.domain.observation import Message
from coteam.domain.priors import ROOM_PRIOR
from coteam.kit.answers import StrictAnswer
from coteam.llm import Doubt, Role, RoleContext
from coteam.llm.schema import model_schema, narrow

KINDS = tuple(k for k in ROOM_PRIOR if k != "misc")  # the kinds the priors know
NONE = "none"
OBJECT = re.compile(r"^<([^<>()]+)> \((\d+)\)$")
OBJECT_PATTERN = r"^<[^<>()]+> \([0-9]+\)$"


# --- unfamiliar object classes -----------------------------------------------------------------------------------
class KindAnswer(BaseModel):
    kind: str


def _check_kind(answer: KindAnswer, ctx: RoleContext[None]) -> None:
    if answer.kind not in (*KINDS, NONE):
        raise ValueError(f"kind {answer.kind!r} is none of: {', '.join((*KINDS, NONE))}")


CLASSIFY: Role[None, KindAnswer] = Role(  # a class name: the slots say it all
    "kit.classify",
    "kit_classify",
    KindAnswer,
    lambda ctx: KindAnswer(kind=NONE),
    _check_kind,
    lambda ctx: narrow(model_schema(KindAnswer), enums={"kind": [*KINDS, NONE]}),
    lambda ctx, answer: Doubt(f"unfamiliar object class {ctx.slots['name']!r}"),
)


def unfamiliar_names(memory: AgentMemory) -> list[str]:
    """The goal items whose kind neither the task, the common-sense tables nor an earlier answer say."""
    if memory.task.category:
        return []
    needed = memory.task.needed_names() - set(memory.learned_categories)
    return sorted(n for n in needed if memory.item_category(n) == "misc")


def classify_slots(name: str) -> dict[str, str]:
    return {"name": name, "kinds": ", ".join(KINDS)}


def learned_category(answer: KindAnswer) -> str:
    return "misc" if answer.kind == NONE else answer.kind


# --- free-text messages --------------------------------------------------------------------------------------
class SeenAnswer(StrictAnswer):
    object: str
    room: str


class Reading(StrictAnswer):
    room: str | None = None
    holding: list[str] = Field(default_factory=list, max_length=MAX_LISTED)
    seen: list[SeenAnswer] = Field(default_factory=list, max_length=SEEN_LIST_LIMIT)
    explored: list[str] = Field(default_factory=list, max_length=MAX_LISTED)


def _rooms(ctx: RoleContext[AgentMemory]) -> list[str]:
    return [r.name for r in ctx.data.floorplan.rooms]


def _check_reading(answer: Reading, ctx: RoleContext[AgentMemory]) -> None:
    rooms = set(_rooms(ctx))
    for room in [answer.room, *answer.explored, *(s.room for s in answer.seen)]:
        if room is not None and room not in rooms:
            raise ValueError(f"{room!r} is not a room of this home: {', '.join(sorted(rooms))}")
    for text in [*answer.holding, *(s.object for s in answer.seen)]:
        if OBJECT.match(text) is None:
            raise ValueError(f"{text!r} is not an object written <name> (id)")


def _reading_schema(ctx: RoleContext[AgentMemory]) -> dict[str, Any]:
    rooms = _rooms(ctx)
    obj = {"type": "string", "pattern": OBJECT_PATTERN}
    room = {"type": "string", "enum": rooms}
    return narrow(
        model_schema(Reading),
        replace={
            "room": {"anyOf": [room, {"type": "null"}]},
            "holding": {"type": "array", "items": obj, "maxItems": MAX_LISTED},
            "seen": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"object": obj, "room": room},
                    "required": ["object", "room"],
                    "additionalProperties": False,
                },
                "maxItems": SEEN_LIST_LIMIT,
            },
            "explored": {"type": "array", "items": room, "maxItems": MAX_LISTED},
        },
    )


READ_MESSAGE: Role[AgentMemory, Reading] = Role(  # the reader's memory: its rooms
    "kit.read_message",
    "kit_read_message",
    Reading,
    lambda ctx: Reading(),
    _check_reading,
    _reading_schema,
    lambda ctx, answer: Doubt(f"free-text message from {ctx.slots['sender']}"),
)


def unread_messages(memory: AgentMemory) -> list[int]:
    """Indexes of teammates' messages with no typed payload that no model has read yet."""
    return [i for i, m in enumerate(memory.messages) if m.payload is None and i not in memory.messages_read]


def read_slots(memory: AgentMemory, message: Message) -> dict[str, str]:
    rooms = ", ".join(r.name for r in memory.floorplan.rooms)
    return {"sender": message.sender, "text": message.text, "rooms": rooms}


def status_of(reading: Reading, sender: str) -> TeamStatus | None:
    """What a reading states, as the sender's status report (None when it states nothing)."""
    if reading == Reading():
        return None

    def ref(text: str) -> ItemRef:
        m = OBJECT.match(text)
        assert m is not None
        return ItemRef(name=m.group(1).strip(), id=int(m.group(2)))

    seen = tuple(Sighting(**ref(s.object).model_dump(), room=s.room) for s in reading.seen)
    return TeamStatus(
        agent=sender,
        room=reading.room,
        holding=tuple(ref(h) for h in reading.holding),
        seen=seen,
        seen_complete=False,
        explored=tuple(dict.fromkeys(reading.explored)),
    )
