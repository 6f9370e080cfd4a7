"""EvoCF's structured memory across episodes, in the team's store (:mod:`coteam.kit.store`): every action the team
took with its outcome (a transition), and the rule library induced from the failures, with support and
contradiction counts. Retrieval embeds an action's facts (:meth:`~.rules.ActionFacts.text`) with the configured
local embedder (:mod:`coteam.kit.embedding`) and returns the ``K`` most similar past failures: the rules induced
from them (the paper's ``R(q)``) and their outcomes (``psi_out``)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from coteam.kit import MethodStore, StoreSchema, TableMerge, TextEmbedder, top_k
from coteam.methods.evocf.rules import ActionFacts, Outcome, Rule, RuleKind

SCHEMA = StoreSchema(
    version=1,
    tables={
        "transitions": "episode TEXT, step INTEGER, robot TEXT, situation TEXT, action TEXT, facts TEXT, "
        "joint TEXT, outcome TEXT, reason TEXT, rule TEXT",
        "rules": "rule TEXT PRIMARY KEY, kind TEXT, verb TEXT, conditions TEXT, reason TEXT, support INTEGER, "
        "contradictions INTEGER",
    },
    keyed={"rules": TableMerge(("rule",), ("support", "contradictions"))},
)


@dataclass(frozen=True)
class Failure:
    """A failed action of the memory: where, what, why, and the rule induced from it ('' without induction)."""

    episode: str
    step: int
    facts: ActionFacts
    reason: str
    rule: str

    def text(self) -> str:
        return f"{self.facts.text()}: failed ({self.reason})"


@dataclass(frozen=True)
class Recall:
    """What retrieval found for one action: the similar past failures and the rules induced from them."""

    failures: tuple[Failure, ...]
    rules: tuple[Rule, ...]


class ExperienceMemory:
    """The transitions and the rule library of one team's store (module docstring)."""

    def __init__(self, store: MethodStore, embedder: TextEmbedder):
        self.store = store
        self.embedder = embedder
        self.rules: dict[str, Rule] = {}
        for key, kind, verb, conditions, reason, support, contradictions in store.db.execute(
            "SELECT rule, kind, verb, conditions, reason, support, contradictions FROM rules ORDER BY rowid"
        ):
            self.rules[key] = Rule(RuleKind(kind), verb, json.loads(conditions), reason, support, contradictions)
        rows = store.db.execute("SELECT episode, step, facts, reason, rule FROM transitions ORDER BY rowid").fetchall()
        self.history = [Outcome(ActionFacts.from_json(f), r) for _, _, f, r, _ in rows]  # what induction learns from
        self.failures = [Failure(e, s, ActionFacts.from_json(f), r, rule) for e, s, f, r, rule in rows if r]
        self._vectors = embedder.embed([f.text() for f in self.failures]).reshape(len(self.failures), embedder.dim)
        self._queries: dict[str, np.ndarray] = {}

    def record(
        self, episode: str, step: int, situation: str, facts: ActionFacts, joint: str, reason: str, rule: Rule | None
    ) -> None:
        """One action's outcome (``reason`` '' when it succeeded) in ``situation`` (what the team knew, in words),
        with its preconditions (``facts``) and the ``joint`` plan it was part of; a failure adds ``rule`` to the
        library with the failures and successes of the memory it covers (its support and contradictions), a success
        contradicts every rule that predicted its failure."""
        key = ""
        self.history.append(Outcome(facts, reason))
        if reason:
            if rule is not None:
                key = rule.key
                self._put(self.counted(rule))
            failure = Failure(episode, step, facts, reason, key)
            self.failures.append(failure)
            self._vectors = np.vstack([self._vectors, self.embedder.embed([failure.text()])])
        else:
            for old in [r for r in self.rules.values() if r.matches(facts)]:
                self._put(Rule(old.kind, old.verb, old.conditions, old.reason, old.support, old.contradictions + 1))
        with self.store.db as db:
            db.execute(
                "INSERT INTO transitions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    episode,
                    step,
                    facts.robot,
                    situation,
                    facts.action,
                    facts.to_json(),
                    joint,
                    "failed" if reason else "done",
                    reason,
                    key,
                ),
            )

    def counted(self, rule: Rule) -> Rule:
        """``rule`` with its support (the memory's actions it covers that failed with its reason) and contradictions
        (those that succeeded)."""
        covered = [o for o in self.history if rule.matches(o.facts)]
        support = sum(o.reason == rule.reason for o in covered)
        contradictions = sum(not o.reason for o in covered)
        return Rule(rule.kind, rule.verb, rule.conditions, rule.reason, support, contradictions)

    def _put(self, rule: Rule) -> None:
        self.rules[rule.key] = rule
        with self.store.db as db:
            db.execute(
                "INSERT OR REPLACE INTO rules VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    rule.key,
                    rule.kind.value,
                    rule.verb,
                    json.dumps(dict(rule.conditions), sort_keys=True),
                    rule.reason,
                    rule.support,
                    rule.contradictions,
                ),
            )

    def recall(self, facts: ActionFacts, k: int, min_confidence: float) -> Recall:
        """The ``k`` past failures most similar to ``facts`` and their rules held with ``min_confidence``."""
        text = facts.text()
        query = self._queries.get(text)
        if query is None:
            query = self._queries[text] = self.embedder.embed([text])[0]
        found = tuple(self.failures[i] for i, _ in top_k(query, self._vectors, k))
        keys = dict.fromkeys(f.rule for f in found if f.rule)
        rules = tuple(r for key in keys if (r := self.rules.get(key)) and r.confidence >= min_confidence)
        return Recall(found, rules)
