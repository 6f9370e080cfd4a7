"""The PCE paper's case studies as scenario tests: symbolic PCE makes the right choice in each."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from coteam.agent.messages import TeamStatus, decode_payload
from coteam.agent.reasoning import AgentBrain
from coteam.domain.actions import Verb, format_action, parse_action
from coteam.domain.observation import Message
from coteam.domain.world import Placement, Relation
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite
from scenario import pce_brain


def _teleport(sim: Simulator, agent: str, room_id: int, brain: AgentBrain | None = None) -> None:
    sim.world.agents[agent].position = sim.scene.floorplan.room_center(room_id)
    if brain is not None:
        brain.observe(sim.observe(agent))


def _look_around(sim: Simulator, brain: AgentBrain, agent: str = "alice") -> None:
    for _ in range(24):
        sim.step({agent: Primitive(PrimitiveKind.TURN_LEFT)})
        brain.observe(sim.observe(agent))


def test_does_not_search_a_room_again_that_was_fully_searched():
    """Case 1: an explored, empty room is not worth another visit; an unexplored one is."""
    scene = get_suite("tdwmat-test").episodes()[0].build()
    sim = Simulator(scene, ("alice",))
    world = sim.world
    target_rooms = {world.room_of(i.id) for i in scene.items if i.name in scene.task.needed_names()}
    empty = [r.id for r in scene.floorplan.rooms if r.id not in target_rooms]
    assert len(empty) >= 2, "the scenario needs two rooms without targets"
    brain = pce_brain(sim)
    for room in empty[:2]:
        _teleport(sim, "alice", room, brain)
        _look_around(sim, brain)
    searched = set(empty[:2])
    assert all(brain.memory.is_explored(r) for r in searched)
    decision, options = brain.decide()
    goto_searched = [o for o in options if o.action.verb == Verb.GOTO and o.action.target.id in searched]
    assert goto_searched, "going back to the searched room must be on offer"
    assert decision.action.verb in (Verb.GOTO, Verb.EXPLORE, Verb.GRAB)
    if decision.action.verb == Verb.GOTO:
        assert decision.action.target.id not in searched
        assert not brain.memory.is_explored(decision.action.target.id)


def test_puts_the_held_item_before_fetching_a_far_one():
    """Case 2: holding a target next to the goal, deliver it before walking off for the next one."""
    scene = get_suite("cwah-test").episodes()[6].build()  # put groceries into the fridge
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    fridge = scene.task.predicates[0].target
    goal_items = [i for i in scene.items if i.name in scene.task.needed_names()]
    held = goal_items[0]
    others = [i for i in goal_items if i.name != held.name]
    far = max(others, key=lambda i: math.dist(world.position_of(i.id), world.position_of(fridge)))
    for other in others:  # nothing else to grab on the way: every other target is where the far one is
        if other.id != far.id:
            world.placements[other.id] = world.placements[far.id]
    world.placements[held.id] = Placement.held("alice", 0)
    world.agents["alice"].hands[0] = held.id
    world.agents["alice"].position = world.position_of(fridge)
    brain = pce_brain(sim)
    brain.memory.objects[far.id] = sim._view(far.id)  # e.g. learned from a teammate's message
    decision, options = brain.decide()
    assert any(o.action.verb == Verb.GRAB and o.action.target.id == far.id for o in options)
    assert decision.action.verb == Verb.PUT and decision.action.target.id == fridge


def test_explores_a_near_unexplored_room_before_a_far_container():
    """Case 3: with no target known, a near unexplored room beats a far unopened container."""
    scene = get_suite("cwah-test").episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    fp = scene.floorplan
    rooms = {r.id: r for r in fp.rooms}
    # Learn the containers of the farthest room pair, then stand in the other one.
    a, b = max(
        ((x, y) for x in rooms for y in rooms if x != y),
        key=lambda p: math.dist(fp.room_center(p[0]), fp.room_center(p[1])),
    )
    _teleport(sim, "alice", b)
    brain = pce_brain(sim)
    _teleport(sim, "alice", a, brain)
    for c in scene.containers:  # everything in this room is already open: nothing left to search here
        if c.room == a:
            world.is_open[c.id] = True
    # No target may be visible here, or grabbing it would rightly win.
    for item in scene.items:
        if world.room_of(item.id) == a and item.name in scene.task.needed_names():
            world.placements[item.id] = Placement(Relation.IN, next(c.id for c in scene.containers if c.room == b))
    brain.observe(sim.observe("alice"))
    decision, options = brain.decide()
    far_checks = [o for o in options if o.action.verb == Verb.CHECK and world.fixture(o.action.target.id).room == b]
    assert far_checks, "checking the far room's containers must be on offer"
    assert decision.action.verb == Verb.EXPLORE
    chosen = next(o for o in options if o.action == decision.action)
    assert chosen.my_distance < min(o.my_distance for o in far_checks)


def test_leaves_the_item_the_teammate_ranked_first_goes_for():
    """Team split: when both agents see the same targets, the one ranked second (by name) leaves the teammate's
    predicted target to it and takes another."""
    scene = get_suite("cwah-test").episodes()[2].build()  # two forks in plain view in room 2
    room = Simulator(scene, ("bob",)).world.room_of(23)
    centre = scene.floorplan.room_center(room)
    alone = Simulator(scene, ("alice", "bob"))
    alone.world.agents["bob"].position = centre
    brain = pce_brain(alone, "bob")
    assert "alice" not in brain.memory.teammates
    decision, _ = brain.decide()
    near = decision.action.target.id  # what bob takes on his own
    sim = Simulator(scene, ("alice", "bob"))
    sim.world.agents["bob"].position = centre
    sim.world.agents["alice"].position = sim.world.position_of(near)  # alice stands right at it
    paired = pce_brain(sim, "bob")
    assert "alice" in paired.memory.teammates
    decision, _ = paired.decide()
    assert decision.action.target is not None and decision.action.target.id != near


def test_a_teammate_that_announced_its_target_makes_me_pick_another():
    """An announced next action binds the teammate: even the agent ranked first plans around it."""
    scene = get_suite("cwah-test").episodes()[2].build()
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    room = world.room_of(23)
    world.agents["alice"].position = scene.floorplan.room_center(room)
    world.agents["bob"].position = scene.floorplan.room_center(room)
    decision, _ = pce_brain(sim, "alice").decide()
    taken = decision.action.target.id
    intent = format_action(decision.action, scene.benchmark)
    status = TeamStatus(agent="bob", room=scene.floorplan.room(room).name, intent=intent)
    brain = pce_brain(sim, "alice")
    brain.memory.messages.append(Message("bob", status.text(), brain.memory.step, status))
    decision, _ = brain.decide()
    assert decision.action.target is None or decision.action.target.id != taken


def _announcing_scene():
    """A cwah-test scene and two positions, alice's and bob's, in which bob (ranked second) announces his next
    action: the first such pair among the rooms' centres and the containers of the kitchen."""
    scene = get_suite("cwah-test").episodes()[0].build()
    kitchen = next(r.id for r in scene.floorplan.rooms if r.name == "kitchen")
    spots = [scene.floorplan.room_center(kitchen)] + [c.position for c in scene.containers if c.room == kitchen]
    for alice, bob in itertools.product(spots, spots):
        sim = Simulator(scene, ("alice", "bob"))
        sim.world.agents["alice"].position = alice
        sim.world.agents["bob"].position = bob
        brain = pce_brain(sim, "bob")
        decision, _ = brain.decide()
        if decision.action.verb == Verb.SEND_MESSAGE:
            return scene, sim, brain, decision
    raise AssertionError("bob never announces anything, wherever the two stand in the kitchen")


