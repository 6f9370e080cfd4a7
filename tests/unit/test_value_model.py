"""The shared team value model (coteam.value.team): particles, team rollouts, scenarios, scores and messages."""

from __future__ import annotations

import math

import pytest

from coteam.agent.options import ActionOption, available_actions
from coteam.agent.reasoning import AgentBrain, DecisionContext
from coteam.belief import BeliefState
from coteam.domain.actions import Verb
from coteam.domain.world import Placement, Relation
from coteam.value.abstract import TDW_DELIVER_BEFORE_END, TDW_DELIVER_SLACK, CostModel
from coteam.value.team import ValueConfig, ValueModel
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite
from scenario import pce_brain


def _value(brain: AgentBrain, **config) -> tuple[ValueModel, DecisionContext]:
    m = brain.memory
    ctx = DecisionContext(brain.agent, m, available_actions(m, brain.nav), brain.nav)
    belief = BeliefState(m, teammates=brain.info.agents, distance=brain.nav.path_length)
    return ValueModel(ctx, belief, brain.info.physics, config=ValueConfig(**config), seed="test"), ctx


def test_particles_follow_the_belief_and_record_their_facts():
    scene = get_suite("cwah-test").episodes()[4].build()
    sim = Simulator(scene, ("alice",))
    value, _ = _value(pce_brain(sim, "alice"), particles=64)
    belief = value.belief
    for state, facts in zip(value.particles, value.facts, strict=True):
        placed = [h for h in state.hidden] + [i for i in state.items]
        assert len(placed) == sum(belief.missing(n) for n in belief.needed_items())
        for h in state.hidden:
            if h[1] == "c":
                assert ("container_has_needed", h[2]) in facts
            else:
                assert ("item_in_room", h[0], h[2]) in facts
    # A scenario is the particles where its facts hold; an impossible one falls back to the whole belief.
    kitchen = next(r.id for r in scene.floorplan.rooms if r.name == "kitchen")
    fact = ("item_in_room", "apple", kitchen)
    share = sum(fact in f for f in value.facts) / len(value.facts)
    assert 0 < share < 1
    assert sum(value.mask([(fact, True)])) == sum(fact in f for f in value.facts)
    assert all(value.mask([(("container_has_needed", -5), True)]))


def test_a_likely_container_beats_an_unlikely_far_room():
    """In the kitchen with the fridge unopened, opening it is worth more than walking to a far unexplored room."""
    scene = get_suite("cwah-test").episodes()[4].build()  # prepare a meal: apple, juice, pancake
    sim = Simulator(scene, ("alice",))
    world = sim.world
    fridge = next(c for c in scene.containers if c.name == "fridge")
    for item in scene.items:  # nothing to grab in plain view in the kitchen
        if item.name in scene.task.needed_names() and world.room_of(item.id) == fridge.room:
            world.placements[item.id] = Placement(Relation.IN, fridge.id)
    world.agents["alice"].position = scene.floorplan.room_center(fridge.room)
    value, ctx = _value(pce_brain(sim, "alice"))
    scores = {}
    for o in ctx.options:
        outcome = value.outcome(o)
        if outcome is not None:
            g, c = value.scores(outcome)
            scores[o.text] = (o, g - c)
    check_fridge = next(
        u for o, u in scores.values() if o.action.verb == Verb.CHECK and o.action.target.id == fridge.id
    )
    far_rooms = [(o, u) for o, u in scores.values() if o.action.verb == Verb.EXPLORE]
    assert far_rooms
    assert all(check_fridge > u for _, u in far_rooms)
    best = max(scores.values(), key=lambda ou: ou[1])[0]
    assert best.action.verb == Verb.CHECK and world.fixture(best.action.target.id).room == fridge.room


def test_the_teammate_ranked_first_is_predicted_and_planned_around():
    """alice is ranked before bob: bob predicts alice's choice (she plans without him) and plans around it."""
    scene = get_suite("cwah-test").episodes()[2].build()  # two forks in plain view in the kitchen
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    kitchen = world.room_of(23)
    world.agents["bob"].position = scene.floorplan.room_center(kitchen)
    near = min((23, 24), key=lambda i: math.dist(world.position_of(i), world.agents["bob"].position))
    world.agents["alice"].position = world.position_of(near)
    value, ctx = _value(pce_brain(sim, "bob"))
    (alice, predicted), *_ = value.leaders()
    assert alice.name == "alice" and predicted == value.choices(alice)[0]  # her own best, planning without bob
    assert ("grab", near) in value.choices(alice)  # known items are hers to take (particles hold them, not the root)
    outcomes = {value.key(o): value.outcome(o) for o in ctx.options if value.outcome(o) is not None}
    mine = max(outcomes, key=lambda k: value.value(outcomes[k]))
    assert mine != predicted  # bob does not duplicate her
    alone, _ = _value(pce_brain(sim, "alice"))
    assert alone.leaders() == []  # the first-ranked robot plans as if alone (bob announced nothing)


