"""``reveca``: REVECA -- relevance-ranked memory and proximity-aware planning.

Per decision of each agent:

1. **Relevance estimation** (observation time): every object, room and piece of furniture the agent's options name
   gets a relevance level the first time it comes up (:mod:`.relevance`; the LLM backend asks with a reasoning step,
   the symbolic one reads the goal and the placement priors), cached by class on C-WAH and by object on TDW-MAT.
2. **Memory**: besides what the agent saw (the shared :class:`~coteam.memory.AgentMemory`), each teammate's rooms
   over time; a teammate out of sight stands at the centre of the room it was last known in.
3. **Adaptive planning** (planning time): the physical options ranked by relevance, and within a level by relative
   proximity -- the ones I am closer to than my nearest teammate first, then the rest -- and cut to the top ``K``.
   One option left is taken without asking; otherwise the planner chooses among the ``K``, told each one's
   relevance and, in words, whether I am closer than my teammate (the symbolic backend: the option the shared team
   value model rates best).

4. **Communication** (:mod:`.messages`): at its first decision the robot tells its teammates the items it sees
   around it, and when its own delivery completes part of the goal, it says so; what teammates say goes into memory
   (their sightings, the items they delivered, the rooms they were in).

Switches for the paper's ablations: ``K`` (1-4, or ``all``: no retrieval), ``R`` (3, 4 or 5 relevance levels),
``no_proximity`` (rank by relevance and my own distance only), ``no_relevance`` (distance-greedy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from coteam.actions import HighLevelAction, Verb
from coteam.goals import goal_status
from coteam.kit import Deliberation, Explanation, PerAgentTeam, RoleAgent, Section, ValueRoleConfig, rationale_section
from coteam.kit.lettered import Lettered, match_option
from coteam.llm import Role, RoleContext
from coteam.memory import AgentMemory
from coteam.messages import ItemRef
from coteam.methods.reveca.messages import Found, SubgoalDone
from coteam.methods.reveca.relevance import RelevanceScale, cache_key, symbolic_grade
from coteam.observation import Message, ObjectView
from coteam.options import ActionOption, target_position
from coteam.reasoning import Decision, DecisionContext
from coteam.world import ObjectKind, Vec2


class RevecaConfig(ValueRoleConfig):
    K: int | Literal["all"] = Field(
        3,
        description="options shown to the planner: memory's top K by relevance and "
        "relative proximity (all: no retrieval)",
    )
    R: Literal[3, 4, 5] = Field(4, description="relevance levels (4: strong, medium, low, none)")
    no_proximity: bool = Field(False, description="ablation: rank by relevance and my own distance only")
    no_relevance: bool = Field(False, description="ablation: no relevance, the nearest options first")

    @field_validator("K")
    @classmethod
    def _positive(cls, k: int | str) -> int | str:
        if isinstance(k, int) and k < 1:
            raise ValueError("K must be at least 1, or all")
        return k


# --- the roles -----------------------------------------------------------------------------------------------
class RelevanceAnswer(BaseModel):
    reasoning: str = Field(description="step-by-step: what the object is for, and what the goal needs")
    level: str = Field(description="the letter of the relevance level")


class PlanAnswer(BaseModel):
    reasoning: str = Field(description="step-by-step: which option helps the team most, given who is nearer")
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
    rank: float  # the retrieval score: the level's tier plus nearness

    @property
    def closer(self) -> bool:
        return self.theirs is None or self.mine < self.theirs

    def described(self, teammate: str) -> str:
        near = "" if self.theirs is None else f", I am {'closer' if self.closer else 'farther'} than {teammate}"
        return f"{self.option.text} - relevance: {self.level}{near}"


@dataclass
class PlanQuestion:
    candidates: list[Candidate]
    lettered: Lettered
    ctx: DecisionContext
    d: Deliberation


def _relevance_data(ctx: RoleContext) -> RelevanceQuestion:
    assert isinstance(ctx.data, RelevanceQuestion)
    return ctx.data


def _plan_data(ctx: RoleContext) -> PlanQuestion:
    assert isinstance(ctx.data, PlanQuestion)
    return ctx.data


def grade_symbolically(ctx: RoleContext) -> RelevanceAnswer:
    q = _relevance_data(ctx)
    level = symbolic_grade(q.view, q.memory, q.scale)
    return RelevanceAnswer(reasoning="the goal and the placement priors", level=q.scale.letter(level))


def check_grade(answer: RelevanceAnswer, ctx: RoleContext) -> None:
    scale = _relevance_data(ctx).scale
    letters = "ABCDE"[: len(scale.names)]
    if answer.level.strip().upper()[:1] not in letters:
        raise ValueError(f"level must be one letter of {', '.join(letters)}, not {answer.level!r}")


def choose_symbolically(ctx: RoleContext) -> PlanAnswer:
    """The candidate the team value model rates best (the retrieval order breaks ties and stands in for options it
    cannot rate)."""
    q = _plan_data(ctx)
    value = q.d.value
    rated = []
    for k, c in enumerate(q.candidates):
        outcome = value.outcome(c.option)
        rated.append((value.value(outcome) if outcome is not None else float("-inf"), -k, list(q.lettered)[k]))
    return PlanAnswer(reasoning="the team value model's best of the retrieved options", choice=max(rated)[2])


def check_choice(answer: PlanAnswer, ctx: RoleContext) -> None:
    match_option(answer.choice, _plan_data(ctx).lettered)


def chosen_text(ctx: RoleContext, answer: PlanAnswer) -> str:
    q = _plan_data(ctx)
    return q.lettered[match_option(answer.choice, q.lettered)[0]]


RELEVANCE: Role[RelevanceAnswer] = Role(
    "reveca.relevance", "reveca_relevance", RelevanceAnswer, grade_symbolically, check_grade
)
PLAN: Role[PlanAnswer] = Role(
    "reveca.plan", "reveca_plan", PlanAnswer, choose_symbolically, check_choice, choice=chosen_text
)


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
        self.inbox: list[tuple[str, Found | SubgoalDone]] = []  # teammates' payloads not taken in yet
        self.shared = False  # my first decision is behind me (the initial sharing was sent or had nothing)
        self.known_done: set[int] = set()  # goal items my map shows in place
        self.held_before: set[int] = set()  # what I held at my previous decision
        self.to_tell: list[SubgoalDone] = []

    def on_message(self, message: Message) -> None:
        if isinstance(message.payload, Found | SubgoalDone):
            self.inbox.append((message.sender, message.payload))

    def deliberate(self, d: Deliberation) -> Decision:
        m = d.memory
        self._take_in(m)
        self._follow_teammates(m)
        said = self._communicate(d)
        if said is not None:
            d.rationale["message"] = said.kind
            return d.decision(HighLevelAction(Verb.SEND_MESSAGE, text=said.text()), said)
        physical = [o for o in d.ctx.options if not o.action.is_message]
        if not physical:
            return d.decision(d.ctx.options[0].action)
        mate, where = self._nearest_teammate(m, d)
        candidates = self.retrieve(d, physical, where)
        lettered = Lettered([c.option.action for c in candidates], [c.described(mate) for c in candidates])
        d.rationale["candidates"] = [c.described(mate) for c in candidates]
        if len(candidates) == 1:
            d.rationale["choice"] = "the only option retrieved"
            return d.decision(candidates[0].option.action)
        held = sum(h is not None for h in m.holding)
        answer = d.ask(
            PLAN,
            PlanQuestion(candidates, lettered, d.ctx, d),
            options=str(lettered),
            my_room=m.floorplan.room(m.room).name if m.room >= 0 else "somewhere",
            teammate=mate or "my teammate",
            teammate_room=self._room_name(m, where[1]) if where else "an unknown room",
            holding=f"{held} of {len(m.holding)}",
            recent=d.slots["actions"],
        )
        key, how = match_option(answer.value.choice, lettered)
        d.rationale.update(choice=answer.value.choice[:40], matched=how if answer.source == "llm" else answer.source)
        return d.decision(lettered.action(key))

    # --- communication -------------------------------------------------------------------------------------
    def _take_in(self, m: AgentMemory) -> None:
        """What teammates told me, into my memory: their sightings, their deliveries, the rooms they were in."""
        for sender, payload in self.inbox:
            payload.taken_in(m)
            name = payload.room if isinstance(payload, Found) else None
            room = next((r.id for r in m.floorplan.rooms if r.name == name), None)
            if isinstance(payload, SubgoalDone) and payload.target.id in m.objects:
                room = m.objects[payload.target.id].room
            if room is not None:
                history = self.rooms_of.setdefault(sender, [])
                if not history or history[-1][1] != room:
                    history.append((m.step, room))
        self.inbox.clear()

    def _communicate(self, d: Deliberation) -> Found | SubgoalDone | None:
        """The message due now, if any: my initial sharing at my first decision, or a sub-goal my own delivery
        completed (one per decision; a message costs a step)."""
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
        if first:
            return Found.around(m)
        return self.to_tell.pop(0) if self.to_tell else None

    # --- memory of the teammates ---------------------------------------------------------------------------
    def _follow_teammates(self, m: AgentMemory) -> None:
        for name, seen in m.teammates.items():
            history = self.rooms_of.setdefault(name, [])
            if seen.room >= 0 and (not history or history[-1][1] != seen.room):
                history.append((seen.step, seen.room))

    def _nearest_teammate(self, m: AgentMemory, d: Deliberation) -> tuple[str, tuple[Vec2, int] | None]:
        """My nearest teammate and where I believe it is: where I see it, else at the centre of the room it was last
        known in."""
        best: tuple[float, str, tuple[Vec2, int]] | None = None
        for name in d.teammates:
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

    @staticmethod
    def _room_name(m: AgentMemory, room: int) -> str:
        return m.floorplan.room(room).name

    # --- relevance and retrieval ---------------------------------------------------------------------------
    def level_of(self, d: Deliberation, view: ObjectView) -> str:
        """The object's relevance level, judged the first time it comes up."""
        key = cache_key(view, self.info.benchmark)
        if key not in self.relevance:
            inside = view.kind != ObjectKind.ROOM and view.room >= 0
            answer = d.ask(
                RELEVANCE,
                RelevanceQuestion(view, d.memory, self.scale),
                object=view.name,
                room=self._room_name(d.memory, view.room) if inside else "house",
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
        ranked = []
        for option in options:
            view = self._target(m, option)
            level = "strong" if view is None else self.level_of(d, view)  # a delivery: the goal's own place
            if option.action.target is not None and option.action.target.id in {p.target for p in m.task.predicates}:
                level = "strong"
            mine = option.my_distance
            theirs = None
            position = target_position(option.action, m)
            if where is not None and position is not None and not cfg.no_proximity:
                theirs = d.ctx.nav.path_length(where[0], position)
            tier = 1.0 if cfg.no_relevance else self.scale.tier(level)
            ranked.append(Candidate(option, level, mine, theirs, tier + 1.0 / (mine + 1.0)))
        order = sorted(ranked, key=lambda c: (not c.closer, -c.rank, c.option.text))
        return order if cfg.K == "all" else order[: cfg.K]


def explain_decision(team: type[PerAgentTeam], rationale: Mapping[str, Any]) -> Explanation:
    """``coteam explain``: the retrieved options, each with its relevance and relative proximity, and the choice."""
    r = dict(rationale)
    candidates = r.pop("candidates", [])
    retrieved = Section("Retrieved options (relevance, then relative proximity):", tuple(candidates))
    r.pop("choice", None)
    chose = Section(f"Chose {r.pop('action', '')} ({r.pop('matched', 'the only option retrieved')})")
    return Explanation((retrieved, chose, rationale_section(r)))


class RevecaTeam(PerAgentTeam):
    summary = "REVECA: relevance-ranked memory, top-K options by relevance and relative proximity"
    Config = RevecaConfig
    Agent = RevecaAgent
    payload_types: ClassVar = (Found, SubgoalDone)
    explain = classmethod(explain_decision)
