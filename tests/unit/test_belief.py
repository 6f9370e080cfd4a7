"""The shared belief state (coteam.belief) and the agents' common-sense priors (coteam.domain.priors).

Memories come from the real simulator (teleporting an agent into a room and observing it, opening containers
with the open primitive, sending real status messages) or are assembled from observations directly.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from pathlib import Path

import pytest

from coteam.agent.memory import AgentMemory
from coteam.agent.messages import ItemRef, Sighting, TeamStatus, decode_payload, encode_payload
from coteam.agent.reasoning import Decision
from coteam.belief import (
    NOWHERE,
    P_TAKE_AFTER_VISIT,
    SEEN_EMPTY_EPS,
    BeliefState,
    PlaceKind,
)
from coteam.domain import priors
from coteam.domain.observation import Message
from coteam.domain.world import Scene
from coteam.kit import TeamWrapper
from coteam.registry import make_team
from coteam.teams import mcts
from coteam.value import abstract
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite

AGENTS = ("alice", "bob")


# --- helpers ---------------------------------------------------------------------------------------------
def _episode(index: int, suite: str = "cwah-test") -> tuple[Scene, Simulator, dict[str, AgentMemory]]:
    """A scene, its simulator and each agent's memory holding only the task's landmarks (nothing observed)."""
    scene = get_suite(suite).episodes()[index].build()
    sim = Simulator(scene, AGENTS)
    mems = {}
    for a in AGENTS:
        mem = AgentMemory(a, scene.benchmark, scene.floorplan, scene.task)
        mem.objects.update({v.id: v for v in sim.landmarks()})
        mems[a] = mem
    return scene, sim, mems


def _room(scene: Scene, name: str) -> int:
    return next(r.id for r in scene.floorplan.rooms if r.name == name)


def _container(scene: Scene, name: str) -> int:
    return next(c.id for c in scene.containers if c.name == name)


def _enter(sim: Simulator, mem: AgentMemory, room_id: int) -> None:
    sim.world.agents[mem.agent].position = sim.scene.floorplan.room_center(room_id)
    mem.update(sim.observe(mem.agent))


def _open(sim: Simulator, mem: AgentMemory, container_id: int) -> None:
    sim.world.agents[mem.agent].position = sim.world.position_of(container_id)
    assert sim.step({mem.agent: Primitive(PrimitiveKind.OPEN, (container_id,))})[mem.agent] == ""
    mem.update(sim.observe(mem.agent))


def _wait(sim: Simulator, mems: dict[str, AgentMemory], steps: int = 1) -> None:
    for _ in range(steps):
        sim.step({})
        for mem in mems.values():
            mem.update(sim.observe(mem.agent))


def _status(agent, room, holding=(), seen=(), explored=(), complete=True) -> TeamStatus:
    return TeamStatus(
        agent=agent,
        room=room,
        holding=tuple(ItemRef(id=i, name=n) for i, n in holding),
        seen=tuple(Sighting(id=i, name=n, room=r) for i, n, r in seen),
        seen_complete=complete,
        explored=tuple(explored),
    )


def _send(sim: Simulator, sender: str, status: TeamStatus, receiver: AgentMemory) -> None:
    """A status message through the simulator; the receiver's memory gets it with its payload validated."""
    prim = Primitive(PrimitiveKind.SEND_MESSAGE, text=status.text(), payload=encode_payload(status))
    assert sim.step({sender: prim})[sender] == ""
    receiver.update(sim.observe(receiver.agent))
    last = receiver.messages[-1]
    assert last.text == status.text()
    receiver.messages[-1] = Message(last.sender, last.text, last.step, decode_payload(last.payload, (TeamStatus,)))


def _total(dist) -> float:
    return sum(dist.values())


