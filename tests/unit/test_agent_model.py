"""The agent-facing model: memory from observations, goal bookkeeping, available actions, progress text."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from coteam.agent.goals import goal_status
from coteam.agent.memory import AgentMemory
from coteam.agent.messages import TeamStatus
from coteam.agent.options import available_actions
from coteam.agent.progress import progress_text
from coteam.agent.reasoning import StartSkill
from coteam.agent.retries import RETRY_STEPS
from coteam.domain.actions import Verb
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import ObjectView
from coteam.domain.world import Benchmark, ObjectKind, Relation
from coteam.registry import make_team
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite


@pytest.fixture(scope="module")
def cwah_scene():
    return get_suite("cwah-test").episodes()[2].build()  # wash dishes


def _memory(sim: Simulator, agent: str) -> AgentMemory:
    mem = AgentMemory(agent, sim.benchmark, sim.scene.floorplan, sim.scene.task)
    mem.objects.update({v.id: v for v in sim.landmarks()})
    mem.update(sim.observe(agent))
    return mem


def test_memory_sees_current_room_and_not_inside_closed_containers(cwah_scene):
    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    room = mem.room
    assert mem.is_explored(room)
    for view in mem.objects.values():
        if view.kind == ObjectKind.ITEM and not view.held_by:
            assert view.room == room
            assert not sim.world.hidden_in_closed(view.id)
    hidden = [i.id for i in cwah_scene.items if sim.world.hidden_in_closed(i.id) and sim.world.room_of(i.id) == room]
    assert all(h not in mem.objects for h in hidden)


def test_memory_forgets_an_item_that_was_moved_away(cwah_scene):
    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    item = next((v for v in mem.items() if v.location is not None and v.location.value == "on"), None) or next(
        iter(mem.items())
    )
    # Teleport the item to another room behind the agent's back, then observe again.
    other_room = next(r for r in cwah_scene.floorplan.rooms if r.id != mem.room)
    from coteam.domain.world import Placement, Relation

    sim.world.placements[item.id] = Placement(
        Relation.FLOOR, other_room.id, position=(cwah_scene.floorplan.room_center(other_room.id))
    )
    sim.world.is_open.update(dict.fromkeys(sim.world.is_open, True))
    mem.update(sim.observe("alice"))
    assert item.id not in mem.objects


def test_goal_status_counts_missing_items(cwah_scene):
    sim = Simulator(cwah_scene, ("alice",))
    mem = _memory(sim, "alice")
    statuses = goal_status(mem)
    assert {s.predicate.item for s in statuses} == cwah_scene.task.needed_names()
    assert sum(s.missing for s in statuses) == cwah_scene.task.total_count


def test_available_actions_are_annotated_with_distances(cwah_scene):
    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    nav = NavGrid(cwah_scene.floorplan)
    options = available_actions(mem, nav)
    assert options[0].action.is_message
    explores = [o for o in options if o.action.verb == Verb.EXPLORE]
    assert explores and all(o.action.target.id != mem.room for o in explores)
    for o in options:
        if not o.action.is_message:
            assert math.isfinite(o.my_distance)
            assert "my cost:" in o.annotated()
    # Without teammates no message option is offered.
    assert not any(o.action.is_message for o in available_actions(mem, nav, allow_messages=False))


def test_an_action_that_fails_the_same_way_twice_is_not_offered_for_a_while_and_longer_each_time(cwah_scene):
    """Whatever the reason (nothing reads it): one failure may be bad luck and the action is offered again; the same
    failure a second time blocks it, a third doubles the wait, a different reason starts over, and every block is
    counted."""
    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    nav = NavGrid(cwah_scene.floorplan)
    explore = next(o for o in available_actions(mem, nav) if o.action.verb == Verb.EXPLORE)

    def offered() -> bool:
        return explore.text in {o.text for o in available_actions(mem, nav)}

    mem.record_action(explore.text, "failed: the arm says xyzzy")
    assert offered()
    mem.record_action(explore.text, "failed: the arm says xyzzy")
    assert not offered() and mem.retries.retries_blocked == 1
    mem.step += RETRY_STEPS
    assert offered()
    mem.record_action(explore.text, "failed: the arm says xyzzy")  # once more: blocked twice as long
    mem.step += RETRY_STEPS
    assert not offered()
    mem.step += RETRY_STEPS
    assert offered() and mem.retries.retries_blocked == 2
    mem.record_action(explore.text, "failed: object taken")  # another reason: may be bad luck again
    assert offered()
    mem.record_action(explore.text, "done")
    mem.record_action(explore.text, "failed: object taken")  # a success in between starts over
    assert offered()


def test_on_a_robot_the_block_lasts_seconds_on_its_clock(cwah_scene):
    from coteam.agent.retries import RETRY_BACKOFF_S

    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    mem.clock_s = 1000.0
    nav = NavGrid(cwah_scene.floorplan)
    explore = next(o for o in available_actions(mem, nav) if o.action.verb == Verb.EXPLORE)
    for _ in range(2):
        mem.record_action(explore.text, "failed: not reachable (Nav2 105: failed to make progress)")
    mem.step += 10 * RETRY_STEPS  # statuses pass; the robot's clock does not
    assert explore.text not in {o.text for o in available_actions(mem, nav)}
    mem.clock_s += RETRY_BACKOFF_S
    assert explore.text in {o.text for o in available_actions(mem, nav)}


def test_a_refused_action_is_never_offered_again_and_a_canceled_one_is_no_failure(cwah_scene):
    from coteam.home.safety import REFUSED

    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    nav = NavGrid(cwah_scene.floorplan)
    first, second = [o for o in available_actions(mem, nav) if o.action.verb == Verb.EXPLORE][:2]
    mem.record_action(first.text, "failed: " + REFUSED + "no-go room")
    for _ in range(3):
        mem.record_action(second.text, "failed: canceled")
    mem.step += 1000
    texts = {o.text for o in available_actions(mem, nav)}
    assert first.text not in texts and second.text in texts and mem.retries.retries_blocked == 0


def test_a_robot_whose_every_way_is_blocked_waits_instead_of_retrying(cwah_scene):
    from coteam.agent.reasoning import AgentBrain, EpisodeInfo, agent_turn

    info = EpisodeInfo.for_scene(cwah_scene, ("alice", "bob"), 0)
    team = make_team("rhp")
    team.reset(info)
    brain = AgentBrain("alice", info, team, NavGrid(cwah_scene.floorplan))
    brain.memory.position = cwah_scene.agent_starts[0].position
    for option in available_actions(brain.memory, brain.nav):  # a sealed room: every way failed twice
        brain.memory.record_action(option.text, "failed: not reachable")
        brain.memory.record_action(option.text, "failed: not reachable")
    turn = agent_turn(brain, skill_running=False)
    with pytest.raises(StopIteration) as ended:
        next(turn)
    assert ended.value.value is False, "it waits this step (and is offered the ways again after a while)"
    brain.memory.step += RETRY_STEPS
    assert isinstance(next(agent_turn(brain, skill_running=False)), StartSkill)


@pytest.mark.parametrize(("reason", "forgotten"), [("too far", True), ("object taken", True), ("no free hand", False)])
def test_a_grab_that_finds_no_item_forgets_where_it_was(cwah_scene, reason: str, forgotten: bool):
    """On a real robot a remembered sighting may be out of date: a grab that failed because the item was not within
    reach where the robot looked for it (or a teammate holds it) drops the sighting, so the robot does not walk
    back to grab at an empty place again and again; a failure of the robot's own (no free hand) keeps it."""
    from coteam.agent.reasoning import AgentBrain, EpisodeInfo, PollSkill, agent_turn
    from coteam.agent.skills import SkillOutcome

    info = EpisodeInfo.for_scene(cwah_scene, ("alice", "bob"), 0)
    team = make_team("rhp")
    team.reset(info)
    brain = AgentBrain("alice", info, team, NavGrid(cwah_scene.floorplan))
    brain.memory.position = cwah_scene.agent_starts[0].position
    item = next(i for i in cwah_scene.items if i.name in cwah_scene.task.needed_names())
    surface = cwah_scene.surfaces[0]  # seen on a table a while ago
    brain.memory.objects[item.id] = ObjectView(
        item.id, item.name, ObjectKind.ITEM, surface.room, surface.position, location=Relation.ON, holder=surface.id
    )
    grab = next(o for o in available_actions(brain.memory, brain.nav) if o.action.verb == Verb.GRAB)
    turn = agent_turn(brain, skill_running=True)
    assert isinstance(next(turn), PollSkill)
    turn.send(SkillOutcome(grab.action, False, reason))  # (it decides again at once)
    assert (grab.text, f"failed: {reason}") in [(r.action, r.outcome) for r in brain.memory.actions]
    offered = {o.text for o in available_actions(brain.memory, brain.nav)}
    assert (grab.text not in offered) is forgotten
    assert (grab.action.target.id not in brain.memory.objects) is forgotten


