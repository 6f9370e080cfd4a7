"""Plain-text rendering of an agent's situation for prompts and logs (our own wording)."""

from __future__ import annotations

from coteam.agent.goals import goal_status
from coteam.agent.memory import AgentMemory
from coteam.domain.observation import ObjectView
from coteam.domain.world import Benchmark, ObjectKind, Relation


def describe(view: ObjectView) -> str:
    return f"<{view.name}> ({view.id})"


def goal_text(memory: AgentMemory) -> str:
    task = memory.task
    parts = []
    for st in goal_status(memory):
        p = st.predicate
        if p.relation == Relation.NEAR:
            parts.append(f"{p.count} {p.item}")
        else:
            parts.append(f"{p.count} {p.item} {p.relation.value} <{st.target_name}> ({p.target})")
    if memory.benchmark == Benchmark.TDWMAT:
        return f"Transport {', '.join(parts)} to the bed ({task.category} task)."
    return f"Task '{task.name}': get {', '.join(parts)}."


def _where(view: ObjectView, memory: AgentMemory) -> str:
    if view.held_by:
        return "held by me" if view.held_by == memory.agent else f"held by {view.held_by}"
    if view.location in (Relation.IN, Relation.ON) and view.holder in memory.objects:
        return f"{view.location.value} {describe(memory.objects[view.holder])}"
    return f"on the floor of the {memory.room_name(view.room)}"


def progress_text(memory: AgentMemory) -> str:
    """Goal progress, holdings, per-room findings, unexplored rooms and the teammates' last sightings."""
    lines: list[str] = []
    if memory.benchmark == Benchmark.TDWMAT:
        lines.append(f"Time used: {memory.frames} of {memory.task.horizon} frames.")
    else:
        lines.append(f"Time used: {memory.step} of {memory.task.horizon} steps.")
    for st in goal_status(memory):
        p = st.predicate
        lines.append(
            f"Goal {p.item}: {len(st.done)}/{p.count} in place"
            + (f", I carry {len(st.held_by_me)}" if st.held_by_me else "")
            + (f", teammates carry {len(st.held_by_others)}" if st.held_by_others else "")
            + (f", {len(st.candidates)} more known" if st.candidates else "")
            + "."
        )
    held = memory.held_items()
    lines.append("I hold " + (", ".join(describe(v) for v in held) if held else "nothing") + ".")
    lines.append(f"I am in the {memory.room_name(memory.room)}." if memory.room >= 0 else "My room is unknown.")
    for room in memory.floorplan.rooms:
        found = [v for v in memory.objects.values() if v.room == room.id and v.kind == ObjectKind.ITEM]
        closed = [v for v in memory.unchecked_containers() if v.room == room.id]
        if memory.is_explored(room.id):
            state = "explored"
        elif memory.is_partly_explored(room.id):
            state = "partly explored"
        else:
            lines.append(f"The {room.name} ({room.id}) is unexplored.")
            continue
        desc = f"The {room.name} ({room.id}) is {state}"
        if found:
            desc += "; seen there: " + "; ".join(f"{describe(v)} {_where(v, memory)}" for v in found)
        if closed:
            desc += "; unopened: " + ", ".join(describe(v) for v in closed)
        lines.append(desc + ".")
    for name, seen in sorted(memory.teammates.items()):
        holding = [memory.objects[h] for h in seen.holding if h is not None and h in memory.objects]
        lines.append(
            f"I last saw {name} at step {seen.step} in the {memory.room_name(seen.room)}, holding "
            + (", ".join(describe(v) for v in holding) if holding else "nothing")
            + "."
        )
    return "\n".join(lines)
