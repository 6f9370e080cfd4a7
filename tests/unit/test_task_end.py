"""The end of a task on real robots and their claims, without DDS (coteam_ros.task_end, the options' claims filter,
the launcher's results of the planners' end reports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coteam.agent.memory import CLAIM_STEPS
from coteam.agent.options import available_actions
from coteam.agent.reasoning import AgentBrain, EpisodeInfo
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
from coteam.domain.navigation import NavGrid
from coteam.home.world_file import load_world
from coteam.registry import make_team
from coteam.senses.perception import Detection, ObservationAssembler

pytest.importorskip("rclpy")  # coteam_ros is installed with the ROS extras

from coteam_ros.launcher import team_result
from coteam_ros.task_end import (
    EndReport,
    Intent,
    TeamHeard,
    claim_target,
    goal_met,
    goal_progress,
    intent_payload,
    parse_intent,
    task_done_by,
    task_done_payload,
)

FLAT = Path(__file__).resolve().parents[2] / "config" / "flat.world.yaml"


def _robot(name: str = "robot1") -> tuple[AgentBrain, ObservationAssembler]:
    scene = load_world(FLAT).scene
    info = EpisodeInfo.for_scene(scene, ("robot1", "robot2"), 0)
    team = make_team("pce", {})
    team.reset(info)
    return AgentBrain(name, info, team, NavGrid(scene.floorplan)), ObservationAssembler(name, scene)


def test_the_goal_is_met_when_my_map_shows_every_goal_item_in_place() -> None:
    brain, asm = _robot()
    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    apples = [i.id for i in scene.items if i.name == "apple"]
    cupcake = next(i.id for i in scene.items if i.name == "cupcake")
    in_fridge = [Detection("apple", a, "", "kitchen", "fridge", fridge.position, 1.0, 0) for a in apples]
    at_fridge = (0.375, 2.375)
    brain.observe(asm.observation(0, at_fridge, 90, in_fridge, container_open={fridge.id: True}))
    assert goal_progress(brain.memory) == (2, 3) and not goal_met(brain.memory)
    cake = Detection("cupcake", cupcake, "", "kitchen", "fridge", fridge.position, 1.0, 1)
    brain.observe(asm.observation(1, at_fridge, 90, [*in_fridge, cake], container_open={fridge.id: True}))
    assert goal_progress(brain.memory) == (3, 3) and goal_met(brain.memory)


def test_a_teammates_deliveries_reach_my_map_with_its_claims() -> None:
    """Each robot's intents carry the goal items its map shows in place that the team has not heard of yet, and the
    goal items its own arm put in place: one robot's two apples and another's cupcake make the whole goal met on
    either map."""
    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    apples = [i.id for i in scene.items if i.name == "apple"]
    cupcake = next(i.id for i in scene.items if i.name == "cupcake")
    one, asm = _robot("robot1")
    two, _ = _robot("robot2")
    at_fridge = (0.375, 2.375)
    one.observe(asm.observation(0, at_fridge, 90, [], placed={a: (fridge.id, True) for a in apples}))  # the arm's word
    two.observe(asm.observation(0, at_fridge, 90, [], placed={cupcake: (fridge.id, True)}))
    assert set(one.memory.put_down_by_me) == set(apples) and set(two.memory.put_down_by_me) == {cupcake}
    heard_by_one = TeamHeard()
    said = parse_intent(intent_payload(7, one.memory, heard_by_one))
    in_fridge = [(a, fridge.id, True) for a in sorted(apples)]
    assert said == Intent(7, in_place=in_fridge, put_down=in_fridge)
    assert parse_intent(intent_payload(-1, one.memory, heard_by_one)) == Intent(-1, put_down=in_fridge)  # said once
    for item, on, into in said.in_place:
        view = asm.placed_view(item, on, into)
        assert view is not None
        two.memory.teammate_placed(view, "robot1")
    team = {"robot1": [asm.placed_view(*placed) for placed in said.put_down]}
    assert goal_met(two.memory, team) and not goal_met(one.memory)
    assert goal_progress(two.memory) == (1, 3), "a teammate's word alone is no count of distinct items"
    for bad in ("", "{", '{"in_place": []}', '{"claim": 1, "in_place": [[1, 2]]}', '{"claim": 1, "put_down": 3}'):
        with pytest.raises(ValueError, match="no claim in its payload"):
            parse_intent(bad)


def test_two_robots_seeing_the_same_class_only_items_never_count_one_twice() -> None:
    """robot2's detector gives classes without ids, so it labels the apples it sees itself. It has seen apple B on
    the coffee table (its first apple label); robot1 delivers apple A, which it calls by that same label, to the
    fridge and says so; robot2 then sees A in the fridge and, its first label being B's, calls A its second apple.
    Its map shows both apple labels in the fridge -- adding up labels, with robot1's cupcake, the goal would be met
    with one apple in the fridge. Counted as distinct items it is not, until robot2's own arm puts B in too."""
    from coteam.senses.perception import CameraPerception

    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    table = next(s for s in scene.surfaces if s.name == "coffeetable")
    first_apple, second_apple = sorted(i.id for i in scene.items if i.name == "apple")
    cupcake = next(i.id for i in scene.items if i.name == "cupcake")
    two, asm = _robot("robot2")
    camera = CameraPerception(asm)
    at_table, at_fridge = (6.0, 2.0), (0.375, 2.375)

    def sees(step: int, where: tuple[float, float], apple_at: tuple[float, float], room: str, **arm) -> None:
        apple = Detection("apple", -1, "food", room, "", apple_at, 1.0, step)
        confirmed = [i for _ in range(2) for i in camera.frame([apple], room).confirmed]  # seen in two frames
        two.observe(camera.merged(asm.observation(step, where, 0, [], **arm), confirmed))

    sees(0, at_table, table.position, "livingroom")  # apple B
    assert two.memory.objects[first_apple].holder == table.id

    # robot1 put apple A (its first apple label) and the cupcake in the fridge: its intent says so
    in_fridge = [(first_apple, fridge.id, True), (cupcake, fridge.id, True)]
    for placed in in_fridge:
        view = asm.placed_view(*placed)
        assert view is not None
        two.memory.teammate_placed(view, "robot1")
    team = {"robot1": [asm.placed_view(*placed) for placed in in_fridge]}

    sees(1, at_fridge, fridge.position, "kitchen", container_open={fridge.id: True})  # apple A, in the fridge
    labels = {i for i, v in two.memory.objects.items() if v.name == "apple" and v.holder == fridge.id}
    assert labels == {first_apple, second_apple}, "both apple labels in the fridge on robot2's map"
    assert goal_progress(two.memory, team) == (2, 3) and not goal_met(two.memory, team)

    # robot2 sees B on the table again, takes it and puts it in the fridge: now two apples are there
    sees(2, at_table, table.position, "livingroom")
    assert two.memory.objects[first_apple].holder == table.id and first_apple not in two.memory.told_by
    two.observe(asm.observation(3, at_table, 0, [], holding=[first_apple]))
    two.observe(asm.observation(4, at_fridge, 90, [], placed={first_apple: (fridge.id, True)}))
    assert goal_progress(two.memory, team) == (3, 3) and goal_met(two.memory, team)


