"""``coela``: a CoELA-style cooperative agent -- the communication-heavy reference every paper compares against.

Per decision, two modules:

* **Communication** drafts a message at every decision unless the agent's last action was a message.
* **Planning** makes one choice among the lettered available actions (the draft, when there is one, is one of
  them), from the goal, the progress, the last lines of the team's dialogue and the agent's last actions.

A model's answer is matched to an option by, in order: the exact action text, a letter, the action's text quoted
in prose, the name or id of an object that only one physical option mentions. An answer that matches nothing gets
the toolkit's repair round and then the stated deterministic default -- the symbolic planner's choice -- logged and
counted as a fallback. Never a random action.

Symbolic backend: the draft is the agent's status report (:class:`~coteam.agent.messages.TeamStatus`, sent typed too);
the planner sends it when it reports something the team has not heard from this agent (a goal item seen, a room
explored, a change in what it holds), else takes the nearest relevant action (the rule-based helper's rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from coteam.agent.messages import TeamStatus
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import Decision
from coteam.domain.actions import HighLevelAction, Verb
from coteam.kit import (
    SITUATION_SLOTS,
    Deliberation,
    Doubt,
    Explanation,
    PerAgentTeam,
    Role,
    RoleAgent,
    RoleContext,
    RoleMethodConfig,
    Section,
    match_option,
    message_role,
    rationale_section,
    rule_based_candidates,
    rule_based_choice,
)


class CoelaQuestion:
    """What the two modules of one decision share (``RoleContext.data``): the physical options and the draft,
    lettered, and whether the draft reports something the team has not heard from me."""

    def __init__(self, d: Deliberation, draft: str | None, news: bool):
        self.ctx = d.ctx
        self.draft = draft
        self.news = news
        self.lettered = d.lettered(*([HighLevelAction(Verb.SEND_MESSAGE, text=draft)] if draft is not None else []))


def draft_symbolically(ctx: RoleContext[CoelaQuestion]) -> str:
    return TeamStatus.of(ctx.data.ctx.memory).text()


def choose_symbolically(ctx: RoleContext[CoelaQuestion]) -> str:
    q = ctx.data
    if q.draft is not None and q.news:
        return list(q.lettered.values())[-1]  # the draft, lettered last
    option, _ = rule_based_choice(q.ctx)
    return option.text


def check_choice(text: str, ctx: RoleContext[CoelaQuestion]) -> None:
    match_option(text, ctx.data.lettered)


def choice_doubt(ctx: RoleContext[CoelaQuestion], text: str) -> Doubt | None:
    """How near the rules' nearest option is to the next one (sending news is not in doubt). Options that do the
    same to things of the same name at the same distance (one of two apples on a table) count once."""
    q = ctx.data
    if q.draft is not None and q.news:
        return None
    kept: dict[tuple, ActionOption] = {}
    for o in sorted(rule_based_candidates(q.ctx), key=lambda o: o.text != text):  # the rules' choice first
        kept.setdefault((*_kind(o), o.my_distance), o)
    return Doubt.between({o.text: -o.my_distance for o in kept.values()})


def _kind(option: ActionOption) -> tuple:
    target = option.action.target
    return option.action.verb, target.name if target is not None else None


def chosen_option(ctx: RoleContext[CoelaQuestion], text: str) -> str:
    q = ctx.data
    return q.lettered[match_option(text, q.lettered)[0]]


DRAFT = message_role("coela.message", "coela_message", draft_symbolically)
CHOOSE: Role[CoelaQuestion, str] = Role(
    "coela.plan", "coela_plan", None, choose_symbolically, check_choice, doubt=choice_doubt, choice=chosen_option
)


class CoelaAgent(RoleAgent):
    prompt_situation = tuple(k for k in SITUATION_SLOTS if k != "available")  # the planner sees them lettered

    def deliberate(self, d: Deliberation) -> Decision:
        m = d.memory
        draft, payload, news = None, None, False
        if d.can_talk:
            answer = d.ask(DRAFT, CoelaQuestion(d, None, False), available=d.slots["available"])
            draft = answer.value.message.strip()
            payload = d.payload_of(answer, lambda: TeamStatus.of(m))
            if payload is not None:
                news = bool(payload.news(m))
        q = CoelaQuestion(d, draft, news)
        answer = d.ask(CHOOSE, q, lettered=str(q.lettered))
        key, how = match_option(answer.value, q.lettered)
        d.rationale.update(
            draft=draft, choice=answer.value[:200], matched=how if answer.source == "llm" else answer.source
        )
        return d.decision(q.lettered.action(key), payload)


def explain_decision(team: type[PerAgentTeam], rationale: Mapping[str, Any]) -> Explanation:
    """``coteam explain``: the drafted message and how the planner's answer was matched."""
    r = dict(rationale)
    draft = r.pop("draft", None) or "(none: no teammate to talk to, or I just talked)"
    answered = f"Planner answered {r.pop('choice', '')!r} ({r.pop('matched', '?')}) -> {r.pop('action', '')}"
    return Explanation((Section(f"Drafted message: {draft}"), Section(answered), rationale_section(r)))


class CoelaTeam(PerAgentTeam):
    summary = "CoELA-style agent: a drafted message every step, one lettered choice per decision (baseline)"
    Config = RoleMethodConfig
    Agent = CoelaAgent
    payload_types: ClassVar = (TeamStatus,)
    explain = classmethod(explain_decision)
