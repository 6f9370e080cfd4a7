"""``oracle``: a centralised planner with full observability — the near-optimal reference.

Every agent sees the whole world (the runner enables full observability for this team) and one planner decides
for all of them, so no messages are needed and nobody explores. Each round (:class:`~coteam.kit.team.TeamRound`)
decides for every robot waiting for an action, one after the other, each leaving to the others the items they
fetch. With ``full_observability=false`` the planner sees only the union of the robots' observations: a robot with
nothing known to fetch searches the nearest place no robot has searched or is searching.

C-WAH: whenever an agent is free, the exact joint planner (:mod:`coteam.teams.joint_plan`) chooses instances,
assignment, order and two-handed trips that minimise the makespan from the current state, and the agent takes its
first step of that plan. TDW-MAT (and C-WAH teams too large for exhaustive search): each free agent claims the
needed item that is cheapest for it to fetch and deliver unless a free teammate is clearly closer, fills a carried
container first when enough targets remain, and delivers when its hands are full.
"""

from __future__ import annotations

import math

from pydantic import Field

from coteam.agent.goals import goal_status
from coteam.agent.memory import AgentMemory, TeammateSighting
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.domain.actions import Verb
from coteam.domain.observation import ObjectView
from coteam.domain.world import Benchmark, ObjectKind, Relation, Vec2
from coteam.kit import CentralisedTeam, MethodConfig
from coteam.kit.team import TeamRound
from coteam.teams import joint_plan

MAX_JOINT_SEARCH = 200_000  # instance choices × assignments × orders the exact planner may enumerate


TEAMMATE_SLACK_M = 2.0  # take an item unless a free teammate is this much closer to it
SEARCHES = (Verb.EXPLORE, Verb.GOTO, Verb.CHECK)  # the actions that look for items


class OracleConfig(MethodConfig):
    full_observability: bool = Field(
        True, description="see the whole world; false: only what the robots see (a centralised planner that searches)"
    )