def test_one_false_detection_at_the_fridge_never_ends_the_task() -> None:
    """A learned detector (classes without ids) sees, in one frame, a cupcake by the fridge that is not there,
    while my arm has put both apples in: the goal is not met on my map (a false detection lasts a frame, and a
    new object joins the map on its second sighting). The cupcake seen in two frames is in place."""
    from coteam.senses.perception import CameraPerception

    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    apples = sorted(i.id for i in scene.items if i.name == "apple")
    one, asm = _robot()
    camera = CameraPerception(asm)
    at_fridge, by_fridge = (0.375, 2.375), (fridge.position[0] + 0.3, fridge.position[1])
    opened = {fridge.id: True}
    one.observe(
        asm.observation(0, at_fridge, 90, [], placed={a: (fridge.id, True) for a in apples}, container_open=opened)
    )
    cupcake = Detection("cupcake", -1, "food", "kitchen", "", by_fridge, 1.0, 1)
    ghost = camera.frame([cupcake], "kitchen").confirmed
    one.observe(camera.merged(asm.observation(1, at_fridge, 90, [], container_open=opened), ghost))
    assert goal_progress(one.memory) == (2, 3) and not goal_met(one.memory)
    seen_again = camera.frame([cupcake], "kitchen").confirmed
    one.observe(camera.merged(asm.observation(2, at_fridge, 90, [], container_open=opened), seen_again))
    assert goal_progress(one.memory) == (3, 3) and goal_met(one.memory)


