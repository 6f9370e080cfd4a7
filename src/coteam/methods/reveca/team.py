"""``reveca``: REVECA -- relevance-ranked memory and proximity-aware planning.

Per decision of each agent:

1. **Relevance estimation** (observation time): every object and piece of furniture the agent sees gets a relevance
   level when it is first seen, a room when an option first names it (:mod:`.relevance`; the LLM backend asks with
   a reasoning step, the symbolic one reads the goal and the placement priors), cached by class on C-WAH and by
   object on TDW-MAT.
2. **Memory**: besides what the agent saw (the shared :class:`~coteam.agent.memory.AgentMemory`), each teammate's rooms
   over time; a teammate out of sight stands at the centre of the room it was last known in.
3. **Adaptive planning** (planning time): the physical options ranked by relevance, and within a level by relative
   proximity -- the ones I am closer to than my nearest teammate first, then the rest -- and cut to the top ``K``.
   One option left is taken without asking; otherwise the planner chooses among the ``K``, told each one's
   relevance and, in words, whether I am closer than my teammate. The symbolic planner judges the same: each
   option's team value (the shared value model's estimate of its cost and what follows) plus a weight per unit of
   relevance and one for being closer (:func:`choose_symbolically`).

4. **Trajectory-based validation** (validation time): before acting on an object out of view, the robot predicts
   whether each teammate's way since the sighting crossed its room (symbolic: the teammate is known to have been
   there since; LLM: asked with a reasoning step); only then one question, to the likeliest of them (the one there
   last), never twice in a row about one room, unless it denies: then the next likeliest is asked. Its answer (it
   did it or not, what it last saw there, or that it knows nothing of the room) updates memory, and the plan is
   decided again.
5. **Communication** (:mod:`.messages`, the paper's four kinds): at its first decision the robot tells its
   teammates the items it sees around it; the question above and its reply, each addressed to one teammate; and,
   when its own delivery completes part of the goal, it says so. Each message is made by a rule; the LLM backend
   only makes its text kinder and shorter (no reasoning step, as in the paper). Its typed payload is what the rule
   made and travels with the text, so teammates read the facts from the payload, not from the model's wording
   (where the paper has a model on the receiving side turn the text back into fields). What teammates say goes
   into memory.

Switches for the paper's ablations: ``K`` (1-4, or ``all``: no retrieval), ``R`` (3, 4 or 5 relevance levels),
``no_proximity`` (rank by relevance and my own distance only; the symbolic planner, told nothing of where the
teammates are, values the options as if alone; the LLM planner's prompt says nothing of them), ``no_relevance``
(distance-greedy; no relevance judged, none shown to the planner or the validator),
``no_validation``, ``broadcast`` (questions and replies to the whole team), ``no_reasoning`` (the model answers
at once, without its step-by-step reasoning), ``no_other_info`` (no memory of the
teammates: no relative proximity, no trajectories to validate with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from coteam.agent.goals import goal_status
from coteam.agent.memory import AgentMemory
from coteam.agent.messages import ItemRef
from coteam.agent.options import ActionOption, target_position
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.domain.actions import HighLevelAction, Verb, format_action
from coteam.domain.observation import Message, ObjectView
from coteam.domain.world import ObjectKind, Vec2
from coteam.kit import (
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
    model_schema,
    narrow,
    rationale_section,
)
from coteam.methods.reveca.messages import Found, SubgoalDone, ValidationReply, ValidationRequest
from coteam.methods.reveca.relevance import RelevanceScale, cache_key, symbolic_grade

# The symbolic planner's judgement (choose_symbolically), in shares of the team value model's scale; tuned on fresh
# `cwah` (40) and `tdwmat` (16) episodes of generator seed 101: 0 to 0.05 moved steps and transport within noise.
RELEVANCE_WEIGHT = 0.01  # per unit of relevance (strong 1 ... none -1)
PROXIMITY_WEIGHT = 0.002  # for an option I am closer to than my teammate
REASONING_CHARS = 600  # the reasoning a constrained answer may give before its letter


class RevecaConfig(ValueRoleConfig):
    K: int | Literal["all"] = Field(
        3,
        description="options shown to the planner: memory's top K by relevance and "
        "relative proximity (all: no retrieval)",
    )
    R: Literal[3, 4, 5] = Field(4, description="relevance levels (4: strong, medium, low, none)")
    no_proximity: bool = Field(
        False, description="ablation: no relative proximity (rank by relevance and my own distance; plan as if alone)"
    )
    no_relevance: bool = Field(False, description="ablation: no relevance, the nearest options first")
    no_validation: bool = Field(False, description="ablation: act on remembered objects without asking anyone")
    broadcast: bool = Field(False, description="ablation: questions and replies go to the whole team, not one")
    no_reasoning: bool = Field(False, description="ablation: the model answers at once, without reasoning first")
    no_other_info: bool = Field(
        False, description="ablation: no memory of the teammates (no relative proximity, no trajectories to validate)"
    )

    @field_validator("K")
    @classmethod
    def _positive(cls, k: int | str) -> int | str:
        if isinstance(k, int) and k < 1:
            raise ValueError("K must be at least 1, or all")
        return k


# --- the roles -----------------------------------------------------------------------------------------------
class RelevanceAnswer(BaseModel):
    reasoning: str = Field("", description="step-by-step: what the object is for, and what the goal needs")
    level: str = Field(description="the letter of the relevance level")


class PlanAnswer(BaseModel):
    reasoning: str = Field("", description="step-by-step: which option helps the team most, given who is nearer")
    choice: str = Field(description="the letter of the chosen action")


@dataclass
class RelevanceQuestion:
    view: ObjectView
    memory: AgentMemory
    scale: RelevanceScale


@dataclass(frozen=True)
class Candidate:
    """One option as the planner sees it: its target's relevance and whether I am closer to it than my teammate."""

    option: ActionOption
    level: str
    mine: float  # my distance, metres
    theirs: float | None  # my nearest teammate's, from where I believe it is (None: no teammate known)

    @property
    def closer(self) -> bool:
        return self.theirs is None or self.mine < self.theirs

    def described(self, teammate: str) -> str:
        """The option for the planner: its relevance (unless not judged: ``no_relevance``) and whether I am closer
        than ``teammate`` (unless not known: ``no_proximity``)."""
        told = [f"relevance: {self.level}"] if self.level else []
        if self.theirs is not None:
            told.append(f"I am {'closer' if self.closer else 'farther'} than {teammate}")
        return f"{self.option.text} - {', '.join(told)}" if told else self.option.text