def test_a_message_is_sent_only_when_it_changes_the_teammates_choice():
    """bob announces what alice (ranked first, planning without him) would take, because he is better placed;
    with alice far away and unseen he says nothing. Then he does what he announced, and alice, told, does
    something else."""
    scene, sim, bob, decision = _announcing_scene()
    status = decode_payload(decision.action.payload, (TeamStatus,))
    announced = parse_action(status.intent, scene.benchmark)
    # what bob predicts alice (untold, planning without him) takes first: the target he announces
    (predicted,) = decision.rationale["leaders"].values()
    assert predicted.split()[1] == str(announced.target.id)
    assert decision.rationale["announcement"]["teammate"] == "alice"
    assert (
        decision.rationale["announcement"]["team_value_with"] > decision.rationale["announcement"]["team_value_without"]
    )
    # bob keeps his word: the announced action is his next one.
    bob.memory.record_action(format_action(decision.action, scene.benchmark), "done")
    following, _ = bob.decide()
    assert format_action(following.action, scene.benchmark) == status.intent
    # alice, told, plans around it.
    told = pce_brain(sim, "alice")
    told.memory.messages.append(Message("bob", decision.action.text, told.memory.step, status))
    after, _ = told.decide()
    assert format_action(after.action, scene.benchmark) != status.intent
    # Nobody whose choice could change: no message.
    lonely = Simulator(scene, ("alice", "bob"))
    lonely.world.agents["bob"].position = sim.world.agents["bob"].position
    bedroom = next(r.id for r in scene.floorplan.rooms if r.name == "bedroom")
    lonely.world.agents["alice"].position = scene.floorplan.room_center(bedroom)
    quiet = pce_brain(lonely, "bob")
    assert "alice" not in quiet.memory.teammates
    decision, _ = quiet.decide()
    assert decision.action.verb != Verb.SEND_MESSAGE


def test_with_nothing_left_to_find_looks_again_where_it_looked_longest_ago():
    """Every room seen and every container open, and a goal item nowhere: nothing is worth anything, and the robot
    looks again in the room it was in longest ago. It used to take the rooms by name, so the one it had just left
    often came first and it paced at a doorway between two rooms (a C-WAH tuning episode, 30 steps)."""
    base = get_suite("cwah-test").episodes()[0].build()
    missing = base.task.needed_names()
    items = tuple(i for i in base.items if i.name not in missing)
    containers = frozenset(c.id for c in base.containers)
    scene = replace(
        base,
        items=items,
        placements={i.id: base.placements[i.id] for i in items},
        initially_open=containers,
    )
    assert missing
    sim = Simulator(scene, ("alice",))
    brain = pce_brain(sim)
    by_name = sorted(scene.floorplan.rooms, key=lambda r: r.name)
    assert len(by_name) >= 3
    # Visit the second room by name first and the first by name last but one: by name, it would come first.
    order = [by_name[1], *by_name[2:-1], by_name[0], by_name[-1]]
    for room in order:
        sim.step({})
        _teleport(sim, "alice", room.id, brain)
    assert not brain.memory.unexplored_rooms() and not brain.memory.unchecked_containers()
    for stalest in order[:2]:
        decision, _ = brain.decide()
        assert (decision.action.verb, decision.action.target.id) == (Verb.EXPLORE, stalest.id)
        sim.step({})
        _teleport(sim, "alice", stalest.id, brain)