def test_put_offered_only_while_holding_a_goal_item(cwah_scene):
    sim = Simulator(cwah_scene, ("alice",))
    mem = _memory(sim, "alice")
    nav = NavGrid(cwah_scene.floorplan)
    assert not [o for o in available_actions(mem, nav) if o.action.verb == Verb.PUT]
    goal_item = next(i for i in cwah_scene.items if i.name in cwah_scene.task.needed_names())
    # Walk to it and grab it (opening its container first when needed).
    holder = cwah_scene.placements[goal_item.id].target
    for _ in range(200):
        if math.dist(sim.world.agents["alice"].position, sim.world.position_of(goal_item.id)) <= 1.0:
            break
        sim.step({"alice": Primitive(PrimitiveKind.WALK, (goal_item.id,))})
    if holder in sim.world.is_open:
        sim.step({"alice": Primitive(PrimitiveKind.OPEN, (holder,))})
    assert sim.step({"alice": Primitive(PrimitiveKind.GRAB, (goal_item.id,))})["alice"] == ""
    mem.update(sim.observe("alice"))
    puts = [o for o in available_actions(mem, nav) if o.action.verb == Verb.PUT]
    assert [p.action.target.id for p in puts] == [cwah_scene.task.predicates[0].target]


def test_progress_text_mentions_goal_rooms_and_holdings(cwah_scene):
    sim = Simulator(cwah_scene, ("alice", "bob"))
    mem = _memory(sim, "alice")
    text = progress_text(mem)
    assert "of 250 steps" in text
    for pred in cwah_scene.task.predicates:
        assert f"Goal {pred.item}: 0/{pred.count}" in text
    assert "I hold nothing." in text
    unexplored = [r for r in cwah_scene.floorplan.rooms if not mem.is_explored(r.id)]
    for r in unexplored:
        assert f"The {r.name} ({r.id}) is unexplored." in text
    msg = TeamStatus.of(mem).text()
    assert msg.startswith("alice: in the ") and len(msg) <= 500


