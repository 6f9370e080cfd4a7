"""A robot's body (coteam.domain.capabilities) in its skills and options: one gripper, a door that needs a free gripper,
a payload limit, and skill time limits in seconds from the robot's own speed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from coteam.agent.memory import AgentMemory
from coteam.agent.options import available_actions
from coteam.agent.skills import NavGoal, SkillOutcome, SkillRunner, TimeLimit
from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
from coteam.domain.capabilities import RobotCapabilities
from coteam.domain.navigation import NavGrid
from coteam.home.world_file import load_world
from coteam_harness.executor import SkillExecutor
from coteam_sim.engine import Simulator
from coteam_sim.primitives import PrimitiveKind

FLAT = Path(__file__).resolve().parents[2] / "config" / "flat.world.yaml"


def _robot_in_the_flat(capabilities: RobotCapabilities) -> tuple[Simulator, AgentMemory]:
    scene = load_world(FLAT).scene
    sim = Simulator(scene, ("robot1", "robot2"), full_observability=True)
    memory = AgentMemory("robot1", scene.benchmark, scene.floorplan, scene.task, capabilities=capabilities)
    memory.update(sim.observe("robot1"))
    return sim, memory


def _ids(sim: Simulator, name: str) -> list[int]:
    scene = sim.scene
    return [o.id for o in (*scene.items, *scene.containers, *scene.surfaces) if o.name == name]


def _hold(sim: Simulator, memory: AgentMemory, *item_ids: int) -> None:
    """The robot holds these items (put in its grippers, as after two grasps)."""
    from coteam.domain.world import Placement

    for hand, item in enumerate(item_ids):
        sim.world.agents["robot1"].hands[hand] = item
        sim.world.placements[item] = Placement.held("robot1", hand)
    memory.update(sim.observe("robot1"))


def test_capabilities_are_checked_and_default_to_the_benchmarks_robots() -> None:
    default = RobotCapabilities()
    assert (default.grippers, default.holds, default.open_needs_free_gripper) == (2, 2, False)
    with pytest.raises(ValidationError, match="carry_limit 2 exceeds the 1 gripper"):
        RobotCapabilities(grippers=1, carry_limit=2)
    with pytest.raises(ValidationError):
        RobotCapabilities(speed_mps=0)


@pytest.mark.parametrize(
    ("capabilities", "grabs_with_one_held"),
    [(RobotCapabilities(), True), (RobotCapabilities(grippers=1), False), (RobotCapabilities(carry_limit=1), False)],
)
def test_a_robot_that_holds_one_item_is_offered_no_second_grab(capabilities, grabs_with_one_held: bool) -> None:
    sim, memory = _robot_in_the_flat(capabilities)
    apple, _ = _ids(sim, "apple")
    _hold(sim, memory, apple)
    grabs = [o for o in available_actions(memory, NavGrid(sim.scene.floorplan)) if o.action.verb == Verb.GRAB]
    assert bool(grabs) is grabs_with_one_held, [o.text for o in grabs]


def _play(sim: Simulator, memory: AgentMemory, action: HighLevelAction) -> tuple[SkillOutcome, list]:
    """Run one skill in the simulator to its end: its outcome, and the manipulations it asked for."""
    executor = SkillExecutor(sim.scene.benchmark, NavGrid(sim.scene.floorplan))
    executor.start(action, memory)
    manipulations = []
    for _ in range(400):
        primitive, outcome = executor.next_primitive()
        if outcome is not None:
            return outcome, manipulations
        if primitive.kind not in (PrimitiveKind.WALK, PrimitiveKind.WALK_TO):
            manipulations.append((primitive.kind, primitive.args))
        sim.step({"robot1": primitive})
        memory.update(sim.observe("robot1"))
    raise AssertionError("the skill did not end")


def test_a_robot_that_needs_a_free_gripper_sets_an_item_down_opens_the_door_and_puts_both_in() -> None:
    """Both grippers full, the fridge closed, and a body that opens doors only with a free gripper: the put skill sets
    one apple down on the kitchen table, opens the fridge, puts the other in, fetches the first and puts it in too."""
    sim, memory = _robot_in_the_flat(RobotCapabilities(open_needs_free_gripper=True))
    (fridge,) = _ids(sim, "fridge")
    (table,) = _ids(sim, "kitchentable")
    apples = _ids(sim, "apple")
    _hold(sim, memory, *apples)
    put = HighLevelAction(Verb.PUT, ObjectRef("fridge", fridge))
    outcome, manipulations = _play(sim, memory, put)
    assert outcome.success, outcome
    kinds = [k for k, _ in manipulations]
    assert kinds == [
        PrimitiveKind.PUT_ON,
        PrimitiveKind.OPEN,
        PrimitiveKind.PUT_IN,
        PrimitiveKind.GRAB,
        PrimitiveKind.PUT_IN,
    ], manipulations
    assert manipulations[0][1][1] == table
    assert all(sim.world.placements[a].target == fridge for a in apples)


def test_a_robot_that_opens_with_full_hands_goes_straight_to_the_door() -> None:
    sim, memory = _robot_in_the_flat(RobotCapabilities())
    (fridge,) = _ids(sim, "fridge")
    _hold(sim, memory, *_ids(sim, "apple"))
    outcome, manipulations = _play(sim, memory, HighLevelAction(Verb.PUT, ObjectRef("fridge", fridge)))
    assert outcome.success
    assert [k for k, _ in manipulations] == [PrimitiveKind.OPEN, PrimitiveKind.PUT_IN, PrimitiveKind.PUT_IN]


def test_a_robots_skill_limit_is_in_seconds_from_its_speed_and_the_way() -> None:
    """A slow robot (0.2 m/s) gets its drive's time: the same skill that a fast robot must finish in about a minute
    still runs for a slow one after five minutes; a skill past its limit fails as timeout, whatever its step count."""
    now = [0.0]
    sim, fast = _robot_in_the_flat(RobotCapabilities(speed_mps=1.0))
    _, slow = _robot_in_the_flat(RobotCapabilities(speed_mps=0.2))
    nav = NavGrid(sim.scene.floorplan)
    limit = TimeLimit(lambda: now[0], nav, overhead_s=30.0, travel_factor=2.0)
    (bathroom,) = [r.id for r in sim.scene.floorplan.rooms if r.name == "bathroom"]
    explore = HighLevelAction(Verb.EXPLORE, ObjectRef("bathroom", bathroom))
    metres = nav.path_length(fast.position, sim.scene.floorplan.room_center(bathroom))
    assert limit.seconds(fast, explore) == pytest.approx(30.0 + 2.0 * metres / 1.0)
    assert limit.seconds(slow, explore) == pytest.approx(30.0 + 2.0 * metres / 0.2)

    runner = SkillRunner(sim.scene.benchmark, time_limit=limit)
    runner.start(explore, slow)
    assert isinstance(runner.advance(), NavGoal)
    for _ in range(500):  # far more statuses than a simulated skill's step cap: steps do not count on a robot
        runner.stepped()
    now[0] = limit.seconds(slow, explore) - 1
    assert isinstance(runner.advance(), NavGoal)
    now[0] += 2
    outcome = runner.advance()
    assert isinstance(outcome, SkillOutcome) and outcome.reason == "timeout"
