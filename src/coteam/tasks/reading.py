"""A request in words read by a role: the grammar (:mod:`coteam.tasks.words`) on the symbolic backend, a chat model
on the ``llm`` backend, its answer held to the home's names by the request's schema (the things and places are
enums of the home's items and fixtures) and checked like a world file's goal (:func:`coteam.home.world_file.goal_task`).
An answer that does not check gets the backend's repair round and then the grammar's reading, never a guess."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, Field

from coteam.domain.world import Benchmark, Relation, Scene
from coteam.home.world_file import goal_task
from coteam.llm import PromptLibrary, Role, RoleBackend, RoleContext
from coteam.llm.schema import model_schema, narrow
from coteam.tasks.words import GoalLine, HomeWords, RequestRefused, read_request

PROMPTS = resources.files("coteam.tasks") / "prompts"
RULES = {
    Benchmark.CWAH: "Things go in a container or on a surface: the place decides which.",
    Benchmark.TDWMAT: "Things are carried next to the place.",
}


class GoalChoice(BaseModel):
    item: str = Field(min_length=1)
    target: str = Field(min_length=1)
    count: int = Field(ge=1)


class RequestReading(BaseModel):
    goals: list[GoalChoice] = Field(default_factory=list, max_length=12)
    refuse: str = Field("", max_length=300)


@dataclass(frozen=True)
class Reading:
    """What a request asks for: goal lines, or the one line saying why it is refused; who read it (the model,
    the grammar, or the grammar after the model's answer did not check)."""

    goal: tuple[str, ...]
    refused: str
    source: str

    @property
    def ok(self) -> bool:
        return not self.refused


@dataclass(frozen=True)
class RequestQuestion:
    sentence: str
    scene: Scene


def goal_lines(answer: RequestReading, scene: Scene) -> list[str]:
    """The goal lines of an answer, the relation being the home's: ``near`` under TDW-MAT rules, else the place's
    kind (``in`` a container, ``on`` a surface)."""
    home = HomeWords(scene)
    return [
        GoalLine(
            home.relation(g.target) if g.target in home.fixtures else Relation.ON, g.item, g.target, g.count
        ).text()
        for g in answer.goals
    ]


def _symbolic(ctx: RoleContext[RequestQuestion]) -> RequestReading:
    q = ctx.data
    try:
        lines = read_request(q.sentence, q.scene)
    except RequestRefused as exc:
        return RequestReading(refuse=str(exc))
    return RequestReading(goals=[GoalChoice(item=g.item, target=g.target, count=g.count) for g in lines])


def _check(answer: RequestReading, ctx: RoleContext[RequestQuestion]) -> None:
    if answer.refuse.strip():
        if answer.goals:
            raise ValueError("give goals or a refusal, not both")
        return
    if not answer.goals:
        raise ValueError("give at least one goal, or say in refuse why the request cannot be done")
    goal_task(ctx.data.scene, "request", goal_lines(answer, ctx.data.scene))


def _schema(ctx: RoleContext[RequestQuestion]) -> dict:
    home = HomeWords(ctx.data.scene)
    return narrow(
        model_schema(RequestReading), enums={"goals.item": sorted(home.counts), "goals.target": sorted(home.fixtures)}
    )


READ_REQUEST: Role[RequestQuestion, RequestReading] = Role(
    "tasks.read_request", "task_request", RequestReading, _symbolic, _check, _schema
)


def prompt_library() -> PromptLibrary:
    return PromptLibrary(PROMPTS)


def read(sentence: str, scene: Scene, backend: RoleBackend, agent: str = "team") -> Reading:
    """``sentence`` read by ``backend`` in ``scene``'s home (module docstring)."""
    home = HomeWords(scene)
    categories = {n: c for c, names in home.categories.items() for n in names}
    slots = {
        "items": "; ".join(f"{n} ({categories.get(n, 'other')}, {k})" for n, k in sorted(home.counts.items())),
        "places": "; ".join(f"{f} ({home.fixture_room[f]})" for f in sorted(home.fixtures)),
        "request": sentence.strip()[:500],
        "rules": RULES[scene.benchmark],
    }
    answer = backend.answer(READ_REQUEST, RoleContext(agent, slots, RequestQuestion(sentence, scene)))
    value = answer.value
    if value.refuse.strip():
        return Reading((), value.refuse.strip().splitlines()[0], answer.source)
    return Reading(tuple(goal_lines(value, scene)), "", answer.source)
