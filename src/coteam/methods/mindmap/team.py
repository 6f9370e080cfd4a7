"""``mindmap``: the Mind-Map agent -- a schema-bound mind map, updated and then acted on at every decision.

Per decision of each robot, two phases:

1. **Mind-map update** (role ``mindmap.update``). From the text interface (the goal, the dialogue, what I know of
   the home, my last actions) and my previous map, a new map (:mod:`.mindmap`): the teammates' inferred
   intentions, the cooperative strategy, the communication strategy. A model's map goes through key matching
   first (repairs counted in the trace); one that cannot be repaired is replaced by the symbolic update, counted as
   a fallback. The symbolic update revises the previous map; it does not rebuild it:

   - *Inferred intentions.* A teammate's intention is what it said it does next, while that binds it; else the
     previous map's inference, kept while its target is still open and the teammate has not been seen since it was
     formed; else its likeliest next action (the team value model's prediction from where it was seen and what it
     holds). The intentions of the teammates ranked before me (and every said one) **bind my plan**: the value
     model rolls my options out with those teammates taking those actions. A teammate ranked after me plans
     around me; its intention is inferred once my plan is made.
   - *Long-term plan.* My next actions, several (:data:`PLAN_STEPS`): the best option around the bound teammates,
     then what the team rollout has me do next; each teammate's line is its intention. The plan is **kept**: the
     step my last action did is dropped; with no news since it was made (no new goal item or place, room explored,
     container checked, message heard, failure, change in what the bound teammates intend) it stands unweighed;
     with news its next step is weighed against the best option and gives way only when it trails by more than
     :data:`REVISE_MARGIN` of the value scale. A plan whose next step is no longer an option, or is a target a
     bound teammate takes, is revised.
   - *Pending clarifications*: the goal items nobody has found, and the teammates whose aims I cannot tell. They
     are **asked** when knowing is worth it: for a teammate ranked before me whose intention is inferred and whose
     two likeliest next actions are a toss-up (within :data:`TOSS_UP`), if they call for different actions of
     mine, the answer is worth what each wrong guess would lose (half each), against the time of the question and
     of its answer (:class:`Clarification`). The answer, the teammate's status with its plan, **is used**: a said
     intention binds it.
   - *Communication strategy*: the draft and both reasons, each a team value (:class:`Talk`): an answer owed to a
     teammate's question (always worth sending), the value model's announcement (what saying it gains against
     what its time costs; nothing to gain when my last message lately said the same), a question as above, or
     else my status (nothing to gain).
2. **Selection** (role ``mindmap.select``): one of my physical options or the drafted message, from the map and
   the text interface. The symbolic selection **weighs** the two reasons: the draft when the worth of sending
   exceeds the worth of not sending, else the immediate focus.

Confabulation guard: the map is revised from the memory's *done* actions and sightings, never from what was said: a
message I sent is not an action I did, and a teammate's stated intention is an intention (``said``), not a done
action (tests).

Switches for the paper's ablation: ``components`` (any of ``intentions``, ``cooperation``, ``communication``; the
symbolic planner then lets said intentions bind teammates only with ``intentions``, and plans around its teammates
only with ``cooperation``), ``no_key_matching`` (a model's map must have the schema's keys exactly), ``no_draft``
(no message draft: a message is written CoELA-style, a status report sent when it has news). ``coteam explain``
shows each decision's map, what changed in it, and whether the plan was kept or revised (rationale ``plan``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import MAX_PLAN_STEPS, TeamStatus
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import Decision
from coteam.domain.actions import MAX_MESSAGE_CHARS, HighLevelAction, Verb, format_action, parse_action
from coteam.domain.observation import Message
from coteam.kit import (
    SITUATION_SLOTS,
    Deliberation,
    Explanation,
    Lettered,
    PerAgentTeam,
    Role,
    RoleAgent,
    RoleContext,
    Section,
    ValueRoleConfig,
    choice_role,
    match_option,
    message_role,
    rationale_section,
)
from coteam.methods.mindmap.mindmap import (
    COMPONENTS,
    MAX_LINES,
    MAX_TEXT,
    CommunicationStrategy,
    CooperativeStrategy,
    Intention,
    MindMap,
    match_keys,
    mind_map_schema,
)
from coteam.value.abstract import Key
from coteam.value.team import Robot, ValueModel

PARTS = dict(zip(("intentions", "cooperation", "communication"), COMPONENTS, strict=True))  # switch -> key
# How the update prompt asks for each component (prompts/mindmap_update_guides.md, a "## <component>" heading
# each), given only for the components the map keeps: an ablated one is neither asked for nor explained.
GUIDES_FILE = Path(__file__).parent / "prompts" / "mindmap_update_guides.md"


@cache
def component_guides() -> dict[str, str]:
    """Each component's guide for the update prompt, by component key."""
    _, *blocks = re.split(r"^## (\w+)\n", GUIDES_FILE.read_text(), flags=re.MULTILINE)
    guides = {key: text.strip("\n") for key, text in zip(blocks[::2], blocks[1::2], strict=True)}
    assert set(guides) == set(COMPONENTS), f"{GUIDES_FILE}: a guide for each of {', '.join(COMPONENTS)}"
    return guides