# --- priors ----------------------------------------------------------------------------------------------
def test_priors_and_abstract_models_are_shared_not_copied():
    for name in ("item_category", "room_weight", "container_weight", "in_container_chance", "GOAL_ROOM_FACTOR"):
        assert getattr(abstract, name) is getattr(priors, name)
    for copy in ("ROOM_PRIOR", "CONTAINER_PRIOR", "IN_CONTAINER_PRIOR", "_FOOD_NAMES", "_TABLEWARE_NAMES"):
        assert not hasattr(abstract, copy) and not hasattr(mcts, copy)
    # The MCTS baseline searches the core's abstract models, the ones the team value model rolls out, on the
    # team's geometry (the kit's, as every team's).
    for name in ("CwahModel", "TdwModel", "CostModel"):
        assert getattr(mcts, name) is getattr(abstract, name)
    assert "def geometry" not in Path(mcts.__file__).read_text()
    assert priors.item_category("apple") == "food" and priors.item_category("plate") == "tableware"
    assert priors.item_category("iphone") == "stuff" and priors.item_category("towel") == "misc"


def test_an_item_name_the_tables_lack_takes_the_category_learned_for_it():
    _, _, mems = _episode(0)
    m = mems["alice"]
    assert m.item_category("towel") == "misc"
    m.learned_categories.update(towel="stuff", apple="stuff")
    assert m.item_category("towel") == "stuff"
    assert m.item_category("apple") == "food"  # what the tables know is not overridden


def test_food_is_more_likely_in_the_kitchen_than_the_bathroom_before_exploring():
    scene, _, mems = _episode(0)  # prepare afternoon tea: apple, cupcake, wine
    belief = BeliefState(mems["alice"])
    loc = belief.location("apple")
    assert _total(loc) == pytest.approx(1.0)
    assert {p.kind for p in loc} == {PlaceKind.ROOM}  # nothing seen: only rooms
    kitchen, bathroom = _room(scene, "kitchen"), _room(scene, "bathroom")
    assert belief.p_in_room("apple", kitchen) > 3 * belief.p_in_room("apple", bathroom)
    assert belief.entropy("apple") == pytest.approx(-sum(p * math.log2(p) for p in loc.values()))
    assert 0 < belief.entropy("apple") <= 2.0  # at most log2(4 rooms)


# --- my own observations -----------------------------------------------------------------------------
def test_a_room_searched_without_apples_gets_almost_nothing_and_the_rest_renormalizes():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    bathroom = _room(scene, "bathroom")
    before = {r.id: BeliefState(alice).p_in_room("apple", r.id) for r in scene.floorplan.rooms}
    _enter(sim, alice, bathroom)
    after_entering = BeliefState(alice)
    # Its open part is seen; its closed cabinet may still hold one.
    cabinet = _container(scene, "bathroomcabinet")
    assert after_entering.p_in_container("apple", cabinet) > 0
    assert bathroom in after_entering.explored_rooms() and bathroom not in after_entering.unexplored_rooms()
    _open(sim, alice, cabinet)
    after = BeliefState(alice)
    assert cabinet in after.checked_containers()
    assert not [v for v in alice.items() if v.name == "apple"]  # precondition: no apple in the bathroom
    assert after.p_in_room("apple", bathroom) < 0.01
    assert after.p_in_container("apple", cabinet) == 0.0
    assert _total(after.location("apple")) == pytest.approx(1.0)
    others = [r.id for r in scene.floorplan.rooms if r.id != bathroom]
    ratios = [after.p_in_room("apple", r) / before[r] for r in others]
    assert ratios == pytest.approx([ratios[0]] * len(ratios))  # the same factor for every other room
    assert ratios[0] > 1.0


def test_a_known_instance_gets_the_mass():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    _enter(sim, alice, _room(scene, "bedroom"))  # the wine (27) stands on the desk
    belief = BeliefState(alice, teammates=AGENTS)
    loc = belief.location("wine")
    item = [p for p in loc if p.kind == PlaceKind.ITEM]
    assert [p.id for p in item] == [27] and loc[item[0]] == pytest.approx(1.0)
    assert belief.known_instances("wine") == {27: 1.0}
    assert item[0] in belief.places and item[0].text() == "<wine> (27)"
    assert belief.entropy("wine") == pytest.approx(0.0)
    # The apple was not there: the bedroom's open part is searched, its nightstand and closet are not.
    assert {p.kind for p in belief.location("apple")} == {PlaceKind.ROOM, PlaceKind.CONTAINER}


