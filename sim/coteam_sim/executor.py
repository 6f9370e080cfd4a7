"""The high-level skill executor: turns one high-level action into primitives, from the agent's own memory.

A skill is a generator that yields primitives and reads the agent's memory (updated with the observation that
followed each primitive) to decide the next one. It persists until the skill is done or fails; failures carry a
reason (``blocked``, ``not reachable``, ``no free hand``, ``container closed``, ``object not found``, ...).
The ROS executor node reuses this class as its navigation/manipulation fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass

from coteam.actions import HighLevelAction, Verb
from coteam.goals import delivery_target
from coteam.memory import AgentMemory, angle_between, bearing
from coteam.navigation import NavGrid, NoPathError
from coteam.physics import Physics
from coteam.world import Benchmark, ObjectKind, Relation, Vec2
from coteam_sim.primitives import Primitive, PrimitiveKind

Skill = Generator[Primitive, None, None]


class SkillFailed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SkillOutcome:
    action: HighLevelAction
    success: bool
    reason: str = ""
    primitives: int = 0


class SkillExecutor:
    """Runs one high-level action at a time for one agent."""

    def __init__(self, benchmark: Benchmark, nav: NavGrid, config: Physics | None = None):
        self.benchmark = benchmark
        self.nav = nav
        self.config = config or Physics()
        self.max_primitives = 80 if benchmark == Benchmark.CWAH else 600
        self._skill: Skill | None = None
        self._action: HighLevelAction | None = None
        self._count = 0
        self.memory: AgentMemory | None = None

    @property
    def busy(self) -> bool:
        return self._skill is not None

    @property
    def action(self) -> HighLevelAction | None:
        return self._action

    def start(self, action: HighLevelAction, memory: AgentMemory) -> None:
        self.memory = memory
        self._action = action
        self._count = 0
        self._skill = self._make_skill(action)

    def cancel(self) -> SkillOutcome | None:
        if self._action is None:
            return None
        outcome = SkillOutcome(self._action, False, "canceled", self._count)
        self._skill, self._action = None, None
        return outcome

    def next_primitive(self) -> tuple[Primitive | None, SkillOutcome | None]:
        """The next primitive of the running skill, or ``(None, outcome)`` when the skill has ended."""
        assert self._skill is not None and self._action is not None, "no skill running"
        try:
            if self._count >= self.max_primitives:
                raise SkillFailed("timeout")
            prim = next(self._skill)
            self._count += 1
            return prim, None
        except StopIteration:
            outcome = SkillOutcome(self._action, True, "", self._count)
        except SkillFailed as exc:
            outcome = SkillOutcome(self._action, False, exc.reason, self._count)
        self._skill, self._action = None, None
        return None, outcome

    # --- skills ----------------------------------------------------------------------------------------------
    def _make_skill(self, action: HighLevelAction) -> Skill:
        v = action.verb
        if v == Verb.SEND_MESSAGE:
            return self._send(action.text)
        if self.benchmark == Benchmark.CWAH:
            assert action.target is not None
            tid = action.target.id
            return {
                Verb.EXPLORE: self._cwah_explore,
                Verb.CHECK: self._cwah_check,
                Verb.GRAB: self._cwah_grab,
                Verb.PUT: self._cwah_put,
            }[v](tid)
        if v == Verb.TRANSPORT:
            return self._tdw_transport()
        assert action.target is not None
        tid = action.target.id
        if v == Verb.GOTO:
            return self._tdw_goto(tid)
        if v == Verb.EXPLORE:
            return self._tdw_explore(tid)
        if v == Verb.GRAB:
            return self._tdw_grab(tid)
        if v == Verb.PUT_IN:
            return self._tdw_put_in(tid)
        raise SkillFailed(f"{v.value} is not a {self.benchmark.value} skill")

    def _mem(self) -> AgentMemory:
        assert self.memory is not None
        return self.memory

    def _check_last(self) -> None:
        if self._mem().last_failure:
            raise SkillFailed(self._mem().last_failure)

    def _send(self, text: str) -> Skill:
        yield Primitive(PrimitiveKind.SEND_MESSAGE, text=text)
        self._check_last()

    def _position_of(self, object_id: int) -> Vec2:
        view = self._mem().objects.get(object_id)
        if view is None:
            raise SkillFailed("object not found")
        return view.position

    # C-WAH ---------------------------------------------------------------------------------------------------
    def _cwah_walk_until(self, target_id: int, arrived: Callable[[], bool]) -> Skill:
        """Walk towards a room or object until ``arrived()``; fail when three steps in a row make no progress."""
        m = self._mem()
        stalled = 0
        while not arrived():
            before = m.position
            yield Primitive(PrimitiveKind.WALK, (target_id,))
            self._check_last()
            stalled = stalled + 1 if math.dist(before, m.position) < 1e-3 else 0
            if stalled >= 3:
                raise SkillFailed("not reachable")

    def _cwah_walk(self, object_id: int) -> Skill:
        """Walk until within reach of a known object."""
        m = self._mem()
        reach = self.config.cwah_reach_m
        yield from self._cwah_walk_until(
            object_id, lambda: math.dist(m.position, self._position_of(object_id)) <= reach
        )

    def _cwah_explore(self, room_id: int) -> Skill:
        m = self._mem()
        yield from self._cwah_walk_until(room_id, lambda: m.room == room_id)

    def _cwah_open_if_closed(self, container_id: int) -> Skill:
        view = self._mem().objects.get(container_id)
        if view is not None and view.kind == ObjectKind.CONTAINER and not view.is_open:
            yield from self._cwah_walk(container_id)
            yield Primitive(PrimitiveKind.OPEN, (container_id,))
            self._check_last()

    def _cwah_check(self, container_id: int) -> Skill:
        yield from self._cwah_walk(container_id)
        yield from self._cwah_open_if_closed(container_id)

    def _cwah_grab(self, item_id: int) -> Skill:
        m = self._mem()
        view = m.objects.get(item_id)
        if view is None:
            raise SkillFailed("object not found")
        if view.held_by:
            raise SkillFailed("object taken")
        if m.free_hands() == 0:
            raise SkillFailed("no free hand")
        if view.location == Relation.IN:
            yield from self._cwah_open_if_closed(view.holder)
        yield from self._cwah_walk(item_id)
        if item_id not in m.objects:
            raise SkillFailed("object not found")
        yield Primitive(PrimitiveKind.GRAB, (item_id,))
        self._check_last()

    def _cwah_put(self, target_id: int) -> Skill:
        m = self._mem()
        target = m.objects.get(target_id)
        if target is None:
            raise SkillFailed("object not found")
        to_put = [
            v.id for v in m.held_items() if (p := delivery_target(m, v.name)) is not None and p.target == target_id
        ]
        if not to_put:
            raise SkillFailed("not holding anything for this target")
        yield from self._cwah_walk(target_id)
        is_container = target.kind == ObjectKind.CONTAINER
        if is_container:
            yield from self._cwah_open_if_closed(target_id)
        kind = PrimitiveKind.PUT_IN if is_container else PrimitiveKind.PUT_ON
        for item_id in to_put:
            yield Primitive(kind, (item_id, target_id))
            self._check_last()

    # TDW-MAT -------------------------------------------------------------------------------------------------
    def _turn_towards(self, desired: float) -> Primitive | None:
        m = self._mem()
        half = self.config.tdw_turn_deg / 2
        if angle_between(desired, m.heading) <= half:
            return None
        left = (desired - m.heading) % 360 < 180
        return Primitive(PrimitiveKind.TURN_LEFT if left else PrimitiveKind.TURN_RIGHT)

    def _navigate(self, goal: Vec2, tolerance: float, room: int | None = None) -> Skill:
        """Follow a turn-penalised 4-connected lane path with axis-aligned forward moves, replanning when a
        move fails (a teammate-free world has no moving obstacles, so that only happens off the lane)."""
        m = self._mem()
        fp = m.floorplan
        blocked = 0
        lane: list = []
        while math.dist(m.position, goal) > tolerance or (room is not None and m.room != room):
            here = fp.cell_of(m.position)
            if not lane or here not in lane:
                try:
                    lane = self.nav.lane_path(m.position, goal)
                except NoPathError:
                    raise SkillFailed("not reachable") from None
                if here not in lane:  # off the free space (should not happen): head to the lane start
                    lane.insert(0, here)
            lane = lane[lane.index(here) :]
            if len(lane) == 1:
                if room is not None and m.room != room:
                    raise SkillFailed("not reachable")
                return
            nxt = lane[1]
            desired = math.degrees(math.atan2(nxt[1] - here[1], nxt[0] - here[0])) % 360
            if m.heading % 360 != round(desired):
                yield self._turn_towards(desired) or Primitive(PrimitiveKind.TURN_LEFT)
                continue
            yield Primitive(PrimitiveKind.MOVE_FORWARD)
            if m.last_failure == "blocked":
                blocked += 1
                lane = []
                if blocked > 3:
                    raise SkillFailed("blocked")
            elif m.last_failure:
                raise SkillFailed(m.last_failure)

    def _tdw_goto(self, room_id: int) -> Skill:
        m = self._mem()
        known = set(m.objects)
        for prim in self._navigate(m.floorplan.room_center(room_id), 1.0, room_id):
            yield prim
            if any(
                oid not in known and v.kind == ObjectKind.ITEM and m.task.needed_names() & {v.name}
                for oid, v in m.objects.items()
            ):
                return  # like the original harness: stop walking when a new target comes into view

    def _tdw_explore(self, room_id: int) -> Skill:
        m = self._mem()
        if m.room != room_id:
            raise SkillFailed("not in that room")
        # A room seen before gets a full look-around (things may have moved); a new one until it is covered.
        relook = m.is_explored(room_id)
        yield from self._navigate(m.floorplan.room_center(room_id), 1.0, room_id)
        for _ in range(360 // self.config.tdw_turn_deg):
            if m.is_explored(room_id) and not relook:
                return
            yield Primitive(PrimitiveKind.TURN_LEFT)

    def _tdw_grab(self, item_id: int) -> Skill:
        m = self._mem()
        view = m.objects.get(item_id)
        if view is None:
            raise SkillFailed("object not found")
        if view.held_by:
            raise SkillFailed("object taken")
        yield from self._navigate(view.position, self.config.tdw_reach_m - 0.3)
        view = m.objects.get(item_id)
        if view is None:
            raise SkillFailed("object not found")
        while (turn := self._turn_towards(bearing(m.position, view.position))) is not None:
            if math.dist(m.position, view.position) < self.config.tdw_near_visible_m:
                break
            yield turn
        arm = next((i for i, h in enumerate(m.holding) if h is None), None)
        if arm is None:
            raise SkillFailed("no free hand")
        yield Primitive(PrimitiveKind.GRASP, (item_id, arm))
        self._check_last()

    def _tdw_put_in(self, item_id: int) -> Skill:
        m = self._mem()
        if item_id not in m.holding:
            raise SkillFailed("not holding")
        yield Primitive(PrimitiveKind.PUT_INTO_CARRIER, (m.holding.index(item_id),))
        self._check_last()

    def _tdw_transport(self) -> Skill:
        m = self._mem()
        bed = m.objects.get(m.task.predicates[0].target)
        if bed is None:
            raise SkillFailed("object not found")
        if not any(h is not None for h in m.holding):
            raise SkillFailed("not holding")
        yield from self._navigate(bed.position, 1.0, bed.room)
        for arm in (0, 1):
            if m.holding[arm] is not None:
                yield Primitive(PrimitiveKind.DROP, (arm,))
                self._check_last()
