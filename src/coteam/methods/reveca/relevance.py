"""REVECA's relevance estimation: how much an object matters to the common goal, judged once at first sight.

The paper grades every object on four levels (Strong 1, Medium 0.5, Low 0, None -1); its ablation also tries three
and five. :class:`RelevanceScale` is the scale of ``R`` levels, best first, with the tier each
level stands in when memory is ranked (relevance first, nearness only within a level). A judgement is cached: by
class on C-WAH (a second apple is as relevant as the first), by object on TDW-MAT.

The symbolic judge (:func:`symbolic_grade`) reads the goal and the placement priors: a goal item or the goal's
destination is Strong; a carrier, a container the priors say holds the goal's kind of things, or the room most
likely to hold them is Medium; other furniture and rooms, and items of a goal item's kind, are Low; anything else
(a distractor) is None.
"""

from __future__ import annotations

from dataclasses import dataclass

from coteam.agent.memory import AgentMemory
from coteam.domain.observation import ObjectView
from coteam.domain.priors import CONTAINER_PRIOR_DEFAULT, container_weight, item_category, room_weight
from coteam.domain.world import Benchmark, ObjectKind

# the four grades the symbolic judge gives, as the four-level scale names them; other scales fold them
GRADES = ("strong", "medium", "low", "none")
SCALES = {
    3: ("strong", "some", "none"),
    4: ("strong", "medium", "low", "none"),
    5: ("strong", "medium", "low", "slight", "none"),
}
# the four grades on the other scales (R=5's "slight" is furniture and rooms of no use to the goal)
FOLD = {3: {"medium": "some", "low": "some"}, 4: {}, 5: {}}
# the paper's relevance values for its four levels; the three- and five-level scales in between
WORTH = {"strong": 1.0, "medium": 0.5, "some": 0.25, "low": 0.0, "slight": -0.5, "none": -1.0}
LIKELY = 0.5  # a room at least this likely, relative to the likeliest, to hold the goal's kind of things


@dataclass(frozen=True)
class RelevanceScale:
    levels: int = 4

    @property
    def names(self) -> tuple[str, ...]:
        return SCALES[self.levels]

    def tier(self, level: str) -> float:
        """The weight a level carries when memory is ranked: each level outranks every nearer object below it."""
        return 10.0 ** (len(self.names) - 1 - self.names.index(level))

    def worth(self, level: str) -> float:
        """The level's value, 1 (strong) down to -1 (none), as the paper scores its four levels."""
        return WORTH[level]

    def letter(self, level: str) -> str:
        return "ABCDE"[self.names.index(level)]

    def from_letter(self, letter: str) -> str:
        return self.names["ABCDE".index(letter)]

    def fold(self, grade: str, useless_place: bool = False) -> str:
        """A symbolic grade on this scale (``useless_place``: furniture or a room the goal needs nothing from)."""
        if self.levels == 5 and useless_place:
            return "slight"
        return FOLD[self.levels].get(grade, grade)


def cache_key(view: ObjectView, benchmark: Benchmark) -> tuple[str, int | str]:
    """What a judgement is cached under: the class on C-WAH, the object on TDW-MAT (rooms always by id)."""
    if view.kind == ObjectKind.ROOM or benchmark == Benchmark.TDWMAT:
        return ("id", view.id)
    return ("class", view.name)


def goal_categories(memory: AgentMemory) -> set[str]:
    return {memory.item_category(name, goal=True) for name in memory.task.needed_names()} - {""}


def symbolic_grade(view: ObjectView, memory: AgentMemory, scale: RelevanceScale) -> str:
    """The symbolic judge (module docstring)."""
    task = memory.task
    wanted = task.needed_names()
    targets = {p.target for p in task.predicates}
    kinds = goal_categories(memory)
    if view.kind == ObjectKind.ITEM:
        if view.name in wanted:
            return "strong"
        if view.capacity > 0:
            return scale.fold("medium")
        if item_category(view.name) in kinds:
            return scale.fold("low")
        return "none"
    if view.id in targets:
        return "strong"
    if view.kind == ObjectKind.ROOM:
        weights = {r.id: max((room_weight(k, r.name) for k in kinds), default=0.0) for r in memory.floorplan.rooms}
        best = max(weights.values(), default=0.0)
        likely = best > 0 and weights.get(view.id, 0.0) >= LIKELY * best
        return scale.fold("medium" if likely else "low", useless_place=not likely)
    if view.kind == ObjectKind.CONTAINER:  # named by the priors for the goal's kind of things
        named = max((container_weight(k, view.name) for k in kinds), default=0.0) > CONTAINER_PRIOR_DEFAULT
        return scale.fold("medium" if named else "low", useless_place=not named)
    return scale.fold("low", useless_place=True)
