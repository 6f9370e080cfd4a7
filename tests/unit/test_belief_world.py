"""A collaborative belief world (coteam.methods.cobel.belief_world): zero-order facts from memory, first-order facts per
teammate from what we saw together, what it said and what I said."""

from __future__ import annotations

import re

from coteam.agent.messages import TeamStatus
from coteam.domain.actions import ObjectRef
from coteam.domain.observation import Message
from coteam.domain.world import Placement, Relation
from coteam.methods.cobel.belief_language import AgentRef, Attribute, Predicate, parse_belief, parse_beliefs
from coteam.methods.cobel.belief_world import BeliefWorld, kind_resolver, rules_for, statement_pattern
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from scenario import pce_brain


def _world(suite: str, episode: int, together: bool) -> tuple[BeliefWorld, object]:
    scene = get_suite(suite).episodes()[episode].build()
    sim = Simulator(scene, ("alice", "bob"))
    alice = sim.world.agents["alice"]
    bob = sim.world.agents["bob"]
    if together:
        bob.position = alice.position
    else:  # bob in another room
        other = next(r for r in scene.floorplan.rooms if r.id != scene.floorplan.room_at(alice.position).id)
        bob.position = scene.floorplan.room_center(other.id)
    brain = pce_brain(sim, "alice")
    return BeliefWorld.of(brain.memory, sim.agents), brain.memory


def test_zero_order_beliefs_are_the_memory_in_the_language_and_obey_the_rules():
    world, memory = _world("cwah-test", 0, together=False)
    beliefs = world.beliefs()
    mine = [b for b in beliefs if b.order == 0]
    assert mine and all(b.believers == ("alice",) for b in mine)
    text = "\n".join(str(b) for b in beliefs)
    parsed = parse_beliefs(text, world.rules, kind_resolver(memory, ("alice", "bob")))
    assert parsed.rejected == [] and parsed.beliefs == beliefs  # printed, parsed back, every rule satisfied
    here = memory.room_name(memory.room)
    assert parse_belief(f"alice BELIEVE alice AT <{here}> ({memory.room})") in beliefs
    assert parse_belief(f"alice BELIEVE <{here}> ({memory.room}) EXPLORED all") in beliefs
    relations = {b.fact.relation for b in mine}
    assert {Predicate.IN, Predicate.AT, Attribute.EXPLORED, Attribute.STATE} <= relations
    closed = [v for v in memory.objects.values() if v.is_open is False]
    assert closed and all(parse_belief(f"alice BELIEVE <{v.name}> ({v.id}) STATE closed") in beliefs for v in closed)


def test_the_statement_pattern_admits_my_beliefs_and_no_unknown_entity():
    world, memory = _world("cwah-test", 0, together=False)
    kinds = kind_resolver(memory, ("alice", "bob"))
    zero = re.compile(statement_pattern(memory, ("alice", "bob"), [["alice"]], world.rules, kinds))
    first = re.compile(statement_pattern(memory, ("alice", "bob"), [["alice"], ["bob"]], world.rules, kinds))
    for b in world.beliefs():
        assert (zero if b.order == 0 else first).match(str(b)), str(b)  # every belief the world holds is sayable
    here = f"<{memory.room_name(memory.room)}> ({memory.room})"
    assert zero.match(f"alice BELIEVE {here} EXPLORED part")
    assert not zero.match(f"alice BELIEVE {here} EXPLORED mostly")  # only the language's states
    assert not zero.match("alice BELIEVE <apple> (99999) IN " + here)  # an id nobody has seen
    assert not zero.match(f"bob BELIEVE {here} EXPLORED all")  # another believer
    assert not world.rules.allows(parse_belief(f"alice BELIEVE alice IN {here}"), kinds)
    assert not zero.match(f"alice BELIEVE alice IN {here}")  # no rule allows it
    assert not first.match(f"alice BELIEVE {here} EXPLORED all")  # the wrong order


def test_a_teammate_in_my_room_saw_what_i_saw_one_elsewhere_did_not():
    together, memory = _world("cwah-test", 0, together=True)
    apart, _ = _world("cwah-test", 0, together=False)
    in_room = {f for f in together.zero.values() if f.relation == Predicate.IN and f.object.id == memory.room}
    assert in_room
    assert not in_room & set(together.lacks("bob"))  # bob saw the room with me
    assert in_room <= set(apart.lacks("bob"))  # bob was elsewhere: he lacks all of it
    # What bob knows of himself, from the task (where the goal targets are) or by default (rooms nobody has
    # explored) is never missing.
    targets = {p.target for p in memory.task.predicates}
    for fact in apart.lacks("bob"):
        assert AgentRef("bob") not in (fact.subject, fact.object)
        assert getattr(fact.subject, "id", None) not in targets
        assert fact.object != "none"