@pytest.mark.parametrize("benchmark_suite", ["cwah-test", "tdwmat-test"])
def test_scores_are_on_the_unit_interval_and_rank_by_team_value(benchmark_suite):
    scene = get_suite(benchmark_suite).episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    value, ctx = _value(pce_brain(sim, "alice"), particles=8)
    ranked = []
    for o in ctx.options:
        outcome = value.outcome(o)
        if outcome is None:
            continue
        g, c = value.scores(outcome)
        assert 0.0 <= g <= 1.0 and 0.0 <= c <= 1.0
        ranked.append((value.value(outcome), g - c))
    assert len(ranked) >= 2
    by_value = [u for _, u in sorted(ranked, reverse=True)]
    assert by_value == sorted(by_value, reverse=True)  # U = G - C orders the options as the team value does


def test_garbled_or_stale_announcements_bind_nobody():
    """A teammate's intent that does not parse, names nothing left to do (or a put on something that is not a goal
    target), or is too old is ignored (no crash)."""
    from coteam.agent.messages import TeamStatus
    from coteam.domain.observation import Message

    scene = get_suite("cwah-test").episodes()[2].build()
    sim = Simulator(scene, ("alice", "bob"))
    room = sim.world.room_of(23)
    for name in ("alice", "bob"):
        sim.world.agents[name].position = scene.floorplan.room_center(room)
    brain = pce_brain(sim, "alice")
    m = brain.memory
    targets = {p.target for p in scene.task.predicates}
    sofa = next(c for c in scene.containers if c.id not in targets)
    garbled = ("[teleport] <fork> (23)", "[gocheck] <nothing> (99999)", "[goexplore] <kitchen> (2)")
    for intent in (*garbled, f"[goput] <{sofa.name}> ({sofa.id})"):
        m.messages.append(Message("bob", intent, m.step, TeamStatus(agent="bob", intent=intent)))
    old = TeamStatus(agent="bob", intent="[gograb] <fork> (23)")
    m.messages.append(Message("bob", "old", m.step - 100, old))
    value, _ = _value(brain)
    assert value.announced == {}
    good = TeamStatus(agent="bob", intent="[gograb] <fork> (23)")
    m.messages.append(Message("bob", good.text(), m.step, good))
    value, _ = _value(brain)
    assert value.announced == {"bob": ("grab", 23)}


def test_an_announced_action_already_done_binds_nobody():
    """bob announced a put and a grab; once he is seen holding nothing the put is done, and once he holds the item
    the grab is done: alice plans without them (she is ranked first and plans as if alone again)."""
    from coteam.agent.messages import TeamStatus
    from coteam.domain.observation import Message

    scene = get_suite("cwah-test").episodes()[2].build()
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    room = world.room_of(23)
    for name in ("alice", "bob"):
        world.agents[name].position = scene.floorplan.room_center(room)
    target = next(p.target for p in scene.task.predicates if p.item == "fork")
    put = f"[goput] <{world.fixture(target).name}> ({target})"

    def bound(intent: str) -> dict:
        brain = pce_brain(sim, "alice")
        m = brain.memory
        m.messages.append(Message("bob", intent, m.step, TeamStatus(agent="bob", intent=intent)))
        return _value(brain)[0].announced

    assert bound(put) == {}  # bob is seen holding nothing: nothing left to put
    assert bound("[gograb] <fork> (23)") == {"bob": ("grab", 23)}
    world.agents["bob"].hands[0] = 23
    world.placements[23] = Placement.held("bob", 0)
    assert bound(put) == {"bob": ("put", target)}  # he carries a fork to its target
    assert bound("[gograb] <fork> (23)") == {}  # he holds it already


def test_a_full_carrier_far_from_the_bed_is_scored_without_clipping():
    """TDW-MAT: holding a loaded carrier and an item, every option's G stays below 1 and G - C still orders the
    options by team value (G used to be clipped at 1 here, so a long transport ranked below a detour worth less)."""
    scene = get_suite("tdwmat-test").episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    carrier = next(i for i in scene.items if i.is_carrier)
    goal = [i for i in scene.items if i.name in scene.task.needed_names() and not i.is_carrier][:4]
    alice = world.agents["alice"]
    alice.hands = [carrier.id, goal[0].id]
    world.placements[carrier.id] = Placement.held("alice", 0)
    world.placements[goal[0].id] = Placement.held("alice", 1)
    for item in goal[1:]:
        world.placements[item.id] = Placement(Relation.IN, carrier.id)
    bed = world.fixture(scene.task.predicates[0].target)
    alice.position = max(
        (scene.floorplan.room_center(r.id) for r in scene.floorplan.rooms),
        key=lambda c: math.dist(c, bed.position),
    )
    value, ctx = _value(pce_brain(sim, "alice"))
    scored = []
    for o in ctx.options:
        outcome = value.outcome(o)
        if outcome is not None:
            g, c = value.scores(outcome)
            assert 0.0 <= g < 1.0 and 0.0 <= c < 1.0
            scored.append((value.value(outcome), g - c, o))
    by_value = [u for _, u, _ in sorted(scored, key=lambda x: -x[0])]
    assert by_value == sorted(by_value, reverse=True)