def test_an_unchecked_fridge_gets_food_mass_and_an_opened_empty_one_none():
    scene, sim, mems = _episode(0)  # alice starts in the kitchen; the apple is in a kitchen cabinet
    alice = mems["alice"]
    alice.update(sim.observe("alice"))
    fridge, microwave = _container(scene, "fridge"), _container(scene, "microwave")
    belief = BeliefState(alice)
    p_fridge = belief.p_in_container("apple", fridge)
    assert p_fridge > belief.p_in_container("apple", microwave) > 0
    assert p_fridge > belief.p_in_room("apple", _room(scene, "bathroom"))
    assert {c.id for c in belief.unchecked_containers()} >= {fridge, microwave}
    _open(sim, alice, fridge)
    opened = BeliefState(alice)
    assert opened.p_in_container("apple", fridge) == 0.0
    assert _total(opened.location("apple")) == pytest.approx(1.0)
    assert opened.p_in_container("apple", microwave) > belief.p_in_container("apple", microwave)
    # Opening the cabinets finds the apple: all its mass moves there.
    for cabinet in [c.id for c in scene.containers if c.name == "kitchencabinet"]:
        _open(sim, alice, cabinet)
    found = BeliefState(alice)
    holder = alice.objects[23].holder
    assert found.p_in_container("apple", holder) == pytest.approx(1.0)


def test_tdw_partly_explored_room_keeps_mass_in_proportion_to_its_unseen_share():
    scene, sim, mems = _episode(0, "tdwmat-test")
    alice = mems["alice"]
    here = sim.scene.floorplan.room_at(sim.world.agents["alice"].position).id
    for heading in (0, 90):
        sim.world.agents["alice"].heading = heading
        alice.update(sim.observe("alice"))
    belief = BeliefState(alice)
    seen = belief.coverage(here)
    assert 0 < seen < 1 and here in belief.partly_explored_rooms() and here in belief.unexplored_rooms()
    known = {v.name for v in alice.items()}
    name = next(n for n in belief.needed_items() if n not in known)
    loc = belief.location(name)
    assert loc == belief.unseen_location(name) and _total(loc) == pytest.approx(1.0)
    bed_room = alice.objects[scene.task.predicates[0].target].room
    other = next(r for r in scene.floorplan.rooms if r.id not in (here, bed_room))
    cat = scene.task.category
    expected = (
        priors.room_weight(cat, belief.memory.room_name(here))
        * ((1 - seen) + seen * SEEN_EMPTY_EPS)
        / priors.room_weight(cat, other.name)
    )
    assert belief.p_in_room(name, here) / belief.p_in_room(name, other.id) == pytest.approx(expected)
    # Looking all around leaves the epsilon only.
    for heading in range(0, 360, 45):
        sim.world.agents["alice"].heading = heading
        alice.update(sim.observe("alice"))
    full = BeliefState(alice)
    assert full.coverage(here) == 1.0 and here in full.explored_rooms()
    assert full.p_in_room(name, here) < 0.01


def test_nowhere_left_is_reported_explicitly():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    for room in scene.floorplan.rooms:
        _enter(sim, alice, room.id)
    for c in scene.containers:
        if c.openable and not sim.world.is_open[c.id]:
            _open(sim, alice, c.id)
    belief = BeliefState(alice)
    assert not belief.unexplored_rooms() and not belief.unchecked_containers()
    assert belief.location("banana") == {NOWHERE: 1.0} and belief.nowhere_left("banana")
    assert belief.entropy("banana") == 0.0
    # Every apple unit is found: the next one is the known instance, never "nowhere".
    assert [p.id for p in belief.location("apple")] == [23]