QUIET_STEPS = 10  # a message of mine this many steps old or newer is a reason not to send another


class MindmapConfig(ValueRoleConfig):
    components: str = Field(
        "intentions,cooperation,communication",
        description="the mind map's components: any of intentions, cooperation, communication (comma-separated)",
    )
    no_key_matching: bool = Field(False, description="ablation: a model's map must have the schema's keys exactly")
    no_draft: bool = Field(False, description="ablation: no message draft; messages are CoELA-style status reports")

    @field_validator("components")
    @classmethod
    def _known(cls, value: str) -> str:
        names = [v.strip() for v in value.split(",") if v.strip()]
        unknown = [n for n in names if n not in PARTS]
        if unknown or not names:
            raise ValueError(f"components are some of {', '.join(PARTS)}; not {', '.join(unknown) or 'none'}")
        return ",".join(n for n in PARTS if n in names)

    @property
    def parts(self) -> tuple[str, ...]:
        """The mind map's component keys (:data:`~.mindmap.COMPONENTS`) this config keeps."""
        names = self.components.split(",")
        return tuple(PARTS[n] for n in PARTS if n in names)


# --- phase 1: the mind-map update ----------------------------------------------------------------------------
class RawMap(RootModel[dict[str, Any]]):
    """A model's mind map as it wrote it; key matching and validation are the role's check."""


PLAN_STEPS = MAX_PLAN_STEPS  # my actions in the long-term plan (as many as a status can tell)
# REVISE_MARGIN and TOSS_UP were tuned on fresh `cwah` (40) and `tdwmat` (16) episodes of generator seed 101
REVISE_MARGIN = 0.002  # a kept plan's next step gives way to a better one worth this share of the value scale more
TOSS_UP = 0.002  # a teammate's two likeliest next actions this close (share of the value scale): its choice is open
ASKED_ITEMS = 3  # goal items nobody has found that a question names


