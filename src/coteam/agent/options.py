"""The list of high-level actions available to an agent now, annotated with travel distances."""

from __future__ import annotations

import math
from dataclasses import dataclass

from coteam.agent.goals import GOAL_RADIUS_M, delivery_target, goal_item_ids, goal_status
from coteam.agent.memory import AgentMemory
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb, format_action
from coteam.domain.navigation import NavGrid
from coteam.domain.world import Benchmark, ObjectKind, Relation, Room, Vec2


@dataclass(frozen=True)
class ActionOption:
    action: HighLevelAction
    text: str
    my_distance: float  # metres of travel for this agent (0 for messages and in-place actions)
    teammate_distance: float | None = None  # from the teammate's last known position, when known

    def annotated(self) -> str:
        if self.action.is_message:
            return self.text
        out = f"{self.text} - my cost: {self.my_distance:.1f} m"
        if self.teammate_distance is not None and math.isfinite(self.teammate_distance):
            out += f", teammate cost: {self.teammate_distance:.1f} m"
        return out


MESSAGE_PLACEHOLDER = "<message>"


def target_position(action: HighLevelAction, memory: AgentMemory) -> Vec2 | None:
    """Where executing ``action`` takes the agent (None for in-place actions)."""
    if action.verb in (Verb.GOTO, Verb.EXPLORE) and action.target is not None:
        return memory.floorplan.room_center(action.target.id)
    if action.verb == Verb.TRANSPORT:
        bed = memory.objects.get(memory.task.predicates[0].target)
        return bed.position if bed else None
    if action.target is not None and action.target.id in memory.objects:
        view = memory.objects[action.target.id]
        return None if view.held_by == memory.agent else view.position
    return None


def available_actions(memory: AgentMemory, nav: NavGrid, *, allow_messages: bool = True) -> list[ActionOption]:
    """Every action the agent may choose now, in a stable order, with distance annotations."""
    actions = (
        _cwah_actions(memory, allow_messages)
        if memory.benchmark == Benchmark.CWAH
        else _tdw_actions(memory, allow_messages)
    )
    mate = _closest_teammate_position(memory)
    blocked = memory.blocked_actions()
    claimed = memory.claimed_by_teammates()
    gate = memory.safety
    places = memory.known_places() if gate is not None else ({}, {})
    out = []
    for action in actions:
        text = format_action(action, memory.benchmark)
        if text in blocked:
            continue  # it failed the same way twice lately (coteam.agent.retries), or the safety policy refused it
        if gate is not None and gate.check_action(action, *places).refused:
            continue  # the home's safety policy forbids it: never an option, so every plan goes round it
        if action.verb in (Verb.CHECK, Verb.GRAB) and action.target is not None and action.target.id in claimed:
            continue  # a teammate works on it now: two robots never search or grab the same thing at once
        pos = target_position(action, memory)
        mine = 0.0 if pos is None else nav.path_length(memory.position, pos)
        theirs = None if (pos is None or mate is None) else nav.path_length(mate, pos)
        out.append(ActionOption(action, text, mine, theirs))
    return out


def _closest_teammate_position(memory: AgentMemory) -> Vec2 | None:
    if not memory.teammates:
        return None
    latest = max(memory.teammates.values(), key=lambda s: s.step)
    return latest.position


def walk_into(room: Room, benchmark: Benchmark) -> HighLevelAction:
    """The action that takes a robot into ``room`` in either dialect: C-WAH explores it (walking in shows it),
    TDW-MAT goes to it."""
    return HighLevelAction(Verb.EXPLORE if benchmark == Benchmark.CWAH else Verb.GOTO, ObjectRef(room.name, room.id))


def _ref(memory: AgentMemory, object_id: int) -> ObjectRef:
    return ObjectRef(memory.known_names()[object_id], object_id)