def test_taking_what_a_teammate_takes_first_costs_the_walk_there():
    """bob's option to grab the fork alice takes first (she stands next to it, he in the kitchen's far corner): in his
    rollouts he walks there and gets nothing. It used to cost nothing (the grab found no item and no time passed),
    so it tied with whatever his next action was worth."""
    scene = get_suite("cwah-test").episodes()[2].build()  # two forks in plain view in the kitchen
    sim = Simulator(scene, ("alice", "bob"))
    world = sim.world
    fork = 23
    world.agents["alice"].position = world.position_of(fork)
    bob = world.agents["bob"]
    fp, kitchen = scene.floorplan, scene.floorplan.room(world.room_of(fork))
    free = [fp.center_of((x, y)) for x in range(kitchen.x0, kitchen.x1) for y in range(kitchen.y0, kitchen.y1)]
    bob.position = max(
        (p for p in free if fp.is_free(*fp.cell_of(p))), key=lambda p: math.dist(p, world.position_of(fork))
    )
    value, _ = _value(pce_brain(sim, "bob"))
    taken = value.outcome_of(("grab", fork), 0.0, [(r, ("grab", fork)) for r in value.teammates])
    model = value.model
    walk = model.cost.cwah_walk(model.geo.dist(bob.position, world.position_of(fork)))
    assert walk > 0 and set(taken.durations) == {walk}


def test_a_tdw_grab_of_a_carrier_already_gone_walks_there_and_gets_nothing():
    scene = get_suite("tdwmat-test").episodes()[0].build()
    sim = Simulator(scene, ("alice", "bob"))
    carrier = next(i for i in scene.items if i.is_carrier)
    sim.world.agents["alice"].position = sim.world.position_of(carrier.id)
    value, _ = _value(pce_brain(sim, "alice"), particles=2)
    model = value.model
    _, position, room = next(c for c in model.root.carriers if c[0] == carrier.id)
    s = model.root.copy()
    s.pos = next(c for r, c in model.room_center.items() if r != room)
    s.carriers = [c for c in s.carriers if c[0] != carrier.id]  # a teammate took it
    model.step(s, ("carrier", carrier.id))
    assert s.t > 0 and s.pos == position and s.room == room
    assert not s.carrier


def test_a_tdw_robot_far_from_the_bed_delivers_while_its_trip_there_still_fits_in_the_time_left():
    """Rooted in a belief, the default policy delivers what it holds once the time left is down to its trip to the
    bed plus one more action (TDW_DELIVER_SLACK): from a far room the fixed TDW_DELIVER_BEFORE_END of the rhp rule
    comes too late, and a robot still out there at the end delivers nothing. mhp keeps the rhp rule."""
    scene = get_suite("tdwmat-test").episodes()[0].build()
    value, _ = _value(pce_brain(Simulator(scene, ("alice",)), "alice"), particles=2)
    model = value.model
    s = model.root.copy()
    s.room, s.pos = max(model.room_center.items(), key=lambda rc: model.geo.dist(rc[1], model.bed_pos))
    s.hand, s.carrier = ["held item"], False
    trip = model.cost.tdw_move(model.geo.dist(s.pos, model.bed_pos)) + model.cost.tdw_drop_frames
    assert trip + TDW_DELIVER_SLACK > TDW_DELIVER_BEFORE_END + 100  # the case the fixed rule misses
    s.t = model.left - (trip + TDW_DELIVER_SLACK - 50)  # a little less than the trip and one action left
    assert model.default(s) == ("transport", 0)
    s.t = model.left - (trip + TDW_DELIVER_SLACK + 50)
    assert model.default(s) != ("transport", 0)  # time for one more action out here
    s.t = model.left - (trip + TDW_DELIVER_SLACK - 50)
    model.search_weight = None  # mhp's model: not rooted in a belief
    assert model.default(s) != ("transport", 0)


