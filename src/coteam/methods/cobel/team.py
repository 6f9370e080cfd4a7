"""``cobel``: CoBel-World -- a collaborative belief world with zero- and first-order beliefs, plan prediction and
gated communication, on any role backend.

Once per task (LLM backend) the agents agree on the belief rules: the first agent proposes, the second critiques,
the first refines, for at most ``rule_rounds`` rounds (the symbolic backend uses the suite's fixed rules). Then,
per decision of each agent:

1. **Belief update**: my zero-order beliefs and, per teammate, my first-order beliefs and its stated sub-plan (the
   symbolic backend keeps them exactly in a :class:`~coteam.methods.cobel.belief_world.BeliefWorld`; a model's
   statements are read by the belief-language parser, and statements it rejects are counted).
2. **Belief prediction**, when I have no sub-plan or it is done: each teammate's top-3 plans from what I believe it
   believes; my own sub-plan of 1-3 actions, re-planned around the teammates' stated plans so that plans complement.
3. **Adaptive collaboration**: per teammate, is there heavy miscoordination (conflicting plans, or a belief it lacks
   that changes its plan)? Only then a message: what it lacks and my sub-plan. After sending, my first-order
   beliefs hold what I said, so nothing is said twice.
4. **Action**: the next action of my sub-plan from the available ones, or "SUBPLAN DONE", which leads back to 2.

See :mod:`.symbolic` for the symbolic backend and :mod:`.roles` for the modules' prompts and answer checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from coteam.agent.messages import TeamStatus
from coteam.agent.reasoning import Decision, DecisionContext, EpisodeInfo
from coteam.domain.actions import HighLevelAction, Verb, format_action
from coteam.kit import Deliberation, Explanation, PerAgentTeam, RoleAgent, Section, ValueRoleConfig, rationale_section
from coteam.methods.cobel import roles as R
from coteam.methods.cobel.belief_language import BeliefError, RuleSet, parse_rules
from coteam.methods.cobel.belief_world import BeliefWorld, rules_for
from coteam.methods.cobel.symbolic import CobelSymbolic

Ablation = Literal["none", "no_sbr", "no_bbc"]
BELIEF_LANGUAGE = (
    "A belief is ENTITY PREDICATE ENTITY (predicates IN, ON, HOLD, CONTAIN, AT) or ENTITY ATTRIBUTE STATE "
    "(EXPLORED none/part/all, STATE open/closed). Objects and rooms are written <name> (id), agents by name. "
    "'A BELIEVE fact' is a zero-order belief of agent A; 'A BELIEVE B BELIEVE fact' a first-order one. "
    "A rule is a pattern over entity kinds: ?agent, ?object, ?container, ?surface, ?bed, ?room, for example "
    "?object IN ?room or ?room EXPLORED ?exploration_state (states: ?exploration_state, ?open_state)."
)


class CobelConfig(ValueRoleConfig):
    plan_length: int = Field(1, ge=1, le=3, description="actions in a predicted sub-plan")
    rule_rounds: int = Field(3, ge=1, le=6, description="LLM rule negotiation: critique-and-refine rounds at most")
    ablation: Ablation = Field("none", description="no_sbr: no first-order model; no_bbc: no prediction or gating")


def _signature(ctx: DecisionContext) -> tuple:
    """What, when it changes, makes a sub-plan stale: the goal items I know of and where, the messages I got."""
    m = ctx.memory
    wanted = m.task.needed_names()
    items = frozenset((v.id, v.room, v.held_by) for v in m.items() if v.name in wanted)
    return (items, len(m.messages))


class CobelAgent(RoleAgent):
    config: CobelConfig
    team: CobelTeam
    prompt_situation = ("agent", "goal")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.world: BeliefWorld | None = None
        self.plan: list[str] = []  # my sub-plan, in the action grammar
        self.done = 0  # its steps taken
        self.planned_with: tuple = ()  # the signature the sub-plan was made under
        self.last_action = ""

    # --- the decision ------------------------------------------------------------------------------------
    def deliberate(self, d: Deliberation) -> Decision:
        cfg = self.config
        ctx, m = d.ctx, d.memory
        d.rationale["ablation"] = cfg.ablation
        rules = self.team.agreed_rules(d)
        if self.world is None:
            self.world = BeliefWorld.of(m, self.info.agents, rules)
        else:
            self.world.update(m)
        sym = CobelSymbolic(
            ctx,
            self.world,
            self.info.agents,
            d.value,
            d.value_model,
            cfg.plan_length,
            first_order=cfg.ablation != "no_sbr",
            gating=cfg.ablation != "no_bbc",
        )
        q = R.CobelQuestion(
            sym,
            rules,
            self.world.kind_of,
            ctx.options,
            free_text_beliefs=cfg.ablation == "no_sbr" and cfg.backend == "llm",
        )
        self._update_beliefs(q, d, rules.text())
        if self.last_action and self.done < len(self.plan) and self.plan[self.done] == self.last_action:
            self.done += 1
        q.next_step = self._next_step(ctx, sym)
        choice = self._act(q, d) if self.plan else None
        d.rationale["subplan"] = "continue" if choice is not None else "done"
        if choice is None:
            message = self._predict(q, d)
            if message is not None:
                return self._finish(message, q, d, payload=self._payload(q))
            assert q.plan is not None
            first = q.plan.texts[0]  # the symbolic plan's first step: one of the options by construction
            q.next_step = self.plan[0] if self.plan and ctx.option_for_text(self.plan[0]) else first
            choice = self._act(q, d)
            if choice is None:  # the model calls a fresh sub-plan done: its first step, as planned
                option = ctx.option_for_text(q.next_step) or ctx.option_for_text(first)
                assert option is not None
                choice = option.action
        return self._finish(choice, q, d)

    def _update_beliefs(self, q: R.CobelQuestion, d: Deliberation, rule_text: str) -> None:
        """Zero-order beliefs and, per teammate, first-order beliefs and its stated plan (trace: both orders)."""
        s = d.slots
        observed = {"progress": s["progress"], "dialogue": s["dialogue"]}
        language = {} if q.free_text_beliefs else {"rules": rule_text}  # no_sbr: no rules, plain sentences
        zero_role, first_role = (
            (R.UPDATE_ZERO_PLAIN, R.UPDATE_FIRST_PLAIN) if q.free_text_beliefs else (R.UPDATE_ZERO, R.UPDATE_FIRST)
        )
        zero = d.ask(zero_role, q, teammates=s["teammates"], **language, **observed).value.beliefs
        first: dict[str, list[str]] = {}
        stated: dict[str, list[str]] = {}
        for mate in d.teammates:
            q.teammate = mate
            answer = d.ask(first_role, q, teammate=mate, available=s["available"], **language, **observed).value
            first[mate] = answer.beliefs
            if answer.plan:
                stated[mate] = answer.plan
        if not q.free_text_beliefs:
            zero = [str(b) for b in q.beliefs(zero, 0)]
            first = {mate: [str(b) for b in q.beliefs(lines, 1)] for mate, lines in first.items()}
        q.zero_text = "\n".join(zero) or "(none)"
        q.first_text = {mate: "\n".join(lines) or "(none)" for mate, lines in first.items()}
        q.stated_text = stated
        d.rationale["beliefs"] = {"zero": zero, "first": first}
        if stated:
            d.rationale["stated"] = stated

    def _next_step(self, ctx: DecisionContext, sym: CobelSymbolic) -> str | None:
        """The next step of my sub-plan that is still possible (None: the sub-plan is done or stale)."""
        if _signature(ctx) != self.planned_with:
            return None
        for text in self.plan[self.done :]:
            option = ctx.option_for_text(text)
            if option is not None and sym.value.key(option) is not None:
                return text
            return None
        return None

    def _act(self, q: R.CobelQuestion, d: Deliberation) -> HighLevelAction | None:
        answer = d.ask(
            R.ACT,
            q,
            plan="\n".join(self.plan) or "(none)",
            zero_order=q.zero_text,
            lettered=str(q.lettered),
            actions=d.slots["actions"],
        )
        return R.act_choice(answer.value.answer, q)

    def _predict(self, q: R.CobelQuestion, d: Deliberation) -> HighLevelAction | None:
        """Belief prediction and adaptive collaboration; a message to send, if the gate says so."""
        sym = q.sym
        s = d.slots
        predicted: dict[str, list[list[str]]] = {}
        if sym.gating:
            for mate in d.teammates:
                q.teammate = mate
                answer = d.ask(
                    R.PREDICT_FIRST, q, teammate=mate, first_order=q.first_text[mate], available=s["available"]
                )
                predicted[mate] = answer.value.plans
        q.plan = sym.my_plan(d.ctx.options)
        if q.stated_text:
            stated = "\n".join(f"{mate}: " + ", then ".join(p) for mate, p in q.stated_text.items())
            plan = d.ask(R.REPLAN, q, stated=stated, zero_order=q.zero_text, available=s["available"]).value.plan
            d.rationale["replanned_around"] = sorted(q.stated_text)
        else:
            plan = d.ask(
                R.PREDICT_ZERO,
                q,
                zero_order=q.zero_text,
                teammates=s["teammates"],
                actions=s["actions"],
                available=s["available"],
            ).value.plan
        self.plan = [R.normalised(step, q) for step in plan]
        self.done = 0
        self.planned_with = _signature(d.ctx)
        d.rationale["predicted"] = predicted
        d.rationale["plan"] = list(self.plan)
        if not d.can_talk:
            return None
        gate: dict[str, Any] = {}
        heavy = False
        for mate in d.teammates:
            q.teammate = mate
            if not sym.gating:  # no adaptive collaboration (no_bbc): the rule decides, the model is not asked
                answer = R.gate_verdict(q)
            else:
                theirs = "\n".join(" / ".join(p) for p in predicted.get(mate, [])) or "(not predicted)"
                answer = d.ask(
                    R.COLLABORATE_PLAIN if q.free_text_beliefs else R.COLLABORATE,
                    q,
                    teammate=mate,
                    zero_order=q.zero_text,
                    first_order=q.first_text.get(mate, "(none)"),
                    my_plan=", then ".join(self.plan),
                    their_plans=theirs,
                ).value
            gate[mate] = answer.model_dump()
            heavy = heavy or answer.heavy
            if answer.heavy and answer.misaligned and not q.free_text_beliefs:
                stated = [line if "BELIEVE" in line else f"{self.agent} BELIEVE {line}" for line in answer.misaligned]
                q.beliefs(stated, 0)  # rejected statements are counted
        d.rationale["gate"] = gate
        if not heavy:
            return None
        misaligned = "\n".join(line for g in gate.values() if g["heavy"] for line in g["misaligned"]) or "(none)"
        text = d.ask(
            R.MESSAGE, q, misaligned=misaligned, my_plan=", then ".join(self.plan), teammates=s["teammates"]
        ).value.message.strip()
        return HighLevelAction(Verb.SEND_MESSAGE, text=text)

    def _payload(self, q: R.CobelQuestion) -> TeamStatus | None:
        """The typed form of a symbolic message: what the heavy verdicts found lacking, and my sub-plan (none when a
        model writes the messages)."""
        if self.roles is None or self.roles.backend.name == "llm":
            return None
        return q.note()

    def _finish(
        self, action: HighLevelAction, q: R.CobelQuestion, d: Deliberation, payload: TeamStatus | None = None
    ) -> Decision:
        self.last_action = "" if action.is_message else format_action(action, self.info.benchmark)
        if q.rejected:
            d.rationale["rejected"] = q.rejected
        return d.decision(action, payload, rejected_lines=len(q.rejected))


class CobelTeam(PerAgentTeam):
    summary = "CoBel-World: zero- and first-order beliefs, plan prediction and gated messages"
    Config = CobelConfig
    Agent = CobelAgent
    payload_types: ClassVar = (TeamStatus,)

    def start_episode(self, info: EpisodeInfo) -> None:
        super().start_episode(info)
        self.rules: RuleSet | None = None

    def agreed_rules(self, d: Deliberation) -> RuleSet:
        """The episode's belief rules: the suite's fixed set on the symbolic backend (and without the belief language,
        no_sbr); on a model, negotiated once (propose, then critique and refine up to ``rule_rounds`` times) when the
        first agent first decides."""
        assert self.info is not None
        if self.rules is not None:
            return self.rules
        fixed = rules_for(self.info.benchmark)
        if self.roles is None or self.roles.backend.name == "symbolic" or self.config.ablation == "no_sbr":
            # no_sbr: the model writes plain sentences, so there is no belief language to agree on
            self.rules = fixed
            return fixed
        q = R.CobelQuestion.for_rules(fixed)
        agents = list(self.info.agents)
        proposer, critic = agents[0], agents[1] if len(agents) > 1 else agents[0]
        slots = {"language": BELIEF_LANGUAGE, "task": d.slots["goal"]}
        # each speaker's calls on its own ledger line; all of them count in this decision's tokens
        negotiation, review = self.roles.session(proposer, {}), self.roles.session(critic, {})
        draft = negotiation.ask(R.RULES_PROPOSE, q, proposer=proposer, critic=critic, **slots).value
        rounds = []
        for _ in range(self.config.rule_rounds):
            critique = review.ask(R.RULES_CRITIQUE, q, draft=R.draft_text(draft), proposer=proposer, **slots).value
            rounds.append(critique.model_dump())
            if critique.satisfied:
                break
            suggestions = "\n".join(critique.suggestions) or "(none)"
            draft = negotiation.ask(
                R.RULES_REFINE, q, draft=R.draft_text(draft), suggestions=suggestions, **slots
            ).value
        try:
            self.rules, rejected = parse_rules("\n".join(draft.zero_order), "\n".join(draft.first_order))
        except BeliefError as exc:
            self.rules, rejected = fixed, [f"negotiated rules unusable ({exc}): the suite's fixed rules apply"]
        d.rationale["rules"] = {"agreed": self.rules.text().splitlines(), "rounds": rounds, "rejected": rejected}
        d.session.trace.update({**negotiation.trace, **review.trace})
        return self.rules

    @classmethod
    def explain(cls, rationale: Mapping[str, Any]) -> Explanation:
        return explain_decision(rationale)


def explain_decision(rationale: Mapping[str, Any]) -> Explanation:
    """``coteam explain``: both belief orders, the predicted plans, my sub-plan and the gate's reasons."""
    r = dict(rationale)
    beliefs = r.pop("beliefs", {}) or {}
    sections = [Section("Zero-order beliefs (mine):", tuple(beliefs.get("zero", [])) or ("(none)",))]
    for mate, held in (beliefs.get("first") or {}).items():
        sections.append(Section(f"First-order beliefs (what I believe {mate} believes):", tuple(held) or ("(none)",)))
    for mate, plan in (r.pop("stated", {}) or {}).items():
        sections.append(Section(f"{mate}'s stated plan: " + ", then ".join(plan)))
    for mate, plans in (r.pop("predicted", {}) or {}).items():
        lines = tuple(f"{i}. " + ", then ".join(p) for i, p in enumerate(plans, 1))
        sections.append(Section(f"Predicted plans of {mate}:", lines))
    if "plan" in r:
        around = r.pop("replanned_around", None)
        suffix = f" (re-planned around {', '.join(around)})" if around else ""
        sections.append(Section("My sub-plan: " + ", then ".join(r.pop("plan")) + suffix))
    sections.append(Section(f"Sub-plan: {r.pop('subplan', '?')}"))
    for mate, verdict in (r.pop("gate", {}) or {}).items():
        word = "HEAVY: message" if verdict["heavy"] else "light: no message"
        title = f"Gate on {mate}: {word}; " + "; ".join(verdict.get("reasons", []))
        sections.append(Section(title, tuple(f"misaligned: {s}" for s in verdict.get("misaligned", []))))
    sections += [Section(f"Rejected statement: {line}") for line in r.pop("rejected", []) or []]
    rules = r.pop("rules", None)
    if rules:
        sections.append(Section("Agreed belief rules:", tuple(rules["agreed"])))
    return Explanation((*sections, rationale_section(r)))
