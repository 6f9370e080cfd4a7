"""``evocf``: EvoCF, centralised team planning that weighs counterfactual joint plans against rules it induces from
its own failures and keeps across episodes.

One planner sees the union of the robots' observations and decides one joint action per round
(:class:`~coteam.kit.team.CentralisedTeam`):

1. **Base plan** (the paper's Actor): a greedy assignment over the shared belief with the team value model
   (:mod:`coteam.value.team`): robot after robot, each takes the option whose team rollout -- with the running
   robots and the robots assigned before it -- is worth most.
2. **Retrieval** (:mod:`.experience`): for every action of a plan, the ``K`` most similar past failures of the
   memory and the rules induced from them.
3. **Counterfactual generator** (:mod:`.counterfactual`): SwapAgent, InsertAction, DeleteAction and ReplaceObject
   on the base plan, guided by the actions retrieval flags (or at random: the ablation); the base plan stays a
   candidate.
4. **Evaluator**: candidates ranked by the rules they break (summed confidence), then by repeats of past failures,
   then by robots taking over an action a rule forbids a teammate, then by robots a rule stopped that still fetch
   or deliver (rather than search), then the base plan first, then team value (:attr:`Assessment.rank`;
   ``evaluator=heuristic``, the ablation: a fixed score without the memory's experience -- how many rules of the
   library a plan breaks, each counted alike, then repeats of this episode's failures, then value).
5. **Rule induction** (:mod:`.rules`): when a robot's action fails, a rule with variables is learnt from the memory's
   transitions (the action's facts generalised over the earlier failures of that reason while the rule still
   separates failures from successes), typed by the paper's six kinds, with support and contradiction counts; every
   outcome is a transition of the memory. With ``store=PATH`` the memory outlives the episode and the run.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator

from coteam.agent.goals import goal_status
from coteam.agent.memory import FAILED, AgentMemory
from coteam.agent.options import ActionOption, fetches_for_the_goal
from coteam.agent.reasoning import EPISODE_OVER, Decision, DecisionContext, EpisodeInfo, EpisodeOutcome
from coteam.belief import BeliefState
from coteam.domain.actions import HighLevelAction, Verb, format_action
from coteam.domain.world import Benchmark, Relation
from coteam.kit import (
    CentralisedTeam,
    Explanation,
    Lettered,
    MethodConfig,
    RoleSession,
    Section,
    TeamRound,
    ValueRoleConfig,
    make_embedder,
    rationale_section,
)
from coteam.methods.evocf.counterfactual import Candidate, at_random, guided
from coteam.methods.evocf.experience import SCHEMA, ExperienceMemory, Recall
from coteam.methods.evocf.roles import (
    EVALUATE,
    GENERATE,
    INDUCE,
    PLAN,
    EvaluateQuestion,
    GenerateQuestion,
    InduceQuestion,
    PlanQuestion,
    candidates_of,
    options_of,
)
from coteam.methods.evocf.rules import CONDITIONS, ActionFacts, Rule, hands, induce
from coteam.value.abstract import Key
from coteam.value.team import Robot, ValueModel

PROGRESS = (Verb.GRAB, Verb.PUT, Verb.PUT_IN, Verb.TRANSPORT)  # actions that fetch or deliver (not searches)


def _for_the_task(ctx: DecisionContext) -> list[ActionOption]:
    """A robot's options a joint plan is made of: the task's actions (no message; no grab of a thing no goal wants,
    unless nothing else is left)."""
    physical = [o for o in ctx.options if not o.action.is_message]
    return [o for o in physical if o.action.verb != Verb.GRAB or fetches_for_the_goal(ctx.memory, o)] or physical


class EvocfConfig(ValueRoleConfig):
    K: int = Field(5, ge=1, description="past failures retrieved per action (top-K by similarity) with their rules")
    candidates: int = Field(8, ge=0, description="counterfactual joint plans per round besides the base plan")
    generator: Literal["guided", "random"] = Field(
        "guided", description="guided: change the actions retrieval flags first; random: the paper's ablation"
    )
    evaluator: Literal["rules", "heuristic"] = Field(
        "rules",
        description="rules: broken rules by confidence, past failures retrieved from the memory, hand-overs, stopped "
        "robots that still work, then the base plan, then value; heuristic (ablation): a fixed score, the number of "
        "rules of the library a plan breaks, then repeats of this episode's failures, then value",
    )
    induction: bool = Field(True, description="induce rules from failures (false: the memory keeps outcomes only)")
    min_confidence: float = Field(0.5, ge=0, le=1, description="rules held with less confidence are not checked")
    rules_in_plan: bool = Field(
        False,
        description="the rule library as the base planner's priors: it leaves out what a held rule forbids a robot "
        "(the paper's transfer design, with candidates=0 and induction=false: the planner alone with given rules)",
    )
    embedder: str = Field("hashing", description="retrieval embedder: hashing, hashing-N or package.module:factory")
    particles: int = Field(8, ge=1, description="belief particles of the team value model")

    @field_validator("embedder")
    @classmethod
    def _loads(cls, spec: str) -> str:
        make_embedder(spec)
        return spec


@dataclass(frozen=True)
class Pending:
    """An action planned for a robot, waiting for its outcome."""

    step: int
    situation: str  # what the team knew when it was planned, in words
    facts: ActionFacts
    joint: str


@dataclass(frozen=True)
class Assessment:
    """What the evaluator found on one candidate."""

    candidate: Candidate
    broken: tuple[tuple[str, Rule], ...]  # (robot, rule) pairs
    repeats: tuple[str, ...]  # robots whose action repeats a past failure
    takes_over: tuple[str, ...]  # robots that take an action a rule forbids to another robot
    moves_on: tuple[str, ...]  # robots a rule stopped in the base plan that fetch or deliver instead of searching
    value: float
    heuristic: bool = False  # ranked by the heuristic evaluator (the ablation)

    def findings(self) -> str:
        """What the symbolic evaluator found, in words (no scores)."""
        said = [f"{r} would break: {rule.text()}" for r, rule in self.broken]
        said += [f"{r} would repeat a past failure" for r in self.repeats]
        said += [f"{r} takes over an action a constraint forbids its teammate" for r in self.takes_over]
        said += [f"{r}, stopped by a constraint, still fetches or delivers" for r in self.moves_on]
        return "; ".join(said) or "breaks no learnt constraint"

    def describe(self) -> str:
        """The candidate for the evaluator's prompt: how it was made, its plan and the findings."""
        made = "+".join(self.candidate.operators) or "the base plan"
        return f"({made}) {plan_text(self.candidate.plan)}. {self.findings()}"

    @property
    def rank(self) -> tuple[float, int, int, int, bool, float]:
        """Fewer broken rules (by confidence), fewer repeated failures, more actions taken over, more robots
        freeing their hands for what a rule forbade them, then the base plan, then more value: a counterfactual
        replaces the base plan only on the evidence of the memory (choosing the best-valued of many candidates by
        the value model alone picks its overestimates: docs/experiments.md)."""
        if self.heuristic:  # rules counted alike, this episode's failures, then value: no memory, no preference
            return (len(self.broken), len(self.repeats), 0, 0, False, -self.value)
        broken = round(sum(r.confidence for _, r in self.broken), 6)
        base = not self.candidate.operators
        return (broken, len(self.repeats), -len(self.takes_over), -len(self.moves_on), not base, -self.value)