def test_tdw_room_is_explored_only_after_a_full_turn():
    scene = get_suite("tdwmat-test").episodes()[0].build()
    sim = Simulator(scene, ("alice",))
    mem = _memory(sim, "alice")
    assert scene.benchmark == Benchmark.TDWMAT
    assert not mem.is_explored(mem.room)
    for _ in range(360 // 15):
        sim.step({"alice": Primitive(PrimitiveKind.TURN_LEFT)})
        mem.update(sim.observe("alice"))
    assert mem.is_explored(mem.room)


def test_the_brain_cuts_a_long_message_with_a_warning(cwah_scene, caplog):
    from coteam.agent.reasoning import AgentBrain, Decision
    from coteam.domain.actions import MAX_MESSAGE_CHARS, HighLevelAction
    from coteam.kit import MethodTeam
    from coteam_harness.runner import episode_info

    class Talkative(MethodTeam):
        def decide(self, ctx):
            return Decision(HighLevelAction(Verb.SEND_MESSAGE, text="x" * 700))

    sim = Simulator(cwah_scene, ("alice", "bob"))
    info = episode_info(sim, 0)
    brain = AgentBrain("alice", info, Talkative(), NavGrid(cwah_scene.floorplan))
    brain.observe(sim.observe("alice"))
    with caplog.at_level("WARNING", logger="coteam.agent.reasoning"):
        decision, _ = brain.decide()
    assert decision.action.text == "x" * MAX_MESSAGE_CHARS
    assert "alice: message of 700 characters cut to 500" in caplog.text


@pytest.mark.parametrize(("receiver", "sent"), [("bob", True), ("dave", False), ("alice", False)])
def test_a_message_is_for_the_whole_team_or_one_teammate(cwah_scene, monkeypatch, receiver: str, sent: bool):
    """A method may address a message to one teammate (its memory and trace record say to whom); a message for
    anyone else is refused as an action that is not available."""
    from coteam.agent.reasoning import AgentBrain, Decision, EpisodeInfo
    from coteam.domain.actions import ActionNotAvailableError, HighLevelAction

    info = EpisodeInfo.for_scene(cwah_scene, ("alice", "bob"), 0)
    team = make_team("rhp")
    team.reset(info)
    brain = AgentBrain("alice", info, team, NavGrid(cwah_scene.floorplan))
    brain.memory.position = cwah_scene.agent_starts[0].position
    ask = HighLevelAction(Verb.SEND_MESSAGE, text="bob, is the apple still there?", receiver=receiver)
    monkeypatch.setattr(team, "decide", lambda ctx: Decision(ask))
    if not sent:
        with pytest.raises(ActionNotAvailableError, match="who is no teammate"):
            brain.decide()
        return
    decision, options = brain.decide()
    assert decision.action.receiver == "bob" and brain.memory.sent[-1].receiver == "bob"
    assert brain.record(decision, options)["to"] == "bob"


def test_a_robot_given_a_new_task_keeps_what_it_learnt_of_the_home_and_starts_the_task_afresh():
    """A serving team's next task: the memory keeps the map and where things were seen and takes the new goal;
    the method's per-task state starts again (REVECA's relevance is the new goal's), its cross-episode store
    stays."""
    from coteam.agent.reasoning import EpisodeInfo
    from coteam.home.world_file import goal_task, load_world
    from scenario import method_brain

    scene = load_world(Path(__file__).resolve().parents[2] / "config" / "flat.world.yaml").scene
    sim = Simulator(scene, ("robot1", "robot2"))
    brain = method_brain(sim, "robot1", "reveca")
    brain.decide()
    seen = dict(brain.memory.objects)
    judged = dict(brain.team.agents["robot1"].relevance)
    assert judged and seen
    episodes = brain.team.episodes
    task = goal_task(scene, "put the plates away", ["in(plate, kitchencabinet): 2"])
    brain.take_task(EpisodeInfo.for_scene(replace(scene, task=task), ("robot1", "robot2"), 0))
    assert brain.memory.task == task and all(i in brain.memory.objects for i in seen)
    assert [st.predicate.item for st in goal_status(brain.memory)] == ["plate"]
    assert brain.team.episodes == episodes + 1 and brain.team.agents["robot1"].relevance == {}
    assert any(o.action.target and o.action.target.name == "kitchencabinet" for o in brain.decide()[1])