def test_an_item_my_arm_set_down_elsewhere_counts_where_my_arm_left_it_whatever_label_my_camera_moves() -> None:
    """My one arm sets my apple (my label A) on the kitchen table to open the fridge; my teammate has put its apple
    and the cupcake in the fridge, and says so. My camera then sees an apple in the fridge and calls it A. By the
    arms the fridge holds one apple (my teammate's) and the cupcake: my arm's apple is on the table, whatever label
    my camera gives the fridge's apple, and the goal is not met."""
    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    table = next(s for s in scene.surfaces if s.name == "kitchentable")
    apple, _ = sorted(i.id for i in scene.items if i.name == "apple")
    cupcake = next(i.id for i in scene.items if i.name == "cupcake")
    one, asm = _robot()
    at_table = (3.3, 2.375)
    one.observe(asm.observation(0, at_table, 0, [], placed={apple: (table.id, False)}))
    assert one.memory.put_down_by_me[apple].holder == table.id
    team = {"robot2": [asm.placed_view(apple, fridge.id, True), asm.placed_view(cupcake, fridge.id, True)]}
    seen = Detection("apple", apple, "food", "kitchen", "fridge", fridge.position, 1.0, 1)
    one.observe(asm.observation(1, at_table, 180, [seen], container_open={fridge.id: True}))
    assert one.memory.objects[apple].holder == fridge.id, "my map has label A in the fridge"
    assert goal_progress(one.memory, team) == (2, 3) and not goal_met(one.memory, team)
    assert parse_intent(intent_payload(-1, one.memory, TeamHeard())).put_down == [], "my arm put nothing in place"


def test_a_door_a_teammate_opened_is_open_on_my_map_and_my_executors() -> None:
    """robot1's arm opens the fridge; its next intent says so (once). robot2, which has not been to the kitchen, takes
    the word: its first sight of the fridge (which shows the task's start, closed) and every later one (which shows
    no door state: no camera sees it) leave it open, and its executor, sent to the fridge, learns it too -- so it
    does not open the fridge again."""
    from coteam.agent.memory import AgentMemory
    from coteam_ros.convert import target_view_from_json, target_view_json

    scene = load_world(FLAT).scene
    fridge = next(c for c in scene.containers if c.name == "fridge")
    one, asm_one = _robot("robot1")
    two, asm_two = _robot("robot2")
    at_fridge = (0.375, 2.375)
    heard = TeamHeard(doors={c.id: c.id in scene.initially_open for c in scene.containers})
    one.observe(asm_one.observation(0, at_fridge, 90, []))
    assert one.memory.objects[fridge.id].is_open is False
    one.observe(asm_one.observation(1, at_fridge, 90, [], container_open={fridge.id: True}))  # its arm opened it
    said = parse_intent(intent_payload(-1, one.memory, heard))
    assert said.doors == {fridge.id: True}
    assert parse_intent(intent_payload(-1, one.memory, heard)).doors == {}, "said once"

    executor = AgentMemory("robot2", scene.benchmark, scene.floorplan, scene.task)
    executor.objects.update({v.id: v for v in two.info.landmarks})  # as the executor node's: the goal's fridge
    two.observe(asm_two.observation(0, (6.0, 2.8), 180, []))
    executor.update(asm_two.observation(0, (6.0, 2.8), 180, []))
    two.memory.teammate_opened(fridge.id, True)
    for step in (1, 2):  # robot2 in the kitchen: first the task's start (closed), then no door state at all
        two.observe(asm_two.observation(step, at_fridge, 90, []))
        executor.update(asm_two.observation(step, at_fridge, 90, []))
        assert two.memory.objects[fridge.id].is_open is True, step
    assert executor.objects[fridge.id].is_open is False, "the executor has not heard"
    check = HighLevelAction(Verb.CHECK, ObjectRef("fridge", fridge.id))
    told = target_view_from_json(target_view_json(two.memory, check))
    assert told is not None
    executor.adopt(*told)
    assert executor.objects[fridge.id].is_open is True
    one.observe(asm_one.observation(2, at_fridge, 90, [], container_open={fridge.id: False}))  # closed it again
    assert parse_intent(intent_payload(-1, one.memory, heard)).doors == {fridge.id: False}


def test_task_done_payloads() -> None:
    assert task_done_by(task_done_payload("robot2")) == "robot2"
    for other in ("", "{", '{"task_done": 3}', '["task_done"]', '{"status": {"room": 1}}'):
        assert task_done_by(other) is None, other