@pytest.mark.parametrize(("suite", "within", "beyond"), [("tdwmat-test", 0.015, 0.025), ("cwah-test", 0.0, 1e-6)])
def test_among_equal_options_the_rollouts_own_next_action_ranks_first(
    suite: str, within: float, beyond: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every option's rollout assumes I follow the default policy after it, so among options of (nearly) equal
    utility PCE's symbolic ranking puts that policy's own next action first, not the first by text. C-WAH's team
    times are whole steps: only exact ties count there."""
    from coteam.methods.pce.scoring import Weights
    from coteam.methods.pce.symbolic import SymbolicContext

    scene = get_suite(suite).episodes()[0].build()
    brain = pce_brain(Simulator(scene, ("alice",)), "alice")
    value, ctx = _value(brain, particles=2)
    assert value.rollout_choice in {value.key(o) for o in ctx.options}
    physical = sorted((o for o in ctx.options if value.key(o) is not None), key=lambda o: o.text)
    chosen = physical[-1]  # say the default policy would do what comes last by text
    monkeypatch.setattr(value, "rollout_choice", value.key(chosen))

    def ranked_first(handicap: float) -> ActionOption:
        sym = SymbolicContext(brain.memory, value.belief, ctx.options, Weights(), 2, False, value)
        scores = {o.text: (0.5 - (handicap if o is chosen else 0.0), 0.0) for o in physical}
        monkeypatch.setattr(sym, "_scores", lambda o, assumptions: scores.get(o.text))
        return sym.ranked()[0]

    assert ranked_first(0.0) is chosen
    assert ranked_first(within) is chosen
    assert ranked_first(beyond) is physical[0]


@pytest.mark.parametrize(("suite", "price"), [("cwah-test", "cwah_walk"), ("tdwmat-test", "tdw_move")])
def test_a_decision_prices_each_walk_once(suite: str, price: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rollouts of one decision walk between the same few places again and again: each walk is priced once (the
    same options rolled out again price nothing), and the outcomes stay the same."""
    scene = get_suite(suite).episodes()[0].build()
    value, ctx = _value(pce_brain(Simulator(scene, ("alice", "bob")), "alice"))
    first = [value.outcome(o) for o in ctx.options]
    priced = 0
    unpriced = getattr(CostModel, price)

    def counted(self: CostModel, *args: float) -> float:
        nonlocal priced
        priced += 1
        return unpriced(self, *args)

    monkeypatch.setattr(CostModel, price, counted)
    value._outcomes.clear()
    assert [value.outcome(o) for o in ctx.options] == first
    assert priced == 0


@pytest.mark.parametrize("suite", ["cwah-test-noisy20", "tdwmat-test"])
def test_a_thing_no_goal_wants_is_an_option_that_takes_a_hand_and_delivers_nothing(suite: str) -> None:
    """Task-irrelevant things are real options: the robot may grab one in view (the model gives that grab no
    abstract action: it can only waste time), and one held takes a hand until it is set down at a goal place (C-WAH)
    or at the bed (TDW-MAT), where it counts nothing."""
    from coteam.value.abstract import JUNK

    scene = get_suite(suite).episodes()[0].build()
    wanted = scene.task.needed_names()
    sim = Simulator(scene, ("alice",))
    world = sim.world
    loose = [i for i in scene.items if i.name not in wanted and not i.is_carrier]
    loose = [i for i in loose if scene.placements[i.id].relation != Relation.IN]
    seen, held = loose[0], loose[1:3]
    world.agents["alice"].position = world.position_of(seen.id)
    brain = pce_brain(sim, "alice")
    value, ctx = _value(brain, particles=2)
    grab = next(o for o in ctx.options if o.action.verb == Verb.GRAB and o.action.target.id == seen.id)
    assert value.key(grab) is None
    # both hands full of such things: no goal item can be grabbed, and setting them down delivers nothing
    alice = world.agents["alice"]
    alice.hands = [h.id for h in held]
    for hand, item in enumerate(held):
        world.placements[item.id] = Placement.held("alice", hand)
    brain = pce_brain(sim, "alice")
    value, ctx = _value(brain, particles=2)
    model, root = value.model, value.model.root
    hands = root.held if value.cwah else root.hand
    assert hands == [JUNK, JUNK]
    assert not any(k[0] in ("grab", "carrier") for k in model.legal(root))
    if value.cwah:
        puts = {o.action.target.id for o in ctx.options if o.action.verb == Verb.PUT}
        assert puts == {p.target for p in scene.task.predicates}
        s = root.copy()
        model.step(s, ("put", scene.task.predicates[0].target))
        assert s.held == [] and s.delivered == 0 and s.t > 0
    else:
        assert any(o.action.verb == Verb.TRANSPORT for o in ctx.options)
        s = root.copy()
        model.step(s, ("transport", 0))
        assert s.hand == [] and s.delivered == 0
