"""``mindmap``: the Mind-Map agent -- a schema-bound mind map, updated and then acted on at every decision.

Per decision of each robot, two phases:

1. **Mind-map update** (role ``mindmap.update``). From the text interface (the goal, the dialogue, what I know of
   the home, my last actions) and my previous map, a new map (:mod:`.mindmap`): the teammates' inferred
   intentions, the cooperative strategy, the communication strategy. A model's map goes through key matching
   first (repairs counted in the trace); one that cannot be repaired is replaced by the symbolic update, counted as
   a fallback. The symbolic update reads the belief and the team value model: a teammate's intention is what it
   said it does next (while that binds) or else its likeliest next action from where it was seen and what it holds;
   the long-term plan is each robot's best first action, planned around the robots before it; the pending
   clarifications are the goal items nobody has found and the teammates whose aims I cannot tell; the immediate
   focus is my best action for the team; the draft is my status with my next action (the one the value model
   advises announcing, else the focus), with a reason to send when it changes a teammate's choice (the value
   model's announcement) and a reason not to (a message costs a step, a recent message of mine).
2. **Selection** (role ``mindmap.select``): one of my physical options or the drafted message, from the map and
   the text interface. The symbolic selection takes the immediate focus, or the draft when the reason to send
   outweighs the reason not to.

Confabulation guard: the map is rebuilt from the memory's *done* actions and sightings, never from what was said: a
message I sent is not an action I did, and a teammate's stated intention is an intention (``said``), not a done
action (tests).

Switches for the paper's ablation: ``components`` (any of ``intentions``, ``cooperation``, ``communication``; the
symbolic planner then lets said intentions bind teammates only with ``intentions``, and plans around its teammates
only with ``cooperation``), ``no_key_matching`` (a model's map must have the schema's keys exactly), ``no_draft``
(no message draft: a message is written CoELA-style, a status report sent when it has news).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, RootModel, field_validator

from coteam.actions import HighLevelAction, Verb, format_action
from coteam.kit import (
    SITUATION_SLOTS,
    Deliberation,
    Explanation,
    Lettered,
    PerAgentTeam,
    RoleAgent,
    Section,
    ValueRoleConfig,
    match_option,
    rationale_section,
)
from coteam.kit.answers import message_role
from coteam.kit.lettered import letter_schema
from coteam.llm import Role, RoleContext
from coteam.llm.schema import model_schema, narrow
from coteam.memory import AgentMemory
from coteam.messages import TeamStatus
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
from coteam.options import ActionOption
from coteam.reasoning import Decision
from coteam.value.team import ValueModel

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


@dataclass
class MapQuestion:
    d: Deliberation
    previous: MindMap | None
    parts: tuple[str, ...]
    value: ValueModel  # the team value model the planner reads (as the components allow)
    options: list[ActionOption]  # my physical options
    best: ActionOption | None  # the one the value model rates best
    exact_keys: bool  # no_key_matching
    draft_status: TeamStatus | None = None  # the status the symbolic update's draft words (its payload)


def _map_data(ctx: RoleContext) -> MapQuestion:
    assert isinstance(ctx.data, MapQuestion)
    return ctx.data


def read_map(raw: RawMap, q: MapQuestion) -> tuple[MindMap, list[str]]:
    """A model's map held to the schema: key matching (or, with no_key_matching, the exact keys only)."""
    if q.exact_keys:
        if set(raw.root) != set(q.parts):
            raise ValueError(f"the map's keys must be exactly {', '.join(q.parts)}")
        return MindMap.model_validate(raw.root), []
    return match_keys(raw.root, q.previous, q.parts)


def check_map(answer: RawMap, ctx: RoleContext) -> None:
    read_map(answer, _map_data(ctx))


def update_symbolically(ctx: RoleContext) -> RawMap:
    q = _map_data(ctx)
    return RawMap(symbolic_map(q).model_dump(exclude_none=True))


UPDATE: Role[RawMap] = Role(
    "mindmap.update",
    "mindmap_update",
    RawMap,
    update_symbolically,
    check_map,
    lambda ctx: mind_map_schema(_map_data(ctx).parts),
)


def symbolic_map(q: MapQuestion) -> MindMap:
    """The symbolic update (module docstring)."""
    d, value, m = q.d, q.value, q.d.memory
    focus = q.best.text if q.best is not None else ""
    division = _division(d, value, q.best)
    intentions = _intentions(d, value, division) if "inferred_intentions" in q.parts else None
    cooperation = None
    if "cooperative_strategy" in q.parts:
        cooperation = CooperativeStrategy(
            pending_clarifications=_gaps(m, intentions)[:MAX_LINES],
            long_term_plan=[f"{robot}: {text}" for robot, text in division.items()][:MAX_LINES],
            immediate_focus=focus,
        )
    talk = None
    if "communication_strategy" in q.parts:
        talk, q.draft_status = _communication(d, value, q.options, focus)
    return MindMap(inferred_intentions=intentions, cooperative_strategy=cooperation, communication_strategy=talk)


