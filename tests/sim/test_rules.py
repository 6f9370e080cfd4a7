"""Simulator rule invariants under random (valid-looking) primitives, for both benchmarks.

A seeded driver issues random primitives whose ids are drawn from the scene (biased towards objects within reach
so that grabs, puts and drops really happen), and after every step the world and the observations are checked.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coteam.domain.observation import Message, Observation
from coteam.domain.physics import Physics
from coteam.domain.world import AgentStart, Benchmark, ObjectKind, Relation, Scene, distance
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import fresh_episode, get_suite

K = PrimitiveKind
NAMES = ("alice", "bob", "carol")


# --- driver ----------------------------------------------------------------------------------------------------
def _message_text(rng: random.Random, tag: str) -> str:
    n = rng.choice([0, 1, 7, 60, 499, 500, 501, 777, 1201])
    return (tag + "".join(rng.choice("abc xyz.") for _ in range(n)))[:n]


class RandomDriver:
    def __init__(self, sim: Simulator, rng: random.Random):
        self.sim = sim
        self.rng = rng
        sc = sim.scene
        self.rooms = [r.id for r in sc.floorplan.rooms]
        self.containers = [c.id for c in sc.containers]
        self.fixtures = self.containers + [s.id for s in sc.surfaces]
        self.items = [i.id for i in sc.items]
        self.everything = self.rooms + self.fixtures + self.items
        self.focus: dict[str, int] = {}

    def _near(self, agent: str, ids: list[int], radius: float) -> list[int]:
        pos = self.sim.world.agents[agent].position
        return [i for i in ids if distance(pos, self.sim.world.position_of(i)) <= radius]

    def _pick(self, near: list[int]) -> int:
        if near and self.rng.random() < 0.8:
            return self.rng.choice(near)
        return self.rng.choice(self.everything)

    def primitive(self, agent: str) -> Primitive | None:
        rng = self.rng
        if rng.random() < 0.03:
            return None  # the simulator must treat a missing action as a wait
        tag = f"{agent}@{self.sim.clock}:"
        if self.sim.benchmark == Benchmark.CWAH:
            return self._cwah(agent, rng, tag)
        return self._tdw(agent, rng, tag)

    def _cwah(self, agent: str, rng: random.Random, tag: str) -> Primitive:
        kinds = [K.WALK, K.WALK_TO, K.OPEN, K.CLOSE, K.GRAB, K.PUT_IN, K.PUT_ON, K.SEND_MESSAGE, K.WAIT]
        kind = rng.choices(kinds, weights=[35, 10, 10, 4, 15, 8, 8, 5, 5])[0]
        if kind == K.WALK_TO:  # a random point of the house, walls and outside included
            fp = self.sim.scene.floorplan
            x, y = rng.uniform(-1, fp.width * fp.cell_size + 1), rng.uniform(-1, fp.height * fp.cell_size + 1)
            return Primitive(kind, (round(x * 1000), round(y * 1000)))
        if kind == K.WALK:
            if agent not in self.focus or rng.random() < 0.12:
                pool = self.fixtures + self.items if rng.random() < 0.8 else self.rooms
                self.focus[agent] = rng.choice(pool)
            return Primitive(kind, (self.focus[agent],))
        if kind in (K.OPEN, K.CLOSE):
            return Primitive(kind, (self._pick(self._near(agent, self.containers, 1.2)),))
        if kind == K.GRAB:
            return Primitive(kind, (self._pick(self._near(agent, self.items, 1.2)),))
        if kind in (K.PUT_IN, K.PUT_ON):
            held = self.sim.world.agents[agent].holding()
            item = rng.choice(held) if held and rng.random() < 0.9 else rng.choice(self.everything)
            return Primitive(kind, (item, self._pick(self._near(agent, self.fixtures, 1.2))))
        if kind == K.SEND_MESSAGE:
            return Primitive(kind, text=_message_text(rng, tag))
        return Primitive(K.WAIT)

    def _tdw(self, agent: str, rng: random.Random, tag: str) -> Primitive:
        kinds = [K.MOVE_FORWARD, K.TURN_LEFT, K.TURN_RIGHT, K.GRASP, K.PUT_INTO_CARRIER, K.DROP, K.SEND_MESSAGE, K.WAIT]
        kind = rng.choices(kinds, weights=[30, 12, 12, 22, 10, 6, 5, 3])[0]
        st_ = self.sim.world.agents[agent]
        if kind == K.GRASP:
            free = st_.free_hand()
            arm = free if free is not None and rng.random() < 0.8 else rng.choice((0, 1))
            return Primitive(kind, (self._pick(self._near(agent, self.items, 1.5)), arm))
        if kind == K.PUT_INTO_CARRIER:
            loose = [i for i, h in enumerate(st_.hands) if h is not None and not self.sim.world.item(h).is_carrier]
            return Primitive(kind, (rng.choice(loose) if loose and rng.random() < 0.8 else rng.choice((0, 1)),))
        if kind == K.DROP:
            return Primitive(kind, (rng.choice((0, 1)),))
        if kind == K.SEND_MESSAGE:
            return Primitive(kind, text=_message_text(rng, tag))
        return Primitive(kind)


def _crowded_scene(scene: Scene, rng: random.Random) -> Scene:
    """Start the agents on top of items (the first on a carrier), so random grasps are often within reach."""
    w_positions = []
    for item in sorted(scene.items, key=lambda i: not i.is_carrier):
        p = scene.placements[item.id]
        if p.relation == Relation.FLOOR and p.position is not None:
            w_positions.append(p.position)
        elif p.relation in (Relation.ON, Relation.IN) and p.target in {f.id for f in scene.surfaces}:
            w_positions.append(scene.fixture(p.target).position)
    starts = tuple(
        AgentStart(
            s.name, (w_positions[0] if k == 0 else rng.choice(w_positions)) if w_positions else s.position, s.heading
        )
        for k, s in enumerate(scene.agent_starts)
    )
    return dataclasses.replace(scene, agent_starts=starts)


# --- invariants ------------------------------------------------------------------------------------------------
def check_world(sim: Simulator) -> None:
    w, sc = sim.world, sim.scene
    fp = sc.floorplan
    assert set(w.placements) == {i.id for i in sc.items}, "every item has exactly one placement"
    in_hands = Counter(h for a in w.agents.values() for h in a.hands if h is not None)
    assert all(c == 1 for c in in_hands.values()), f"an item is in two hands: {in_hands}"
    for name, a in w.agents.items():
        assert len(a.hands) == 2, f"{name} has {len(a.hands)} hands"
        for hand, item in enumerate(a.hands):
            if item is not None:
                assert w.placements[item].relation == Relation.HELD
                assert (w.placements[item].agent, w.placements[item].hand) == (name, hand)
        cell = fp.cell_of(a.position)
        assert fp.is_free(*cell), f"{name} stands on a wall cell {cell} at {a.position}"
        assert fp.room_at(a.position) is not None, f"{name} is outside every room at {a.position}"
    for item_id, p in w.placements.items():
        if p.relation == Relation.HELD:
            assert w.agents[p.agent].hands[p.hand] == item_id, f"HELD placement of {item_id} disagrees with hands"
        elif p.relation == Relation.FLOOR:
            assert p.position is not None
            room = fp.room_at(p.position)
            assert room is not None and room.id == p.target, f"item {item_id} on the floor of the wrong room"
        elif p.relation == Relation.IN:
            if w.is_item(p.target):
                carrier = w.item(p.target)
                assert carrier.is_carrier and not w.item(item_id).is_carrier, "containers do not nest"
                assert w.placements[p.target].relation != Relation.IN
            else:
                assert w.is_fixture(p.target) and w.fixture(p.target) in sc.containers
        elif p.relation == Relation.ON:
            assert w.is_fixture(p.target) and w.fixture(p.target) in sc.surfaces
        w.room_of(item_id)  # every item is somewhere inside the apartment
    for c in sc.containers:
        assert len(w.contents(c.id)) <= c.capacity
    for it in sc.items:
        if it.is_carrier:
            assert len(w.contents(it.id)) <= it.capacity, f"carrier {it.id} over capacity"


def check_observation(sim: Simulator, obs: Observation) -> None:
    w = sim.world
    st_ = w.agents[obs.agent]
    assert obs.holding == tuple(st_.hands)
    assert obs.step == sim.steps and obs.frames == sim.frames
    assert obs.ready == sim.is_ready(obs.agent)
    for v in obs.visible:
        if v.kind != ObjectKind.ITEM:
            continue
        if not sim.full_observability:
            assert not w.hidden_in_closed(v.id), f"{obs.agent} sees item {v.id} inside a closed container"
        assert v.held_by == (w.held_by(v.id) or "")
        assert v.location == w.placements[v.id].relation
    for m in obs.messages:
        assert m.sender != obs.agent, "an agent received its own message"
        assert 0 < len(m.text) <= 500


@dataclass
class _Pending:
    message: Message
    recipients: set[str]
    deliver_at: int


def drive(sim: Simulator, rng: random.Random, steps: int) -> Counter:
    """Random primitives for ``steps`` steps, checking every invariant after every step. Returns outcome counts."""
    cfg = sim.config
    driver = RandomDriver(sim, rng)
    pending: list[_Pending] = []
    busy_total = dict.fromkeys(sim.agents, 0)
    outcomes: Counter = Counter()
    check_world(sim)
    for a in sim.agents:
        check_observation(sim, sim.observe(a))
    for _ in range(steps):
        clock_before, steps_before = sim.clock, sim.steps
        ready = {a for a in sim.agents if sim.is_ready(a)}
        actions = {a: driver.primitive(a) for a in sim.agents}
        results = sim.step(actions)
        assert set(results) == ready, "exactly the ready agents act"
        assert sim.steps == steps_before + 1
        assert sim.clock > clock_before, "the clock only moves forward"
        for a, failure in results.items():
            prim = actions[a] or Primitive(K.WAIT)
            outcomes[(prim.kind.value, failure)] += 1
            if prim.kind == K.SEND_MESSAGE and not failure:
                text = prim.text[:500]
                if sim.benchmark == Benchmark.CWAH:
                    deliver = steps_before + 1
                else:
                    deliver = (
                        clock_before + cfg.tdw_frames["send_message"] + (len(text) - 1) // (cfg.message_chars_per_frame)
                    )
                pending.append(_Pending(Message(a, text, clock_before), set(sim.agents) - {a}, deliver))
            if prim.kind == K.SEND_MESSAGE and prim.text == "":
                assert failure, "an empty message is not sent"
            if sim.benchmark == Benchmark.TDWMAT:
                busy_total[a] += cfg.tdw_frames["failed" if failure else prim.kind.value]
        if sim.benchmark == Benchmark.TDWMAT:
            assert sim.busy_until == busy_total, "busy time = sum of the agent's primitive costs"
            assert min(sim.busy_until.values()) == sim.frames, "the clock stops when the next agent is free"
        check_world(sim)
        for a in sim.agents:
            obs = sim.observe(a)
            check_observation(sim, obs)
            due = [p for p in pending if a in p.recipients and p.deliver_at <= sim.clock]
            key = lambda m: (m.sender, m.step, m.text)  # noqa: E731
            assert sorted(obs.messages, key=key) == sorted((p.message for p in due), key=key), (
                f"{a} at clock {sim.clock}: got {obs.messages}, expected {[p.message for p in due]}"
            )
            for p in due:
                p.recipients.discard(a)
        pending = [p for p in pending if p.recipients]
    return outcomes


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), index=st.integers(0, 9), n_agents=st.integers(2, 3), sim_seed=st.integers(0, 1000))
def test_cwah_random_primitives_keep_invariants(seed: int, index: int, n_agents: int, sim_seed: int) -> None:
    scene = fresh_episode(Benchmark.CWAH, seed, index).build()
    sim = Simulator(scene, NAMES[:n_agents], seed=sim_seed)
    drive(sim, random.Random(seed * 31 + sim_seed), 200)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    index=st.integers(0, 23),
    n_agents=st.integers(2, 3),
    sim_seed=st.integers(0, 1000),
    slow_messages=st.booleans(),
)
def test_tdwmat_random_primitives_keep_invariants(
    seed: int, index: int, n_agents: int, sim_seed: int, slow_messages: bool
) -> None:
    rng = random.Random(seed * 31 + sim_seed)
    scene = _crowded_scene(fresh_episode(Benchmark.TDWMAT, seed, index).build(), rng)
    cfg = Physics(message_chars_per_frame=100) if slow_messages else Physics()
    sim = Simulator(scene, NAMES[:n_agents], seed=sim_seed, config=cfg)
    drive(sim, rng, 200)


def test_driver_exercises_the_interesting_rules() -> None:
    """The random driver is not vacuous: grabs, puts, opens, drops and messages do succeed."""
    cwah: Counter = Counter()
    for i in range(4):
        spec = get_suite("cwah-test").episodes()[2 * i]
        cwah += drive(Simulator(spec.build(), NAMES[:2], seed=i), random.Random(i), 200)
    for kind in ("grab", "open", "close", "putin", "putback", "send_message", "walktowards", "walkto"):
        assert cwah[(kind, "")] > 0, f"no successful [{kind}] in C-WAH: {cwah}"
    assert cwah[("grab", "object taken")] + cwah[("grab", "too far")] + cwah[("grab", "container closed")] > 0
    tdw: Counter = Counter()
    for i in range(3):
        rng = random.Random(i)
        scene = _crowded_scene(get_suite("tdwmat-test").episodes()[i * 5].build(), rng)
        tdw += drive(Simulator(scene, NAMES[:2], seed=i), rng, 200)
    for kind in ("grasp", "drop", "move_forward", "turn_left", "send_message"):
        assert tdw[(kind, "")] > 0, f"no successful [{kind}] in TDW-MAT: {tdw}"
    assert tdw[("move_forward", "blocked")] + tdw[("grasp", "too far")] > 0


@settings(max_examples=4, deadline=None)
@given(index=st.integers(0, 9), sim_seed=st.integers(0, 100))
def test_full_observability_sees_everything(index: int, sim_seed: int) -> None:
    scene = get_suite("cwah-test").episodes()[index].build()
    sim = Simulator(scene, NAMES[:2], seed=sim_seed, full_observability=True)
    rng = random.Random(sim_seed)
    driver = RandomDriver(sim, rng)
    for _ in range(30):
        sim.step({a: driver.primitive(a) for a in sim.agents})
        for a in sim.agents:
            seen = {v.id for v in sim.observe(a).visible}
            assert {i.id for i in scene.items} <= seen


def test_closed_container_contents_appear_only_when_opened() -> None:
    scene = get_suite("cwah-test").episodes()[0].build()
    container = next(
        c
        for c in scene.containers
        if any(p.target == c.id and p.relation == Relation.IN for p in scene.placements.values())
    )
    inside = {i for i, p in scene.placements.items() if p.relation == Relation.IN and p.target == container.id}
    starts = tuple(AgentStart(s.name, container.position, s.heading) for s in scene.agent_starts)
    sim = Simulator(dataclasses.replace(scene, agent_starts=starts), NAMES[:2], seed=0)
    assert not inside & {v.id for v in sim.observe("alice").visible}
    assert sim.step({"alice": Primitive(K.OPEN, (container.id,))})["alice"] == ""
    assert inside <= {v.id for v in sim.observe("alice").visible}
    assert inside <= {v.id for v in sim.observe("bob").visible}
    assert sim.step({"bob": Primitive(K.CLOSE, (container.id,))})["bob"] == ""
    assert not inside & {v.id for v in sim.observe("alice").visible}


# --- messages --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("length", [1, 20, 500, 501, 2000])
def test_cwah_message_is_delivered_next_observation_truncated(length: int) -> None:
    scene = get_suite("cwah-test").episodes()[1].build()
    sim = Simulator(scene, NAMES[:3], seed=0)
    for _ in range(3):
        sim.step({})
    for a in sim.agents:
        sim.observe(a)
    text = "m" * length
    t = sim.steps
    assert sim.step({"alice": Primitive(K.SEND_MESSAGE, text=text)}) == dict.fromkeys(sim.agents, "")
    assert sim.observe("alice").messages == ()
    for mate in ("bob", "carol"):
        msgs = sim.observe(mate).messages
        assert msgs == (Message("alice", text[:500], t),)
        assert sim.observe(mate).messages == (), "a message is observed once"
    sim.step({})
    assert all(sim.observe(a).messages == () for a in sim.agents)


def test_a_message_for_one_teammate_reaches_only_it() -> None:
    """A message addressed to one teammate (REVECA's targeted questions) is delivered to it alone; one for a robot
    that is no teammate fails without being sent."""
    sim = Simulator(get_suite("cwah-test").episodes()[1].build(), NAMES[:3], seed=0)
    for a in sim.agents:
        sim.observe(a)
    t = sim.steps
    assert sim.step({"alice": Primitive(K.SEND_MESSAGE, text="bob, is the apple still there?", receiver="bob")}) == (
        dict.fromkeys(sim.agents, "")
    )
    (got,) = sim.observe("bob").messages
    assert (got.sender, got.text, got.step, got.receiver) == ("alice", "bob, is the apple still there?", t, "bob")
    assert sim.observe("carol").messages == ()
    for wrong in ("dave", "alice"):
        assert sim.step({"alice": Primitive(K.SEND_MESSAGE, text="hello", receiver=wrong)})["alice"] == (
            "no such teammate"
        )
    sim.step({})
    assert all(sim.observe(a).messages == () for a in sim.agents)


@pytest.mark.parametrize(
    ("length", "chars_per_frame"), [(1, 500), (500, 500), (1500, 500), (250, 100), (301, 100), (500, 7)]
)
def test_tdwmat_message_delay(length: int, chars_per_frame: int) -> None:
    scene = get_suite("tdwmat-test").episodes()[0].build()
    cfg = Physics(message_chars_per_frame=chars_per_frame)
    sim = Simulator(scene, NAMES[:2], seed=0, config=cfg)
    sent_at = sim.frames
    sim.step({"alice": Primitive(K.SEND_MESSAGE, text="q" * length), "bob": Primitive(K.GRASP, (-5, 0))})
    text = ("q" * length)[:500]
    deliver = sent_at + cfg.tdw_frames["send_message"] + (len(text) - 1) // chars_per_frame
    received: list[tuple[int, tuple[Message, ...]]] = []
    while sim.frames < deliver + 5:
        msgs = sim.observe("bob").messages
        assert sim.observe("alice").messages == ()
        if msgs:
            received.append((sim.frames, msgs))
        sim.step({a: Primitive(K.WAIT) for a in sim.agents})
    assert len(received) == 1
    frame, msgs = received[0]
    assert msgs == (Message("alice", text, sent_at),)
    assert frame == deliver, f"delivered at frame {frame}, expected {deliver}"


# --- contested objects -----------------------------------------------------------------------------------------
def _contest_scene(benchmark: Benchmark) -> tuple[Scene, int]:
    suite = "cwah-test" if benchmark == Benchmark.CWAH else "tdwmat-test"
    for spec in get_suite(suite).episodes():
        scene = spec.build()
        for item in scene.items:
            p = scene.placements[item.id]
            if p.relation == Relation.ON and not item.is_carrier:
                pos = scene.fixture(p.target).position
                starts = tuple(AgentStart(s.name, pos, s.heading) for s in scene.agent_starts)
                return dataclasses.replace(scene, agent_starts=starts), item.id
    raise AssertionError("no item on a surface")


def _contest(scene: Scene, item: int, seed: int) -> str:
    sim = Simulator(scene, NAMES[:2], seed=seed)
    prim = Primitive(K.GRAB, (item,)) if scene.benchmark == Benchmark.CWAH else Primitive(K.GRASP, (item, 0))
    results = sim.step({"alice": prim, "bob": prim})
    assert sorted(results.values()) == ["", "object taken"], results
    winner = next(a for a, f in results.items() if f == "")
    assert sim.world.held_by(item) == winner
    loser = next(a for a in results if a != winner)
    assert item not in sim.world.agents[loser].hands
    check_world(sim)
    return winner


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_contested_grab_has_one_winner_decided_by_seed(benchmark: Benchmark) -> None:
    scene, item = _contest_scene(benchmark)
    winners = {seed: _contest(scene, item, seed) for seed in range(24)}
    assert set(winners.values()) == {"alice", "bob"}, "the tie-break should depend on the seed"
    for seed, winner in winners.items():
        assert _contest(scene, item, seed) == winner, "the same seed must give the same winner"


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_contested_grab_is_deterministic_per_seed(seed: int) -> None:
    scene, item = _contest_scene(Benchmark.CWAH)
    assert _contest(scene, item, seed) == _contest(scene, item, seed)


def test_a_cwah_robot_reaches_nothing_through_a_wall() -> None:
    """Within reach is not enough: the robot must be in the object's room (a primitive used to reach through a wall;
    the skills walk into the room first, so no method's run on cwah-test changes)."""
    for spec in get_suite("cwah-test").episodes():
        scene = spec.build()
        sim = Simulator(scene, NAMES[:2], seed=0)
        fp, world, reach = scene.floorplan, sim.world, sim.config.cwah_reach_m
        spots = [fp.center_of((x, y)) for y, row in enumerate(fp.rows) for x in range(len(row)) if fp.is_free(x, y)]
        for container in (c for c in scene.containers if c.openable):
            at, room = world.position_of(container.id), world.room_of(container.id)
            rooms = {p: fp.room_at(p) for p in spots if distance(p, at) <= reach}
            beyond = [p for p, r in rooms.items() if r is not None and r.id != room]
            inside = [p for p, r in rooms.items() if r is not None and r.id == room]
            if beyond and inside:
                world.agents["alice"].position = beyond[0]
                assert sim.step({"alice": Primitive(K.OPEN, (container.id,))})["alice"] == "too far"
                world.agents["alice"].position = inside[0]
                sim.busy_until = dict.fromkeys(sim.agents, 0)
                assert sim.step({"alice": Primitive(K.OPEN, (container.id,))})["alice"] == ""
                return
    raise AssertionError("no container of cwah-test lies within reach of another room")
