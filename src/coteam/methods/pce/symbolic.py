"""PCE's symbolic backend: the Planner, Composer, Evaluator and Communication roles answered by deterministic
algorithms over the agent's belief state — no model, no network.

* Planner: ranks the available actions by ``gain − λ·cost`` under the current belief and names the
  uncertain facts its choice rests on.
* Composer: branches on the belief's uncertain variables (most uncertain, then most impactful first) that
  change the best action, up to depth D, and puts the best action under each scenario at the leaf.
* Evaluator: likelihood from the belief's probabilities along the path, gain from the goal progress the leaf's
  action buys in that scenario, cost from path length (relative to the size of the house) or message length —
  each on the 1–5 scale.

Gains model the teammate too: a target the teammate is nearer to (by its last known position) and would pick by
the same value model is mostly left to it, so two agents that see the same scene split the work.

Scenarios condition the belief on a set of (variable, truth value) pairs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from coteam.actions import Verb, truncate_message
from coteam.belief import BeliefState, PlaceKind, UncertainVariable
from coteam.memory import AgentMemory
from coteam.messages import TeamStatus
from coteam.methods.pce.scoring import Weights, distance_penalty, house_walk_m, message_penalty, normalize
from coteam.options import ActionOption
from coteam.progress import describe

Assumptions = Mapping[str, bool]  # variable text -> assumed truth value

CARRIER_GAIN = 0.6  # TDW-MAT: picking up a container early pays off over several trips
CARRIER_MIN_TARGETS = 3  # ... when at least this many targets are still missing
CARRIER_MIN_FRAMES_LEFT = 1400
PUT_IN_GAIN = 0.7  # TDW-MAT: stowing an item frees a hand
URGENT_FRAMES_LEFT = 700  # TDW-MAT: deliver what is held when this little time is left
REVISIT_GAIN = 0.5  # gain of looking again at a room not visited for REVISIT_AFTER_STEPS
REVISIT_AFTER_STEPS = 60
TEAMMATE_CLAIM = 0.7  # share of a target's gain lost when the teammate is expected to get there first
NEWS_PER_MESSAGE = 4  # facts that make a message fully worth its cost
USEFUL_GAIN = 0.02  # below this an action is treated as buying nothing


@dataclass
class SymbolicContext:
    """Everything the symbolic roles read for one decision."""

    memory: AgentMemory
    belief: BeliefState
    options: Sequence[ActionOption]
    weights: Weights
    max_depth: int
    allow_messages: bool
    communicated: set[str] = field(default_factory=set)  # facts already sent to the team
    _variables: list[UncertainVariable] | None = field(default=None, init=False, repr=False)
    _teammate_target: int | None = field(default=None, init=False, repr=False)
    _missing_units: dict[str, int] | None = field(default=None, init=False, repr=False)
    _lost: bool | None = field(default=None, init=False, repr=False)  # a missing item is nowhere left to search
    _ranked: dict[frozenset, list[ActionOption]] = field(default_factory=dict, init=False, repr=False)

    # --- the value model ---------------------------------------------------------------------------------
    def news(self) -> list[str]:
        """Facts worth telling the team that were not told yet (goal items seen, rooms explored)."""
        if not self.allow_messages:
            return []
        m = self.memory
        wanted = m.task.needed_names()
        facts = [f"seen {v.id}@{v.room}" for v in m.items() if v.name in wanted and not v.held_by]
        facts += [f"explored {r}" for r in self.belief.explored_rooms()]
        facts += [f"holding {h}" for h in m.holding if h is not None]
        return [f for f in facts if f not in self.communicated]

    def gain(self, option: ActionOption, assumptions: Assumptions = {}) -> float:  # noqa: B006  (read-only)
        """Goal progress the action buys, in [0, 1], under ``assumptions`` — less when the teammate is expected
        to get there first (see :meth:`teammate_target`)."""
        value = self._own_gain(option, assumptions)
        if option.action.target is not None and option.action.target.id == self.teammate_target():
            value *= 1.0 - TEAMMATE_CLAIM
        return value

    def teammate_target(self) -> int | None:
        """The target the teammate most likely goes for next, when it has the better claim to it.

        The teammate is modelled with this agent's own value model, priced by its distance from where it was last
        seen. When both would go for the same target, the one nearer to it (ties: the name first in order) takes
        it, so two agents that see the same scene split the work instead of duplicating it.
        """
        if self._teammate_target is None:
            self._teammate_target = self._predict_teammate_target()
        return self._teammate_target if self._teammate_target >= 0 else None

    def _predict_teammate_target(self) -> int:
        m = self.memory
        if not m.teammates:
            return -1
        mate = max(m.teammates.items(), key=lambda kv: kv[1].step)[0]
        w = self.weights
        best: ActionOption | None = None
        best_value = -math.inf
        for o in self.options:
            if o.action.target is None or o.teammate_distance is None or not math.isfinite(o.teammate_distance):
                continue
            g = self._own_gain(o)
            if g <= USEFUL_GAIN:
                continue
            value = g - w.lam * w.alpha * normalize(self.travel_penalty(o.teammate_distance))
            if value > best_value:
                best, best_value = o, value
        if best is None or best.action.target is None:
            return -1
        theirs, mine = best.teammate_distance or 0.0, best.my_distance
        if theirs < mine or (theirs == mine and mate < m.agent):
            return best.action.target.id
        return -1

    def _own_gain(self, option: ActionOption, assumptions: Assumptions = {}) -> float:  # noqa: B006
        a = option.action
        m, b = self.memory, self.belief
        if a.is_message:
            return min(1.0, len(self.news()) / NEWS_PER_MESSAGE)
        target = a.target.id if a.target is not None else -1
        if a.verb == Verb.GRAB:
            view = m.objects[target]
            if view.capacity > 0:  # a TDW-MAT container
                left = m.task.horizon - m.frames
                useful = (
                    sum(st.missing for st in b.subgoals()) >= CARRIER_MIN_TARGETS and left > CARRIER_MIN_FRAMES_LEFT
                )
                return CARRIER_GAIN if useful else 0.05
            taken = self._taken(target, assumptions)
            return 1.0 - taken
        if a.verb == Verb.PUT:  # delivering completes sub-goals
            return 1.0 if self._held_goal_units() else 0.0
        if a.verb == Verb.TRANSPORT:
            held = self._held_goal_units()
            left = m.task.horizon - m.frames
            if held and (m.free_hands() == 0 or left < URGENT_FRAMES_LEFT or not self._anything_to_fetch()):
                return 1.0
            return min(1.0, held / 4)
        if a.verb == Verb.PUT_IN:
            return PUT_IN_GAIN
        if a.verb in (Verb.EXPLORE, Verb.GOTO):
            found = sum(self._p_discover(n, target, assumptions) * units for n, units in self._missing().items())
            return min(1.0, found + self._revisit_gain(target))
        if a.verb == Verb.CHECK:
            key = next(
                (v.text for v in self.variables() if v.kind == "container_has_needed" and v.object_id == target), None
            )
            if key is not None and key in assumptions:
                return 1.0 if assumptions[key] else 0.0
            return min(1.0, sum(b.p_in_container(n, target) * units for n, units in self._missing().items()))
        return 0.0

    def _revisit_gain(self, room_id: int) -> float:
        """When a needed item is nowhere left to search, someone moved it: rooms seen longest ago are worth a look."""
        m, b = self.memory, self.belief
        if self._lost is None:
            self._lost = any(units and b.nowhere_left(n) for n, units in self._missing().items())
        if not self._lost:
            return 0.0
        since = m.step - m.room_visits.get(room_id, -m.task.horizon)
        return REVISIT_GAIN * min(1.0, since / REVISIT_AFTER_STEPS)

    def _missing(self) -> dict[str, int]:
        """Units still missing per needed item (the belief is fixed for the whole decision)."""
        if self._missing_units is None:
            b = self.belief
            self._missing_units = {n: b.missing(n) for n in b.needed_items()}
        return self._missing_units

    def _held_goal_units(self) -> int:
        m = self.memory
        wanted = m.task.needed_names()
        held = [v for v in m.held_items() if v.name in wanted]
        carried = [v for v in m.items() if any(v.holder == c.id for c in m.held_items() if c.capacity > 0)]
        return len(held) + sum(1 for v in carried if v.name in wanted)

    def _anything_to_fetch(self) -> bool:
        return any(o.action.verb == Verb.GRAB for o in self.options)

    def _taken(self, item_id: int, assumptions: Assumptions) -> float:
        for v in self.variables():
            if v.kind == "teammate_took" and v.object_id == item_id and v.text in assumptions:
                return 1.0 if assumptions[v.text] else 0.0
        took = [t.took.get(item_id, 0.0) for t in self.belief.teammates().values()]
        return max(took, default=0.0)

    def _p_discover(self, item: str, room_id: int, assumptions: Assumptions) -> float:
        """P(looking around the room reveals the item), conditioned on the assumptions about its rooms.

        Only the room's unsearched open space counts (plus, in a room never entered, its unknown containers):
        known instances are fetched with a grab, known closed containers with a check.
        """
        location = self.belief.location(item)
        discover = sum(p for place, p in location.items() if place.kind == PlaceKind.ROOM and place.id == room_id)
        fixed_false = 0.0
        for v in self.variables():
            if v.kind != "item_in_room" or v.item != item or v.text not in assumptions:
                continue
            in_room = self.belief.p_in_room(item, v.object_id)
            if assumptions[v.text]:  # it is in v's room: only that room can reveal it
                return discover / in_room if v.object_id == room_id and in_room > 0 else 0.0
            if v.object_id == room_id:
                return 0.0
            fixed_false += in_room
        return discover / (1.0 - fixed_false) if fixed_false < 1.0 else 0.0

    def cost_penalty(self, option: ActionOption, message: str = "") -> float:
        if option.action.is_message:
            return message_penalty(len(message or TeamStatus.of(self.memory).text()))
        return self.travel_penalty(option.my_distance)

    def travel_penalty(self, metres: float) -> float:
        """A walk on the 1–5 cost scale, relative to the size of this house."""
        return distance_penalty(metres, house_walk_m(self.memory.floorplan))

    def ranked(self, assumptions: Assumptions = {}) -> list[ActionOption]:  # noqa: B006
        """Options by utility ``gain − λ·cost`` under ``assumptions``, best first (memoised: the Composer asks
        many times)."""
        key = frozenset(assumptions.items())
        if key not in self._ranked:
            usable = [o for o in self.options if self.allow_messages or not o.action.is_message]
            gains = {o.text: self.gain(o, assumptions) for o in usable}
            w = self.weights

            def order(o: ActionOption) -> tuple[bool, bool, float, str]:
                g = gains[o.text]
                cost = (w.beta if o.action.is_message else w.alpha) * normalize(self.cost_penalty(o))
                # Useful actions first: a cheap action that buys nothing never outranks progress; idle talk last.
                return (g <= USEFUL_GAIN, o.action.is_message and g <= USEFUL_GAIN, -(g - w.lam * cost), o.text)

            self._ranked[key] = sorted(usable, key=order)
        return self._ranked[key]

    def variables(self) -> list[UncertainVariable]:
        if self._variables is None:
            self._variables = self.belief.uncertain_variables()
        return self._variables

    def probability(self, text: str) -> float:
        """P(assumption is true); 0.5 for an assumption the belief does not model (e.g. one an LLM wrote)."""
        for v in self.variables():
            if v.text == text:
                return v.probability
        return 0.5

    def path_likelihood(self, path: Sequence[tuple[str, bool]]) -> float:
        """P(every assumption on a root-to-leaf path has the given value), assuming independence."""
        likelihood = 1.0
        for text, value in path:
            p = self.probability(text)
            likelihood *= p if value else 1.0 - p
        return likelihood

    def message_text(self, incoming: Sequence[str] = ()) -> str:
        """Answer a teammate's question first, then share what the team does not know yet (≤ 500 chars)."""
        m = self.memory
        answer = ""
        question = next((t for t in reversed(incoming) if "?" in t), None)
        if question is not None:
            asked = [v for v in m.items() if f"<{v.name}>" in question or v.name in question]
            if asked:
                answer = "Answer: " + "; ".join(f"{describe(v)} in the {m.room_name(v.room)}" for v in asked[:4]) + ". "
            else:
                answer = "Answer: I have not seen that. "
        return truncate_message(answer + TeamStatus.of(m).text())

    def mark_sent(self) -> None:
        self.communicated.update(self.news())