class Clarification(BaseModel):
    """A question to one teammate (a pending clarification of the mind map): what it does next, and whether it has
    seen the goal items the asker knows no instance of. The answer is the teammate's status, with its next action."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field("clarification", pattern="^clarification$")
    agent: str = Field(min_length=1, max_length=64)
    to: str = Field(min_length=1, max_length=64)
    items: tuple[Annotated[str, Field(min_length=1, max_length=64)], ...] = Field((), max_length=ASKED_ITEMS)

    def text(self) -> str:
        seen = f" Have you seen {', '.join(f'<{n}>' for n in self.items)}?" if self.items else ""
        return f"{self.agent}: {self.to}, what do you do next?{seen}"


@dataclass
class MapBasis:
    """What the symbolic update keeps beside the map, per robot: when each teammate's intention was formed (a
    sighting of it since is new evidence) and what I knew when my plan was made (news makes me weigh it again)."""

    formed: dict[str, int] = field(default_factory=dict)
    knowledge: tuple = ()


@dataclass
class Talk:
    """The symbolic update's weighing of its draft, in team value: the worth of sending it and of not sending it
    (the map's two reasons say the same in words)."""

    send: float
    hold: float
    payload: BaseModel
    receiver: str = ""


@dataclass
class MapQuestion:
    d: Deliberation
    previous: MindMap | None
    parts: tuple[str, ...]
    value: ValueModel  # the team value model the planner reads (as the components allow)
    options: list[ActionOption]  # my physical options
    exact_keys: bool  # no_key_matching
    basis: MapBasis
    talk: Talk | None = None  # the symbolic update's weighing of its draft
    focus: str | None = None  # the symbolic update's immediate focus (also without a cooperative strategy)


def read_map(raw: RawMap, q: MapQuestion) -> tuple[MindMap, list[str]]:
    """A model's map held to the schema: key matching (or, with no_key_matching, the exact keys only)."""
    if q.exact_keys:
        if set(raw.root) != set(q.parts):
            raise ValueError(f"the map's keys must be exactly {', '.join(q.parts)}")
        return MindMap.model_validate(raw.root), []
    return match_keys(raw.root, q.previous, q.parts)


def check_map(answer: RawMap, ctx: RoleContext[MapQuestion]) -> None:
    read_map(answer, ctx.data)


def update_symbolically(ctx: RoleContext[MapQuestion]) -> RawMap:
    q = ctx.data
    return RawMap(symbolic_map(q).model_dump(exclude_none=True))


UPDATE: Role[MapQuestion, RawMap] = Role(
    "mindmap.update",
    "mindmap_update",
    RawMap,
    update_symbolically,
    check_map,
    lambda ctx: mind_map_schema(ctx.data.parts),
)

Bound = list[tuple[Robot, Key | None]]  # teammates and the first actions my plan is made around


def symbolic_map(q: MapQuestion) -> MindMap:
    """The symbolic update (module docstring): the previous map revised, not rebuilt."""
    value, m = q.value, q.d.memory
    heed = "inferred_intentions" in q.parts
    intentions: dict[str, Intention] = {}
    bound: Bound = _bind_intentions(q, intentions) if heed else list(value.leaders())
    plan = _plan(q, bound)
    q.focus = plan[0] if plan else ""
    if heed:
        _infer_followers(q, intentions, bound, plan)
    cooperation = None
    if "cooperative_strategy" in q.parts:
        lines = [f"{value.me.name}: {text}" for text in plan]
        lines += [f"{mate}: {i.aim}" for mate, i in sorted(intentions.items()) if i.aim != "unknown"]
        cooperation = CooperativeStrategy(
            pending_clarifications=_gaps(m, intentions)[:MAX_LINES],
            long_term_plan=lines[:MAX_LINES],
            immediate_focus=q.focus,
        )
    talk = None
    if "communication_strategy" in q.parts:
        talk = _communication(q, bound, intentions, plan)
    return MindMap(
        inferred_intentions=intentions if heed else None,
        cooperative_strategy=cooperation,
        communication_strategy=talk,
    )


def _worths(value: ValueModel, options: list[ActionOption], others: Bound | None = None) -> dict[str, float]:
    """Each option's team value (by its text) when ``others`` take their first actions (default: the value model's
    leaders); minus infinity for what the model cannot rate."""
    out = {}
    for option in options:
        key = value.key(option)
        out[option.text] = value.value(value.outcome_of(key, 0.0, others)) if key is not None else float("-inf")
    return out


def _best(options: list[ActionOption], worths: Mapping[str, float]) -> ActionOption:
    """The option of the highest worth (the first of equals)."""
    return max(options, key=lambda o: worths[o.text])


def _key_of(value: ValueModel, text: str) -> Key | None:
    """The abstract action an action text of the map stands for (None for one that no longer parses or means
    nothing to the model: "unknown", an object forgotten)."""
    try:
        action = parse_action(text, value.memory.benchmark)
    except ValueError:
        return None
    return value.model.key_of(ActionOption(action, text, 0.0))


def _text_of(value: ValueModel, key: Key) -> str | None:
    action = value.action_of(key)
    return format_action(action, value.memory.benchmark) if action is not None else None


def _said(d: Deliberation, mate: str) -> tuple[int, TeamStatus] | None:
    """The latest status ``mate`` sent that states what it does next, with its step."""
    for message in reversed(d.memory.messages):
        if message.sender == mate and isinstance(message.payload, TeamStatus) and message.payload.intent:
            return message.step, message.payload
    return None


def _bind_intentions(q: MapQuestion, out: dict[str, Intention]) -> Bound:
    """Each teammate's intention, kept from the previous map while nothing contradicts it, and the ones that bind
    my plan: what a teammate said it does next (while that binds it, whatever its rank), else, for a teammate
    ranked before me, its likeliest first action planning around the ones bound before it. A teammate ranked after
    me plans around me: its intention is inferred once my plan is made (:func:`_infer_followers`)."""
    d, value, m = q.d, q.value, q.d.memory
    robots = {r.name: r for r in value.teammates}
    earlier = (q.previous.inferred_intentions or {}) if q.previous is not None else {}
    bound: Bound = []
    for mate in sorted(d.teammates):
        robot = robots.get(mate)
        said = _said(d, mate)
        if said is not None and mate in value.announced:
            step, status = said
            out[mate] = Intention(aim=status.intent or "", why=f"it said so at step {step}", said=True)
            q.basis.formed[mate] = step
            if robot is not None:
                bound.append((robot, value.announced[mate]))
            continue
        if robot is None:
            out[mate] = Intention(aim="unknown", why="I have neither seen it nor heard what it does")
            continue
        if mate > value.me.name:
            continue
        kept = _kept_intention(q, mate, earlier.get(mate))
        if kept is not None:
            out[mate] = earlier[mate]
            bound.append((robot, kept))
            continue
        ranked = value.choices(robot, bound)
        key = ranked[0] if ranked else None
        out[mate] = _inferred(m, mate, value, key)
        q.basis.formed[mate] = m.step
        bound.append((robot, key))
    return bound


def _kept_intention(q: MapQuestion, mate: str, old: Intention | None) -> Key | None:
    """The previous map's inferred intention of ``mate`` as still standing (its key), or None: it was said (a said
    intention binds only while the teammate's message does), its target is gone, or the teammate was seen since."""
    if old is None or old.said:
        return None
    key = _key_of(q.value, old.aim)
    if key is None or not q.value.key_open(key):
        return None
    seen = q.d.memory.teammates.get(mate)
    if seen is not None and seen.step > q.basis.formed.get(mate, -1):
        return None
    if key[0] == "grab" and key[1] in q.value.belief.teammate(mate).holding:
        return None
    return key


def _inferred(m: AgentMemory, mate: str, value: ValueModel, key: Key | None) -> Intention:
    seen = m.teammates.get(mate)
    text = _text_of(value, key) if key is not None else None
    if seen is None or text is None:
        return Intention(aim="unknown", why="nothing I know of it tells what it does next")
    held = [m.objects[h].name for h in seen.holding if h is not None and h in m.objects]
    where = m.room_name(seen.room) if seen.room >= 0 else "somewhere"
    why = f"seen in the {where} at step {seen.step}" + (f", holding {', '.join(held)}" if held else "")
    return Intention(aim=text, why=why + "; its likeliest next action")


def _infer_followers(q: MapQuestion, out: dict[str, Intention], bound: Bound, plan: list[str]) -> None:
    """The intentions of the teammates ranked after me, planning around my plan's first step and the ones bound."""
    value, m = q.value, q.d.memory
    mine = _key_of(value, plan[0]) if plan else None
    before: Bound = [*bound, (value.me, mine)]
    for robot in value.teammates:
        if robot.name in out or robot.name < value.me.name:
            continue
        ranked = value.choices(robot, before)
        key = ranked[0] if ranked else None
        out[robot.name] = _inferred(m, robot.name, value, key)
        q.basis.formed[robot.name] = m.step
        before.append((robot, key))


def _knowledge(m: AgentMemory, bound: Bound) -> tuple:
    """What a plan rests on: the goal items and places I know of, the rooms explored, the containers checked, the
    messages heard, whether my last action failed, and what the teammates it is made around intend. A change in it
    is news that makes me weigh the plan again."""
    failed = bool(m.actions) and m.actions[-1].outcome != "done"
    intended = tuple((r.name, k) for r, k in bound)
    items = frozenset(v.id for v in m.items())
    return (items, len(m.unexplored_rooms()), len(m.checked), len(m.messages), failed, intended)


def _plan(q: MapQuestion, bound: Bound) -> list[str]:
    """My part of the long-term plan, several actions, first the immediate focus: the previous plan kept while no
    news came, or while its next step is within :data:`REVISE_MARGIN` of the best option around the ``bound``
    teammates; else a new plan from the best option, followed by what the team rollout does next. The rationale's
    ``plan`` says which."""
    value, m, why = q.value, q.d.memory, q.d.rationale
    texts = {o.text: o for o in q.options}
    knowledge = _knowledge(m, bound)
    kept = _kept_plan(q, bound, texts)
    news = knowledge != q.basis.knowledge
    q.basis.knowledge = knowledge
    if kept and not news:
        why["plan"] = "kept: no news since it was made"
        return kept
    worths = _worths(value, q.options, bound)
    best = _best(q.options, worths)
    if kept:
        behind = worths[best.text] - worths[kept[0]]
        if behind <= REVISE_MARGIN * value.scale:
            why["plan"] = f"kept: its next step within {behind:.2f} of the best"
            return kept
    why["plan"] = "revised: " + ("its next step fell behind the best" if kept else "the previous plan no longer holds")
    plan = [best.text]
    best_key = value.key(best)
    if best_key is not None:
        for key in value.plan(best_key, bound, PLAN_STEPS)[1:]:
            text = _text_of(value, key)
            if text is None:
                break
            plan.append(text)
    return plan


def _kept_plan(q: MapQuestion, bound: Bound, options: Mapping[str, ActionOption]) -> list[str]:
    """My steps of the previous map's plan still to do: the step my last action did is dropped, and the rest stands
    when its first step is among my options, still open, and not a target a bound teammate takes ([] otherwise)."""
    if q.previous is None or q.previous.cooperative_strategy is None:
        return []
    me, m = q.value.me.name, q.d.memory
    steps = [
        line.split(": ", 1)[1] for line in q.previous.cooperative_strategy.long_term_plan if line.startswith(f"{me}: ")
    ]
    if steps and m.actions and m.actions[-1].action == steps[0] and steps[0] not in options:
        steps = steps[1:]
    if not steps or steps[0] not in options:
        return []
    key = q.value.key(options[steps[0]])
    if key is None or not q.value.key_open(key):
        return []
    if key[0] in ("grab", "check", "carrier") and any(k == key for _, k in bound):
        return []
    return steps


def _gaps(m: AgentMemory, intentions: dict[str, Intention] | None) -> list[str]:
    """Information gaps: goal items of which no instance is known, and teammates whose aims I cannot tell."""
    known = {v.name for v in m.items()}
    gaps = [f"where is a <{name}>?" for name in sorted(m.task.needed_names() - known)]
    gaps += [f"what is {mate} doing?" for mate, i in (intentions or {}).items() if i.aim == "unknown"]
    return gaps


def _communication(
    q: MapQuestion, bound: Bound, intentions: dict[str, Intention], plan: list[str]
) -> CommunicationStrategy:
    """The talk strategy, and its weighing (``q.talk``). The draft, first that applies: my status with my plan when
    a teammate asked me what I do (a question owed an answer); the announcement the value model advises, when it
    changes a teammate's choice; a question to a teammate ranked before me whose two likeliest next actions call for
    different actions of mine; else my status. Each reason is a team value: what the message gains, and what its
    time costs (or that I said the same lately: nothing to gain)."""
    value, m = q.value, q.d.memory
    last = m.dialogue(3)
    summary = (
        f"{len(m.messages) + len(m.sent)} messages so far; last: "
        + "; ".join(f"{x.sender} at step {x.step}: {x.text[:60]}" for x in last)
        if last
        else "nobody has said anything yet"
    )
    q.talk = _answer(q, plan) or _announcement(q) or _question(q, bound, intentions)
    if q.talk is None:
        status = TeamStatus.of(m, intent=plan[0] if plan else None)
        q.talk = Talk(0.0, value.message_time, status)
    to_send, not_to_send = _reasons(q.talk, value)
    text = q.talk.payload.text()  # type: ignore[attr-defined]
    return CommunicationStrategy(
        dialogue_summary=summary[:MAX_TEXT],
        message_draft=text,
        reason_to_send=to_send,
        reason_not_to_send=not_to_send,
    )


def _recent(value: ValueModel, message: Message) -> bool:
    """Whether ``message`` is at most :data:`QUIET_STEPS` steps old."""
    return value.memory.step - message.step * value.belief.message_step_ratio <= QUIET_STEPS


def _reasons(talk: Talk, value: ValueModel) -> tuple[str, str]:
    if talk.send == float("inf"):
        to_send = "a teammate asked me what I do next"
    elif talk.send > 0:
        to_send = f"team value +{talk.send:.2f} when I say it"
    else:
        to_send = ""
    if talk.hold == float("inf"):
        return to_send, "I said the same lately: nothing it would change"
    recent = [x for x in value.memory.sent if _recent(value, x)]
    spoke = f"; I spoke at step {recent[-1].step}" if recent else ""
    return to_send, f"its time costs team value {talk.hold:.2f}{spoke}"


def _answer(q: MapQuestion, plan: list[str]) -> Talk | None:
    """My status with my plan, owed to a teammate whose question to me came after my last message."""
    m = q.d.memory
    since = m.sent[-1].step if m.sent else -1
    asked = [
        x for x in m.messages if isinstance(x.payload, Clarification) and x.payload.to == m.agent and x.step > since
    ]
    if not asked or not plan:
        return None
    status = TeamStatus.of(m, intent=plan[0])
    status = status.model_copy(update={"plan": tuple(plan)}).fitted(MAX_MESSAGE_CHARS)
    return Talk(float("inf"), 0.0, status)


def _announcement(q: MapQuestion) -> Talk | None:
    """The value model's announcement (module :mod:`coteam.value.team`, point 6) weighed: what saying it gains
    (the team value with it, before the message's time, against my best action without it) and the message's
    time; nothing to gain when my last message, a short while ago, announced the same."""
    d, value, m = q.d, q.value, q.d.memory
    advice = value.announcement(q.options) if d.can_talk and d.teammates else None
    if advice is None:
        return None
    text = _text_of(value, advice.key)
    if text is None:
        return None
    undelayed = value.value(value.outcome_of(advice.key, 0.0, list(advice.others)))
    gain = undelayed - advice.value_without
    cost = undelayed - advice.value_with
    repeated = any(isinstance(x.payload, TeamStatus) and x.payload.intent == text for x in m.sent if _recent(value, x))
    return Talk(gain, float("inf") if repeated else cost, TeamStatus.of(m, intent=text))


def _question(q: MapQuestion, bound: Bound, intentions: dict[str, Intention]) -> Talk | None:
    """A question to the teammate ranked before me whose inferred (not said) intention matters most: if it takes
    its likeliest next action my best is one action, if its second another; knowing is worth the loss each wrong
    guess would cost, half each, against the time of the question and of its answer. Not asked again within
    :data:`QUIET_STEPS` of asking it."""
    d, value, m = q.d, q.value, q.d.memory
    if not (d.can_talk and q.options):
        return None
    asked = {x.payload.to for x in m.sent if isinstance(x.payload, Clarification) and _recent(value, x)}
    mine = [k for k in (value.key(o) for o in q.options) if k is not None]
    best: Talk | None = None
    for index, (robot, _) in enumerate(bound):
        i = intentions.get(robot.name)
        if i is None or i.said or robot.name in asked:
            continue
        ranked = value.choices(robot, bound[:index])
        if len(ranked) < 2 or not mine:
            continue
        first, second = (value.choice_value(robot, bound[:index], k) for k in ranked[:2])
        if first - second > TOSS_UP * value.scale:
            continue  # its choice is clear: my prediction stands
        guesses = []
        for hypothesis in ranked[:2]:
            others = [(r, hypothesis if r.name == robot.name else k) for r, k in bound]
            worth = {k: value.value(value.outcome_of(k, 0.0, others)) for k in mine}
            guesses.append((others, worth, max(mine, key=lambda k: (worth[k], str(k)))))
        (o1, w1, b1), (_, w2, b2) = guesses
        if b1 == b2:
            continue
        gain = 0.5 * ((w1[b1] - w1[b2]) + (w2[b2] - w2[b1]))
        cost = w1[b1] - value.value(value.outcome_of(b1, 2 * value.message_time, o1))
        unknown = sorted(m.task.needed_names() - {v.name for v in m.items()})[:ASKED_ITEMS]
        talk = Talk(gain, cost, Clarification(agent=m.agent, to=robot.name, items=tuple(unknown)), robot.name)
        if best is None or talk.send - talk.hold > best.send - best.hold:
            best = talk
    return best


# --- phase 2: selection --------------------------------------------------------------------------------------
@dataclass
class SelectQuestion:
    lettered: Lettered
    mind_map: MindMap
    draft: HighLevelAction | None  # the message option, when there is one
    best: str  # the option the value model rates best, for a map without an immediate focus
    talk: Talk | None  # the symbolic update's weighing of the draft (None for a model's map)


class SelectAnswer(BaseModel):
    choice: str = Field(description="the letter of the chosen option")


def select_symbolically(ctx: RoleContext[SelectQuestion]) -> SelectAnswer:
    """The drafted message when the reason to send it outweighs the reason not to (the symbolic update's weighing;
    for a model's map, a stated reason to send; without a communication strategy, CoELA's rule: it has news), else
    the immediate focus (without a cooperative strategy: the value model's best option)."""
    q = ctx.data
    letters = list(q.lettered)
    talk = q.mind_map.communication_strategy
    if q.draft is not None:
        if q.talk is not None and q.talk.send > q.talk.hold:
            return SelectAnswer(choice=letters[-1])
        if q.talk is None and (talk is None or talk.reason_to_send):
            return SelectAnswer(choice=letters[-1])
    focus = q.mind_map.cooperative_strategy.immediate_focus if q.mind_map.cooperative_strategy else q.best
    chosen = next((k for k, text in q.lettered.items() if text == focus), letters[0])
    return SelectAnswer(choice=chosen)


SELECT: Role[SelectQuestion, SelectAnswer] = choice_role(
    "mindmap.select", "mindmap_select", SelectAnswer, "choice", select_symbolically
)
STATUS = message_role("mindmap.message", "mindmap_message", lambda ctx: TeamStatus.of(ctx.data).text())


# --- the agent -----------------------------------------------------------------------------------------------
class MindmapAgent(RoleAgent):
    config: MindmapConfig
    prompt_situation = SITUATION_SLOTS

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.mind_map: MindMap | None = None  # kept across decisions
        self.basis = MapBasis()  # what the symbolic update keeps beside it

    def deliberate(self, d: Deliberation) -> Decision:
        cfg = self.config
        parts = cfg.parts
        value = d.value_model(alone="cooperative_strategy" not in parts, heed_intents="inferred_intentions" in parts)
        physical = [o for o in d.ctx.options if not o.action.is_message]
        if not physical:
            return d.decision(d.ctx.options[0].action)
        announced = d.announced
        if announced is not None:  # the map's draft said what I do next, and my teammates plan on it
            d.rationale["announced"] = announced.text
            return d.decision(announced.action)
        q = MapQuestion(d, self.mind_map, parts, value, physical, cfg.no_key_matching, self.basis)
        answer = d.ask(
            UPDATE,
            q,
            previous=json.dumps(self.mind_map.model_dump(exclude_none=True)) if self.mind_map else "(none yet)",
            exemplar=json.dumps(exemplar(parts)),
            guide="\n".join(component_guides()[part] for part in parts),
        )
        new_map, repairs = read_map(answer.value, q)
        talk = q.talk if answer.source != "llm" and not cfg.no_draft else None
        d.rationale["mind_map"] = new_map.model_dump(exclude_none=True)
        d.rationale["map_changes"] = new_map.changes(self.mind_map)
        if repairs:
            d.rationale["map_repairs"] = repairs
        if talk is not None:
            d.rationale["talk"] = {"send": round(talk.send, 3), "hold": round(talk.hold, 3)}
        self.mind_map = new_map
        draft, payload = self._draft(d, new_map, talk)
        lettered = d.lettered(*([draft] if draft is not None else []))
        # a model's map may name no focus: then the value model's best option stands in for it
        best = q.focus if q.focus is not None else _best(physical, _worths(value, physical)).text
        choice = d.ask(
            SELECT,
            SelectQuestion(lettered, new_map, draft, best, talk),
            lettered=str(lettered),
            mind_map=json.dumps(new_map.model_dump(exclude_none=True), indent=1),
        )
        key, how = match_option(choice.value.choice, lettered)
        d.rationale.update(choice=choice.value.choice[:40], matched=how if choice.source == "llm" else choice.source)
        return d.decision(lettered.action(key), payload)

    def _draft(
        self, d: Deliberation, mind_map: MindMap, talk: Talk | None
    ) -> tuple[HighLevelAction | None, BaseModel | None]:
        """The message option: the map's draft (with the payload its words state when the symbolic update wrote
        it, ``talk``: a model's draft may say less), or without one (no_draft, no communication component) a
        CoELA-style status report when it has news."""
        m = d.memory
        if not d.can_talk:
            return None, None
        strategy = mind_map.communication_strategy
        if strategy is not None and not self.config.no_draft and strategy.message_draft:
            receiver = talk.receiver if talk is not None else ""
            text = strategy.message_draft[:MAX_MESSAGE_CHARS]
            return HighLevelAction(Verb.SEND_MESSAGE, text=text, receiver=receiver), talk.payload if talk else None
        answer = d.ask(STATUS, m)
        status = d.payload_of(answer, lambda: TeamStatus.of(m))
        if status is not None and not status.news(m):
            return None, None  # nothing new: no message to offer
        return HighLevelAction(Verb.SEND_MESSAGE, text=answer.value.message), status


def exemplar(parts: tuple[str, ...]) -> dict[str, Any]:
    """The in-context example of the map's form, with only the components kept."""
    example = MindMap(
        inferred_intentions={"bob": Intention(aim="[gograb] <apple> (12)", why="it said so at step 4", said=True)},
        cooperative_strategy=CooperativeStrategy(
            pending_clarifications=["where is a <wine>?"],
            long_term_plan=["alice: [gocheck] <fridge> (5)", "bob: [gograb] <apple> (12)"],
            immediate_focus="[gocheck] <fridge> (5)",
        ),
        communication_strategy=CommunicationStrategy(
            dialogue_summary="bob said he takes the apple",
            message_draft="alice: in the kitchen; holding nothing; next I do [gocheck] <fridge> (5).",
            reason_to_send="",
            reason_not_to_send="bob already knows where I am and nothing I would say changes his plan",
        ),
    ).model_dump()
    return {k: v for k, v in example.items() if k in parts}


def explain_decision(team: type[PerAgentTeam], rationale: Mapping[str, Any]) -> Explanation:
    """``coteam explain``: the decision's mind map, what changed in it, any repairs, and the selection."""
    r = dict(rationale)
    if "announced" in r:
        said = r.pop("announced")
        return Explanation((Section(f"Kept its word: {said}, which its last message announced"), rationale_section(r)))
    mind_map = r.pop("mind_map", {})
    lines = json.dumps(mind_map, indent=2).splitlines()
    sections = [Section("Mind map:", tuple(lines))]
    changes = r.pop("map_changes", [])
    sections.append(Section("Changed since my previous decision:", tuple(changes) or ("(nothing)",)))
    repairs = r.pop("map_repairs", [])
    if repairs:
        sections.append(Section("Key matching repaired the model's map:", tuple(repairs)))
    sections.append(Section(f"Chose {r.pop('action', '')} ({r.pop('matched', '?')}: {r.pop('choice', '')!r})"))
    return Explanation((*sections, rationale_section(r)))


class MindmapTeam(PerAgentTeam):
    summary = "Mind-Map agent: a mind map of teammates' intentions, the cooperative plan and the talk strategy"
    Config = MindmapConfig
    Agent = MindmapAgent
    payload_types: ClassVar = (TeamStatus, Clarification)
    explain = classmethod(explain_decision)