@dataclass
class PlanQuestion:
    candidates: list[Candidate]
    lettered: Lettered
    ctx: DecisionContext
    d: Deliberation


def grade_symbolically(ctx: RoleContext[RelevanceQuestion]) -> RelevanceAnswer:
    q = ctx.data
    level = symbolic_grade(q.view, q.memory, q.scale)
    return RelevanceAnswer(reasoning="the goal and the placement priors", level=q.scale.letter(level))


def check_grade(answer: RelevanceAnswer, ctx: RoleContext[RelevanceQuestion]) -> None:
    scale = ctx.data.scale
    letters = "ABCDE"[: len(scale.names)]
    if answer.level.strip().upper()[:1] not in letters:
        raise ValueError(f"level must be one letter of {', '.join(letters)}, not {answer.level!r}")


def choose_symbolically(ctx: RoleContext[PlanQuestion]) -> PlanAnswer:
    """The planner's judgement over the retrieved options: each one's worth is what it does for the team (the team
    value model's estimate, as a share of its scale: the cost of getting there and what follows), plus
    :data:`RELEVANCE_WEIGHT` times its relevance (1 strong ... -1 none) and :data:`PROXIMITY_WEIGHT` when I am
    closer to it than my teammate; the best worth is chosen (the retrieval order breaks ties and stands in for
    options the value model cannot rate). Told nothing of relevance (no_relevance) or of where the teammates are
    (no_proximity, no_other_info), the judgement weighs what it is told: without proximity it rates the options
    as if I worked alone."""
    q = ctx.data
    cfg = q.d.team.config
    assert isinstance(cfg, RevecaConfig)
    alone = cfg.no_proximity or cfg.no_other_info
    value = q.d.value_model(alone=True) if alone else q.d.value
    scale = RelevanceScale(cfg.R)
    judged = []
    for k, c in enumerate(q.candidates):
        outcome = value.outcome(c.option)
        worth = value.value(outcome) / value.scale if outcome is not None else float("-inf")
        if c.level:
            worth += RELEVANCE_WEIGHT * scale.worth(c.level)
        if c.theirs is not None and c.closer:
            worth += PROXIMITY_WEIGHT
        judged.append((worth, -k, list(q.lettered)[k]))
    return PlanAnswer(reasoning="relevance and proximity weighed with the team value", choice=max(judged)[2])


