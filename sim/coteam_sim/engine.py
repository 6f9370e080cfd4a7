"""The simulation rules of C-WAH and TDW-MAT on one shared world model.

C-WAH is synchronous: every step each agent executes one primitive. TDW-MAT is asynchronous: every primitive
costs a number of frames, and :meth:`Simulator.step` advances the clock until some agent's primitive has
finished; only agents whose previous primitive is over may start a new one.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from coteam.domain.actions import truncate_message
from coteam.domain.geometry import HALF_FOV_DEG, angle_between, bearing
from coteam.domain.navigation import NavGrid, walk_along
from coteam.domain.observation import Message, ObjectView, Observation, TeammateView, object_view, task_landmarks
from coteam.domain.physics import Physics
from coteam.domain.world import (
    Benchmark,
    Container,
    Placement,
    Relation,
    Scene,
    Vec2,
    WorldState,
    distance,
)
from coteam_sim.primitives import Primitive, PrimitiveKind


@dataclass
class _Envelope:
    message: Message
    recipients: tuple[str, ...]
    deliver_at: int  # clock value (step or frame) from which it is observable


class Simulator:
    def __init__(
        self,
        scene: Scene,
        agents: tuple[str, ...],
        *,
        seed: int = 0,
        config: Physics | None = None,
        full_observability: bool = False,
    ):
        unknown = [a for a in agents if a not in {s.name for s in scene.agent_starts}]
        if unknown or not agents:
            raise ValueError(f"scene {scene.name!r} has no start pose for agents {unknown or agents}")
        self.scene = scene
        self.benchmark = scene.benchmark
        self.agents = tuple(agents)
        self.config = config or Physics()
        self.full_observability = full_observability
        self.rng = random.Random(f"sim:{seed}")
        self.world = WorldState(scene, self.agents)
        self.nav = NavGrid(scene.floorplan)
        self.steps = 0
        self.frames = 0
        self.busy_until = dict.fromkeys(self.agents, 0)
        self.last_failure = dict.fromkeys(self.agents, "")
        self._mail: list[_Envelope] = []
        self._walk_paths: dict[str, tuple[Vec2, list[Vec2]]] = {}

    # --- clock -----------------------------------------------------------------------------------------------
    @property
    def clock(self) -> int:
        return self.steps if self.benchmark == Benchmark.CWAH else self.frames

    @property
    def horizon(self) -> int:
        return self.scene.task.horizon

    def is_ready(self, agent: str) -> bool:
        return self.benchmark == Benchmark.CWAH or self.busy_until[agent] <= self.frames

    def out_of_time(self) -> bool:
        return self.clock >= self.horizon

    def motion(self, agent: str) -> tuple[Vec2, float, tuple[Vec2, list[Vec2]] | None]:
        """What the agent's moves change (position, heading, the way it walks), to put back with
        :meth:`undo_motion`: a bridge that makes robots obstacles to each other holds one that would run into
        another (the benchmarks' agents pass through each other)."""
        st = self.world.agents[agent]
        walking = self._walk_paths.get(agent)
        return st.position, st.heading, None if walking is None else (walking[0], list(walking[1]))

    def undo_motion(self, agent: str, motion: tuple[Vec2, float, tuple[Vec2, list[Vec2]] | None]) -> None:
        st = self.world.agents[agent]
        st.position, st.heading, walking = motion
        if walking is None:
            self._walk_paths.pop(agent, None)
        else:
            self._walk_paths[agent] = walking

    # --- stepping --------------------------------------------------------------------------------------------
    def step(self, actions: dict[str, Primitive | None]) -> dict[str, str]:
        """Apply one primitive per ready agent; returns each acting agent's failure reason ('' on success)."""
        order = [a for a in self.agents if self.is_ready(a)]
        self.rng.shuffle(order)  # the seeded rule deciding who wins a contested object
        results: dict[str, str] = {}
        for agent in order:
            prim = actions.get(agent) or Primitive(PrimitiveKind.WAIT)
            failure = self._apply(agent, prim)
            results[agent] = failure
            self.last_failure[agent] = failure
            if self.benchmark == Benchmark.TDWMAT:
                cost_key = "failed" if failure else prim.kind.value
                cost = self.config.tdw_frames[cost_key]
                self.busy_until[agent] = self.frames + cost
        self.steps += 1
        if self.benchmark == Benchmark.CWAH:
            self.frames = self.steps
        else:
            self.frames = max(self.frames + 1, min(self.busy_until.values()))
        return results

    def _apply(self, agent: str, prim: Primitive) -> str:
        k = prim.kind
        if k == PrimitiveKind.WAIT:
            return ""
        if k == PrimitiveKind.SEND_MESSAGE:
            return self._send(agent, prim.text, prim.payload, prim.receiver)
        if self.benchmark == Benchmark.CWAH:
            return self._apply_cwah(agent, prim)
        return self._apply_tdw(agent, prim)

    def _send(self, agent: str, text: str, payload: str = "", receiver: str = "") -> str:
        text = truncate_message(text)
        if not text:
            return "empty message"
        if receiver and (receiver == agent or receiver not in self.agents):
            return "no such teammate"
        recipients = (receiver,) if receiver else tuple(a for a in self.agents if a != agent)
        if self.benchmark == Benchmark.CWAH:
            deliver = self.steps + 1
        else:
            delay = (len(text) - 1) // self.config.message_chars_per_frame
            deliver = self.frames + self.config.tdw_frames["send_message"] + delay
        self._mail.append(_Envelope(Message(agent, text, self.clock, payload, receiver), recipients, deliver))
        return ""

    # --- C-WAH -----------------------------------------------------------------------------------------------
    def _near(self, agent: str, object_id: int, reach: float) -> bool:
        return distance(self.world.agents[agent].position, self.world.position_of(object_id)) <= reach + 1e-6

    def _within_reach(self, agent: str, object_id: int, reach: float) -> bool:
        """C-WAH: the object is within ``reach`` and in the robot's own room (no arm reaches through a wall)."""
        if not self._near(agent, object_id, reach):
            return False
        room = self.scene.floorplan.room_at(self.world.agents[agent].position)
        return room is not None and room.id == self.world.room_of(object_id)

    def _known_object(self, object_id: int) -> bool:
        return self.world.is_item(object_id) or self.world.is_fixture(object_id)

    def _walk_towards(self, agent: str, goal: Vec2) -> str:
        """One walking step along the shortest path to ``goal`` (the path is kept while the goal stays put)."""
        st = self.world.agents[agent]
        cached = self._walk_paths.get(agent)
        if cached is None or cached[0] != goal or not cached[1] or cached[1][-1] != goal:
            try:
                path = self.nav.path(st.position, goal)
            except Exception:
                return "not reachable"
        else:
            path = cached[1]
        st.position, rest = walk_along(path, st.position, self.config.cwah_walk_step_m)
        self._walk_paths[agent] = (goal, rest)
        return ""

    def _apply_cwah(self, agent: str, prim: Primitive) -> str:
        w = self.world
        st = w.agents[agent]
        reach = self.config.cwah_reach_m
        k = prim.kind
        target = prim.args[0]
        if k == PrimitiveKind.WALK:
            if not (self._known_object(target) or any(r.id == target for r in self.scene.floorplan.rooms)):
                return "unknown object"
            return self._walk_towards(agent, w.position_of(target))
        if k == PrimitiveKind.WALK_TO:
            goal = (prim.args[0] / 1000, prim.args[1] / 1000)
            if not self.scene.floorplan.is_free(*self.scene.floorplan.cell_of(goal)):
                return "not reachable"  # a wall or outside the house
            return self._walk_towards(agent, goal)
        if not self._known_object(target):
            return "unknown object"
        if k in (PrimitiveKind.OPEN, PrimitiveKind.CLOSE):
            if not w.is_fixture(target) or not isinstance(w.fixture(target), Container):
                return "not a container"
            container = w.fixture(target)
            if not container.openable:
                return "cannot be opened"
            if not self._within_reach(agent, target, reach):
                return "too far"
            w.is_open[target] = k == PrimitiveKind.OPEN
            return ""
        if k == PrimitiveKind.GRAB:
            if not w.is_item(target):
                return "not graspable"
            if w.held_by(target) is not None:
                return "object taken"
            if w.hidden_in_closed(target):
                return "container closed"
            if not self._within_reach(agent, target, reach):
                return "too far"
            limit = self._handling_failure(agent, target)
            if limit:
                return limit
            hand = st.free_hand()
            if hand is None:
                return "no free hand"
            st.hands[hand] = target
            w.placements[target] = Placement.held(agent, hand)
            return ""
        # PUT_IN / PUT_ON: (item, fixture)
        dest = prim.args[1]
        if target not in st.hands:
            return "not holding"
        if not w.is_fixture(dest):
            return "unknown object"
        fixture = w.fixture(dest)
        is_container = isinstance(fixture, Container)
        if k == PrimitiveKind.PUT_IN and not is_container:
            return "not a container"
        if k == PrimitiveKind.PUT_ON and is_container:
            return "not a surface"
        if not self._within_reach(agent, dest, reach):
            return "too far"
        if is_container:
            if not w.is_open[dest]:
                return "container closed"
            if len(w.contents(dest)) >= fixture.capacity:
                return "container full"
        st.hands[st.hands.index(target)] = None
        w.placements[target] = Placement(Relation.IN if is_container else Relation.ON, dest)
        return ""

    def _handling_failure(self, agent: str, item_id: int) -> str:
        """The scene's handling limits on ``agent`` picking up the item ('' when none stops it)."""
        w = self.world
        limits = self.scene.handling
        placement = w.placements[item_id]
        place = None
        if placement.relation in (Relation.IN, Relation.ON) and w.is_fixture(placement.target):
            place = w.fixture(placement.target).name
        held = [w.item(h).name for h in w.agents[agent].hands if h is not None]
        return limits.failure("grab", agent, w.item(item_id).name, place, held)

    # --- TDW-MAT ---------------------------------------------------------------------------------------------
    def handling_refusal(self, agent: str, prim: Primitive) -> str:
        """Why TDW-MAT's bookkeeping refuses a grasp, put-in or drop ('' if it allows it): one object per hand,
        nothing taken from a teammate or out of a container, containers that do not nest and hold three."""
        w = self.world
        st = w.agents[agent]
        k = prim.kind
        if k == PrimitiveKind.GRASP:
            target, arm = prim.args
            if arm not in (0, 1):
                return "no such arm"
            if not w.is_item(target):
                return "not graspable"
            if st.hands[arm] is not None:
                return "hand full"
            if w.held_by(target) is not None:
                return "object taken"
            if w.placements[target].relation == Relation.IN:
                return "inside a container"
            return ""
        (arm,) = prim.args
        if arm not in (0, 1) or st.hands[arm] is None:
            return "not holding"
        if k == PrimitiveKind.PUT_INTO_CARRIER:
            item, carrier = st.hands[arm], st.hands[1 - arm]
            if carrier is None or not w.item(carrier).is_carrier:
                return "no container in the other hand"
            if w.item(item).is_carrier:
                return "containers do not nest"
            if len(w.contents(carrier)) >= w.item(carrier).capacity:
                return "container full"
        return ""

    def grasp_refusal(self, agent: str, target: int) -> str:
        """Why TDW-MAT's rules refuse ``agent`` a grasp of ``target`` within reach ('' if none does): it is not in
        view, or the scene's handling limits stop it."""
        st = self.world.agents[agent]
        if not self._in_view(st.position, st.heading, self.world.position_of(target)):
            return "not visible"
        return self._handling_failure(agent, target)

    def _apply_tdw(self, agent: str, prim: Primitive) -> str:
        w = self.world
        st = w.agents[agent]
        k = prim.kind
        cfg = self.config
        if k in (PrimitiveKind.TURN_LEFT, PrimitiveKind.TURN_RIGHT):
            delta = cfg.tdw_turn_deg if k == PrimitiveKind.TURN_LEFT else -cfg.tdw_turn_deg
            st.heading = (st.heading + delta) % 360
            return ""
        if k == PrimitiveKind.MOVE_FORWARD:
            rad = math.radians(st.heading)
            # exact along the axes (cos 270° is -1.8e-16 in floating point: a robot on a cell's edge would step
            # into the wall beside it)
            new = (
                st.position[0] + cfg.tdw_forward_m * round(math.cos(rad), 12),
                st.position[1] + cfg.tdw_forward_m * round(math.sin(rad), 12),
            )
            if not self.nav.line_of_sight(st.position, new):
                return "blocked"
            st.position = new
            return ""
        if k not in (PrimitiveKind.GRASP, PrimitiveKind.PUT_INTO_CARRIER, PrimitiveKind.DROP):
            return f"[{k.value}] is not a TDW-MAT primitive"
        refusal = self.handling_refusal(agent, prim)
        if refusal:
            return refusal
        if k == PrimitiveKind.GRASP:
            target, arm = prim.args
            if not self._near(agent, target, cfg.tdw_reach_m):
                return "too far"
            refusal = self.grasp_refusal(agent, target)
            if refusal:
                return refusal
            st.hands[arm] = target
            w.placements[target] = Placement.held(agent, arm)
            return ""
        (arm,) = prim.args
        item = st.hands[arm]
        st.hands[arm] = None
        if k == PrimitiveKind.PUT_INTO_CARRIER:
            w.placements[item] = Placement(Relation.IN, st.hands[1 - arm])
            return ""
        room = self.scene.floorplan.room_at(st.position)
        w.placements[item] = Placement(Relation.FLOOR, room.id if room else -1, position=st.position)
        return ""

    def _in_view(self, pos, heading, target) -> bool:
        if distance(pos, target) <= self.config.tdw_near_visible_m:
            return True
        return angle_between(bearing(pos, target), heading) <= HALF_FOV_DEG

    # --- observing -------------------------------------------------------------------------------------------
    def _view(self, object_id: int) -> ObjectView:
        return object_view(self.world, object_id)

    def _visible_ids(self, agent: str) -> list[int]:
        w = self.world
        if self.full_observability:
            return sorted(
                [f.id for f in (*self.scene.containers, *self.scene.surfaces)] + [i.id for i in self.scene.items]
            )
        st = w.agents[agent]
        here = self.scene.floorplan.room_at(st.position)
        if here is None:
            return []
        out = []
        for f in (*self.scene.containers, *self.scene.surfaces):
            if f.room == here.id and (
                self.benchmark == Benchmark.CWAH or self._in_view(st.position, st.heading, f.position)
            ):
                out.append(f.id)
        for item in self.scene.items:
            holder = w.held_by(item.id)
            if holder is not None:
                if holder == agent or self._sees_agent(agent, holder):
                    out.append(item.id)
                continue
            if w.hidden_in_closed(item.id) or w.room_of(item.id) != here.id:
                continue
            if self.benchmark == Benchmark.TDWMAT and not self._in_view(
                st.position, st.heading, w.position_of(item.id)
            ):
                continue
            out.append(item.id)
        return sorted(out)

    def _sees_agent(self, agent: str, other: str) -> bool:
        if self.full_observability:
            return True
        a, b = self.world.agents[agent], self.world.agents[other]
        ra, rb = self.scene.floorplan.room_at(a.position), self.scene.floorplan.room_at(b.position)
        if ra is None or rb is None or ra.id != rb.id:
            return False
        return self.benchmark == Benchmark.CWAH or self._in_view(a.position, a.heading, b.position)

    def observe(self, agent: str) -> Observation:
        st = self.world.agents[agent]
        room = self.scene.floorplan.room_at(st.position)
        mates = tuple(
            TeammateView(o, self.world.agents[o].position, self._room_id(o), tuple(self.world.agents[o].hands))
            for o in self.agents
            if o != agent and self._sees_agent(agent, o)
        )
        inbox = tuple(e.message for e in self._mail if agent in e.recipients and e.deliver_at <= self.clock)
        for e in self._mail:
            if agent in e.recipients and e.deliver_at <= self.clock:
                e.recipients = tuple(r for r in e.recipients if r != agent)
        self._mail = [e for e in self._mail if e.recipients]
        return Observation(
            agent=agent,
            step=self.steps,
            frames=self.frames,
            position=st.position,
            heading=st.heading,
            room=room.id if room else -1,
            holding=tuple(st.hands),
            visible=tuple(self._view(i) for i in self._visible_ids(agent)),
            teammates=mates,
            messages=inbox,
            last_failure=self.last_failure[agent],
            ready=self.is_ready(agent),
            view_headings=(st.heading,) if self.benchmark == Benchmark.TDWMAT else (),
        )

    def _room_id(self, agent: str) -> int:
        room = self.scene.floorplan.room_at(self.world.agents[agent].position)
        return room.id if room else -1

    def landmarks(self) -> tuple[ObjectView, ...]:
        """Objects every agent knows from the task description: the goal targets."""
        return task_landmarks(self.scene)