def test_claims_leave_a_teammates_object_out_of_my_options_until_they_lapse() -> None:
    brain, asm = _robot()
    scene = load_world(FLAT).scene
    cabinet = next(c for c in scene.containers if c.name == "kitchencabinet")
    plate = next(i for i in scene.items if i.name == "plate")
    brain.observe(asm.observation(0, (1.5, 1.2), 0, []))
    memory, nav = brain.memory, NavGrid(scene.floorplan)

    def checks() -> set[int]:
        options = available_actions(memory, nav)
        return {o.action.target.id for o in options if o.action.verb == Verb.CHECK and o.action.target}

    assert cabinet.id in checks()
    memory.claim("robot2", cabinet.id)
    assert cabinet.id not in checks()
    memory.claim("robot2", -1)  # robot2 has moved on to something no claim covers
    assert cabinet.id in checks()
    memory.claim("robot2", cabinet.id)
    memory.step += CLAIM_STEPS + 1  # no news for long: robot2 may be dead
    assert cabinet.id in checks()
    assert claim_target(HighLevelAction(Verb.GRAB, ObjectRef("plate", plate.id))) == plate.id
    assert claim_target(HighLevelAction(Verb.PUT, ObjectRef("fridge", 5))) == -1  # destinations are shared
    assert claim_target(HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 1))) == -1


def test_the_runs_results_from_the_robots_end_reports(tmp_path: Path) -> None:
    seen = EndReport("robot2", "goal met on my map", True, (3, 3), 12.5, 26, 7, [5.0, 15.0], 1, 80, 0, {})
    told = EndReport("robot1", "robot2 saw the goal met", True, (0, 3), 12.0, 25, 6, [2.0], 0, 0, 0, {"too far": 1})
    seen.write(tmp_path / "r2.json")
    assert EndReport.read(tmp_path / "r2.json") == seen
    result = team_result([seen, told], "example-flat", "groceries", "cwah", "pce")
    assert result.success and result.transport_rate == 1.0 and result.steps == 26 and result.agents == 2
    assert (result.messages, result.decisions, result.failures) == (1, 13, {"too far": 1})
    assert result.decision_ms_p95 == 15.0 and result.wall_s == 12.5
    stopped = EndReport("robot1", "time limit", False, (1, 3), 300.0, 600, 40, [], 0, 0, 0, {})
    late = team_result([stopped], "example-flat", "groceries", "cwah", "pce")
    assert not late.success and late.transport_rate == pytest.approx(1 / 3)


def test_a_robot_decides_on_what_its_arm_says_it_holds_before_its_status_shows_it() -> None:
    """A one-gripper robot's grasp succeeded; the status its planner decides on next was sent before the arm's
    result, so it shows the gripper empty. The action's result carries the arm's holdings: the robot is not offered
    another grab (its arm would refuse: gripper occupied), nor a door to open with its gripper full."""
    from coteam.domain.capabilities import RobotCapabilities

    brain, asm = _robot()
    scene = load_world(FLAT).scene
    memory = brain.memory
    memory.capabilities = RobotCapabilities(grippers=1, open_needs_free_gripper=True)
    table = next(s for s in scene.surfaces if s.name == "coffeetable")
    apples = sorted(i.id for i in scene.items if i.name == "apple")
    seen = [Detection("apple", a, "", "livingroom", "coffeetable", table.position, 1.0, 0) for a in apples]
    brain.observe(asm.observation(0, (6.5, 1.3), 90, seen))
    nav = NavGrid(scene.floorplan)

    def grabs() -> list:
        return [o for o in available_actions(memory, nav) if o.action.verb == Verb.GRAB]

    assert memory.free_hands() == 1 and grabs()
    memory.arm_holds([apples[0], -1])  # ExecuteSkill.Result.holding
    assert memory.holding == (apples[0], None) and memory.free_hands() == 0
    assert memory.objects[apples[0]].held_by == "robot1" and memory.needs_a_free_gripper_to_open()
    assert grabs() == []
    brain.observe(asm.observation(1, (6.5, 1.3), 90, seen))  # a status sent before the arm's result: hands empty
    assert memory.holding == (apples[0], None) and grabs() == [], "the arm's word stands"
    brain.observe(asm.observation(2, (6.5, 1.3), 90, seen[1:], holding=[apples[0]]))  # the status that shows it
    assert memory.arm_word is None and memory.holding == (apples[0], None)