class JointValue:
    """Team values of joint plans in one round, from the asking robot's value model (module docstring, 1)."""

    def __init__(self, team: EvocfTeam, round: TeamRound):
        assert team.info is not None
        self.round, self.info = round, team.info
        ctx = round.contexts[round.asking]
        mates = [a for a in team.info.agents if a != ctx.agent]
        self.vm = ValueModel(
            ctx,
            BeliefState(ctx.memory, teammates=mates, distance=ctx.nav.path_length),
            team.info.physics,
            config=team.config.value_config,
            geometry=team.geometry(ctx.nav),
            seed=f"{team.info.seed}:{team.info.episode}",
        )
        want = self.vm.model.root.want
        self.robots = {
            name: Robot(
                name,
                m.position,
                tuple(v.name for v in m.held_items() if v.name in want and v.capacity == 0),
                any(v.capacity > 0 for v in m.held_items()),
            )
            for name, m in round.memories.items()
        }
        self.running = [
            (self.robots[r], self.vm.model.key_of(ActionOption(a, "", 0.0)))
            for r, a in round.running.items()
            if r in self.robots
        ]

    def key(self, option: ActionOption) -> Key | None:
        return self.vm.key(option)

    def value(self, plan: Mapping[str, ActionOption]) -> float:
        """The mean team value of ``plan`` (the running robots go on with their actions)."""
        me = self.round.asking
        others = [*self.running, *((self.robots[r], self.key(o)) for r, o in plan.items() if r != me)]
        option = plan.get(me)
        key = None if option is None else self.key(option)
        delay = 0.0
        if key is None:  # an action that can only waste time: its travel, then the default policy
            key = self.vm.rollout_choice
            if option is not None:
                physics = self.info.physics
                per_metre = (
                    1 / physics.cwah_walk_step_m
                    if self.info.benchmark == Benchmark.CWAH
                    else physics.tdw_frames["move_forward"] / physics.tdw_forward_m
                )
                delay = option.my_distance * per_metre if math.isfinite(option.my_distance) else 0.0
            if key is None:
                return -math.inf
        values = self.vm.outcome_of(key, delay, others).values
        return sum(values) / len(values)

    def greedy(self, options: Mapping[str, Sequence[ActionOption]]) -> dict[str, ActionOption]:
        """Robot after robot (the round's order), the option worth most with the robots assigned before it; a
        robot with nothing the model values takes its nearest search."""
        plan: dict[str, ActionOption] = {}
        for robot, mine in options.items():
            valued = [o for o in mine if self.key(o) is not None]
            if not valued:
                plan[robot] = min(mine, key=lambda o: (o.my_distance, o.text))
                continue
            plan[robot] = max(valued, key=lambda o: (self.value({**plan, robot: o}), -o.my_distance))
        return plan


