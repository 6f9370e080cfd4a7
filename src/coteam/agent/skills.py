"""Skills: how one high-level action is carried out, as a sequence of navigation, manipulation and message
requests decided from the agent's own memory.

A skill never produces simulator primitives itself. It asks for one of three things per step:

* :class:`NavGoal` -- drive towards a pose (a Nav2 ``NavigateToPose`` goal on a robot, the simulator's navigator
  in simulation). The skill re-checks its own stop condition every step and moves the goal when what it walks to
  moves; the navigator reports the end of a goal with a :class:`NavResult`.
* :class:`Manipulation` -- one grasp / put / open / close / drop (a ``Manipulate`` action goal).
* :class:`SendMessage` -- one message to the team.

The same skills therefore run in the in-process runner (``coteam_harness.executor.SkillExecutor`` turns requests into
primitives) and in the ROS executor node (requests become action goals), step for step alike.

Protocol of :meth:`SkillRunner.advance`: call it with ``None`` when the skill starts and after every step in which
its last request made the robot act (call :meth:`SkillRunner.stepped` for that step); call it with the
:class:`NavResult` when the navigator ended the current :class:`NavGoal` without acting. It returns the next request,
or the :class:`SkillOutcome` when the skill has ended.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from enum import IntEnum

from coteam.agent.goals import delivery_target
from coteam.agent.memory import AgentMemory
from coteam.domain.actions import HighLevelAction, Verb
from coteam.domain.geometry import angle_between, bearing
from coteam.domain.navigation import NavGrid, nearest_free_cell
from coteam.domain.observation import ObjectView
from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, ObjectKind, Relation, Vec2
from coteam.home.safety import NOT_APPROVED, REFUSED, SafetyGate

CAMERA_EXPLORE_M = 1.0  # C-WAH through a camera: exploring a room ends this close to its centre


@dataclass(frozen=True)
class NavGoal:
    """Drive towards ``position`` (map frame, metres). With ``heading`` (degrees, counter-clockwise from +x) and a
    position equal to the robot's own, it is a turn in place to that heading."""

    position: Vec2
    heading: float | None = None


class ManipulationKind(IntEnum):
    """Values match the ``operation`` constants of ``coteam_interfaces/action/Manipulate``."""

    GRASP = 0
    PUT = 1  # on a surface
    OPEN = 2
    CLOSE = 3
    DROP = 4
    PUT_IN = 5  # into a container (C-WAH) or the carried container (TDW-MAT, target -1)


@dataclass(frozen=True)
class Manipulation:
    kind: ManipulationKind
    object_id: int
    target_id: int = -1
    hand: int = -1  # arm index; -1: whichever is free


@dataclass(frozen=True)
class SendMessage:
    text: str
    payload: str = ""  # JSON (coteam.agent.messages)
    receiver: str = ""  # the one teammate it is for ("": the whole team)


SkillRequest = NavGoal | Manipulation | SendMessage


@dataclass(frozen=True)
class AskApproval:
    """Ask a person whether the robot may carry out its action (the safety policy names it); answer with
    :class:`Approval`. No answer, or any other reply, is no."""

    question: str


@dataclass(frozen=True)
class Approval:
    granted: bool


@dataclass(frozen=True)
class NavResult:
    """How a navigation goal ended without the robot acting in that step."""

    success: bool
    reason: str = ""


@dataclass(frozen=True)
class SkillOutcome:
    action: HighLevelAction
    success: bool
    reason: str = ""
    primitives: int = 0  # steps in which the skill made the robot act


@dataclass(frozen=True)
class TimeLimit:
    """A robot's limit on one skill, in seconds: ``overhead_s`` (grasps, doors, turns, a re-plan) plus the drive to
    the action's target at the robot's own speed times ``travel_factor`` (detours, a teammate to wait for). A slow
    robot gets the time its drive takes; a skill still running past its limit fails as ``timeout``."""

    clock: Callable[[], float]  # the robot's clock, seconds
    nav: NavGrid  # path lengths on the robot's map
    overhead_s: float = 60.0
    travel_factor: float = 3.0

    def seconds(self, memory: AgentMemory, action: HighLevelAction) -> float:
        from coteam.agent.options import target_position

        goal = target_position(action, memory)
        if goal is None:
            return self.overhead_s
        metres = self.nav.path_length(memory.position, goal)
        if not math.isfinite(metres):  # no way on the map: what the straight line takes, and Nav2 says why
            metres = math.dist(memory.position, goal)
        return self.overhead_s + self.travel_factor * memory.capabilities.travel_s(metres)


