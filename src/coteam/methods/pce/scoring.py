"""System-side scoring of PCE scenarios (never left to the model).

Every score arrives on the 1–5 scale and is normalised to [0, 1]; then ``E[gain] = L · G``,
``C = α · cost · 1{move} + β · cost · 1{message}`` and ``U = E[gain] − λ · C``; the leaf with the highest ``U``
wins (ties go to the leftmost leaf).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Weights:
    alpha: float = 1.0  # weight of travel cost
    beta: float = 1.0  # weight of message cost
    lam: float = 1.0  # trade-off between expected gain and cost


@dataclass(frozen=True)
class LeafScore:
    leaf: int
    likelihood: float  # 1-5
    gain: float  # 1-5
    cost_penalty: float  # 1-5


@dataclass(frozen=True)
class ScoredLeaf:
    leaf: int
    likelihood: float  # normalised
    gain: float
    cost_penalty: float
    expected_gain: float
    cost: float
    utility: float

    def to_json(self) -> dict[str, float | int]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


def normalize(score: float) -> float:
    """A 1–5 score to [0, 1] (values outside the scale are clamped)."""
    return (min(5.0, max(1.0, float(score))) - 1.0) / 4.0


def score_leaf(raw: LeafScore, *, is_message: bool, weights: Weights) -> ScoredLeaf:
    likelihood, gain, cost_penalty = normalize(raw.likelihood), normalize(raw.gain), normalize(raw.cost_penalty)
    expected = likelihood * gain
    cost = (weights.beta if is_message else weights.alpha) * cost_penalty
    return ScoredLeaf(raw.leaf, likelihood, gain, cost_penalty, expected, cost, expected - weights.lam * cost)


def best_leaf(scored: Sequence[ScoredLeaf]) -> ScoredLeaf:
    if not scored:
        raise ValueError("no scored leaves to choose from")
    return max(scored, key=lambda s: (s.utility, -s.leaf))


def distance_penalty(metres: float) -> float:
    """Travel distance on the 1–5 cost scale: 1 under 3 m, 3 at 10 m, 5 beyond 15 m (linear in between)."""
    if metres <= 3.0:
        return 1.0
    if metres <= 10.0:
        return 1.0 + 2.0 * (metres - 3.0) / 7.0
    if metres <= 15.0:
        return 3.0 + 2.0 * (metres - 10.0) / 5.0
    return 5.0


def message_penalty(chars: int, limit: int = 500) -> float:
    """Message length on the 1–5 cost scale: 1 for a short note, 5 for a full 500-character message."""
    return 1.0 + 4.0 * min(1.0, max(0, chars) / limit)