class EvocfTeam(CentralisedTeam):
    summary = (
        "EvoCF: centralised planner; counterfactual joint plans ranked by rules induced from failures and kept "
        "across episodes (store=PATH)"
    )
    Config = EvocfConfig
    config: EvocfConfig
    store_schema = SCHEMA

    def __init__(self, config: MethodConfig | None = None, *, name: str | None = None):
        super().__init__(config, name=name)
        self.embedder = make_embedder(self.config.embedder)

    def start_episode(self, info: EpisodeInfo) -> None:
        super().start_episode(info)
        assert self.store is not None
        self.experience = ExperienceMemory(self.store, self.embedder)
        self.rng = random.Random(f"{info.seed}:{self.name}:{info.episode}")
        self.pending: dict[str, Pending] = {}
        self.forbidden: dict[str, set[str]] = {}  # action text -> robots a rule forbids it to (this episode)
        self._recalls: dict[ActionFacts, Recall] = {}

    def leave(self, agent: str) -> None:
        super().leave(agent)
        self.pending.pop(agent, None)

    # --- learning -----------------------------------------------------------------------------------------------
    def _settle(self, memories: Mapping[str, AgentMemory], robots: Sequence[str], session: RoleSession | None) -> None:
        """Record the outcome of each of ``robots``' pending actions that has one; a failure's rule is induced by
        ``session``'s inductor role (without a session, at the episode's end: by its symbolic template)."""
        assert self.info is not None
        for robot in robots:
            pending = self.pending.get(robot)
            memory = memories.get(robot)
            if pending is None or memory is None:
                continue
            record = next(
                (r for r in reversed(memory.actions) if r.action == pending.facts.action and r.step >= pending.step),
                None,
            )
            if record is None or (record.outcome != "done" and not record.outcome.startswith(FAILED)):
                continue
            del self.pending[robot]
            reason = record.outcome.removeprefix(FAILED) if record.outcome != "done" else ""
            if reason == EPISODE_OVER:
                continue
            rule = self._induce(pending.facts, reason, session) if reason and self.config.induction else None
            self.experience.record(
                self.info.episode, record.step, pending.situation, pending.facts, pending.joint, reason, rule
            )
            self._recalls.clear()

    def _induce(self, facts: ActionFacts, reason: str, session: RoleSession | None) -> Rule:
        if session is None:
            return induce(facts, reason, self.experience.history)
        question = InduceQuestion(facts, reason, tuple(self.experience.history))
        slots = {
            "failure": f"{facts.text()}: {facts.action} failed ({reason})",
            "facts": "\n".join(f"{c}: {facts.value(c)}" for c in question.conditions()),
        }
        answer = session.ask(INDUCE, question, **slots)
        if answer.source != "llm":  # the symbolic inductor: learnt from the memory's actions and outcomes
            return induce(facts, reason, self.experience.history)
        values = {c: facts.value(c) for c in CONDITIONS if c in answer.value.conditions}
        conditions = {c: v if isinstance(v, str) else v[0] for c, v in values.items()}
        return Rule(answer.value.kind, facts.verb, conditions, reason)

    def learn(self, outcome: EpisodeOutcome) -> None:
        self._settle(self.memories, list(self.pending), None)

    # --- one round ------------------------------------------------------------------------------------------------
    def _letter(self, session: RoleSession, options: Mapping[str, Sequence[ActionOption]]) -> dict[str, Lettered]:
        """Each robot's options lettered, and shown so in every prompt of the round (the ``available`` slot): a
        letter a model answers names the same action in the planner's lists."""
        assert self.info is not None
        lettered = {r: Lettered.physical(mine, benchmark=self.info.benchmark) for r, mine in options.items()}
        session.slots["available"] = "\n".join(f"{r}:\n{lettered[r]}" for r in options)
        return lettered

    def plan_round(self, round: TeamRound) -> dict[str, Decision]:
        assert self.info is not None
        session = self.session(round)
        options = {r: _for_the_task(ctx) for r, ctx in round.contexts.items()}
        self._letter(session, options)
        self._settle(round.memories, list(round.contexts), session)
        if self.config.rules_in_plan:
            options = {r: self._allowed(round, r, mine) for r, mine in options.items()}
        lettered = self._letter(session, options)
        values = JointValue(self, round)
        planned = session.ask(PLAN, PlanQuestion(lettered, options, lambda: values.greedy(options)))
        base = options_of(lettered, options, planned.value.plan)
        self.stopped: set[str] = set()  # robots a rule stops in the base plan
        base_assessment = self._assess(Candidate(base), round, values)
        for robot, _ in base_assessment.broken:
            self.forbidden.setdefault(base[robot].text, set()).add(robot)
            self.stopped.add(robot)
        flagged = [r for r, _ in base_assessment.broken] + list(base_assessment.repeats)
        cfg = self.config
        made: list[Candidate] = []
        if cfg.generator == "random":
            made = at_random(base, options, cfg.candidates, self.rng)
        elif cfg.candidates > 0:
            handovers = {
                r: [o for o in mine if o.text in self.forbidden and r not in self.forbidden[o.text]]
                for r, mine in options.items()
            }
            flags = list(dict.fromkeys(flagged))
            question = GenerateQuestion(
                lettered, options, base, cfg.candidates, lambda: guided(base, options, flags, cfg.candidates, handovers)
            )
            rules, _ = self._retrieved([Candidate(base)], round)
            answer = session.ask(GENERATE, question, base_plan=plan_text(base), rules=rules, count=str(cfg.candidates))
            made = candidates_of(answer.value, question)
        assessed = [base_assessment, *(self._assess(c, round, values) for c in made)]
        order = sorted(range(len(assessed)), key=lambda i: (*assessed[i].rank, i))
        reasoning = ""
        if cfg.evaluator == "rules" and len(assessed) > 1:
            rules, outcomes = self._retrieved([a.candidate for a in assessed], round)
            question = EvaluateQuestion(
                len(assessed), [i + 1 for i in order], {i + 1: a.findings() for i, a in enumerate(assessed)}
            )
            candidates = "\n".join(f"{i + 1}. {a.describe()}" for i, a in enumerate(assessed))
            ranking = session.ask(EVALUATE, question, candidates=candidates, rules=rules, outcomes=outcomes)
            order = [r.candidate - 1 for r in ranking.value.ranking]
            reasoning = ranking.value.ranking[0].reasoning
        best = order[0]
        winner = assessed[best].candidate
        joint = plan_text(winner.plan)
        rationale = self._rationale(round, assessed, best)
        if reasoning:
            rationale["evaluator"] = reasoning
        decisions = {}
        for robot, option in winner.plan.items():
            memory = round.contexts[robot].memory
            facts = self._facts(round, robot, option, winner.plan)
            self.pending[robot] = Pending(memory.step, situation(memory), facts, joint)
            said = {**rationale, "action": option.text}
            decisions[robot] = (
                session.decision(option.action, said) if robot == round.asking else Decision(option.action, said)
            )
        return decisions

    def _allowed(self, round: TeamRound, robot: str, mine: list[ActionOption]) -> list[ActionOption]:
        """``robot``'s options without those a held rule of the library forbids it (all of them, should every one
        be forbidden): the rules as the base planner's priors."""
        held = [r for r in self.experience.rules.values() if r.confidence >= self.config.min_confidence]
        allowed = [o for o in mine if not any(r.matches(self._facts(round, robot, o, {})) for r in held)]
        return allowed or mine

    def _retrieved(self, candidates: Sequence[Candidate], round: TeamRound) -> tuple[str, str]:
        """The rules and the past failures retrieval found for the actions of ``candidates``, as prompt text."""
        rules: dict[str, Rule] = {}
        failures: dict[str, str] = {}
        for c in candidates:
            for robot, option in c.plan.items():
                recall = self._recall(self._facts(round, robot, option, c.plan))
                rules.update((r.key, r) for r in recall.rules)
                failures.update((f.text(), f.episode) for f in recall.failures)
        rule_lines = [f"- {r.text()} (seen {r.support}x, confidence {r.confidence:.2f})" for r in rules.values()]
        return "\n".join(rule_lines) or "(none yet)", "\n".join(f"- {f}" for f in failures) or "(none yet)"

    def _facts(
        self, round: TeamRound, robot: str, option: ActionOption, plan: Mapping[str, ActionOption]
    ) -> ActionFacts:
        """``robot``'s action ``option`` in the joint ``plan`` as the rules see it."""
        assert self.info is not None
        m = round.memories.get(robot) or round.contexts[robot].memory
        a = option.action
        item = place = target = ""
        shared = "no"
        if a.target is not None:
            item = a.target.name
            if a.verb not in (Verb.EXPLORE, Verb.GOTO):
                target = str(a.target.id)
                view = m.objects.get(a.target.id)
                if view is not None and view.location in (Relation.IN, Relation.ON) and view.holder in m.objects:
                    place = m.objects[view.holder].name
                others: list[HighLevelAction] = [
                    *(o.action for r, o in plan.items() if r != robot),
                    *(x for r, x in round.running.items() if r != robot),
                ]
                if a.verb in (Verb.GRAB, Verb.CHECK) and any(
                    x.target is not None and x.target.id == a.target.id for x in others
                ):
                    shared = "yes"
        held = tuple(sorted(v.name for v in m.held_items()))
        return ActionFacts(
            robot, a.verb.value, option.text, item, place, hands(len(held)), held, shared, self.info.episode, target
        )

    def _recall(self, facts: ActionFacts) -> Recall:
        if facts not in self._recalls:
            self._recalls[facts] = self.experience.recall(facts, self.config.K, self.config.min_confidence)
        return self._recalls[facts]

    def _assess(self, candidate: Candidate, round: TeamRound, values: JointValue) -> Assessment:
        """The evaluator on one candidate (module docstring, 4)."""
        assert self.info is not None
        broken: list[tuple[str, Rule]] = []
        repeats: list[str] = []
        for robot, option in candidate.plan.items():
            facts = self._facts(round, robot, option, candidate.plan)
            if self.config.evaluator == "heuristic":  # every rule held, checked alike; no retrieval
                held = (r for r in self.experience.rules.values() if r.confidence >= self.config.min_confidence)
                broken += [(robot, rule) for rule in held if rule.matches(facts)]
                failures: Sequence[Any] = [
                    f for f in self.experience.failures if f.episode == facts.episode and f.facts.robot == robot
                ]
            else:
                recall = self._recall(facts)
                broken += [(robot, rule) for rule in recall.rules if rule.matches(facts)]
                failures = recall.failures
            if any(f.episode == facts.episode and f.facts.same_attempt(facts) for f in failures):
                repeats.append(robot)
        if self.config.evaluator == "heuristic":
            return Assessment(candidate, tuple(broken), tuple(repeats), (), (), values.value(candidate.plan), True)
        plan = candidate.plan
        takes_over = tuple(r for r, o in plan.items() if o.text in self.forbidden and r not in self.forbidden[o.text])
        moves_on = tuple(r for r, o in plan.items() if r in self.stopped and o.action.verb in PROGRESS)
        return Assessment(candidate, tuple(broken), tuple(repeats), takes_over, moves_on, values.value(plan))

    def _rationale(self, round: TeamRound, assessed: Sequence[Assessment], best: int) -> dict[str, Any]:
        benchmark = next(iter(round.contexts.values())).memory.benchmark
        rules = {rule.key: rule for a in assessed for _, rule in a.broken}
        return {
            "method": self.name,
            "robots": list(round.contexts),
            "running": {r: format_action(x, benchmark) for r, x in round.running.items()},
            "candidates": [
                {
                    "plan": {r: o.text for r, o in a.candidate.plan.items()},
                    "operators": list(a.candidate.operators),
                    "broken": [f"{r}: {rule.key}" for r, rule in a.broken],
                    "repeats": list(a.repeats),
                    "takes_over": list(a.takes_over),
                    "moves_on": list(a.moves_on),
                    "value": round_value(a.value),
                }
                for a in assessed
            ],
            "chosen": best,
            "operators": list(assessed[best].candidate.operators),
            "rules": [
                f"{rule.text()} (support {rule.support}, confidence {rule.confidence:.2f})" for rule in rules.values()
            ],
            "memory": {"rules": len(self.experience.rules), "failures": len(self.experience.failures)},
        }

    # --- explaining -----------------------------------------------------------------------------------------------
    @classmethod
    def explain(cls, rationale: Mapping[str, Any]) -> Explanation:
        candidates = rationale.get("candidates")
        if not isinstance(candidates, list):
            return super().explain(rationale)
        chosen = rationale.get("chosen", 0)
        lines = []
        for i, c in enumerate(candidates):
            made = "+".join(c.get("operators") or []) or "base plan"
            plan = "; ".join(f"{r}: {a}" for r, a in c.get("plan", {}).items())
            notes = [f"value {c.get('value')}"]
            if c.get("broken"):
                notes.append("breaks " + ", ".join(c["broken"]))
            if c.get("repeats"):
                notes.append("repeats a failure of " + ", ".join(c["repeats"]))
            if c.get("takes_over"):
                notes.append("takes over an action a rule forbids to a teammate: " + ", ".join(c["takes_over"]))
            if c.get("moves_on"):
                notes.append("a robot a rule stopped still fetches or delivers: " + ", ".join(c["moves_on"]))
            mark = "  <== chosen" if i == chosen else ""
            lines.append(f"#{i} {made}: {plan} [{'; '.join(notes)}]{mark}")
        winner = candidates[chosen] if 0 <= chosen < len(candidates) else {}
        base = candidates[0] if candidates else {}
        if chosen == 0:
            why = (
                "the base plan: no candidate breaks fewer learnt rules, repeats fewer failures, takes over a "
                "forbidden action or keeps a stopped robot fetching or delivering"
            )
        elif len(winner.get("broken", [])) < len(base.get("broken", [])):
            why = "it breaks fewer of the retrieved rules than the base plan"
        elif len(winner.get("repeats", [])) < len(base.get("repeats", [])):
            why = "it repeats fewer past failures than the base plan"
        elif len(winner.get("takes_over", [])) > len(base.get("takes_over", [])):
            why = "a robot takes over an action a rule forbids to its teammate"
        elif len(winner.get("moves_on", [])) > len(base.get("moves_on", [])):
            why = "a robot a rule stopped fetches or delivers instead of searching"
        else:
            why = "the evaluator ranked it first"
        said = (f"Chosen: #{chosen}, {why}",)
        if rationale.get("evaluator"):
            said += (f"The evaluator: {rationale['evaluator']}",)
        memory = rationale.get("memory", {})
        rules = tuple(rationale.get("rules", ())) or ("none",)
        shown = {"candidates", "chosen", "rules", "memory", "operators", "robots", "running", "evaluator"}
        return Explanation(
            (
                Section("Joint plan for " + ", ".join(rationale.get("robots", [])), said),
                Section("Candidates", tuple(lines)),
                Section(
                    f"Retrieved rules that a candidate breaks (memory: {memory.get('rules', 0)} rules, "
                    f"{memory.get('failures', 0)} failures)",
                    rules,
                ),
                rationale_section({k: v for k, v in rationale.items() if k not in shown}),
            )
        )


def situation(memory: AgentMemory) -> str:
    """A robot's situation in words: where it is, what it holds, what the task still needs."""
    held = ", ".join(v.name for v in memory.held_items()) or "nothing"
    left = sum(st.missing for st in goal_status(memory))
    room = memory.room_name(memory.room) if memory.room >= 0 else "no room"
    return f"step {memory.step}: {memory.agent} in the {room}, holding {held}; {left} goal item(s) still needed"


def plan_text(plan: Mapping[str, ActionOption]) -> str:
    return "; ".join(f"{r}: {o.text}" for r, o in plan.items())


def round_value(value: float) -> float | None:
    """A value for the trace (JSON has no infinity)."""
    return round(value, 2) if math.isfinite(value) else None
