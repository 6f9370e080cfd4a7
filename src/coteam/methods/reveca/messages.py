"""REVECA's messages: each a rule-made text with a typed payload (:mod:`coteam.messages`) its teammates read.

* :class:`Found` -- at the start, the items the robot sees around it ("I found <apple> (12), <book> (31) in the
  kitchen."): the teammates' memories take them, at the centre of that room until they see them.
* :class:`SubgoalDone` -- when the robot's own delivery completes part of the goal ("Finished one of our subgoals,
  <apple> (12)."): the teammates' maps show the item at the goal's destination, and nobody goes for it again.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from coteam.actions import MAX_MESSAGE_CHARS
from coteam.memory import AgentMemory
from coteam.messages import MAX_LISTED, ItemRef
from coteam.observation import ObjectView
from coteam.world import ObjectKind, Relation


class Found(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("found", pattern="^found$")
    agent: str = Field(min_length=1, max_length=64)
    room: str = Field(min_length=1, max_length=64)
    objects: tuple[ItemRef, ...] = Field((), max_length=MAX_LISTED)

    def text(self) -> str:
        return f"I found {', '.join(o.text() for o in self.objects)} in the {self.room}."

    @classmethod
    def around(cls, memory: AgentMemory) -> Found | None:
        """The items I see in my room (what fits a message), or None when I see none."""
        if memory.room < 0:
            return None
        here = sorted(v.id for v in memory.items() if v.room == memory.room and not v.held_by)
        here = [memory.objects[i] for i in here]
        found = cls(agent=memory.agent, room=memory.room_name(memory.room), objects=())
        for v in here[:MAX_LISTED]:
            longer = found.model_copy(update={"objects": (*found.objects, ItemRef(id=v.id, name=v.name))})
            if len(longer.text()) > MAX_MESSAGE_CHARS:
                break
            found = longer
        return found if found.objects else None

    def taken_in(self, memory: AgentMemory) -> None:
        """A teammate's sightings in my memory: items I do not know yet, at the centre of its room."""
        room = next((r for r in memory.floorplan.rooms if r.name == self.room), None)
        if room is None:
            return
        centre = memory.floorplan.room_center(room.id)
        for o in self.objects:
            if o.id not in memory.objects:
                memory.objects[o.id] = ObjectView(o.id, o.name, ObjectKind.ITEM, room.id, centre)
                memory.last_seen[o.id] = memory.step


class SubgoalDone(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("subgoal_done", pattern="^subgoal_done$")
    agent: str = Field(min_length=1, max_length=64)
    item: ItemRef
    target: ItemRef

    def text(self) -> str:
        return f"Finished one of our subgoals, {self.item.text()}."

    def taken_in(self, memory: AgentMemory) -> None:
        """The item is at the goal's destination on my map."""
        target = memory.objects.get(self.target.id)
        predicate = next((p for p in memory.task.predicates if p.target == self.target.id), None)
        if target is None or predicate is None:
            return
        into = target.kind == ObjectKind.CONTAINER or predicate.relation == Relation.IN
        memory.teammate_placed(
            ObjectView(
                self.item.id,
                self.item.name,
                ObjectKind.ITEM,
                target.room,
                target.position,
                location=Relation.IN if into else Relation.ON,
                holder=target.id,
            )
        )