class ValidateAnswer(BaseModel):
    reasoning: str = Field("", description="step-by-step: where the teammate has probably been since I saw the object")
    answer: str = Field(description="A: its way did not cross that room since; B: it may have dealt with the object")


@dataclass
class ValidateQuestion:
    visited: bool  # my teammate is known to have been in the room since I saw the object


def predict_symbolically(ctx: RoleContext[ValidateQuestion]) -> ValidateAnswer:
    visited = ctx.data.visited
    return ValidateAnswer(reasoning="its rooms since the sighting", answer="B" if visited else "A")


def check_prediction(answer: ValidateAnswer, ctx: RoleContext[ValidateQuestion]) -> None:
    if answer.answer.strip().upper()[:1] not in ("A", "B"):
        raise ValueError(f"answer must be A or B, not {answer.answer!r}")


def _letters(model: type[BaseModel], field: str, letters: Sequence[str]) -> dict[str, Any]:
    """The schema of an answer whose ``field`` is one of ``letters``, after a reasoning of at most
    ``REASONING_CHARS`` (a grammar-constrained model then cannot ramble past its token budget)."""
    reasoning = {"type": "string", "maxLength": REASONING_CHARS}
    return narrow(model_schema(model), enums={field: list(letters)}, replace={"reasoning": reasoning})


VALIDATE: Role[ValidateQuestion, ValidateAnswer] = Role(
    "reveca.validate",
    "reveca_validate",
    ValidateAnswer,
    predict_symbolically,
    check_prediction,
    lambda ctx: _letters(ValidateAnswer, "answer", "AB"),
)
RELEVANCE: Role[RelevanceQuestion, RelevanceAnswer] = Role(
    "reveca.relevance",
    "reveca_relevance",
    RelevanceAnswer,
    grade_symbolically,
    check_grade,
    lambda ctx: _letters(RelevanceAnswer, "level", "ABCDE"[: len(ctx.data.scale.names)]),
)
PLAN: Role[PlanQuestion, PlanAnswer] = choice_role(
    "reveca.plan",
    "reveca_plan",
    PlanAnswer,
    "choice",
    choose_symbolically,
    constrain=lambda ctx: _letters(PlanAnswer, "choice", list(ctx.data.lettered)),
)
MESSAGE = message_role("reveca.message", "reveca_message", lambda ctx: ctx.data.text())