# --- teammates and messages ------------------------------------------------------------------------------
def test_a_status_payload_round_trips_and_renders_the_status_text():
    status = _status(
        "bob", "kitchen", [(12, "apple"), (27, "wine")], [(5, "cupcake", "bedroom")], ["kitchen", "bedroom"]
    )
    assert status.text() == (
        "bob: in the kitchen; holding <apple> (12), <wine> (27); seen <cupcake> (5) in the bedroom; "
        "explored kitchen, bedroom."
    )
    assert decode_payload(encode_payload(status), (TeamStatus,)) == status
    assert _status("bob", "kitchen").text() == "bob: in the kitchen; holding nothing."
    long = _status("bob", "kitchen", explored=["livingroom_with_a_very_long_name"] * 16)
    assert len(long.fitted(120).text()) <= 120 and long.fitted(120).explored  # cut to fit, rooms dropped last first


def test_a_teammate_status_message_updates_holdings_and_explored_rooms():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    alice.update(sim.observe("alice"))  # the kitchen
    cabinet = sim.world.placements[23].target
    _open(sim, alice, cabinet)  # the apple (23) is in a kitchen cabinet
    assert 23 in alice.objects and BeliefState(alice).p_in_container("apple", cabinet) == pytest.approx(1.0)
    _enter(sim, alice, _room(scene, "livingroom"))
    _wait(sim, {"alice": alice}, 2)  # meanwhile bob fetches the apple
    # A status report (TeamStatus payload), sent through the simulator.
    status = _status("bob", "kitchen", [(23, "apple")], [(27, "wine", "bedroom")], ["kitchen", "bedroom"])
    _send(sim, "bob", status, alice)
    belief = BeliefState(alice)
    bob = belief.teammate("bob")
    kitchen, bedroom = _room(scene, "kitchen"), _room(scene, "bedroom")
    assert bob.holding == (23,) and bob.took[23] == 1.0 and bob.room == kitchen
    assert {kitchen, bedroom} <= bob.explored_rooms
    assert bob.last_report_step is not None and bob.last_seen_step is None and bob.history[-1].source == "message"
    apple = next(st for st in belief.subgoals() if st.item == "apple")
    assert apple.held_by_others == ((23, "bob"),) and apple.unit_status() == ("held by bob",) and apple.missing == 0
    assert belief.location("apple") == {}  # nothing left to find: bob has it
    assert belief.p_in_container("apple", cabinet) == 0.0  # not at its old place
    assert "apple" not in belief.needed_items()
    # bob saw the wine in the bedroom (alice never did).
    assert belief.p_in_room("wine", bedroom) > 0.9
    assert bedroom in belief.teammate_explored_rooms()
    # Later bob reports holding nothing: the apple was probably delivered.
    _send(sim, "bob", _status("bob", "livingroom", explored=["bedroom", "livingroom"]), alice)
    later = BeliefState(alice)
    apple = next(st for st in later.subgoals() if st.item == "apple")
    assert apple.unit_status() == ("probably done",) and later.teammate("bob").released == (23,)
    assert later.teammate("bob").holding == ()


def test_a_room_a_teammate_reports_explored_loses_mass_for_goal_items_it_did_not_mention():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    bedroom, bathroom = _room(scene, "bedroom"), _room(scene, "bathroom")
    alice.update(sim.observe("alice"))  # the kitchen
    before = BeliefState(alice)
    for name in ("cupcake", "banana"):
        before.location(name)  # computed now: a belief reads its memory lazily
    _send(sim, "bob", _status("bob", "bathroom", explored=["bedroom", "bathroom"]), alice)
    after = BeliefState(alice)
    assert after.teammate_explored_rooms() == {bedroom: pytest.approx(0.1), bathroom: pytest.approx(0.1)}
    kitchen = _room(scene, "kitchen")
    for room in (bedroom, bathroom):
        # Only the open part is lowered (x0.1): bob does not say which containers he opened.
        q = priors.in_container_chance("food", scene.floorplan.room(room).name)
        odds_before = before.p_in_room("cupcake", room) / before.p_in_room("cupcake", kitchen)
        odds_after = after.p_in_room("cupcake", room) / after.p_in_room("cupcake", kitchen)
        assert odds_after / odds_before == pytest.approx((1 - q) * 0.1 + q)
        assert after.p_in_room("cupcake", room) < before.p_in_room("cupcake", room)
    assert after.p_in_room("cupcake", kitchen) > before.p_in_room("cupcake", kitchen)
    # Items the task does not need are not mentioned in status messages: no evidence about them.
    assert after.p_in_room("banana", bedroom) == pytest.approx(before.p_in_room("banana", bedroom))
    # An incomplete list of sightings: weaker evidence.
    seen = [(i, "plate", "kitchen") for i in range(100, 106)]
    _send(sim, "bob", _status("bob", "kitchen", seen=seen, explored=["livingroom"], complete=False), alice)
    assert BeliefState(alice).teammate_explored_rooms()[_room(scene, "livingroom")] == pytest.approx(0.5)