def _best(value: ValueModel, options: list[ActionOption]) -> ActionOption | None:
    """The option the team value model rates best (the first of equals; options it cannot rate last)."""
    scored = []
    for k, option in enumerate(options):
        outcome = value.outcome(option)
        scored.append((value.value(outcome) if outcome is not None else float("-inf"), -k, option))
    return max(scored, key=lambda t: t[:2])[2] if scored else None


def _said(d: Deliberation, mate: str) -> tuple[int, TeamStatus] | None:
    """The latest status ``mate`` sent that states what it does next, with its step."""
    for message in reversed(d.memory.messages):
        if message.sender == mate and isinstance(message.payload, TeamStatus) and message.payload.intent:
            return message.step, message.payload
    return None


def _intentions(d: Deliberation, value: ValueModel, division: dict[str, str]) -> dict[str, Intention]:
    """What each teammate aims at: what it said it does next, while that binds it; else its part of the division
    of labour, from where it was seen and what it holds."""
    m = d.memory
    out = {}
    for mate in d.teammates:
        said = _said(d, mate)
        if said is not None and mate in value.announced:
            step, status = said
            out[mate] = Intention(aim=status.intent or "", why=f"it said so at step {step}", said=True)
            continue
        seen = m.teammates.get(mate)
        if seen is None or mate not in division:
            out[mate] = Intention(aim="unknown", why="I have neither seen it nor heard what it does")
            continue
        held = [m.objects[h].name for h in seen.holding if h is not None and h in m.objects]
        where = m.room_name(seen.room) if seen.room >= 0 else "somewhere"
        why = f"seen in the {where} at step {seen.step}" + (f", holding {', '.join(held)}" if held else "")
        out[mate] = Intention(aim=division[mate], why=why + "; its likeliest next action")
    return out


def _gaps(m: AgentMemory, intentions: dict[str, Intention] | None) -> list[str]:
    """Information gaps: goal items of which no instance is known, and teammates whose aims I cannot tell."""
    known = {v.name for v in m.items()}
    gaps = [f"where is a <{name}>?" for name in sorted(m.task.needed_names() - known)]
    gaps += [f"what is {mate} doing?" for mate, i in (intentions or {}).items() if i.aim == "unknown"]
    return gaps


def _division(d: Deliberation, value: ValueModel, mine: ActionOption | None) -> dict[str, str]:
    """Who does what: mine is my best action for the team; each teammate's its best first action, in the team's
    order, planned around the ones before it (the teammates the value model knows of: those I have seen or heard
    from)."""
    out, before = {}, []
    for robot in sorted((value.me, *value.teammates), key=lambda r: r.name):
        taken = {k for _, k in before}
        if robot is value.me:
            key = value.key(mine) if mine is not None else None
        else:
            key = next((k for k in value.choices(robot, before) if k not in taken), None)
        action = value.action_of(key) if key is not None else None
        out[robot.name] = format_action(action, d.memory.benchmark) if action is not None else "nothing left to do"
        before.append((robot, key))
    return out


def _communication(
    d: Deliberation, value: ValueModel, options: list[ActionOption], focus: str
) -> tuple[CommunicationStrategy, TeamStatus]:
    """The talk strategy, and the status its draft words: my state and what I do next (what I would announce when
    the value model advises it, else my focus)."""
    m = d.memory
    last = m.dialogue(3)
    summary = (
        f"{len(m.messages) + len(m.sent)} messages so far; last: "
        + "; ".join(f"{x.sender} at step {x.step}: {x.text[:60]}" for x in last)
        if last
        else "nobody has said anything yet"
    )
    advice = value.announcement(options) if d.can_talk and d.teammates else None
    announced = value.action_of(advice.key) if advice is not None else None
    intent = format_action(announced, m.benchmark) if announced is not None else focus
    status = TeamStatus.of(m, intent=intent or None)
    to_send = (
        f"{advice.teammate} would otherwise choose differently: the team's value {advice.value_with:.2f} when I "
        f"say it, {advice.value_without:.2f} when I do not"
        if advice is not None
        else ""
    )
    recent = [x for x in m.sent if m.step - x.step <= QUIET_STEPS]
    not_to_send = "a message costs me a step" + (f"; I spoke at step {recent[-1].step}" if recent else "")
    if advice is None:
        not_to_send += "; it changes no teammate's choice"
    strategy = CommunicationStrategy(
        dialogue_summary=summary[:MAX_TEXT],
        message_draft=status.text(),
        reason_to_send=to_send,
        reason_not_to_send=not_to_send,
    )
    return strategy, status