# --- the agent -----------------------------------------------------------------------------------------------
class RevecaAgent(RoleAgent):
    config: RevecaConfig
    team: RevecaTeam
    prompt_situation = ("agent", "teammates", "goal")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.scale = RelevanceScale(self.config.R)
        self.relevance: dict[tuple[str, int | str], str] = {}  # judged levels, by cache_key
        self.rooms_of: dict[str, list[tuple[int, int]]] = {}  # teammate -> (step, room) each time it changed
        self.inbox: list[tuple[str, Any]] = []  # teammates' payloads not taken in yet
        self.shared = False  # my first decision is behind me (the initial sharing was sent or had nothing)
        self.known_done: set[int] = set()  # goal items my map shows in place
        self.held_before: set[int] = set()  # what I held at my previous decision
        self.to_tell: list[SubgoalDone] = []
        self.replies_due: list[ValidationRequest] = []  # teammates' questions to me, not answered yet
        self.last_asked_room: int | None = None  # never two questions in a row about one room...
        self.next_to_ask: dict[int, list[str]] = {}  # ...but the next likeliest teammate, after a denial: by target
        self.denied: set[int] = set()  # targets whose asked teammate answered that it did not do it

    def on_message(self, message: Message) -> None:
        if isinstance(message.payload, Found | SubgoalDone | ValidationRequest | ValidationReply):
            self.inbox.append((message.sender, message.payload))

    def deliberate(self, d: Deliberation) -> Decision:
        m = d.memory
        answers = self._take_in(m)
        if answers:
            d.rationale["answers"] = answers
            known = m.known_names()  # an answer may have dropped what an option names: that option is gone too
            options = [o for o in d.ctx.options if o.action.target is None or o.action.target.id in known]
            d.ctx = replace(d.ctx, options=options)
        self._follow_teammates(m)
        self._judge_what_i_see(d)
        said = self._communicate(d)
        if said is not None:
            return self._say(d, said)
        physical = [o for o in d.ctx.options if not o.action.is_message]
        if not physical:
            return d.decision(d.ctx.options[0].action)
        mate, where = self._nearest_teammate(m, d)
        candidates = self.retrieve(d, physical, where)
        lettered = Lettered([c.option.action for c in candidates], [c.described(mate) for c in candidates])
        d.rationale["candidates"] = [c.described(mate) for c in candidates]
        if len(candidates) == 1:
            d.rationale["choice"] = "the only option retrieved"
            return self._validated(d, candidates[0])
        held = sum(h is not None for h in m.holding)
        answer = d.ask(
            PLAN,
            PlanQuestion(candidates, lettered, d.ctx, d),
            answer_format=self._answer_format('"choice": "<one letter>"'),
            options=str(lettered),
            my_room=m.floorplan.room(m.room).name if m.room >= 0 else "somewhere",
            teammate_whereabouts=self._whereabouts(m, mate, where),
            holding=f"{held} of {len(m.holding)}",
            recent=d.slots["actions"],
        )
        key, how = match_option(answer.value.choice, lettered)
        d.rationale.update(choice=answer.value.choice[:40], matched=how if answer.source == "llm" else answer.source)
        return self._validated(d, candidates[list(lettered).index(key)])

    def _whereabouts(self, m: AgentMemory, mate: str, where: tuple[Vec2, int] | None) -> str:
        """Where I think my nearest teammate is, for the planner's prompt; nothing when the planner is told nothing
        of it (``no_proximity``, ``no_other_info``)."""
        if self.config.no_proximity or self.config.no_other_info:
            return ""
        if where is None:
            return f"; I do not know where {mate or 'my teammate'} is"
        return f"; I think {mate or 'my teammate'} is in the {m.room_name(where[1])}"

    def _say(self, d: Deliberation, said: Any) -> Decision:
        """Send the rule-made message ``said``, its text made kinder and shorter by the model (the symbolic backend
        sends the rule's text); the typed payload it reports travels with it."""
        receiver = "" if self.config.broadcast else getattr(said, "to", "")
        d.rationale["message"] = said.kind
        text = d.ask(MESSAGE, said, receiver=receiver or "the team", original=said.text()).value.message
        return d.decision(HighLevelAction(Verb.SEND_MESSAGE, text=text, receiver=receiver), said)

    # --- trajectory-based validation ----------------------------------------------------------------------
    def _validated(self, d: Deliberation, chosen: Candidate) -> Decision:
        """Act on the plan, unless it rests on an object out of view that a teammate may have dealt with since I
        saw it: then one targeted question first (and the plan is decided again once the answer is in)."""
        question = self._question(d, chosen.option.action)
        if question is None:
            self.last_asked_room = None
            return d.decision(chosen.option.action)
        d.rationale["validation"] = {"asked": question.to, "room": question.room, "plan": question.action}
        return self._say(d, question)

    def _question(self, d: Deliberation, action: HighLevelAction) -> ValidationRequest | None:
        m = d.memory
        if self.config.no_validation or not d.can_talk or action.verb not in (Verb.GRAB, Verb.CHECK):
            return None
        view = m.objects.get(action.target.id) if action.target is not None else None
        if view is None or view.held_by or view.room == m.room or view.room < 0:
            return None
        room = m.room_name(view.room)
        if view.id in self.denied and self.next_to_ask.get(view.id):  # the likeliest denied: ask the next one
            self.denied.discard(view.id)
            return self._request(m, self.next_to_ask[view.id].pop(0), room, action, view)
        if view.room == self.last_asked_room:
            return None
        since = m.last_seen.get(view.id, 0)
        doubted = []
        for mate in d.teammates:
            visits = self._rooms_since(mate, since)
            answer = d.ask(
                VALIDATE,
                ValidateQuestion(view.room in visits),
                answer_format=self._answer_format('"answer": "<A or B>"'),
                teammate=mate,
                object=f"<{view.name}> ({view.id})",
                room=room,
                action=format_action(action, self.info.benchmark),
                why_it_matters=(
                    ""
                    if self.config.no_relevance
                    else f"; it matters to the task: {self.level_of(d, view)}, and {mate} would think so too"
                ),
                known_visit=(
                    f"I know that {mate} was in the {room} after I last saw it there."
                    if view.room in visits
                    else f"I do not know whether {mate} went to the {room} since I last saw it there."
                ),
                messages="\n".join(
                    f"- {x.text}"
                    for x in m.messages
                    if x.sender == mate and x.step >= since and not self.config.no_other_info
                )
                or "(none)",
            )
            if answer.value.answer.strip().upper()[:1] == "B":
                doubted.append((max((s for s, r in self.rooms_of.get(mate, []) if r == view.room), default=-1), mate))
        if not doubted:
            return None
        self.last_asked_room = view.room
        likeliest, *rest = [mate for _, mate in sorted(doubted, reverse=True)]
        self.next_to_ask[view.id] = rest
        self.denied.discard(view.id)
        return self._request(m, likeliest, room, action, view)

    def _request(
        self, m: AgentMemory, mate: str, room: str, action: HighLevelAction, view: ObjectView
    ) -> ValidationRequest:
        return ValidationRequest(
            agent=m.agent,
            to=mate,
            room=room,
            at=m.room_name(m.room) if m.room >= 0 else "house",
            action=format_action(action, self.info.benchmark),
            target=ItemRef(id=view.id, name=view.name),
        )

    def _rooms_since(self, mate: str, since: int) -> set[int]:
        """The rooms ``mate`` has been in since step ``since``, as far as I know (the one it was in then, too)."""
        history = self.rooms_of.get(mate, [])
        before = [r for s, r in history if s < since]
        return {r for s, r in history if s >= since} | set(before[-1:])

    def _answer_format(self, fields: str) -> str:
        """How a role's prompt asks for its answer: reasoning step by step first (the paper's zero-shot chain of
        thought), or at once (``no_reasoning``)."""
        if self.config.no_reasoning:
            return "Answer at once, with one JSON object and nothing else:\n{" + fields + "}"
        return (
            "Think it through step by step, then answer with one JSON object and nothing else:\n"
            '{"reasoning": "<your step-by-step thinking>", ' + fields + "}"
        )

    # --- communication -------------------------------------------------------------------------------------
    def _take_in(self, m: AgentMemory) -> list[str]:
        """What teammates told me, into my memory: their sightings, their deliveries, the rooms they were in. Returns
        their answers to my questions, as "sender: text"."""
        answers = []
        for sender, payload in self.inbox:
            if isinstance(payload, ValidationRequest):
                if payload.to == m.agent:
                    self.replies_due.append(payload)
                continue
            if isinstance(payload, ValidationReply):
                if payload.to == m.agent:
                    payload.taken_in(m)
                    answers.append(f"{sender}: {payload.text()}")
                    if not payload.done:
                        self.denied.add(payload.target)
                continue
            payload.taken_in(m)
            name = payload.room if isinstance(payload, Found) else None
            room = next((r.id for r in m.floorplan.rooms if r.name == name), None)
            if isinstance(payload, SubgoalDone) and payload.target.id in m.objects:
                room = m.objects[payload.target.id].room
            if room is not None and not self.config.no_other_info:
                history = self.rooms_of.setdefault(sender, [])
                if not history or history[-1][1] != room:
                    history.append((m.step, room))
        self.inbox.clear()
        return answers

    def _communicate(self, d: Deliberation) -> Found | SubgoalDone | ValidationReply | None:
        """The message due now, if any: the answer to a teammate's question, my initial sharing at my first
        decision, or a sub-goal my own delivery completed (one per decision; a message costs a step)."""
        m = d.memory
        done = {i for s in goal_status(m) for i in s.done}
        for item in sorted((done - self.known_done) & self.held_before):
            view = m.objects[item]
            target = m.objects.get(view.holder)
            if target is not None:
                self.to_tell.append(
                    SubgoalDone(
                        agent=m.agent,
                        item=ItemRef(id=item, name=view.name),
                        target=ItemRef(id=target.id, name=target.name),
                    )
                )
        self.known_done |= done
        self.held_before = {v.id for v in m.held_items()}
        first, self.shared = not self.shared, True
        if not d.can_talk:
            return None
        if self.replies_due:
            return ValidationReply.answer(m, self.replies_due.pop(0))
        if first:
            return Found.around(m)
        return self.to_tell.pop(0) if self.to_tell else None

    # --- memory of the teammates ---------------------------------------------------------------------------
    def _follow_teammates(self, m: AgentMemory) -> None:
        if self.config.no_other_info:
            return
        for name, seen in m.teammates.items():
            history = self.rooms_of.setdefault(name, [])
            if seen.room >= 0 and (not history or history[-1][1] != seen.room):
                history.append((seen.step, seen.room))

    def _nearest_teammate(self, m: AgentMemory, d: Deliberation) -> tuple[str, tuple[Vec2, int] | None]:
        """My nearest teammate and where I believe it is: where I see it, else at the centre of the room it was last
        known in."""
        best: tuple[float, str, tuple[Vec2, int]] | None = None
        for name in [] if self.config.no_other_info else d.teammates:
            seen = m.teammates.get(name)
            if seen is None or seen.room < 0:
                continue
            at = seen.position if seen.step == m.step else m.floorplan.room_center(seen.room)
            distance = d.ctx.nav.path_length(m.position, at)
            if best is None or (distance, name) < best[:2]:
                best = (distance, name, (at, seen.room))
        if best is None:
            return (d.teammates[0] if d.teammates else ""), None
        return best[1], best[2]

    # --- relevance and retrieval ---------------------------------------------------------------------------
    def _judge_what_i_see(self, d: Deliberation) -> None:
        """Relevance is judged at observation time: every object in view now whose level is not known yet (rooms,
        never in view as objects, are judged when an option first names them)."""
        if self.config.no_relevance:
            return
        m = d.memory
        for view in sorted(m.objects.values(), key=lambda v: v.id):
            if view.kind != ObjectKind.ROOM and m.last_seen.get(view.id) == m.step:
                self.level_of(d, view)

    def level_of(self, d: Deliberation, view: ObjectView) -> str:
        """The object's relevance level, judged the first time it comes up (cached: :func:`.relevance.cache_key`)."""
        key = cache_key(view, self.info.benchmark)
        if key not in self.relevance:
            inside = view.kind != ObjectKind.ROOM and view.room >= 0
            answer = d.ask(
                RELEVANCE,
                RelevanceQuestion(view, d.memory, self.scale),
                answer_format=self._answer_format('"level": "<one letter>"'),
                object=view.name,
                room=d.memory.room_name(view.room) if inside else "house",
                levels="\n".join(f"{self.scale.letter(n)}. {n}" for n in self.scale.names),
            )
            self.relevance[key] = self.scale.from_letter(answer.value.level.strip().upper()[:1])
        return self.relevance[key]

    def _target(self, m: AgentMemory, option: ActionOption) -> ObjectView | None:
        target = option.action.target
        if target is None:
            return None
        if target.id in m.objects:
            return m.objects[target.id]
        if any(r.id == target.id for r in m.floorplan.rooms):
            return ObjectView(target.id, target.name, ObjectKind.ROOM, target.id, m.floorplan.room_center(target.id))
        return None

    def retrieve(
        self, d: Deliberation, options: Sequence[ActionOption], where: tuple[Vec2, int] | None
    ) -> list[Candidate]:
        """The options ranked by relevance, then relative proximity (closer than my teammate first), top ``K``."""
        cfg, m = self.config, d.memory
        goal_places = {p.target for p in m.task.predicates}
        ranked = []
        for option in options:
            view = self._target(m, option)
            target = option.action.target
            if cfg.no_relevance:
                level = ""  # not judged, not shown
            else:
                level = "strong" if view is None else self.level_of(d, view)
                if target is not None and target.id in goal_places:
                    level = "strong"  # a delivery: the goal's own place
            mine = option.my_distance
            theirs = None
            position = target_position(option.action, m)
            if where is not None and position is not None and not cfg.no_proximity:
                theirs = d.ctx.nav.path_length(where[0], position)
            ranked.append(Candidate(option, level, mine, theirs))
        # relevance first; within a level, what I am closer to than my teammate, the nearest first
        tier = (lambda c: 0.0) if cfg.no_relevance else (lambda c: self.scale.tier(c.level))
        order = sorted(ranked, key=lambda c: (-tier(c), not c.closer, c.mine, c.option.text))
        return order if cfg.K == "all" else order[: cfg.K]


