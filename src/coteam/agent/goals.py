"""Goal bookkeeping from an agent's point of view: what is done, held, known and still missing."""

from __future__ import annotations

from dataclasses import dataclass

from coteam.agent.memory import AgentMemory
from coteam.domain.observation import ObjectView
from coteam.domain.world import GOAL_RADIUS_M, GoalPredicate, Relation, distance


@dataclass(frozen=True)
class PredicateStatus:
    predicate: GoalPredicate
    target_name: str
    done: tuple[int, ...]  # item ids believed to satisfy the predicate
    held_by_me: tuple[int, ...]
    held_by_others: tuple[int, ...]
    candidates: tuple[int, ...]  # known items of the right name, not done and not held

    @property
    def missing(self) -> int:
        """How many more must still be found and delivered by someone."""
        return max(0, self.predicate.count - len(self.done) - len(self.held_by_me) - len(self.held_by_others))

    @property
    def remaining(self) -> int:
        return max(0, self.predicate.count - len(self.done))


def satisfies(view: ObjectView, predicate: GoalPredicate, memory: AgentMemory) -> bool:
    if view.name != predicate.item or view.held_by:
        return False
    if predicate.relation == Relation.NEAR:
        target = memory.objects.get(predicate.target)
        if target is None:
            return False
        return view.room == target.room and distance(view.position, target.position) <= GOAL_RADIUS_M
    return view.location == predicate.relation and view.holder == predicate.target


def goal_status(memory: AgentMemory) -> list[PredicateStatus]:
    out = []
    names = memory.known_names()
    for pred in memory.task.predicates:
        done, mine, others, cands = [], [], [], []
        for view in memory.items():
            if view.name != pred.item:
                continue
            if satisfies(view, pred, memory):
                done.append(view.id)
            elif view.held_by == memory.agent:
                mine.append(view.id)
            elif view.held_by:
                others.append(view.id)
            else:
                cands.append(view.id)
        out.append(
            PredicateStatus(
                pred,
                names.get(pred.target, f"object {pred.target}"),
                tuple(sorted(done)),
                tuple(sorted(mine)),
                tuple(sorted(others)),
                tuple(sorted(cands)),
            )
        )
    return out


def goal_item_ids(memory: AgentMemory) -> set[int]:
    """Known items that some predicate still needs and that nobody holds."""
    ids: set[int] = set()
    for st in goal_status(memory):
        if st.missing > 0:
            ids.update(st.candidates)
    return ids


def delivery_target(memory: AgentMemory, item_name: str) -> GoalPredicate | None:
    for pred in memory.task.predicates:
        if pred.item == item_name:
            return pred
    return None