class SkillFailed(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


Skill = Generator[SkillRequest, NavResult | None, None]


class SkillRunner:
    """Runs one high-level action at a time for one agent, reading the agent's memory."""

    def __init__(
        self,
        benchmark: Benchmark,
        config: Physics | None = None,
        *,
        safety: SafetyGate | None = None,
        time_limit: TimeLimit | None = None,
    ):
        self.benchmark = benchmark
        self.config = config or Physics()
        self.safety = safety  # the home's safety policy: checked before an action starts and before each of its goals
        self._asking = ""  # the question put to a person, until the :class:`Approval` comes
        # Simulation: a skill gets this many steps (the benchmark's unit of time). A robot: ``time_limit``'s seconds.
        self.max_steps = 80 if benchmark == Benchmark.CWAH else 600
        self.time_limit = time_limit
        self._deadline = math.inf
        self._skill: Skill | None = None
        self._action: HighLevelAction | None = None
        self._steps = 0
        self._started = False
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
        self._steps = 0
        self._started = False
        if self.time_limit is not None:
            self._deadline = self.time_limit.clock() + self.time_limit.seconds(memory, action)
        self._skill = self._make_skill(action)

    def cancel(self) -> SkillOutcome | None:
        if self._action is None:
            return None
        outcome = SkillOutcome(self._action, False, "canceled", self._steps)
        self._skill, self._action = None, None
        return outcome

    def stepped(self) -> None:
        """The last request made the robot act for one step."""
        self._steps += 1

    def advance(self, reply: NavResult | Approval | None = None) -> SkillRequest | AskApproval | SkillOutcome:
        assert self._skill is not None and self._action is not None, "no skill running"
        try:
            if self._out_of_time():
                raise SkillFailed("timeout")
            if not self._started:
                self._started = True
                self._asking = self._check_policy(self._action)
                if self._asking:
                    return AskApproval(self._asking)
                return self._checked(next(self._skill))
            if self._asking:
                question, self._asking = self._asking, ""
                if not (isinstance(reply, Approval) and reply.granted):
                    raise SkillFailed(NOT_APPROVED + question)
                return self._checked(next(self._skill))
            return self._checked(self._skill.send(reply if isinstance(reply, NavResult) else None))
        except StopIteration:
            outcome = SkillOutcome(self._action, True, "", self._steps)
        except SkillFailed as exc:
            outcome = SkillOutcome(self._action, False, exc.reason, self._steps)
        self._skill, self._action = None, None
        return outcome

    def _out_of_time(self) -> bool:
        if self.time_limit is not None:
            return self.time_limit.clock() > self._deadline
        return self._steps >= self.max_steps

    def _check_policy(self, action: HighLevelAction) -> str:
        """Refuse ``action`` before anything moves when the safety policy forbids it; the question for a person
        when the policy wants one asked first ('' when none)."""
        if self.safety is None:
            return ""
        verdict = self.safety.check_action(action, *self._mem().known_places())
        if verdict.refused:
            raise SkillFailed(REFUSED + verdict.refused)
        return verdict.ask

    def _checked(self, request: SkillRequest) -> SkillRequest:
        """``request`` if the safety policy lets it move the robot; else the skill fails, nothing moved."""
        if self.safety is None:
            return request
        why = ""
        if isinstance(request, NavGoal):
            why = self.safety.place_refused(request.position)
        elif isinstance(request, Manipulation):
            objects = self._mem().objects
            for object_id in (request.object_id, request.target_id):
                if object_id in objects and (why := self.safety.touch_refused(objects[object_id].name)):
                    break
        if why:
            raise SkillFailed(REFUSED + why)
        return request

    # --- skills ----------------------------------------------------------------------------------------------
    def _make_skill(self, action: HighLevelAction) -> Skill:
        v = action.verb
        if v == Verb.SEND_MESSAGE:
            return self._send(action.text, action.payload, action.receiver)
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

    def _act(self, request: Manipulation | SendMessage) -> Skill:
        """One acting step, then fail with the step's failure reason if it had one."""
        yield request
        self._check_last()

    def _send(self, text: str, payload: str, receiver: str) -> Skill:
        yield from self._act(SendMessage(text, payload, receiver))

    def _approach(self, object_id: int) -> Vec2:
        """Where to walk to reach an object: its place, or, when that is not free space (furniture on a real
        robot's map), the nearest free point."""
        position = self._position_of(object_id)
        floorplan = self._mem().floorplan
        if floorplan.is_free(*floorplan.cell_of(position)):
            return position
        return floorplan.center_of(nearest_free_cell(floorplan, position))

    def _position_of(self, object_id: int) -> Vec2:
        view = self._mem().objects.get(object_id)
        if view is None:
            raise SkillFailed("object not found")
        return view.position

    def _drive(self, goal: Callable[[], NavGoal], done: Callable[[], bool]) -> Skill:
        """Drive towards ``goal()`` (re-read every step) until ``done()``. Ends quietly when the navigator reports
        the goal reached; fails with the navigator's reason when it gives up."""
        while not done():
            reply = yield goal()
            if reply is not None:
                if not reply.success:
                    raise SkillFailed(reply.reason)
                return

    # C-WAH ---------------------------------------------------------------------------------------------------
    def _cwah_walk(self, object_id: int) -> Skill:
        """Walk until within reach of a known object (where it is remembered to be), in its room: through a wall
        the robot could open a cabinet it cannot see into."""
        m = self._mem()
        reach = self.config.cwah_reach_m

        def near() -> bool:
            view = m.objects.get(object_id)
            elsewhere = view is not None and not view.held_by and view.room >= 0 and view.room != m.room
            return not elsewhere and math.dist(m.position, self._position_of(object_id)) <= reach

        yield from self._drive(lambda: NavGoal(self._approach(object_id)), near)
        if not near():
            raise SkillFailed("not reachable")

    def _cwah_explore(self, room_id: int) -> Skill:
        """Walk into the room: C-WAH shows a room whole to whoever is in it. Through a camera, whose detector finds
        small things only a few metres away, walk on to the room's centre, from where its views round the room reach
        every part of it."""
        m = self._mem()
        center = m.floorplan.room_center(room_id)

        def arrived() -> bool:
            return m.room == room_id and (not m.camera_view or math.dist(m.position, center) <= CAMERA_EXPLORE_M)

        yield from self._drive(lambda: NavGoal(center), arrived)
        if m.room != room_id:
            raise SkillFailed("not reachable")

    def _cwah_open_if_closed(self, container_id: int) -> Skill:
        view = self._mem().objects.get(container_id)
        if view is not None and view.kind == ObjectKind.CONTAINER and not view.is_open:
            if self._mem().needs_a_free_gripper_to_open():
                raise SkillFailed("no free gripper to open with")
            yield from self._cwah_walk(container_id)
            yield from self._act(Manipulation(ManipulationKind.OPEN, container_id))

    def _closed(self, container_id: int) -> bool:
        view = self._mem().objects.get(container_id)
        return view is not None and view.kind == ObjectKind.CONTAINER and not view.is_open

    def _cwah_set_down_for(
        self, container_id: int, to_put: list[int]
    ) -> Generator[SkillRequest, NavResult | None, int | None]:
        """Free a gripper to open the container with, when the robot's body needs one and every gripper is full:
        set a held item down on the nearest known surface of the room (one that goes elsewhere if any). Returns the
        item set down when it is one of ``to_put`` (to be fetched again after), else None."""
        m = self._mem()
        if not (self._closed(container_id) and m.needs_a_free_gripper_to_open()):
            return None
        held = [v.id for v in m.held_items()]
        item = next((i for i in held if i not in to_put), held[-1] if held else None)
        room = m.objects[container_id].room
        surfaces = [v for v in m.objects.values() if v.kind == ObjectKind.SURFACE and v.room == room]
        if item is None or not surfaces:
            raise SkillFailed("no free gripper to open with, and no surface to set an item down on")
        surface = min(surfaces, key=lambda v: math.dist(v.position, m.position)).id
        yield from self._cwah_walk(surface)
        yield from self._act(Manipulation(ManipulationKind.PUT, item, surface))
        return item if item in to_put else None

    def _cwah_check(self, container_id: int) -> Skill:
        yield from self._cwah_walk(container_id)
        yield from self._cwah_open_if_closed(container_id)

    def _free_item(self, item_id: int) -> ObjectView:
        """The remembered item to grab; fails when it is unknown or a robot holds it."""
        reason = self._gone(item_id)
        if reason:
            raise SkillFailed(reason)
        return self._mem().objects[item_id]

    def _gone(self, item_id: int) -> str:
        """Why a remembered item can no longer be grabbed ("" while it can): not where it was, or seen in a
        robot's hands."""
        view = self._mem().objects.get(item_id)
        if view is None:
            return "object not found"
        return "object taken" if view.held_by else ""

    def _cwah_grab(self, item_id: int) -> Skill:
        m = self._mem()
        view = self._free_item(item_id)
        if m.free_hands() == 0:
            raise SkillFailed("no free hand")
        if view.location == Relation.IN:
            yield from self._cwah_open_if_closed(view.holder)
        yield from self._cwah_walk(item_id)
        if item_id not in m.objects:
            raise SkillFailed("object not found")
        yield from self._act(Manipulation(ManipulationKind.GRASP, item_id))

    def _cwah_put(self, target_id: int) -> Skill:
        m = self._mem()
        target = m.objects.get(target_id)
        if target is None:
            raise SkillFailed("object not found")
        # what goes there, and what no goal wants (set down at the first goal place the robot goes to)
        to_put = [v.id for v in m.held_items() if (p := delivery_target(m, v.name)) is None or p.target == target_id]
        if not to_put:
            raise SkillFailed("not holding anything for this target")
        is_container = target.kind == ObjectKind.CONTAINER
        set_down = (yield from self._cwah_set_down_for(target_id, to_put)) if is_container else None
        yield from self._cwah_walk(target_id)
        if is_container:
            yield from self._cwah_open_if_closed(target_id)
        kind = ManipulationKind.PUT_IN if is_container else ManipulationKind.PUT
        for item_id in to_put:
            if item_id != set_down:
                yield from self._act(Manipulation(kind, item_id, target_id))
        if set_down is not None:  # fetch the item set down to open the door, and put it where it goes too
            yield from self._cwah_walk(set_down)
            yield from self._act(Manipulation(ManipulationKind.GRASP, set_down))
            yield from self._cwah_walk(target_id)
            yield from self._act(Manipulation(kind, set_down, target_id))

    # TDW-MAT -------------------------------------------------------------------------------------------------
    def _turn_to(self, heading: float, stop: Callable[[], bool] = lambda: False) -> Skill:
        """Turn in place until facing ``heading`` (within half a turn step) or ``stop()``."""
        m = self._mem()
        heading = round(heading % 360, 6) % 360  # what survives a goal pose's quaternion
        half = self.config.tdw_turn_deg / 2
        yield from self._drive(
            lambda: NavGoal(m.position, heading), lambda: angle_between(heading, m.heading) <= half or stop()
        )

    def _navigate(
        self, goal: Vec2, tolerance: float, room: int | None = None, moot: Callable[[], str] | None = None
    ) -> Skill:
        """Drive to within ``tolerance`` of ``goal`` (and into ``room`` when given). ``moot``, when given, is asked
        every step why the trip has become pointless; a non-empty answer fails the skill with it at once."""
        m = self._mem()

        def arrived() -> bool:
            return math.dist(m.position, goal) <= tolerance and (room is None or m.room == room)

        def stop() -> bool:
            return arrived() or (moot is not None and bool(moot()))

        yield from self._drive(lambda: NavGoal(goal), stop)
        reason = moot() if moot is not None else ""
        if reason:
            raise SkillFailed(reason)
        if room is not None and m.room != room:
            raise SkillFailed("not reachable")

    def _tdw_goto(self, room_id: int) -> Skill:
        m = self._mem()
        known = set(m.objects)

        def new_target_seen() -> bool:  # like the original harness: stop walking when a new target comes into view
            return any(
                oid not in known and v.kind == ObjectKind.ITEM and m.task.needed_names() & {v.name}
                for oid, v in m.objects.items()
            )

        center = m.floorplan.room_center(room_id)

        def arrived() -> bool:
            return new_target_seen() or (math.dist(m.position, center) <= 1.0 and m.room == room_id)

        yield from self._drive(lambda: NavGoal(center), arrived)
        if m.room != room_id and not new_target_seen():
            raise SkillFailed("not reachable")

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
            yield from self._turn_to((m.heading + self.config.tdw_turn_deg) % 360)

    def _tdw_grab(self, item_id: int) -> Skill:
        m = self._mem()
        view = self._free_item(item_id)
        # Into the item's room: only from there does the robot see whether the item is still where it remembers it
        # (within reach through a wall it would grasp at a place it cannot see, and fail there every step).
        # On the way, seeing it gone or in a robot's hands ends the trip there.
        yield from self._navigate(view.position, self.config.tdw_reach_m - 0.3, view.room, lambda: self._gone(item_id))
        item = m.objects[item_id].position
        yield from self._turn_to(
            bearing(m.position, item), stop=lambda: math.dist(m.position, item) < self.config.tdw_near_visible_m
        )
        arm = next((i for i, h in enumerate(m.holding) if h is None), None)
        if arm is None:
            raise SkillFailed("no free hand")
        yield from self._act(Manipulation(ManipulationKind.GRASP, item_id, hand=arm))

    def _tdw_put_in(self, item_id: int) -> Skill:
        m = self._mem()
        if item_id not in m.holding:
            raise SkillFailed("not holding")
        yield from self._act(Manipulation(ManipulationKind.PUT_IN, item_id, hand=m.holding.index(item_id)))

    def _tdw_transport(self) -> Skill:
        m = self._mem()
        bed = m.objects.get(m.task.predicates[0].target)
        if bed is None:
            raise SkillFailed("object not found")
        if not any(h is not None for h in m.holding):
            raise SkillFailed("not holding")
        yield from self._navigate(bed.position, 1.0, bed.room)
        for arm in (0, 1):
            held = m.holding[arm]
            if held is not None:
                yield from self._act(Manipulation(ManipulationKind.DROP, held, hand=arm))
