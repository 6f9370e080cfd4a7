"""``oracle``: a centralised planner with full observability — the near-optimal reference.

Every agent sees the whole world (the runner enables full observability for this team), and one planner
assigns needed items to agents: each idle agent claims the unclaimed needed item that is cheapest for it to
fetch and deliver, carries two at a time (TDW-MAT: fills a container first when enough targets remain), and
never explores. No messages are needed since the planner is shared.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from coteam.actions import Verb
from coteam.goals import goal_status
from coteam.options import ActionOption
from coteam.reasoning import Decision, DecisionContext, EpisodeInfo, MethodSpec, register_method
from coteam.world import Benchmark


class OracleTeam:
    name = "oracle"
    full_observability = True

    def __init__(self, params: Mapping[str, Any]):
        self.claims: dict[int, str] = {}

    def reset(self, info: EpisodeInfo) -> None:
        self.claims = {}
        self.info = info

    def _delivery_cost(self, ctx: DecisionContext, option: ActionOption) -> float:
        """Cost to fetch the item and then bring it to its goal target."""
        m = ctx.memory
        item = m.objects[option.action.target.id]  # type: ignore[union-attr]
        goal = next((p.target for p in m.task.predicates if p.item == item.name), None)
        back = 0.0
        if goal is not None and goal in m.objects:
            back = ctx.nav.path_length(item.position, m.objects[goal].position)
        return option.my_distance + 0.5 * back

    def decide(self, ctx: DecisionContext) -> Decision:
        m = ctx.memory
        agent = ctx.agent
        # Forget claims on items that are now held or delivered.
        self.claims = {i: a for i, a in self.claims.items() if i in m.objects and not m.objects[i].held_by}
        mine = {i for i, a in self.claims.items() if a == agent}
        for i in mine:
            del self.claims[i]
        statuses = goal_status(m)
        missing = {st.predicate.item: st.missing for st in statuses}
        for i in self.claims:
            name = m.objects[i].name
            if name in missing:
                missing[name] -= 1
        grabs = [
            o
            for o in ctx.options
            if o.action.verb == Verb.GRAB
            and o.action.target is not None
            and o.action.target.id not in self.claims
            and missing.get(m.objects[o.action.target.id].name, 0) > 0
        ]
        if self.info.benchmark == Benchmark.CWAH:
            choice, why = self._cwah(ctx, grabs)
        else:
            choice, why = self._tdw(ctx, grabs)
        if choice.action.verb == Verb.GRAB and choice.action.target is not None:
            self.claims[choice.action.target.id] = agent
        return Decision(choice.action, {"method": "oracle", "rule": why})

    def _cwah(self, ctx: DecisionContext, grabs: list[ActionOption]) -> tuple[ActionOption, str]:
        puts = [o for o in ctx.options if o.action.verb == Verb.PUT]
        if puts and (ctx.memory.free_hands() == 0 or not grabs):
            return min(puts, key=lambda o: o.my_distance), "deliver"
        if grabs:
            return min(grabs, key=lambda o: (self._delivery_cost(ctx, o), o.text)), "fetch cheapest unclaimed item"
        return self._idle(ctx), "nothing left for me"

    def _tdw(self, ctx: DecisionContext, grabs: list[ActionOption]) -> tuple[ActionOption, str]:
        m = ctx.memory
        opts = ctx.options
        put_in = [o for o in opts if o.action.verb == Verb.PUT_IN]
        transport = [o for o in opts if o.action.verb == Verb.TRANSPORT]
        if put_in:
            return put_in[0], "fill the container"
        targets = [o for o in grabs if m.objects[o.action.target.id].capacity == 0]  # type: ignore[union-attr]
        carriers = [
            o
            for o in opts
            if o.action.verb == Verb.GRAB
            and m.objects[o.action.target.id].capacity > 0  # type: ignore[union-attr]
            and o.action.target.id not in self.claims  # type: ignore[union-attr]
        ]
        if transport and (m.free_hands() == 0 or not targets):
            return transport[0], "deliver"
        has_carrier = any(v.capacity > 0 for v in m.held_items())
        if not has_carrier and carriers and len(targets) >= 3:
            nearest_target = min(o.my_distance for o in targets)
            best = min(carriers, key=lambda o: (o.my_distance, o.text))
            if best.my_distance <= nearest_target + 6.0:
                return best, "take a container on the way"
        if targets:
            return min(targets, key=lambda o: (self._delivery_cost(ctx, o), o.text)), "fetch cheapest unclaimed item"
        return self._idle(ctx), "nothing left for me"

    def _idle(self, ctx: DecisionContext) -> ActionOption:
        """With nothing to fetch, stay out of the way: go to (or look around) the current room."""
        here = [o for o in ctx.options if o.action.verb in (Verb.EXPLORE, Verb.GOTO)]
        return min(here, key=lambda o: (o.my_distance if math.isfinite(o.my_distance) else math.inf, o.text))


register_method(
    MethodSpec(
        "oracle",
        "centralised planner with full observability (near-optimal reference)",
        lambda params: OracleTeam(params),
    )
)
