"""Per-agent memory of what the agent has seen, been told and done."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from coteam.agent.retries import RETRY_BACKOFF_S, RETRY_STEPS, RetryLedger
from coteam.domain.actions import is_message_text
from coteam.domain.capabilities import DEFAULT_CAPABILITIES, RobotCapabilities
from coteam.domain.geometry import FULL_TURN_BINS, HALF_FOV_DEG, angle_between, bearing, heading_bin
from coteam.domain.observation import Message, ObjectView, Observation
from coteam.domain.priors import item_category
from coteam.domain.world import Benchmark, FloorPlan, ObjectKind, Relation, Task, Vec2
from coteam.home.safety import SafetyGate


@dataclass(frozen=True)
class TeammateSighting:
    step: int
    position: Vec2
    room: int
    holding: tuple[int | None, ...]


STARTED = "started"  # how memory records the outcome of an action whose skill runs
FAILED = "failed: "  # how memory records a failed action's outcome: FAILED + the skill's reason


@dataclass(frozen=True)
class ActionRecord:
    step: int
    action: str
    outcome: str  # "done", FAILED + the skill's reason, STARTED


CLAIM_STEPS = 60  # a teammate's claim on an object lapses after this many of my steps without news (a dead robot)
# a grab failed so: the item is not where I remember it (the simulator's words; an arm driver whose grasp finds
# nothing says "object not found")
NOT_WHERE_REMEMBERED = ("too far", "object taken", "object not found")


@dataclass
class AgentMemory:
    agent: str
    benchmark: Benchmark
    floorplan: FloorPlan
    task: Task
    step: int = 0
    frames: int = 0
    position: Vec2 = (0.0, 0.0)
    heading: int = 0
    room: int = -1
    holding: tuple[int | None, ...] = (None, None)
    objects: dict[int, ObjectView] = field(default_factory=dict)
    last_seen: dict[int, int] = field(default_factory=dict)
    room_coverage: dict[int, set[int]] = field(default_factory=dict)
    checked: set[int] = field(default_factory=set)
    teammates: dict[str, TeammateSighting] = field(default_factory=dict)
    # Real robots: teammate -> (the container or item it said it works on now, my step when it said so)
    claims: dict[str, tuple[int, int]] = field(default_factory=dict)
    room_visits: dict[int, int] = field(default_factory=dict)  # room -> last step the agent was in it
    messages: list[Message] = field(default_factory=list)  # received from teammates
    sent: list[Message] = field(default_factory=list)  # my own messages
    actions: list[ActionRecord] = field(default_factory=list)
    last_failure: str = ""
    # Whether the agent sees through a camera (the last observation was partial: ``Observation.complete_fixtures``).
    camera_view: bool = False
    # Item names the common-sense tables (coteam.domain.priors) do not know -> the category a model named for them
    # (the hybrid backend asks once per name; "misc": none fits).
    learned_categories: dict[str, str] = field(default_factory=dict)
    messages_read: set[int] = field(default_factory=set)  # teammates' free-text messages a model has read (indexes)
    # Teammates the runtime found silent past their lease (a dead robot, a cut link): planned without until back.
    lost: set[str] = field(default_factory=set)
    safety: SafetyGate | None = None  # the home's safety policy: what it refuses is never an option
    capabilities: RobotCapabilities = DEFAULT_CAPABILITIES  # the robot's body: grippers, carrying, speed
    # Seconds on a robot's clock (its runtime sets it with every status); None in simulation, where steps count
    clock_s: float | None = None
    retries: RetryLedger = field(default_factory=RetryLedger)  # failed actions, and which are blocked for now
    # Real robots: the items my own arm put down and has not taken again, each as my arm left it (grounded at the
    # arm, whatever my camera or my teammates call what they see later: a label my camera gives another object in
    # the fridge does not move the apple my arm set on the table), and the items my map holds on a teammate's word
    # (teammate_placed) and not by my own sight since: a robot counts distinct items from these, never by adding
    # up labels
    put_down_by_me: dict[int, ObjectView] = field(default_factory=dict)
    told_by: dict[int, str] = field(default_factory=dict)
    # What a person told the team (an operator's report): item class -> the fixtures it is said to be in or on.
    # The belief weighs those places up for instances nobody has seen (coteam.belief.HINT_FACTOR).
    hints: dict[str, set[int]] = field(default_factory=dict)
    # Real robots: containers' states my teammates told me of (teammate_opened), and the step at which I learnt
    # each container's state (my own sight or arm, a teammate's word, or the planner's view: adopt)
    doors_told: dict[int, bool] = field(default_factory=dict)
    door_known_at: dict[int, int] = field(default_factory=dict)
    # Real robots: what my arm's last result said my hands hold (arm_holds), until an observation shows the same
    arm_word: tuple[int | None, ...] | None = None

    # --- updating ----------------------------------------------------------------------------------------
    def update(self, obs: Observation) -> None:
        """My own observation: where I am and what I hold, what I see, and the messages delivered to me."""
        if self.arm_word is not None:  # my arm's last word on my hands stands until an observation shows it
            hands = len(obs.holding)
            said = (*self.arm_word, *[None] * hands)[:hands]
            self.arm_word = None if obs.holding == said else self.arm_word
            obs = replace(obs, holding=said)
        self.step, self.frames = obs.step, obs.frames
        self.position, self.heading, self.room = obs.position, obs.heading, obs.room
        self.holding = obs.holding
        self.room_visits[obs.room] = obs.step
        self.last_failure = obs.last_failure
        self.camera_view = obs.complete_fixtures is not None
        placed_now = {v.id: v for v in obs.visible if v.id in obs.put_down}
        kept = {**self.put_down_by_me, **placed_now}
        self.put_down_by_me = {i: v for i, v in kept.items() if i not in obs.holding}
        self._see(obs)
        for own in obs.holding:
            if own is not None and own in self.objects:
                self._mark_held(own, self.agent)
        self.messages.extend(obs.messages)

    def arm_holds(self, holding: Sequence[int]) -> None:
        """My arm's word on what my hands hold now (an id per hand, -1 empty), ahead of my next observation: a real
        robot decides on what its grippers hold, not on a status sent before its last grasp or put (such statuses'
        holdings are taken for this word until one shows it)."""
        self.holding = self.arm_word = tuple(None if held < 0 else held for held in holding)
        for held in self.holding:
            if held is not None and held in self.objects:
                self._mark_held(held, self.agent)

    def absorb(self, obs: Observation) -> None:
        """A teammate's observation of the same step, shared by a centralised team: what it saw (and saw gone), the
        rooms it explored, and where it is and what it holds -- my own state and my messages are untouched."""
        self._see(obs)
        self.teammates[obs.agent] = TeammateSighting(obs.step, obs.position, obs.room, obs.holding)
        for held in obs.holding:
            if held is not None and held in self.objects:
                self._mark_held(held, obs.agent, obs.room, obs.position)

    def _see(self, obs: Observation) -> None:
        """The world as ``obs`` shows it: items gone from where they should be visible, the objects in view, the
        room's explored headings and the teammates in view."""
        self._forget_missing(obs)
        for view in obs.visible:
            if view.kind == ObjectKind.CONTAINER:
                view = self._door_state(view, obs.step)
            self.objects[view.id] = view
            self.last_seen[view.id] = obs.step
            self.told_by.pop(view.id, None)
            if view.kind == ObjectKind.CONTAINER and view.is_open:
                self.checked.add(view.id)
        bins = self.room_coverage.setdefault(obs.room, set())
        if self.benchmark == Benchmark.CWAH:
            bins.update(range(FULL_TURN_BINS))  # entering a room reveals all of it
        else:
            for h in obs.view_headings:
                for off in range(-3, 4):
                    bins.add((heading_bin(h) + off) % FULL_TURN_BINS)
        for mate in obs.teammates:
            if mate.name == self.agent:
                continue  # (a teammate's observation that shows me)
            self.teammates[mate.name] = TeammateSighting(obs.step, mate.position, mate.room, mate.holding)
            for held in mate.holding:
                if held is not None and held in self.objects:
                    self._mark_held(held, mate.name)

    def _mark_held(self, item_id: int, agent: str, room: int | None = None, position: Vec2 | None = None) -> None:
        """Remember the item as held by ``agent``, placed at ``room`` and ``position`` (default: where I am)."""
        old = self.objects[item_id]
        self.objects[item_id] = ObjectView(
            old.id,
            old.name,
            old.kind,
            self.room if room is None else room,
            self.position if position is None else position,
            old.category,
            old.is_open,
            Relation.HELD,
            -1,
            agent,
            old.capacity,
        )

    def _forget_missing(self, obs: Observation) -> None:
        """Drop remembered items that should be visible now but are not (someone moved them). Through a camera
        (``complete_fixtures`` set) an item not detected may still be there: only those whose place was seen empty
        and those remembered in or on a fixture shown completely are dropped."""
        visible = {v.id: v for v in obs.visible}
        if obs.complete_fixtures is not None:
            for oid, view in list(self.objects.items()):
                if view.kind != ObjectKind.ITEM or oid in visible or view.held_by:
                    continue
                at_hand = view.location in (Relation.IN, Relation.ON) and view.holder in obs.complete_fixtures
                if at_hand or oid in obs.seen_empty:
                    del self.objects[oid]
            return
        for oid, view in list(self.objects.items()):
            if view.kind != ObjectKind.ITEM or oid in visible or view.room != obs.room:
                continue
            if view.held_by:
                continue
            if view.location == Relation.IN:
                holder = visible.get(view.holder)  # its state now, not as remembered
                # Inside a fixture we can see open, or inside a carrier we can see: it should have shown up.
                if holder is None:
                    continue
                if holder.kind == ObjectKind.CONTAINER and not holder.is_open:
                    continue
            if self.benchmark == Benchmark.TDWMAT:
                seen_dir = bearing(obs.position, view.position)
                near = math.dist(obs.position, view.position) < 0.3
                if not near and not any(angle_between(seen_dir, h) <= HALF_FOV_DEG for h in obs.view_headings):
                    continue
            del self.objects[oid]

    def claim(self, teammate: str, object_id: int) -> None:
        """``teammate`` works on ``object_id`` now (-1: on nothing a claim covers); it replaces its older claim."""
        self.claims[teammate] = (object_id, self.step)

    def claimed_by_teammates(self) -> set[int]:
        """The containers and items teammates said they work on, for the last :data:`CLAIM_STEPS` steps."""
        return {obj for obj, at in self.claims.values() if obj >= 0 and self.step - at <= CLAIM_STEPS}

    def lose(self, teammate: str) -> list[int]:
        """``teammate`` is lost: its claims lapse, and I plan without it until :meth:`regain`. Returns the items I
        last knew it to hold, now out of reach."""
        self.lost.add(teammate)
        self.claims.pop(teammate, None)
        held = {v.id for v in self.objects.values() if v.held_by == teammate}
        sighting = self.teammates.get(teammate)
        if sighting is not None:
            held |= {i for i in sighting.holding if i is not None}
        return sorted(held)

    def regain(self, teammate: str) -> None:
        """``teammate`` is heard again: I plan with it again."""
        self.lost.discard(teammate)

    def known_places(self) -> tuple[dict[int, Vec2], dict[int, int]]:
        """Where I know my objects to be: object id -> position, and -> room id."""
        return {i: v.position for i, v in self.objects.items()}, {i: v.room for i, v in self.objects.items()}

    def record_action(self, action: str, outcome: str) -> None:
        self.actions.append(ActionRecord(self.step, action, outcome))
        if outcome == "done":
            self.retries.succeeded(action)
        elif outcome.startswith(FAILED):
            first_block = RETRY_BACKOFF_S if self.clock_s is not None else RETRY_STEPS
            self.retries.failed(action, outcome.removeprefix(FAILED), self.now(), first_block)

    def now(self) -> float:
        """The robot's time: seconds on its clock, or the step in simulation."""
        return self.clock_s if self.clock_s is not None else self.step

    def blocked_actions(self) -> set[str]:
        """Actions (in text form) not to offer now: they failed the same way twice lately, or the safety policy
        refused them (:mod:`coteam.agent.retries`)."""
        return self.retries.blocked(self.now())

    def _door_state(self, view: ObjectView, step: int) -> ObjectView:
        """A container's view with the state I know: a real robot's observation shows a container's state only the
        first time (as the task starts) and after its own arm changed it, else None; a teammate's word that came
        before my first sight of it is newer than the task's start."""
        known = self.objects.get(view.id)
        if view.is_open is None:
            state = known.is_open if known is not None else self.doors_told.get(view.id)
            return replace(view, is_open=state)
        if known is None and view.id in self.doors_told:
            return replace(view, is_open=self.doors_told[view.id])
        self.door_known_at[view.id] = step
        return view

    def teammate_opened(self, container: int, is_open: bool) -> None:
        """A teammate's word that its arm opened (or closed) ``container``: my map takes it."""
        self.doors_told[container] = is_open
        self.door_known_at[container] = self.step
        if (view := self.objects.get(container)) is not None and view.kind == ObjectKind.CONTAINER:
            self.objects[container] = replace(view, is_open=is_open)

    def teammate_placed(self, view: ObjectView, teammate: str) -> None:
        """``teammate``'s word that an item is where its map shows it in place (real robots tell each other the goal
        items their maps show delivered): my map takes it, unless I hold the item."""
        if view.id not in self.objects or self.objects[view.id].held_by != self.agent:
            self.objects[view.id] = view
            self.last_seen[view.id] = self.step
            self.told_by[view.id] = teammate

    def adopt(self, view: ObjectView, seen: int) -> None:
        """Another memory's view of an object, last seen (or told of) at step ``seen``: mine takes it unless I saw
        the object then or since (also when I have forgotten it since: it was not where I looked). A robot's
        executor takes its planner's view of the target it is sent to act on, which a teammate's message may have
        told the planner."""
        if self.last_seen.get(view.id, -1) < seen:
            self.objects[view.id] = view
            self.last_seen[view.id] = seen
        elif self._door_news(view, seen):  # a door's state the other memory learnt since I learnt it
            self.objects[view.id] = replace(self.objects[view.id], is_open=view.is_open)
            self.door_known_at[view.id] = seen

    def _door_news(self, view: ObjectView, seen: int) -> bool:
        return (
            view.kind == ObjectKind.CONTAINER
            and view.is_open is not None
            and view.id in self.objects
            and self.door_known_at.get(view.id, -1) < seen
        )

    def grab_failed(self, item_id: int, reason: str) -> None:
        """A grab of the item failed: when the reason says it is not where I remember it (it moved since I saw it,
        or a teammate holds it), I no longer know where it is -- the robot must not walk back to grab at an empty
        place again and again."""
        if reason in NOT_WHERE_REMEMBERED and item_id in self.objects and not self.objects[item_id].held_by:
            del self.objects[item_id]

    def last_action_was_message(self) -> bool:
        """Whether my latest action was sending a message."""
        return bool(self.actions) and is_message_text(self.actions[-1].action)

    def record_sent(self, message: Message) -> None:
        self.sent.append(message)

    def dialogue(self, last: int) -> list[Message]:
        """The last ``last`` messages of the team's conversation, my teammates' and mine, oldest first."""
        if last <= 0:
            return []
        return sorted([*self.messages, *self.sent], key=lambda m: (m.step, m.sender))[-last:]

    # --- queries -----------------------------------------------------------------------------------------
    def room_name(self, room_id: int) -> str:
        return self.floorplan.room(room_id).name

    def is_explored(self, room_id: int) -> bool:
        return len(self.room_coverage.get(room_id, ())) >= FULL_TURN_BINS

    def last_visit(self, room_id: int) -> int:
        """The last step this agent was in the room (-1: never)."""
        return self.room_visits.get(room_id, -1)

    def is_partly_explored(self, room_id: int) -> bool:
        return bool(self.room_coverage.get(room_id))

    def unexplored_rooms(self) -> list[int]:
        return [r.id for r in self.floorplan.rooms if not self.is_explored(r.id)]

    def item_category(self, name: str, goal: bool = False) -> str:
        """The category the priors use for items called ``name``: with ``goal``, the task's own category when it
        declares one (TDW-MAT); else the common-sense tables'; for a name they lack, the one learned for it."""
        if goal and self.task.category:
            return self.task.category
        category = item_category(name)
        return self.learned_categories.get(name, category) if category == "misc" else category

    def known_names(self) -> dict[int, str]:
        names = {r.id: r.name for r in self.floorplan.rooms}
        names.update({oid: v.name for oid, v in self.objects.items()})
        return names

    def items(self) -> list[ObjectView]:
        return [v for v in self.objects.values() if v.kind == ObjectKind.ITEM]

    def unchecked_containers(self) -> list[ObjectView]:
        return [
            v
            for v in self.objects.values()
            if v.kind == ObjectKind.CONTAINER and v.id not in self.checked and not v.is_open
        ]

    def free_hands(self) -> int:
        """Grippers free to take an item: the body's limits less what it holds (a payload limit may leave a
        gripper empty that takes nothing more)."""
        held = sum(1 for h in self.holding if h is not None)
        grippers = min(len(self.holding), self.capabilities.grippers)
        return max(0, min(grippers, self.capabilities.holds) - held)

    def needs_a_free_gripper_to_open(self) -> bool:
        """Whether opening a door now must wait for a gripper to be freed (the body needs one, and none is)."""
        return self.capabilities.open_needs_free_gripper and all(
            h is not None for h in self.holding[: self.capabilities.grippers]
        )

    def held_items(self) -> list[ObjectView]:
        return [self.objects[h] for h in self.holding if h is not None and h in self.objects]
