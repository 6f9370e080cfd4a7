"""System-side scoring of PCE scenarios (never left to the model).

Every score arrives on the 1–5 scale and is normalised to [0, 1]; then ``E[gain] = L · G``,
``C = α · cost · 1{move} + β · cost · 1{message}`` and ``U = E[gain] − λ · C`` per leaf.

The scenarios of one tree are disjoint, so when several leaves recommend the same action their expected gains
add up: the action chosen is the one with the highest ``Σ L·G − λ·C`` over its leaves (ties go to the leftmost
leaf). With one leaf per action this is exactly the per-leaf rule; without the sum, an action that is right in
most scenarios loses to one that is right in a single unlikely scenario, because each leaf only carries a
slice of the probability.
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


def action_utilities(scored: Sequence[ScoredLeaf], actions: Sequence[str]) -> dict[str, float]:
    """Utility of each distinct leaf action: its leaves' expected gains summed, minus its cost once.

    ``actions[i]`` is the action text of leaf ``scored[i]``.
    """
    if len(scored) != len(actions):
        raise ValueError(f"{len(scored)} scored leaves but {len(actions)} actions")
    gains: dict[str, float] = {}
    costs: dict[str, float] = {}
    for s, text in zip(scored, actions, strict=True):
        gains[text] = gains.get(text, 0.0) + s.expected_gain
        costs[text] = s.utility - s.expected_gain  # −λ·C: the same action has the same cost in every leaf
    return {text: gains[text] + costs[text] for text in gains}


def best_leaf(scored: Sequence[ScoredLeaf], actions: Sequence[str]) -> ScoredLeaf:
    """The leftmost leaf of the action with the highest summed utility (see the module docstring)."""
    if not scored:
        raise ValueError("no scored leaves to choose from")
    utility = action_utilities(scored, actions)
    return max(zip(scored, actions, strict=True), key=lambda pair: (utility[pair[1]], -pair[0].leaf))[0]