def test_what_i_said_is_not_missing_any_more_and_what_bob_said_is_his_belief():
    world, memory = _world("cwah-test", 0, together=False)
    explored = [f for f in world.lacks("bob") if f.relation == Attribute.EXPLORED and f.object == "all"]
    assert explored
    mine = TeamStatus.of(memory)
    memory.sent.append(Message("alice", mine.text(), memory.step, mine))
    world.update(memory)
    assert not set(explored) & set(world.lacks("bob"))  # said once: not again
    bedroom = next(r for r in memory.floorplan.rooms if r.id != memory.room)
    heard = TeamStatus(agent="bob", room=bedroom.name, explored=(bedroom.name,))
    memory.messages.append(Message("bob", heard.text(), memory.step, heard))
    world.update(memory)
    first = world.first["bob"].values()
    assert parse_belief(f"<{bedroom.name}> ({bedroom.id}) EXPLORED all").fact in first
    assert parse_belief(f"bob AT <{bedroom.name}> ({bedroom.id})").fact in first
    # A teammate's stated plan is kept, with what it said.
    plan = (f"[goexplore] <{bedroom.name}> ({bedroom.id})",)
    kitchen_done = parse_belief(f"<{memory.room_name(memory.room)}> ({memory.room}) EXPLORED all").fact
    world.told("bob", [kitchen_done], plan)
    assert world.stated_plan["bob"] == plan and world.first["bob"][("explored", kitchen_done.subject)] == kitchen_done


def test_tdwmat_uses_its_own_rules_carriers_and_the_bed():
    world, memory = _world("tdwmat-test", 0, together=True)
    assert world.rules == rules_for(memory.benchmark)
    kinds = kind_resolver(memory, ("alice", "bob"))
    bed = memory.objects[memory.task.predicates[0].target]

    assert kinds(ObjectRef(bed.name, bed.id)).value == "bed"
    assert kinds(ObjectRef("not-" + bed.name, bed.id)) is None  # a name that does not match the id
    assert all(world.rules.allows(b, kinds) for b in world.beliefs())


def test_a_teammates_believed_memory_holds_what_it_believes_not_what_i_know():
    from coteam.agent.options import available_actions
    from coteam.belief import BeliefState

    scene = get_suite("cwah-test").episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    needed = scene.task.needed_names()
    item = next(i for i in scene.items if i.name in needed)
    targets = {p.target for p in scene.task.predicates}
    surface = next(f for f in scene.surfaces if f.id not in targets)
    sim.world.placements[item.id] = Placement(Relation.ON, surface.id)  # in plain view
    room = sim.world.room_of(item.id)
    sim.world.agents["alice"].position = scene.floorplan.room_center(room)
    other = next(r for r in scene.floorplan.rooms if r.id != room)
    sim.world.agents["bob"].position = scene.floorplan.room_center(other.id)
    brain = pce_brain(sim, "alice")
    memory = brain.memory
    assert item.id in memory.objects
    memory.teammates["bob"] = memory.teammates.get("bob") or _sighting(scene, other.id)
    world = BeliefWorld.of(memory, sim.agents)
    bob = world.believed_memory(memory, "bob")
    assert bob is not None and bob.agent == "bob" and bob.room == other.id
    assert item.id not in bob.objects  # bob was elsewhere: he does not know of it
    grab = f"<{item.name}> ({item.id})"
    assert not any(grab in o.text for o in available_actions(bob, brain.nav))
    told = [f for f in world.lacks("bob") if item.id in (getattr(f.subject, "id", None), getattr(f.object, "id", None))]
    world.tell("bob", told)
    bob = world.believed_memory(memory, "bob")
    assert bob.objects[item.id].room == room
    assert any(grab in o.text for o in available_actions(bob, brain.nav))  # now he can plan to fetch it
    assert not bob.is_explored(room)  # being told where an item is does not explore the room for him
    belief = BeliefState(bob, teammates=sim.agents)
    assert item.name in belief.needed_items()


def _sighting(scene, room_id):
    from coteam.agent.memory import TeammateSighting

    return TeammateSighting(0, scene.floorplan.room_center(room_id), room_id, (None, None))


def test_a_teammates_belief_about_an_object_i_have_since_forgotten_still_parses():
    """bob and alice saw an item together; alice has since seen it gone (her memory forgets it). What she believes
    bob believes about it is still a belief about a known thing: printed and parsed back, nothing is rejected (it
    was rejected as an unknown entity). An id nobody has seen stays unknown."""
    world, memory = _world("cwah-test", 0, together=True)
    item = next(
        b.fact.subject
        for b in world.beliefs()
        if b.order == 1 and isinstance(b.fact.subject, ObjectRef) and b.fact.relation == Predicate.IN
    )
    del memory.objects[item.id]
    world.update(memory)
    beliefs = world.beliefs()
    assert any(b.order == 1 and b.fact.subject == item for b in beliefs)
    parsed = parse_beliefs("\n".join(str(b) for b in beliefs), world.rules, world.kind_of)
    assert parsed.rejected == []
    assert world.kind_of(ObjectRef(item.name, 99999)) is None