class OracleTeam(CentralisedTeam):
    summary = (
        "centralised planner with full observability (near-optimal reference; full_observability=false: it searches)"
    )
    Config = OracleConfig
    config: OracleConfig

    @property
    def full_observability(self) -> bool:  # type: ignore[override]
        return self.config.full_observability

    def _delivery_cost(self, ctx: DecisionContext, option: ActionOption) -> float:
        """Cost to fetch the item and then bring it to its goal target."""
        m = ctx.memory
        item = m.objects[option.action.target.id]  # type: ignore[union-attr]
        goal = next((p.target for p in m.task.predicates if p.item == item.name), None)
        back = 0.0
        if goal is not None and goal in m.objects:
            back = ctx.nav.path_length(item.position, m.objects[goal].position)
        return option.my_distance + 0.5 * back

    def plan_round(self, round: TeamRound) -> dict[str, Decision]:
        """The robots' choices one after the other, each leaving to the others the items they fetch (the grabs the
        busy robots run, and those chosen before it in this round) and the places they search."""
        self.members = set(round.memories)  # the robots the team plans with (a robot that stopped answering is not)
        self.claims = {a.target.id: r for r, a in round.running.items() if a.verb == Verb.GRAB and a.target}
        self.searched = {a.target.id for a in round.running.values() if a.verb in SEARCHES and a.target}
        return {agent: self._plan(ctx) for agent, ctx in round.contexts.items()}

    def _plan(self, ctx: DecisionContext) -> Decision:
        m = ctx.memory
        agent = ctx.agent
        # Forget claims on items that are now held or delivered.
        self.claims = {i: a for i, a in self.claims.items() if i in m.objects and not m.objects[i].held_by}
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
        grabs = self._mine_to_take(ctx, grabs)
        if self.info.benchmark == Benchmark.CWAH:
            choice, why = self._cwah(ctx, grabs)
        else:
            choice, why = self._tdw(ctx, grabs)
        target = choice.action.target
        if choice.action.verb == Verb.GRAB and target is not None:
            self.claims[target.id] = agent
        elif choice.action.verb in SEARCHES and target is not None:
            self.searched.add(target.id)
        return Decision(choice.action, {"method": "oracle", "rule": why})

    def _teammates(self, m: AgentMemory) -> dict[str, TeammateSighting]:
        """What ``m`` knows of the teammates the team plans with."""
        return {name: seen for name, seen in m.teammates.items() if name in self.members}

    def _mine_to_take(self, ctx: DecisionContext, grabs: list[ActionOption]) -> list[ActionOption]:
        """Leave an item to a teammate who can reach it clearly sooner (from where its current job ends)."""
        m = ctx.memory
        others = []
        for name, seen in self._teammates(m).items():
            claimed = [i for i, a in self.claims.items() if a == name]
            if sum(h is not None for h in seen.holding) + len(claimed) >= 2:
                continue  # no free hand left for another item
            others.append(m.objects[claimed[-1]].position if claimed else seen.position)
        if not others:
            return grabs
        keep: list[ActionOption] = []
        for o in grabs:
            pos = m.objects[o.action.target.id].position  # type: ignore[union-attr]
            theirs = min(ctx.nav.path_length(p, pos) for p in others)
            if o.my_distance <= theirs + TEAMMATE_SLACK_M:
                keep.append(o)
        return keep

    def _joint_plan(self, ctx: DecisionContext) -> joint_plan.JointPlan | None:
        """The exact joint plan from the current state, or None when the search would be too large."""
        m, nav, physics = ctx.memory, ctx.nav, self.info.physics
        pred = m.task.predicates[0]
        goal = m.objects[pred.target]

        def walk_steps(a: Vec2, b: Vec2) -> float:
            return math.ceil(max(0.0, nav.path_length(a, b) - physics.cwah_reach_m) / physics.cwah_walk_step_m)

        def hidden_steps(item: ObjectView) -> float:
            holder = m.objects.get(item.holder)
            return 1.0 if item.location == Relation.IN and holder is not None and holder.is_open is False else 0.0

        needed = {st.predicate.item: st.missing for st in goal_status(m)}
        wanted = set(needed)
        starts = [joint_plan.AgentStart(ctx.agent, m.position, sum(v.name in wanted for v in m.held_items()))]
        for name, seen in sorted(self._teammates(m).items()):
            held = sum(
                1 for h in seen.holding if h is not None and m.objects.get(h, None) and m.objects[h].name in wanted
            )
            fetching = [i for i, a in self.claims.items() if a == name]
            if fetching:
                item = m.objects[fetching[0]]
                needed[item.name] -= 1
                busy = walk_steps(seen.position, item.position) + hidden_steps(item) + 1
                starts.append(joint_plan.AgentStart(name, item.position, held + 1, busy))
            else:
                starts.append(joint_plan.AgentStart(name, seen.position, held))
        candidates = [
            joint_plan.Candidate(v.id, v.name, v.position, hidden_steps(v))
            for v in m.items()
            if v.name in wanted
            and not v.held_by
            and v.id not in self.claims
            and not (v.location == pred.relation and v.holder == pred.target)
        ]
        k = sum(max(0, c) for c in needed.values())
        choices = math.prod(math.comb(sum(c.name == n for c in candidates), c) for n, c in needed.items() if c > 0)
        if joint_plan.search_size(len(starts), k, choices) > MAX_JOINT_SEARCH:
            return None
        goal_open = 1.0 if goal.kind == ObjectKind.CONTAINER and not goal.is_open else 0.0
        return joint_plan.plan(starts, needed, candidates, goal.position, walk_steps, goal_open)

    def _cwah(self, ctx: DecisionContext, grabs: list[ActionOption]) -> tuple[ActionOption, str]:
        plan = self._joint_plan(ctx)
        if plan is not None:
            mine = plan.agents[ctx.agent]
            puts = [o for o in ctx.options if o.action.verb == Verb.PUT]
            if mine.trips and mine.trips[0] == 0 and puts:
                return puts[0], f"joint plan: deliver first (makespan {plan.makespan:.0f} steps)"
            if mine.items:
                for o in ctx.options:
                    if o.action.verb == Verb.GRAB and o.action.target and o.action.target.id == mine.items[0]:
                        return o, f"joint plan: fetch {mine.items} in trips {mine.trips} (makespan {plan.makespan:.0f})"
            if puts:
                return puts[0], "joint plan: deliver"
            return self._idle(ctx), "joint plan: nothing for me"
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
        """With nothing to fetch: seeing the world, stay out of the way (go to, or look around, the current room);
        seeing what the robots see, search the nearest place no robot has searched or is searching."""
        if not self.full_observability:
            m = ctx.memory
            unsearched = [
                o
                for o in ctx.options
                if o.action.verb in SEARCHES
                and o.action.target is not None
                and o.action.target.id not in self.searched
                and not m.is_explored(o.action.target.id)
            ]
            if unsearched:
                return min(unsearched, key=lambda o: (o.my_distance, o.text))
        here = [o for o in ctx.options if o.action.verb in (Verb.EXPLORE, Verb.GOTO)]
        return min(here, key=lambda o: (o.my_distance if math.isfinite(o.my_distance) else math.inf, o.text))
