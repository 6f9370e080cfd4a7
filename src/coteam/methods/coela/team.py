"""``coela``: a CoELA-style cooperative agent -- the communication-heavy reference every paper compares against.

Per decision, two modules:

* **Communication** drafts a message at every decision unless the agent's last action was a message.
* **Planning** makes one choice among the lettered available actions (the draft, when there is one, is one of
  them), from the goal, the progress, the last lines of the team's dialogue and the agent's last actions.

A model's answer is matched to an option by, in order: the exact action text, a letter, the action's text quoted
in prose, the name or id of an object that only one physical option mentions. An answer that matches nothing gets
the toolkit's repair round and then the stated deterministic default -- the symbolic planner's choice -- logged and
counted as a fallback. Never a random action.

Symbolic backend: the draft is the agent's status report (:class:`~coteam.messages.TeamStatus`, sent typed too);
the planner sends it when it reports something the team has not heard from this agent (a goal item seen, a room
explored, a change in what it holds), else takes the nearest relevant action (the rule-based helper's rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import Field

from coteam.actions import HighLevelAction, Verb, format_action
from coteam.kit import AgentReasoner, PerAgentTeam, RoleMethodConfig, letter, match_option, situation_slots
from coteam.kit.answers import message_role
from coteam.kit.team import rationale_lines
from coteam.llm import Doubt, Role, RoleContext
from coteam.messages import TeamStatus
from coteam.options import ActionOption
from coteam.reasoning import Decision, DecisionContext
from coteam.teams.rule_based import rule_based_candidates, rule_based_choice


class CoelaConfig(RoleMethodConfig):
    K_action: int = Field(5, ge=0, description="previous actions shown to the planner")
    K_message: int = Field(4, ge=0, description="last dialogue lines shown to both modules")


class CoelaQuestion:
    """What the two modules of one decision share (``RoleContext.data``)."""

    def __init__(self, ctx: DecisionContext, draft: str | None, news: bool):
        self.ctx = ctx
        self.draft = draft
        self.news = news  # the draft reports something the team has not heard from me
        benchmark = ctx.memory.benchmark
        self.choices: list[HighLevelAction] = [o.action for o in ctx.options if not o.action.is_message]
        texts = [o.text for o in ctx.options if not o.action.is_message]
        if draft is not None:
            message = HighLevelAction(Verb.SEND_MESSAGE, text=draft)
            self.choices.append(message)
            texts.append(format_action(message, benchmark))
        self.lettered = {letter(i): t for i, t in enumerate(texts)}

    def action(self, key: str) -> HighLevelAction:
        return self.choices[list(self.lettered).index(key)]


def _question(ctx: RoleContext) -> CoelaQuestion:
    assert isinstance(ctx.data, CoelaQuestion)
    return ctx.data


def draft_symbolically(ctx: RoleContext) -> str:
    return TeamStatus.of(_question(ctx).ctx.memory).text()


def choose_symbolically(ctx: RoleContext) -> str:
    q = _question(ctx)
    if q.draft is not None and q.news:
        return q.lettered[letter(len(q.choices) - 1)]
    option, _ = rule_based_choice(q.ctx)
    return option.text


def check_choice(text: str, ctx: RoleContext) -> None:
    match_option(text, _question(ctx).lettered)


def choice_doubt(ctx: RoleContext, text: str) -> Doubt | None:
    """How near the rules' nearest option is to the next one (sending news is not in doubt). Options that do the
    same to things of the same name at the same distance (one of two apples on a table) count once."""
    q = _question(ctx)
    if q.draft is not None and q.news:
        return None
    kept: dict[tuple, ActionOption] = {}
    for o in sorted(rule_based_candidates(q.ctx), key=lambda o: o.text != text):  # the rules' choice first
        kept.setdefault((*_kind(o), o.my_distance), o)
    return Doubt.between({o.text: -o.my_distance for o in kept.values()})


def _kind(option: ActionOption) -> tuple:
    target = option.action.target
    return option.action.verb, target.name if target is not None else None


def chosen_option(ctx: RoleContext, text: str) -> str:
    q = _question(ctx)
    return q.lettered[match_option(text, q.lettered)[0]]


DRAFT = message_role("coela.message", "coela_message", draft_symbolically)
CHOOSE: Role[str] = Role(
    "coela.plan", "coela_plan", None, choose_symbolically, check_choice, doubt=choice_doubt, choice=chosen_option
)


def _reported(status: TeamStatus) -> set[str]:
    return (
        {f"seen {s.id}" for s in status.seen}
        | {f"explored {r}" for r in status.explored}
        | {"holding " + ",".join(sorted(str(h.id) for h in status.holding))}
    )


class CoelaAgent(AgentReasoner):
    config: CoelaConfig

    def decide(self, ctx: DecisionContext) -> Decision:
        cfg = self.config
        m = ctx.memory
        slots = situation_slots(ctx, self.info, last_actions=cfg.K_action, last_messages=cfg.K_message)
        assert self.roles is not None
        session = self.roles.session(self.agent, {k: v for k, v in slots.items() if k != "available"}, m)
        last_was_message = m.last_action_was_message()
        can_talk = any(o.action.is_message for o in ctx.options) and not last_was_message
        draft, payload, news = None, None, False
        if can_talk:
            answer = session.ask(DRAFT, CoelaQuestion(ctx, None, False), available=slots["available"])
            draft = answer.value.message.strip()
            if answer.source != "llm":  # the symbolic draft is the status report: it travels typed too
                payload = TeamStatus.of(m)
                told = set().union(*(_reported(s.payload) for s in m.sent if isinstance(s.payload, TeamStatus)))
                news = bool(_reported(payload) - told)
        q = CoelaQuestion(ctx, draft, news)
        lettered = "\n".join(f"{k}. {t}" for k, t in q.lettered.items())
        answer = session.ask(CHOOSE, q, lettered=lettered)
        key, how = match_option(answer.value, q.lettered)
        action = q.action(key)
        rationale: dict[str, Any] = {
            "method": "coela",
            "draft": draft,
            "choice": answer.value[:200],
            "matched": how if answer.source == "llm" else answer.source,
            "action": q.lettered[key],
        }
        return session.decision(action, rationale, payload if action.is_message else None)


def explain_decision(team: type[PerAgentTeam], rationale: Mapping[str, Any]) -> list[str]:
    """``coteam explain``: the drafted message and how the planner's answer was matched."""
    r = dict(rationale)
    lines = [f"Drafted message: {r.pop('draft', None) or '(none: no teammate to talk to, or I just talked)'}"]
    lines.append(f"Planner answered {r.pop('choice', '')!r} ({r.pop('matched', '?')}) -> {r.pop('action', '')}")
    return [*lines, *rationale_lines(r)]


class CoelaTeam(PerAgentTeam):
    summary = "CoELA-style agent: a drafted message every step, one lettered choice per decision (baseline)"
    Config = CoelaConfig
    Agent = CoelaAgent
    payload_types: ClassVar = (TeamStatus,)
    explain = classmethod(explain_decision)
