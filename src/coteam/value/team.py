"""The team value model: what one of my actions is worth to the whole team, estimated from the belief state.

Shared by the symbolic backends of the reasoning methods (PCE's Planner / Composer / Evaluator take their
numbers from it). Per decision:

1. **Particles.** ``particles`` guesses of the hidden world are drawn from the agent's
   :class:`~coteam.belief.BeliefState` (:meth:`~coteam.value.abstract.CwahModel.sample_belief`): where each
   missing goal unit is (category priors, what I and my teammates have seen, searched and reported), and whether
   each known instance is still there. Every particle records the binary facts it makes true, so a scenario
   ("<apple> is in the kitchen") is the set of particles where it holds.
2. **Team rollouts.** For a first action of mine, every particle is rolled out on the benchmark's abstract model
   (:mod:`coteam.value.abstract`, the same one ``mhp`` searches) for the whole team: each robot starts where the
   belief puts it, with what it holds; whichever robot is free first acts next; after its first action every
   robot follows the models' rule-based default policy. The rollout ends when every goal unit is delivered (or
   after ``max_events`` actions). A teammate that takes the item of my first action before me leaves me the walk
   there for nothing.
3. **Team value** of a rollout. C-WAH: ``V = −(T_last + w_flow · T_mean)``, the step of the last delivery plus
   ``w_flow`` times the mean delivery step (so that a delivery earlier is worth something even when a teammate
   sets the makespan); an unfinished rollout counts each undelivered unit as delivered ``unfinished_steps`` after
   its end. TDW-MAT: ``V = item_value · Σ_units (1 − late_discount · t_unit / budget)``, the items transported
   within the model's time budget, each worth less the later it arrives.
4. **Teammates by convention.** Robots are ranked by name. A teammate ranked before me is predicted to take the
   first action its own model would choose when planning without the robots ranked after it (so a robot ranked
   first plans as if alone, the second around the first's predicted choice, ...); a teammate ranked after me
   plans around me, so I leave it out. A teammate that announced its next action (``TeamStatus.intent``, at
   most ``intent_ttl_steps`` old) is held to it, whatever its rank. Teammates whose position I do not know are
   left out. Agents that see the same scene thus split the work instead of duplicating it.
5. **Scores** for PCE's Evaluator, for my option ``a`` under scenario ``S`` (mean over the particles of ``S``; all
   particles when none is in ``S``), with ``d(a)`` my first action's duration. C-WAH, with the team time
   ``T = −V`` and its scale ``Z = (1 + w_flow) · (steps left + unfinished_steps · units left)``:
   ``G = 1 − (T(a|S) − d(a)) / Z`` and ``C = d(a) / Z``, so ``G − C = 1 − T(a|S) / Z`` ranks actions by expected
   team time. TDW-MAT, where ``V`` already prices time (the budget and the late discount), with the scale
   ``Z = item_value · units at stake + frames left`` (units still wanted, held, or in my carrier):
   ``G = (V(a|S) + d(a)) / Z`` and ``C = d(a) / Z``, so ``G − C = V(a|S) / Z`` ranks actions by expected team
   value. Both are clamped to [0, 1], which only matters near the end (my first action outlasting the time left,
   or the team done before it ends).
6. **Messages.** A message is worth sending only when it changes a teammate's choice: for each teammate whose
   own best first action (planning as in 4, without me) is the target I would take, or is a target I could take
   over, the model compares the team value when I announce that target (one message, then the target; the
   teammate takes its second-best first action) with the value of my best physical action without a message.
   The announcement is advised when it wins. A teammate ranked after me that sees me now plans around my
   predicted choice already: no message to it.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from coteam.agent.messages import TeamStatus
from coteam.agent.options import ActionOption
from coteam.agent.reasoning import DecisionContext
from coteam.belief import BeliefState
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb, parse_action
from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, Vec2
from coteam.value.abstract import (
    MODEL_CHOICES,
    CostModel,
    CwahModel,
    Fact,
    Geometry,
    Key,
    ModelChoices,
    TdwModel,
    goal_units,
)

Condition = tuple[Fact, bool]  # a fact and the truth value a scenario assumes for it
SEES_ME_STEPS = 1  # a teammate I saw this recently saw me too, so it can predict my choice


@dataclass(frozen=True)
class ValueConfig:
    """Constants of the team value model (tuned on ``cwah`` / ``tdwmat`` seeds 101-110, see docs/benchmarks.md)."""

    particles: int = 16  # belief particles per decision (common to every option: differences are not noise)
    prediction_particles: int = 4  # the first of them used to predict a teammate's choice (8 was no better)
    flow_weight: float = 1.0  # C-WAH: weight of the mean delivery step next to the last one
    max_events: int = 60  # abstract actions simulated per rollout, all robots together
    unfinished_steps: float = 30.0  # C-WAH: steps charged per unit still undelivered when a rollout stops
    intent_ttl_steps: float = 40.0  # a teammate's announced next action binds it for this many steps


@dataclass(frozen=True)
class Robot:
    """A robot as a rollout starts it."""

    name: str
    position: Vec2
    held: tuple[str, ...]  # goal item names in its hands
    carrier: bool = False  # TDW-MAT: it carries a container


@dataclass(frozen=True)
class Outcome:
    """One first action of mine, rolled out on every particle."""

    values: tuple[float, ...]  # team value per particle
    durations: tuple[float, ...]  # my first action's duration per particle (steps / frames)


@dataclass(frozen=True)
class Announcement:
    """A message the model advises: announce ``key`` (then do it), because ``teammate`` would otherwise take it or
    conflict with it."""

    key: Key
    teammate: str
    value_with: float  # team value when I announce
    value_without: float  # team value of my best action without a message
    others: tuple[tuple[Robot, Key | None], ...]  # the teammates of the announcing rollouts, with their first actions


class ValueModel:
    """The team value model of one decision (see the module docstring). Build one per decision; it is cheap
    until asked: outcomes are rolled out on demand and cached. ``alone``: the rollouts leave the teammates out (my
    actions valued as if I worked alone, for a method's ablation that tells its planner nothing of them);
    ``heed_intents`` false: a teammate's announced next action does not bind it (its choice is predicted instead).
    """

    def __init__(
        self,
        ctx: DecisionContext,
        belief: BeliefState,
        physics: Physics,
        *,
        config: ValueConfig = ValueConfig(),
        geometry: Geometry | None = None,
        seed: str = "",
        choices: ModelChoices = MODEL_CHOICES,
        alone: bool = False,
        heed_intents: bool = True,
    ):
        m = ctx.memory
        self.memory, self.belief, self.config = m, belief, config
        self.cwah = m.benchmark == Benchmark.CWAH
        cost = CostModel.from_physics(physics, choices)
        geo = geometry if geometry is not None and geometry.nav is ctx.nav else Geometry(ctx.nav)
        self.model: CwahModel | TdwModel = (CwahModel if self.cwah else TdwModel)(ctx, geo, cost)
        self.model.rebase(belief)
        rng = random.Random(f"{seed}:{m.agent}")
        drawn = [self.model.sample_belief(belief, rng) for _ in range(config.particles)]
        self.particles = [p for p, _ in drawn]
        self.facts = [f for _, f in drawn]
        self.message_time = 1.0 if self.cwah else float(physics.tdw_frames["send_message"])
        if self.cwah:
            self.time_left = max(1.0, m.task.horizon - m.step)
        else:
            self.time_left = max(1.0, float(m.task.horizon - m.frames))
        held = [v for v in m.held_items() if v.name in self.model.root.want]
        self.me = Robot(m.agent, m.position, tuple(v.name for v in held if v.capacity == 0), _carrying(m))
        self.teammates = [] if alone else self._teammates()
        self.scale = self._score_scale()
        self.announced = self._announced() if heed_intents else {}
        self._outcomes: dict[tuple, Outcome] = {}
        self._choices: dict[tuple, list[Key]] = {}
        self._choice_values: dict[tuple, dict[Key, float]] = {}
        self._leaders: list[tuple[Robot, Key | None]] | None = None
        self._masks: dict[tuple, list[bool]] = {}
        fields = self.model.ROBOT_FIELDS
        self._starts: dict[str, tuple] = {}
        self._hands_index = fields.index("held" if self.cwah else "hand")
        self._t_index = fields.index("t")
        self._dead_index = fields.index("dead") if "dead" in fields else -1

    def _score_scale(self) -> float:
        """``Z``, the scale of G and C (module docstring, point 5). C-WAH: the team time can reach (1 + w_flow) x
        (time left + unfinished_steps per unit left). TDW-MAT: the value at stake (every unit still wanted, held or
        in my carrier) plus the frames left, so that ``G = (V + d) / Z`` stays within [0, 1]."""
        root = self.model.root
        if self.cwah:
            units = sum(root.want.values()) + goal_units(root.held)  # type: ignore[union-attr]
            return (1.0 + self.config.flow_weight) * (self.time_left + self.config.unfinished_steps * units)
        units = sum(root.want.values()) + root.load + sum(len(r.held) for r in (self.me, *self.teammates))  # type: ignore[union-attr]
        return self.model.cost.tdw_item_value * units + self.time_left

    # --- who is in the rollouts ----------------------------------------------------------------------------
    def _teammates(self) -> list[Robot]:
        out = []
        names = self.memory.known_names()
        for name, t in sorted(self.belief.teammates().items()):
            if t.position is None:
                continue
            held = tuple(
                n for n in (names.get(x) or self.belief.item_name(x) for x in t.holding) if n in self.model.root.want
            )
            out.append(Robot(name, t.position, held))
        return out

    def _announced(self) -> dict[str, Key]:
        """Teammates' announced next actions that are recent and still make sense in the model."""
        m = self.memory
        out: dict[str, Key] = {}
        for msg in m.messages:
            status = msg.payload
            if msg.sender == m.agent or not isinstance(status, TeamStatus) or not status.intent:
                continue
            if m.step - msg.step * self.belief.message_step_ratio > self.config.intent_ttl_steps:
                continue
            try:
                action = parse_action(status.intent, m.benchmark)
            except ValueError:
                continue
            key = self.model.key_of(ActionOption(action, status.intent, 0.0))
            if key is not None and self._intent_open(msg.sender, key):
                out[msg.sender] = key
        return out

    def _intent_open(self, name: str, key: Key) -> bool:
        """Whether teammate ``name``'s announced action is still to be done: its target is open, and the
        teammate still holds what it means to deliver (a put, a transport) or not yet what it means to grab."""
        if not self.key_open(key):
            return False
        verb, arg = key
        holding = self.belief.teammate(name).holding
        if verb == "put":
            robot = next((r for r in self.teammates if r.name == name), None)
            return robot is not None and any(self.model.target_of[n] == arg for n in robot.held)
        if verb == "transport":
            return bool(holding)
        if verb == "grab":
            return arg not in holding
        return True

    def _sees_me(self, name: str) -> bool:
        """Whether teammate ``name`` sees me now (sightings are mutual: it saw me when I saw it this step)."""
        seen = self.belief.teammate(name).last_seen_step
        return seen is not None and self.memory.step - seen <= SEES_ME_STEPS

    def key_open(self, key: Key) -> bool:
        """Whether the target of an abstract action is still there to be taken in the root state."""
        verb, arg = key
        root = self.model.root
        if verb == "check":
            return any(k == arg for k, _ in root.unchecked)  # type: ignore[union-attr]
        if verb == "explore" and self.cwah:
            return arg in root.unexplored  # type: ignore[union-attr]
        if verb == "put":
            return arg in self.model.target_pos  # type: ignore[union-attr]  (a goal target of this task)
        return True

    def leaders(self) -> list[tuple[Robot, Key | None]]:
        """Teammates that enter my rollouts, each with its first action: those ranked before me (announced or
        predicted) and those ranked after me that announced theirs."""
        if self._leaders is None:
            out: list[tuple[Robot, Key | None]] = []
            for r in self.teammates:
                if r.name < self.me.name:
                    key = self.announced.get(r.name)
                    if key is None:
                        ranked = self.choices(r, out)
                        key = ranked[0] if ranked else None
                    out.append((r, key))
            out += [
                (r, self.announced[r.name])
                for r in self.teammates
                if r.name > self.me.name and r.name in self.announced
            ]
            self._leaders = out
        return self._leaders

    def choices(self, robot: Robot, before: Sequence[tuple[Robot, Key | None]] = ()) -> list[Key]:
        """``robot``'s legal first actions, best first, when it plans around ``before`` (and without me)."""
        cache_key = (robot.name, tuple((r.name, k) for r, k in before))
        if cache_key not in self._choices:
            n = self.config.prediction_particles
            keys: list[Key] = []  # legal in some particle (known items are drawn per particle, not in the root)
            for p in self.particles[:n]:
                s = p.copy()
                self.model.put_robot(s, self._start(robot))
                keys += [k for k in self.model.legal(s) if k not in keys]
            values = {k: self._mean(self._rollouts(before, robot, k, count=n)[0]) for k in keys}
            self._choice_values[cache_key] = values
            self._choices[cache_key] = sorted(keys, key=lambda k: (-values[k], str(k)))
        return self._choices[cache_key]

    def choice_value(self, robot: Robot, before: Sequence[tuple[Robot, Key | None]], key: Key) -> float:
        """The team value :meth:`choices` gave ``robot``'s first action ``key`` when it plans around ``before``."""
        self.choices(robot, before)
        return self._choice_values[(robot.name, tuple((r.name, k) for r, k in before))][key]

    def _start(self, robot: Robot) -> tuple:
        """A robot's fields at time 0 (mine exactly as in the root state, a teammate's from the belief), with a
        list of its own for the hands (a rollout changes them)."""
        base = self._starts.get(robot.name)
        if base is None:
            if robot is self.me:
                base = self.model.robot(self.model.root)
            else:
                base = self.model.start(robot.position, list(robot.held), robot.carrier)
            self._starts[robot.name] = base
        h = self._hands_index
        return (*base[:h], list(base[h]), *base[h + 1 :])

    @cached_property
    def rollout_choice(self) -> Key | None:
        """The default policy's action for me now, on the first particle: the policy every option's rollout follows
        after its first action, so choosing this action keeps the plan those rollouts valued. The leaders' first
        actions are not applied first (applying them, and predicting a teammate with the same near-tie rule, did not
        help: docs/benchmarks.md)."""
        s = self.particles[0].copy()
        self.model.put_robot(s, self._start(self.me))
        return self.model.default(s)

    # --- outcomes ------------------------------------------------------------------------------------------
    def key(self, option: ActionOption) -> Key | None:
        """The abstract action of one of my options (None for messages and for moves that can only waste time)."""
        return None if option.action.is_message else self.model.key_of(option)

    def outcome(self, option: ActionOption) -> Outcome | None:
        key = self.key(option)
        return None if key is None else self.outcome_of(key)

    def outcome_of(
        self, key: Key, delay: float = 0.0, others: Sequence[tuple[Robot, Key | None]] | None = None
    ) -> Outcome:
        """My first action ``key`` (after ``delay``) rolled out with ``others`` (default: :meth:`leaders`)."""
        others = self.leaders() if others is None else others
        cache_key = (key, delay, tuple((r.name, k) for r, k in others))
        if cache_key not in self._outcomes:
            values, durations = self._rollouts(others, self.me, key, delay)
            self._outcomes[cache_key] = Outcome(tuple(values), tuple(durations))
        return self._outcomes[cache_key]

    def _rollouts(
        self,
        others: Sequence[tuple[Robot, Key | None]],
        robot: Robot,
        key: Key,
        delay: float = 0.0,
        count: int | None = None,
    ) -> tuple[list[float], list[float]]:
        values, durations = [], []
        for p in self.particles[:count]:
            v, d = self._rollout(p.copy(), others, robot, key, delay)
            values.append(v)
            durations.append(d)
        return values, durations

    def _rollout(
        self,
        s: Any,
        others: Sequence[tuple[Robot, Key | None]],
        robot: Robot,
        key: Key,
        delay: float,
        steps: list[Key] | None = None,
        max_steps: int = 0,
    ) -> tuple[float, float]:
        """One team rollout; ``steps``, when given, collects ``robot``'s actions (the rollout stops after
        ``max_steps`` of them)."""
        model, cfg, cwah = self.model, self.config, self.cwah
        put, get, advance = model.put_robot, model.robot, model.step
        team = [*others, (robot, key)]
        states = [self._start(r) for r, _ in team]
        deliveries: list[float] = []
        me = len(team) - 1

        def act(i: int, k: Key) -> None:
            """Robot ``i``, whose fields are in ``s``, takes ``k``."""
            if steps is not None and i == me:
                steps.append(k)
            before = s.delivered
            advance(s, k)
            states[i] = get(s)
            if cwah and s.delivered > before:
                deliveries.extend([s.t] * int(s.delivered - before))

        for i, (_, k) in enumerate(team[:-1]):
            if k is not None:
                put(s, states[i])
                act(i, k)
        put(s, states[me])
        if delay:
            s.t += delay
        act(me, key)
        ti, dead = self._t_index, self._dead_index
        duration = states[me][ti]
        # Whichever robot is free first acts next (ties: name order); robots with nothing to do drop out.
        active = sorted((i for i in range(len(team)) if dead < 0 or not states[i][dead]), key=lambda j: team[j][0].name)
        for _ in range(cfg.max_events):
            if not active or self._finished(s, states) or (steps is not None and len(steps) >= max_steps):
                break
            i = active[0]
            first = states[i][ti]
            for j in active:
                if states[j][ti] < first:
                    i, first = j, states[j][ti]
            put(s, states[i])
            k = model.default(s)
            if k is None:
                active.remove(i)
                continue
            act(i, k)
            if dead >= 0 and states[i][dead]:
                active.remove(i)
        return self._value(s, states, deliveries), duration

    def plan(self, key: Key, others: Sequence[tuple[Robot, Key | None]] | None = None, length: int = 3) -> list[Key]:
        """My sub-plan that starts with ``key``: that action, then the actions the default policy takes next in the
        first particle's team rollout with ``others`` (default: :meth:`leaders`), at most ``length`` in all."""
        steps: list[Key] = []
        others = self.leaders() if others is None else others
        self._rollout(self.particles[0].copy(), others, self.me, key, 0.0, steps, length)
        return steps[:length]

    def action_of(self, key: Key) -> HighLevelAction | None:
        """The high-level action of an abstract one (None for what only a particle holds: an item or a place
        nobody has seen)."""
        verb, arg = key
        m = self.memory
        if verb == "transport":
            return HighLevelAction(Verb.TRANSPORT)
        if verb == "put_in":
            held = m.held_items()
            item = next((v for v in held if v.capacity == 0), None)
            box = next((v for v in held if v.capacity > 0), None)
            if item is None or box is None:
                return None
            return HighLevelAction(Verb.PUT_IN, ObjectRef(item.name, item.id), ObjectRef(box.name, box.id))
        if not isinstance(arg, int):
            return None
        if verb in ("explore", "goto"):
            return HighLevelAction(Verb(verb), ObjectRef(m.room_name(arg), arg))
        view = m.objects.get(arg)
        if view is None:
            return None
        return HighLevelAction(Verb.GRAB if verb == "carrier" else Verb(verb), ObjectRef(view.name, view.id))

    def _finished(self, s: Any, states: list[tuple]) -> bool:
        for wanted in s.want.values():
            if wanted > 0:
                return False
        if self.cwah:
            return not any(goal_units(st[2]) for st in states)
        return not any(goal_units(st[5]) or st[4] for st in states)

    def _value(self, s: Any, states: list[tuple], deliveries: list[float]) -> float:
        if not self.cwah:
            return self.model.cost.tdw_item_value * s.delivered
        left = sum(v for v in s.want.values() if v > 0) + sum(goal_units(st[2]) for st in states)
        if left == 0:
            return -(max(deliveries, default=0.0) + self.config.flow_weight * statistics.fmean(deliveries or [0.0]))
        end = max(st[1] for st in states) + self.config.unfinished_steps * left
        mean = (sum(deliveries) + end * left) / (len(deliveries) + left)
        return -(end + self.config.flow_weight * mean)

    # --- scenarios and scores ------------------------------------------------------------------------------
    def mask(self, conditions: Iterable[Condition]) -> list[bool]:
        """Which particles satisfy every condition (all of them when none does: the scenario is then judged on the
        whole belief)."""
        key = tuple(conditions)
        if key not in self._masks:
            keep = [all((fact in facts) == truth for fact, truth in key) for facts in self.facts]
            self._masks[key] = keep if any(keep) else [True] * len(keep)
        return self._masks[key]

    @staticmethod
    def _mean(values: Sequence[float], keep: Sequence[bool] | None = None) -> float:
        """Mean over the particles ``keep`` selects (a prediction uses only the first particles); the whole outcome
        when it has none of them."""
        chosen = [v for v, k in zip(values, keep or [True] * len(values), strict=False) if k]
        return statistics.fmean(chosen) if chosen else statistics.fmean(values) if values else -math.inf

    def value(self, outcome: Outcome, conditions: Iterable[Condition] = ()) -> float:
        return self._mean(outcome.values, self.mask(conditions))

    def scores(
        self, outcome: Outcome, conditions: Iterable[Condition] = (), duration: float | None = None
    ) -> tuple[float, float]:
        """(G, C) in [0, 1] of an outcome under a scenario (module docstring, point 5); ``duration`` replaces my
        first action's (a message's time when the outcome is that of the action it announces)."""
        keep = self.mask(conditions)
        value = self._mean(outcome.values, keep)
        if duration is None:
            duration = self._mean(outcome.durations, keep)
        cost = duration / self.scale
        gain = (1.0 if self.cwah else 0.0) + (value + duration) / self.scale
        return min(1.0, max(0.0, gain)), min(1.0, max(0.0, cost))

    # --- messages ------------------------------------------------------------------------------------------
    def announcement(self, options: Sequence[ActionOption]) -> Announcement | None:
        """The announcement worth a message now, if any (module docstring, point 6)."""
        mine = {k for k in (self.key(o) for o in options) if k is not None}
        outcomes = {k: self.outcome_of(k) for k in mine}
        if not outcomes:
            return None
        best_key = max(outcomes, key=lambda k: (self._mean(outcomes[k].values), str(k)))
        best_value = self._mean(outcomes[best_key].values)
        leaders = self.leaders()
        bound = {r.name for r, _ in leaders if r.name in self.announced}
        advice: Announcement | None = None
        for robot in self.teammates:
            if robot.name in bound:
                continue
            before = [(r, k) for r, k in leaders if r.name < robot.name]
            ranked = self.choices(robot, before)
            if len(ranked) < 2:
                continue
            first, second = ranked[0], ranked[1]
            leads = robot.name < self.me.name
            if not leads and self._sees_me(robot.name):
                continue  # it plans around my predicted choice already
            if first not in mine or (not leads and first != best_key):
                continue
            others = [(r, second if r.name == robot.name else k) for r, k in leaders]
            if not leads:
                others.append((robot, second))
                without = self._mean(self.outcome_of(best_key, 0.0, [*leaders, (robot, first)]).values)
            else:
                without = best_value
            with_message = self._mean(self.outcome_of(first, self.message_time, others).values)
            if with_message > without and (advice is None or with_message > advice.value_with):
                advice = Announcement(first, robot.name, with_message, without, tuple(others))
        return advice


def _carrying(memory: Any) -> bool:
    return any(v.capacity > 0 for v in memory.held_items())