def test_my_newer_sighting_wins_over_an_older_message():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    held = _status("bob", "bedroom", [(27, "wine")])
    alice.messages.append(Message("bob", held.text(), 0, held))
    _wait(sim, {"alice": alice}, 3)
    _enter(sim, alice, _room(scene, "bedroom"))  # the wine is on the desk after all
    belief = BeliefState(alice)
    assert belief.teammate("bob").holding == () and 27 in belief.known_instances("wine")
    assert next(st for st in belief.subgoals() if st.item == "wine").unit_status() == ("missing",)


def test_a_real_status_message_round_trips():
    scene, sim, mems = _episode(0)
    alice, bob = mems["alice"], mems["bob"]
    for mem in mems.values():
        mem.update(sim.observe(mem.agent))  # bob starts in the bedroom, next to the wine
    status = TeamStatus.of(bob)
    assert "seen <wine> (27) in the bedroom" in status.text()
    _send(sim, "bob", status, alice)
    belief = BeliefState(alice)
    mate = belief.teammate("bob")
    assert mate.room == _room(scene, "bedroom") and _room(scene, "bedroom") in mate.explored_rooms
    assert belief.known_instances("wine") == {27: pytest.approx(1.0, abs=0.01)}
    assert belief.p_in_room("wine", _room(scene, "bedroom")) > 0.9


def test_a_teammate_seen_in_the_room_of_a_known_item_may_have_taken_it():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    bedroom = _room(scene, "bedroom")
    _enter(sim, alice, bedroom)
    assert 27 in alice.objects
    _enter(sim, alice, _room(scene, "kitchen"))
    _wait(sim, {"alice": alice}, 2)
    _send(sim, "bob", _status("bob", "bedroom"), alice)
    belief = BeliefState(alice, teammates=AGENTS)
    assert belief.teammate("bob").took[27] == pytest.approx(P_TAKE_AFTER_VISIT)
    assert belief.known_instances("wine")[27] == pytest.approx(1 - P_TAKE_AFTER_VISIT)
    loc = belief.location("wine")
    assert _total(loc) == pytest.approx(1.0)
    assert 0.5 < sum(p for place, p in loc.items() if place.kind == PlaceKind.ITEM) < 1.0
    took = [v for v in belief.uncertain_variables() if v.kind == "teammate_took"]
    assert [v.text for v in took] == ["bob already took <wine> (27)"]


# --- what to branch on -------------------------------------------------------------------------------
def _grounded(belief: BeliefState) -> None:
    mem = belief.memory
    names = mem.known_names()
    reported = {int(k): n for msg in mem.messages for n, k in re.findall(r"<([^<>]+)> \((\d+)\)", msg.text)}
    rooms = {r.name for r in mem.floorplan.rooms}
    mates = set(mem.teammates) | {msg.sender for msg in mem.messages}
    for v in belief.uncertain_variables():
        assert 0 < v.probability < 1 and v.entropy > 0 and v.impact >= 0
        for name, k in re.findall(r"<([^<>]+)> \((\d+)\)", v.text):
            assert names.get(int(k), reported.get(int(k))) == name, v.text
        for room in re.findall(r" in the (\w+)$", v.text):
            assert room in rooms
        if v.kind == "item_in_room":
            assert v.item in mem.task.needed_names() and v.object_id in {r.id for r in mem.floorplan.rooms}
        if v.kind == "container_has_needed":
            assert mem.objects[v.object_id].kind == "container"
        if v.kind == "teammate_took":
            assert v.teammate in mates and v.text.startswith(v.teammate)