def explain_decision(team: type[PerAgentTeam], rationale: Mapping[str, Any]) -> Explanation:
    """``coteam explain``: the retrieved options, each with its relevance and relative proximity, any validation
    exchange (the question asked before acting, a teammate's answer taken in), and the choice."""
    r = dict(rationale)
    sections = []
    candidates = r.pop("candidates", [])
    if candidates:
        sections.append(Section("Retrieved options (relevance, then relative proximity):", tuple(candidates)))
    answers = r.pop("answers", [])
    if answers:
        sections.append(Section("Answers to my questions, taken into memory:", tuple(answers)))
    asked = r.pop("validation", None)
    if asked:
        sections.append(
            Section(
                f"Validation: {asked['asked']} may have been in the {asked['room']} since I saw the object there; "
                f"asked it before {asked['plan']}"
            )
        )
    r.pop("choice", None)
    action, kind = r.pop("action", ""), r.pop("message", "")
    how = r.pop("matched", "the only option retrieved")
    sections.append(
        Section(f"Sent its {kind.replace('_', ' ')} message" if kind and not asked else f"Chose {action} ({how})")
    )
    return Explanation((*sections, rationale_section(r)))


class RevecaTeam(PerAgentTeam):
    summary = "REVECA: relevance-ranked memory, top-K options by relevance and relative proximity"
    Config = RevecaConfig
    Agent = RevecaAgent
    payload_types: ClassVar = (Found, SubgoalDone, ValidationRequest, ValidationReply)
    explain = classmethod(explain_decision)