def _cwah_actions(memory: AgentMemory, allow_messages: bool) -> list[HighLevelAction]:
    out: list[HighLevelAction] = []
    if allow_messages:
        out.append(HighLevelAction(Verb.SEND_MESSAGE, text=MESSAGE_PLACEHOLDER))
    unexplored = memory.unexplored_rooms()
    rooms = unexplored or [r.id for r in memory.floorplan.rooms if r.id != memory.room]
    if not rooms and memory.camera_view and memory.room >= 0:
        rooms = [memory.room]  # a one-room home seen through a camera: search it again (what is out of view)
    out += [HighLevelAction(Verb.EXPLORE, _ref(memory, r)) for r in rooms]
    if memory.free_hands() > 0:
        out += [
            HighLevelAction(Verb.CHECK, _ref(memory, c.id))
            for c in sorted(memory.unchecked_containers(), key=lambda v: v.id)
        ]
        grabbable = goal_item_ids(memory) | other_item_ids(memory)
        out += [HighLevelAction(Verb.GRAB, _ref(memory, i)) for i in sorted(grabbable)]
    held = memory.held_items()
    held_names = {v.name for v in held}
    targets = {st.predicate.target for st in goal_status(memory) if st.predicate.item in held_names}
    if any(delivery_target(memory, v.name) is None for v in held):
        targets |= {p.target for p in memory.task.predicates}  # a thing no goal wants is set down at a goal place
    out += [HighLevelAction(Verb.PUT, _ref(memory, t)) for t in sorted(targets) if t in memory.objects]
    return out


def fetches_for_the_goal(memory: AgentMemory, option: ActionOption) -> bool:
    """Whether a grab takes something a goal names or a carriable container (not one of :func:`other_item_ids`)."""
    target = option.action.target
    if option.action.verb != Verb.GRAB or target is None:
        return False
    view = memory.objects.get(target.id)
    return view is not None and (view.capacity > 0 or view.name in memory.task.needed_names())


def other_item_ids(memory: AgentMemory) -> set[int]:
    """Known things no goal names, loose and in nobody's hands: a robot can pick them up as it can any item (at
    the cost of a hand and a trip), so telling what matters from what does not is the planner's job."""
    wanted = memory.task.needed_names()
    return {
        v.id
        for v in memory.items()
        if v.name not in wanted and v.capacity == 0 and not v.held_by and v.location is not None
    }


def _tdw_actions(memory: AgentMemory, allow_messages: bool) -> list[HighLevelAction]:
    out: list[HighLevelAction] = []
    if allow_messages:
        out.append(HighLevelAction(Verb.SEND_MESSAGE, text=MESSAGE_PLACEHOLDER))
    out += [HighLevelAction(Verb.GOTO, _ref(memory, r.id)) for r in memory.floorplan.rooms if r.id != memory.room]
    if memory.room >= 0:
        out.append(HighLevelAction(Verb.EXPLORE, _ref(memory, memory.room)))
    held = memory.held_items()
    holding_carrier = any(v.capacity > 0 for v in held)
    if memory.free_hands() > 0:
        # Objects inside a carriable container cannot be grasped on their own.
        grabbable = goal_item_ids(memory) | other_item_ids(memory)
        loose = sorted(i for i in grabbable if memory.objects[i].location != Relation.IN)
        out += [HighLevelAction(Verb.GRAB, _ref(memory, i)) for i in loose]
        if not holding_carrier:
            carriers = sorted(
                v.id
                for v in memory.items()
                if v.capacity > 0 and not v.held_by and v.location is not None and v.id not in _delivered(memory)
            )
            out += [HighLevelAction(Verb.GRAB, _ref(memory, c)) for c in carriers]
    carrier = next((v for v in held if v.capacity > 0), None)
    if carrier is not None:
        load = sum(1 for v in memory.items() if v.holder == carrier.id)
        if load < carrier.capacity:
            for v in held:
                if v.capacity == 0:
                    out.append(HighLevelAction(Verb.PUT_IN, _ref(memory, v.id), _ref(memory, carrier.id)))
    if held:
        out.append(HighLevelAction(Verb.TRANSPORT))
    return out


def _delivered(memory: AgentMemory) -> set[int]:
    """Carriers already lying at the goal: picking them up again would undo work."""
    out = set()
    bed_id = memory.task.predicates[0].target
    bed = memory.objects.get(bed_id)
    if bed is None:
        return out
    for v in memory.items():
        if v.kind == ObjectKind.ITEM and v.room == bed.room and math.dist(v.position, bed.position) <= GOAL_RADIUS_M:
            out.add(v.id)
    return out