# --- phase 2: selection --------------------------------------------------------------------------------------
@dataclass
class SelectQuestion:
    lettered: Lettered
    mind_map: MindMap
    draft: HighLevelAction | None  # the message option, when there is one
    best: str  # the option the value model rates best, for a map without an immediate focus


def _select_data(ctx: RoleContext) -> SelectQuestion:
    assert isinstance(ctx.data, SelectQuestion)
    return ctx.data


class SelectAnswer(BaseModel):
    choice: str = Field(description="the letter of the chosen option")


def select_symbolically(ctx: RoleContext) -> SelectAnswer:
    """The message when there is a reason to send it (with a communication strategy: the value model's, it changes
    a teammate's choice; without one, CoELA's: it has news), else the immediate focus (without a cooperative
    strategy: the value model's best option)."""
    q = _select_data(ctx)
    letters = list(q.lettered)
    talk = q.mind_map.communication_strategy
    if q.draft is not None and (talk is None or talk.reason_to_send):
        return SelectAnswer(choice=letters[-1])
    focus = q.mind_map.cooperative_strategy.immediate_focus if q.mind_map.cooperative_strategy else q.best
    chosen = next((k for k, text in q.lettered.items() if text == focus), letters[0])
    return SelectAnswer(choice=chosen)


def check_selection(answer: SelectAnswer, ctx: RoleContext) -> None:
    match_option(answer.choice, _select_data(ctx).lettered)


def selected_text(ctx: RoleContext, answer: SelectAnswer) -> str:
    q = _select_data(ctx)
    return q.lettered[match_option(answer.choice, q.lettered)[0]]


SELECT: Role[SelectAnswer] = Role(
    "mindmap.select",
    "mindmap_select",
    SelectAnswer,
    select_symbolically,
    check_selection,
    lambda ctx: narrow(model_schema(SelectAnswer), replace={"choice": letter_schema(_select_data(ctx).lettered)}),
    choice=selected_text,
)
STATUS = message_role("mindmap.message", "mindmap_message", lambda ctx: TeamStatus.of(ctx.data).text())


# --- the agent -----------------------------------------------------------------------------------------------
class MindmapAgent(RoleAgent):
    config: MindmapConfig
    prompt_situation = SITUATION_SLOTS

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.mind_map: MindMap | None = None  # kept across decisions

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
        best = _best(value, physical)
        q = MapQuestion(d, self.mind_map, parts, value, physical, best, cfg.no_key_matching)
        answer = d.ask(
            UPDATE,
            q,
            previous=json.dumps(self.mind_map.model_dump(exclude_none=True)) if self.mind_map else "(none yet)",
            exemplar=json.dumps(exemplar(parts)),
            guide="\n".join(component_guides()[part] for part in parts),
        )
        new_map, repairs = read_map(answer.value, q)
        from_model = answer.source == "llm"
        d.rationale["mind_map"] = new_map.model_dump(exclude_none=True)
        d.rationale["map_changes"] = new_map.changes(self.mind_map)
        if repairs:
            d.rationale["map_repairs"] = repairs
        self.mind_map = new_map
        draft, payload = self._draft(d, new_map, None if from_model else q.draft_status)
        lettered = d.lettered(*([draft] if draft is not None else []))
        choice = d.ask(
            SELECT,
            SelectQuestion(lettered, new_map, draft, best.text if best is not None else ""),
            lettered=str(lettered),
            mind_map=json.dumps(new_map.model_dump(exclude_none=True), indent=1),
        )
        key, how = match_option(choice.value.choice, lettered)
        d.rationale.update(choice=choice.value.choice[:40], matched=how if choice.source == "llm" else choice.source)
        return d.decision(lettered.action(key), payload)

    def _draft(
        self, d: Deliberation, mind_map: MindMap, drafted: TeamStatus | None
    ) -> tuple[HighLevelAction | None, TeamStatus | None]:
        """The message option: the map's draft (with my status as its payload when the symbolic update wrote it:
        a model's draft may say less than the report), or without one (no_draft, no communication component) a
        CoELA-style status report when it has news."""
        m = d.memory
        if not d.can_talk:
            return None, None
        talk = mind_map.communication_strategy
        if talk is not None and not self.config.no_draft and talk.message_draft:
            return HighLevelAction(Verb.SEND_MESSAGE, text=talk.message_draft[:500]), drafted
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
    payload_types: ClassVar = (TeamStatus,)
    explain = classmethod(explain_decision)
