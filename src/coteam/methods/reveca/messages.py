"""REVECA's messages: each a rule-made text with a typed payload (:mod:`coteam.agent.messages`) its teammates read.

* :class:`Found` -- at the start, the items the robot sees around it ("I found <apple> (12), <book> (31) in the
  kitchen."): the teammates' memories take them, at the centre of that room until they see them.
* :class:`SubgoalDone` -- when the robot's own delivery completes part of the goal ("Finished one of our subgoals,
  <apple> (12)."): the teammates' maps show the item at the goal's destination, and nobody goes for it again.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import MAX_LISTED, ItemRef
from coteam.domain.actions import MAX_MESSAGE_CHARS
from coteam.domain.observation import ObjectView
from coteam.domain.world import ObjectKind, Relation


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
            ),
            self.agent,
        )


class ValidationRequest(BaseModel):
    """A targeted question before acting on a remembered object a teammate may have dealt with since I saw it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("validation_request", pattern="^validation_request$")
    agent: str = Field(min_length=1, max_length=64)
    to: str = Field(min_length=1, max_length=64)
    room: str = Field(min_length=1, max_length=64)
    at: str = Field(min_length=1, max_length=64)  # the asker's room
    action: str = Field(min_length=1, max_length=160)
    target: ItemRef

    def text(self) -> str:
        return (
            f"{self.to}, I want to do {self.action} in the {self.room}. Have you already done that? "
            f"I am in the {self.at}."
        )


class Seen(ItemRef):
    step: int = Field(ge=0)


class ValidationReply(BaseModel):
    """The answer to a :class:`ValidationRequest`: whether I did it, and what I last saw in that room (or that I
    know nothing of it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("validation_reply", pattern="^validation_reply$")
    agent: str = Field(min_length=1, max_length=64)
    to: str = Field(min_length=1, max_length=64)
    room: str = Field(min_length=1, max_length=64)
    target: int
    known: bool  # I have been in that room
    visited: int = Field(-1, ge=-1)  # my last step there
    done: bool = False  # I did the asked action (or hold its object)
    seen: tuple[Seen, ...] = Field((), max_length=MAX_LISTED)

    def text(self) -> str:
        if not self.known:
            return f"{self.to}, I don't have any information about the {self.room} yet."
        said = f"{self.to}, I {'did' if self.done else 'did not do'} that."
        if self.seen:
            return said + " " + " ".join(f"At step {s.step}, I saw {s.text()} in the {self.room}." for s in self.seen)
        return said + f" There is nothing more to do in the {self.room}."

    @classmethod
    def answer(cls, memory: AgentMemory, request: ValidationRequest) -> ValidationReply:
        room = next((r for r in memory.floorplan.rooms if r.name == request.room), None)
        visited = memory.last_visit(room.id) if room is not None else -1
        done = any(r.action == request.action and r.outcome == "done" for r in memory.actions) or any(
            v.id == request.target.id for v in memory.held_items()
        )
        seen: list[Seen] = []
        if room is not None:
            for v in sorted(memory.items(), key=lambda v: v.id):
                if v.room == room.id and not v.held_by and len(seen) < MAX_LISTED:
                    seen.append(Seen(id=v.id, name=v.name, step=memory.last_seen.get(v.id, visited)))
        reply = cls(
            agent=memory.agent,
            to=request.agent,
            room=request.room,
            target=request.target.id,
            known=visited >= 0,
            visited=max(visited, -1),
            done=done,
            seen=tuple(seen) if visited >= 0 else (),
        )
        while len(reply.text()) > MAX_MESSAGE_CHARS and reply.seen:
            reply = reply.model_copy(update={"seen": reply.seen[:-1]})
        return reply

    def taken_in(self, memory: AgentMemory) -> None:
        """What my teammate knows of the room, into my memory: an item I last saw there before its visit and that
        it did not see is gone; what it saw is there; the item it dealt with is no longer where I remember it, and
        the container it checked needs no check of mine."""
        if not self.known:
            return
        room = next((r for r in memory.floorplan.rooms if r.name == self.room), None)
        if room is None:
            return
        told = {s.id for s in self.seen}
        for v in list(memory.items()):
            if (
                v.room == room.id
                and not v.held_by
                and v.id not in told
                and memory.last_seen.get(v.id, 0) <= self.visited
            ):
                del memory.objects[v.id]
        for s in self.seen:
            if s.id not in memory.objects:
                memory.objects[s.id] = ObjectView(
                    s.id, s.name, ObjectKind.ITEM, room.id, memory.floorplan.room_center(room.id)
                )
            memory.last_seen[s.id] = max(memory.last_seen.get(s.id, 0), s.step)
        done = memory.objects.get(self.target) if self.done else None
        if done is not None and done.kind == ObjectKind.ITEM and not done.held_by:
            del memory.objects[self.target]
        elif done is not None and done.kind == ObjectKind.CONTAINER:
            memory.checked.add(done.id)
