"""``mhp``: an MCTS hierarchical planner over high-level actions, in the spirit of the benchmarks' MHP baseline.

Each agent plans on its own (no messages, only its own memory). At every decision it runs ``iterations``
iterations of UCT over its high-level actions. Every iteration takes a *particle* — a guess of where each
still-missing goal item is, drawn from small category priors over the places the agent has not searched
(unexplored rooms, unopened containers) — descends the tree (open loop: nodes are action sequences, the actions
available below the root come from the particle's state), simulates the chosen actions on an abstract model of
the benchmark (moves cost path length converted to steps or frames, searching reveals the particle's items,
grabs fill hands, deliveries score), completes the trajectory with the rule-based ``rhp`` policy, for at most
``depth`` actions in all, and backs up its return. C-WAH: ``item_value × delivered − steps`` (for a finished
trajectory: minus the steps to finish). TDW-MAT: the items transported within the remaining time, each worth
a little less the later it arrives. Root actions are compared on common particles. The most visited root action
is executed; the ``rhp`` choice is tried first and wins ties.

The abstract models are the core's (:mod:`coteam.value.abstract`, shared with the team value model of the other
symbolic planners); their modelling choices are this method's switches. This module does not import the
simulator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from coteam.agent.options import ActionOption
from coteam.agent.reasoning import Decision, DecisionContext
from coteam.domain.world import Benchmark
from coteam.kit import AgentReasoner, MethodConfig, PerAgentTeam
from coteam.kit.policies import rule_based_choice
from coteam.value.abstract import CostModel, CwahModel, Key, ModelChoices, TdwModel

DEFAULT_ITERATIONS = 200
DEFAULT_DEPTH = 24
DEFAULT_EXPLORATION = 0.3


class MhpConfig(MethodConfig, ModelChoices):
    """The search's switches, and the abstract models' modelling choices (inherited from the core)."""

    iterations: int = Field(DEFAULT_ITERATIONS, ge=1, description="MCTS iterations per decision")
    depth: int = Field(DEFAULT_DEPTH, ge=1, description="high-level actions simulated per iteration (tree + rollout)")
    exploration: float = Field(DEFAULT_EXPLORATION, ge=0, description="UCT exploration constant on normalised returns")


# --- the search ------------------------------------------------------------------------------------------
class _Node:
    __slots__ = ("children", "n", "w")

    def __init__(self) -> None:
        self.children: dict[Key, _Node] = {}
        self.n = 0
        self.w = 0.0


class MhpAgent(AgentReasoner):
    """One agent's UCT search over its high-level actions (see the module docstring)."""

    config: MhpConfig

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.benchmark = self.info.benchmark
        self.iterations = self.config.iterations
        self.depth = self.config.depth
        self.exploration = self.config.exploration
        self.cost = CostModel.from_physics(self.info.physics, self.config)

    def decide(self, ctx: DecisionContext) -> Decision:
        options = [o for o in ctx.options if not o.action.is_message]
        rule_choice, rule_name = rule_based_choice(ctx)
        default = rule_choice.action
        geo = self.team.geometry(ctx.nav)
        model: CwahModel | TdwModel = (
            CwahModel(ctx, geo, self.cost) if self.benchmark == Benchmark.CWAH else TdwModel(ctx, geo, self.cost)
        )
        if model.stuck(model.root):  # type: ignore[arg-type]
            return Decision(
                default,
                {
                    "method": "mhp",
                    "iterations": 0,
                    "rule": rule_name,
                    "note": "nothing left to plan for: rule-based fallback",
                },
            )
        keyed: list[tuple[Key, ActionOption]] = []
        for o in options:
            k = model.key_of(o)
            if k is not None and all(k != kk for kk, _ in keyed):
                keyed.append((k, o))
        if not keyed:
            fallback = next((o for o in ctx.options if o.action == default), ctx.options[0])
            return Decision(fallback.action, {"method": "mhp", "iterations": 0, "rule": "no plannable action"})
        # The rule-based choice is tried first and wins ties.
        keyed.sort(key=lambda ko: ko[1].action != default)
        root_keys = [k for k, _ in keyed]
        root = self._search(model, root_keys)

        def mean(k: Key) -> float:
            return root.children[k].w / max(1, root.children[k].n)

        best_key = max(root_keys, key=lambda k: (root.children[k].n, mean(k), -root_keys.index(k)))
        rule_key = root_keys[0] if keyed[0][1].action == default else None
        if rule_key is not None and mean(rule_key) >= mean(best_key):
            best_key = rule_key  # the search found nothing better than the rule
        chosen = dict(keyed)[best_key]
        stats = {o.text: {"visits": root.children[k].n, "mean": round(mean(k), 2)} for k, o in keyed}
        rationale = {
            "method": "mhp",
            "iterations": self.iterations,
            "depth": self.depth,
            "rule_choice": next((o.text for _, o in keyed if o.action == default), ""),
            "root": stats,
        }
        return Decision(chosen.action, rationale)

    def _search(self, model: CwahModel | TdwModel, root_keys: Sequence[Key]) -> _Node:
        """UCT from the root. Root actions are compared on common particles: the ``n``-th simulation through a
        root action uses the ``n``-th sampled particle, so differences between actions are not sampling noise."""
        rng = self.rng
        root = _Node()
        for k in root_keys:
            root.children[k] = _Node()
        particles: list = []
        bounds = [math.inf, -math.inf]
        max_depth = self.depth
        for _ in range(self.iterations):
            key = self._select(root, root_keys, bounds)
            node = root.children[key]
            while len(particles) <= node.n:
                particles.append(model.sample(rng))
            s = particles[node.n].copy()
            model.step(s, key)
            path = [root, node]
            depth = 1
            while depth < max_depth and not model.terminal(s):
                keys = model.legal(s)
                if not keys:
                    break
                key = self._select(node, keys, bounds)
                child = node.children.get(key)
                if child is None:
                    child = node.children[key] = _Node()
                model.step(s, key)
                depth += 1
                node = child
                path.append(node)
                if child.n == 0:
                    break  # expanded a new node: roll out from here
            while depth < max_depth and not model.terminal(s):
                k = model.default(s)
                if k is None:
                    break
                model.step(s, k)
                depth += 1
            v = model.value(s)
            bounds[0], bounds[1] = min(bounds[0], v), max(bounds[1], v)
            for n in path:
                n.n += 1
                n.w += v
        return root

    def _select(self, node: _Node, keys: Sequence[Key], bounds: list[float]) -> Key:
        """The first untried action, else the UCT maximiser (mean returns normalised to the range seen)."""
        children = node.children
        for k in keys:
            child = children.get(k)
            if child is None or child.n == 0:
                return k
        lo, hi = bounds
        span = hi - lo if hi > lo else 1.0
        log_n = math.log(max(1, node.n))
        c = self.exploration
        best, choice = -math.inf, keys[0]
        for k in keys:
            child = children[k]
            score = (child.w / child.n - lo) / span + c * math.sqrt(log_n / child.n)
            if score > best:
                best, choice = score, k
        return choice


class MhpTeam(PerAgentTeam):
    summary = "MCTS hierarchical planner: UCT over high-level actions with belief sampling (MHP baseline)"
    Config = MhpConfig
    Agent = MhpAgent