def test_uncertain_variables_are_sorted_by_entropy_then_impact_and_grounded():
    scene, sim, mems = _episode(0)
    alice = mems["alice"]
    _enter(sim, alice, _room(scene, "bedroom"))
    _enter(sim, alice, _room(scene, "kitchen"))
    _wait(sim, {"alice": alice}, 2)
    _send(sim, "bob", _status("bob", "bedroom", explored=["bedroom"]), alice)
    belief = BeliefState(alice, teammates=AGENTS)
    variables = belief.uncertain_variables()
    kinds = {v.kind for v in variables}
    assert kinds == {"item_in_room", "container_has_needed", "teammate_took"}
    keys = [(-round(v.entropy, 2), -v.impact) for v in variables]
    assert keys == sorted(keys)
    assert variables[0].entropy >= variables[-1].entropy
    _grounded(belief)
    texts = {v.text for v in variables}
    assert "<apple> is in the livingroom" in texts and "bob already took <wine> (27)" in texts
    assert any(re.fullmatch(r"<fridge> \(\d+\) contains a needed item", t) for t in texts)


class _BeliefCheckingTeam(TeamWrapper):
    """Wraps a team: builds the belief at every decision, checks its invariants, sends status messages."""

    def __init__(self, inner):
        super().__init__(inner)
        self.payload_types = (TeamStatus,)
        self.checked = 0
        self.build_seconds: list[float] = []
        self.query_seconds: list[float] = []

    def reset(self, info):
        self.agents = info.agents
        self.inner.reset(info)

    def decide(self, ctx):
        start = time.perf_counter()
        belief = BeliefState(ctx.memory, teammates=self.agents)
        built = time.perf_counter()
        for name in belief.needed_items():
            belief.location(name)
        belief.uncertain_variables()
        self.build_seconds.append(built - start)
        self.query_seconds.append(time.perf_counter() - built)
        for name in ctx.memory.task.needed_names():
            loc = belief.location(name)
            assert loc == {} or _total(loc) == pytest.approx(1.0)
            assert all(p >= 0 for p in loc.values())
        _grounded(belief)
        self.checked += 1
        if self.checked % 4 == 0 and any(o.action.is_message for o in ctx.options):
            from coteam.domain.actions import HighLevelAction, Verb

            status = TeamStatus.of(ctx.memory)
            return Decision(HighLevelAction(Verb.SEND_MESSAGE, text=status.text()), payload=status)
        return self.inner.decide(ctx)


def test_belief_invariants_hold_at_every_decision_of_an_episode():
    from coteam_harness.runner import run_episode

    team = _BeliefCheckingTeam(make_team("rhp"))
    result = run_episode(get_suite("cwah-test").episodes()[1].build(), team, n_agents=2)
    assert result.success and result.messages > 0 and team.checked > 10


# --- build time (a benchmark helper, not a test) ---------------------------------------------------------
def bench_build_ms(suite: str = "cwah-test", episodes: int = 10) -> dict[str, float]:
    """Wall time per decision of building a BeliefState, and of the build plus every needed item's location and
    the uncertain variables (rhp team with status messages, 2 agents). Run: ``python tests/unit/test_belief.py``."""
    from coteam_harness.runner import run_episode

    build: list[float] = []
    total: list[float] = []
    for spec in get_suite(suite).episodes()[:episodes]:
        team = _BeliefCheckingTeam(make_team("rhp"))
        run_episode(spec.build(), team, n_agents=2)
        build += team.build_seconds
        total += [b + q for b, q in zip(team.build_seconds, team.query_seconds, strict=True)]
    out: dict[str, float] = {"decisions": len(build)}
    for label, values in (("build", build), ("build+queries", total)):
        ms = sorted(1000 * v for v in values)
        out[f"{label} mean_ms"] = round(statistics.fmean(ms), 3)
        out[f"{label} p95_ms"] = round(ms[int(0.95 * (len(ms) - 1))], 3)
        out[f"{label} max_ms"] = round(ms[-1], 3)
    return out


if __name__ == "__main__":
    for suite, n in (("cwah-test", 10), ("tdwmat-test", 4)):
        print(suite, bench_build_ms(suite, n))
