"""The rule policy: the benchmarks' scripted-helper rules as a function of one agent's decision context.

Rules, in order: put what I carry when my hands are full or nothing else is worth grabbing; grab the nearest
needed item; (TDW-MAT) pick up a carriable container early and fill it; explore the nearest unexplored place
(a room, or in C-WAH also an unopened container); deliver what I hold; otherwise walk to the farthest-unseen room.
Only the agent's own memory is read. The ``rhp`` baseline is this policy; methods fall back on it (coela's symbolic
planner, cobel's plans without a value, mhp's first try) and so does the architecture doc's example method.
"""

from __future__ import annotations

from collections.abc import Sequence

from coteam.agent.options import ActionOption, fetches_for_the_goal
from coteam.agent.reasoning import DecisionContext
from coteam.domain.actions import Verb
from coteam.domain.world import Benchmark
from coteam.value.abstract import TDW_DELIVER_BEFORE_END, TDW_NO_CONTAINERS_BEFORE_END


def nearest(options: Sequence[ActionOption]) -> ActionOption | None:
    return min(options, key=lambda o: (o.my_distance, o.text), default=None)


def by_verb(ctx: DecisionContext, verb: Verb) -> list[ActionOption]:
    return [o for o in ctx.options if o.action.verb == verb]


def needed_grabs(ctx: DecisionContext) -> list[ActionOption]:
    """The grabs of what the goal needs (the rules never pick up a thing no goal wants)."""
    return [o for o in by_verb(ctx, Verb.GRAB) if fetches_for_the_goal(ctx.memory, o)]


def stalest(ctx: DecisionContext, room_options: Sequence[ActionOption]) -> ActionOption:
    """The room option whose room this agent was in longest ago (never visited first); with no room to go to (every
    room was unreachable lately), the nearest other physical action, else whatever is offered."""
    if not room_options:
        physical = [o for o in ctx.options if not o.action.is_message]
        return nearest(physical) or ctx.options[0]
    m = ctx.memory
    return min(room_options, key=lambda o: (m.last_visit(o.action.target.id), o.text))  # type: ignore[union-attr]


Rule = tuple[ActionOption, str, Sequence[ActionOption]]  # the choice, the rule, the options it was the nearest of


def rule_based_choice(ctx: DecisionContext) -> tuple[ActionOption, str]:
    """The rules' choice for this decision and the rule that made it."""
    option, rule, _ = _rules(ctx)
    return option, rule


def rule_based_candidates(ctx: DecisionContext) -> Sequence[ActionOption]:
    """The options the deciding rule chose the nearest of (just the choice when the rule names one action)."""
    return _rules(ctx)[2]


def _rules(ctx: DecisionContext) -> Rule:
    return (_cwah if ctx.memory.benchmark == Benchmark.CWAH else _tdw)(ctx)


def _nearest(options: Sequence[ActionOption], rule: str) -> Rule:
    return nearest(options), rule, options  # type: ignore[return-value]


def _only(option: ActionOption, rule: str) -> Rule:
    return option, rule, (option,)


def _cwah(ctx: DecisionContext) -> Rule:
    m = ctx.memory
    puts, grabs = by_verb(ctx, Verb.PUT), needed_grabs(ctx)
    if puts and (m.free_hands() == 0 or not grabs):
        return _nearest(puts, "deliver")
    if grabs:
        return _nearest(grabs, "grab nearest needed item")
    search = by_verb(ctx, Verb.CHECK) + [o for o in by_verb(ctx, Verb.EXPLORE) if not m.is_explored(o.action.target.id)]  # type: ignore[union-attr]
    if search:
        return _nearest(search, "search nearest unexplored place")
    return _only(stalest(ctx, by_verb(ctx, Verb.EXPLORE)), "revisit the room seen longest ago")


def _tdw(ctx: DecisionContext) -> Rule:
    m = ctx.memory
    left = m.task.horizon - m.frames
    held = m.held_items()
    put_in, transport = by_verb(ctx, Verb.PUT_IN), by_verb(ctx, Verb.TRANSPORT)
    grabs = needed_grabs(ctx)
    containers = [o for o in grabs if m.objects[o.action.target.id].capacity > 0]  # type: ignore[union-attr]
    targets = [o for o in grabs if o not in containers]
    if put_in:
        return _only(put_in[0], "fill the container I carry")
    if transport and (left < TDW_DELIVER_BEFORE_END or m.free_hands() == 0):
        return _only(transport[0], "deliver")
    has_carrier = any(v.capacity > 0 for v in held)
    if containers and not has_carrier and left > TDW_NO_CONTAINERS_BEFORE_END:
        return _nearest(containers, "pick up a container")
    if targets:
        return _nearest(targets, "grab nearest target")
    explore_here = by_verb(ctx, Verb.EXPLORE)
    if explore_here and not m.is_explored(m.room):
        return _only(explore_here[0], "look around this room")
    unexplored = [o for o in by_verb(ctx, Verb.GOTO) if not m.is_explored(o.action.target.id)]  # type: ignore[union-attr]
    if unexplored:
        return _nearest(unexplored, "go to nearest unexplored room")
    if transport:
        return _only(transport[0], "deliver what I have")
    return _only(stalest(ctx, by_verb(ctx, Verb.GOTO)), "revisit the room seen longest ago")
