"""The PettingZoo ParallelEnv: API conformance, invalid primitives, terminations and truncations."""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
from pettingzoo.test import parallel_api_test

from coteam.domain.geometry import bearing
from coteam.domain.observation import Observation
from coteam.domain.world import AgentStart, Benchmark, Placement, Relation, Scene, distance
from coteam_sim.env import FAILURE_PENALTY, CoteamParallelEnv
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite

K = PrimitiveKind


# --- API conformance -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("benchmark", "n_agents", "cycles"),
    [
        ("cwah", 2, 300),  # random text never parses: every agent waits until the 250-step horizon
        ("cwah", 1, 20),
        ("cwah", 3, 20),
        ("tdwmat", 2, 40),
        ("tdwmat", 3, 20),
    ],
)
def test_parallel_api(benchmark: str, n_agents: int, cycles: int) -> None:
    env = CoteamParallelEnv(benchmark, n_agents)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel_api_test(env, num_cycles=cycles)
    assert [str(w.message) for w in caught if "pettingzoo" in w.filename] == []


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_spaces_are_cached_objects(benchmark: Benchmark) -> None:
    env = CoteamParallelEnv(benchmark, 3)
    obs, _ = env.reset(seed=1)
    for a in env.possible_agents:
        assert env.observation_space(a) is env.observation_space(a)
        assert env.action_space(a) is env.action_space(a)
        assert env.observation_space(a).contains(obs[a])
        assert isinstance(obs[a], Observation)
    assert not env.observation_space("alice").contains("not an observation")


VALID_TEXT = {
    Benchmark.CWAH: [
        "[wait]",
        "[walktowards] 12",
        "[grab] 52",
        "[putin] 52 31",
        "[putback] 52 40",
        "[send_message] " + "x" * 500,
    ],
    Benchmark.TDWMAT: [
        "[wait]",
        "[move_forward]",
        "[turn_left]",
        "[grasp] 52 0",
        "[put_in] 1",
        "[drop] 0",
        "[send_message] I found 2 apples, going to the bed.",
    ],
}


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_action_space_contains_the_valid_primitives(benchmark: Benchmark) -> None:
    """The declared action space must contain the actions the env accepts (PettingZoo/Gymnasium contract)."""
    env = CoteamParallelEnv(benchmark, 2)
    env.reset(seed=0)
    space = env.action_space("alice")
    for text in VALID_TEXT[benchmark]:
        _, _, _, _, infos = env.step({"alice": text})
        assert not infos["alice"]["failure"].startswith("invalid primitive"), text
        assert space.contains(text), f"action space {space} does not contain the valid action {text!r}"


def test_bad_agent_counts_are_rejected() -> None:
    for n in (0, 9, -1):
        with pytest.raises(ValueError):
            CoteamParallelEnv("cwah", n)


def test_step_before_reset_and_unknown_agent() -> None:
    env = CoteamParallelEnv("cwah", 2)
    with pytest.raises(RuntimeError):
        env.step({"alice": "[wait]"})
    env.reset(seed=0)
    with pytest.raises(KeyError):
        env.step({"mallory": "[wait]"})


def test_reset_options() -> None:
    spec = get_suite("cwah-test").episodes()[4]
    scene = spec.build()
    env = CoteamParallelEnv("cwah", 2)
    env.reset(seed=3, options={"scene": scene})
    assert env.scene == scene
    env.reset(seed=3, options={"episode": spec})
    assert env.scene == scene
    a = env.reset(seed=11)[0]
    b = env.reset(seed=11)[0]
    assert a == b, "a fresh episode is a function of the seed"
    assert env.reset(seed=12)[0] != a
    with pytest.raises(ValueError):
        env.reset(options={"scene": get_suite("tdwmat-test").episodes()[0].build()})


# --- invalid primitives ----------------------------------------------------------------------------------------
INVALID = {
    Benchmark.CWAH: [
        "",
        "hello",
        "[fly] 3",
        "[grab]",
        "[grab] x",
        "[grab] 1 2",
        "[move_forward]",
        "[grasp] 12 0",
        42,
        b"[wait]",
        Primitive(K.TURN_LEFT),
        Primitive(K.GRAB, (1, 2)),
    ],
    Benchmark.TDWMAT: [
        "",
        "go to the kitchen",
        "[walktowards] 12",
        "[grasp] 12",
        "[drop]",
        "[drop] a",
        "[putin] 1 2",
        3.5,
        Primitive(K.OPEN, (3,)),
        Primitive(K.GRASP, (3,)),
    ],
}


@pytest.mark.parametrize("benchmark", list(Benchmark))
def test_invalid_primitive_loses_the_turn(benchmark: Benchmark) -> None:
    env = CoteamParallelEnv(benchmark, 2)
    obs, _ = env.reset(seed=0, options={"episode": get_suite(f"{benchmark.value}-test").episodes()[0]})
    valid = "[wait]" if benchmark == Benchmark.CWAH else "[turn_left]"
    for bad in INVALID[benchmark]:
        while not obs["alice"].ready:  # TDW-MAT: only a free agent's action is read
            obs, *_ = env.step({"bob": valid})
        before = env.state()
        obs, rewards, terms, truncs, infos = env.step({"alice": bad, "bob": valid})
        assert infos["alice"]["failure"].startswith("invalid primitive"), (bad, infos["alice"])
        assert obs["alice"].last_failure.startswith("invalid primitive")
        assert rewards["alice"] == pytest.approx(FAILURE_PENALTY)
        assert infos["bob"]["failure"] == "" and rewards["bob"] == 0.0
        after = env.state()
        assert after["agents"]["alice"] == before["agents"]["alice"], "an invalid primitive must not act"
        assert after["placements"] == before["placements"]
        assert not terms["alice"] and not truncs["alice"]
        assert env.agents == ["alice", "bob"]
    # The agent plays normally again afterwards.
    while not obs["alice"].ready:
        obs, *_ = env.step({"bob": valid})
    obs, _, _, _, infos = env.step({"alice": valid, "bob": valid})
    assert infos["alice"]["failure"] == "" and obs["alice"].last_failure == ""


def test_failed_but_valid_primitive_is_penalised_not_invalid() -> None:
    env = CoteamParallelEnv("cwah", 2)
    env.reset(seed=0, options={"episode": get_suite("cwah-test").episodes()[0]})
    _, rewards, _, _, infos = env.step({"alice": "[grab] 999999"})
    assert infos["alice"]["failure"] and not infos["alice"]["failure"].startswith("invalid primitive")
    assert rewards["alice"] == pytest.approx(FAILURE_PENALTY)


# --- terminations ----------------------------------------------------------------------------------------------
def _nearly_done_cwah() -> tuple[Scene, int, int]:
    """All goal instances in place but one, which lies on another surface where alice starts."""
    scene = get_suite("cwah-test").episodes()[0].build()  # prepare_afternoon_tea: ON coffeetable
    preds = scene.task.predicates
    assert all(p.relation == Relation.ON for p in preds)
    target = preds[0].target
    placements = dict(scene.placements)
    last = None
    for p in preds:
        ids = [i.id for i in scene.items if i.name == p.item][: p.count]
        for i in ids:
            placements[i] = Placement(Relation.ON, target)
        last = ids[-1]
    assert last is not None
    other = next(s for s in scene.surfaces if s.id != target)
    placements[last] = Placement(Relation.ON, other.id)
    starts = tuple(
        AgentStart(s.name, other.position if s.name == "alice" else s.position, s.heading) for s in scene.agent_starts
    )
    return dataclasses.replace(scene, placements=placements, agent_starts=starts), last, target


def test_cwah_terminates_when_the_goal_is_done() -> None:
    scene, item, target = _nearly_done_cwah()
    env = CoteamParallelEnv("cwah", 2)
    env.reset(seed=0, options={"scene": scene})
    total = scene.task.total_count
    _, rewards, terms, truncs, infos = env.step({"alice": f"[grab] {item}"})
    assert infos["alice"]["failure"] == "" and infos["alice"]["progress"] == (total - 1, total)
    assert not any(terms.values()) and not any(truncs.values())
    for _ in range(200):
        if distance(env.sim.world.agents["alice"].position, env.sim.world.position_of(target)) <= 1.0:
            break
        _, _, terms, truncs, infos = env.step({"alice": f"[walktowards] {target}", "bob": "[wait]"})
        assert infos["alice"]["failure"] == ""
        assert not any(terms.values()) and not any(truncs.values())
    _, rewards, terms, truncs, infos = env.step({"alice": f"[putback] {item} {target}", "bob": "[wait]"})
    assert infos["alice"]["failure"] == ""
    assert terms == {"alice": True, "bob": True}
    assert truncs == {"alice": False, "bob": False}
    assert rewards == {"alice": 1.0, "bob": 1.0}
    assert infos["bob"]["progress"] == (total, total)
    assert env.agents == []
    with pytest.raises(RuntimeError):
        env.step({})


def test_tdwmat_terminates_when_the_goal_is_done() -> None:
    scene = get_suite("tdwmat-test").episodes()[0].build()
    fp = scene.floorplan
    bed = next(s for s in scene.surfaces if s.name == "bed")
    room = fp.room(bed.room)
    # A free cell of the bed's room, away from walls, farther than 3.5 m from the bed, on a 15-degree bearing.
    candidates = []
    for y in range(room.y0 + 1, room.y1 - 2):
        for x in range(room.x0 + 1, room.x1 - 2):
            pos = fp.center_of((x, y))
            heading = bearing(pos, bed.position)
            if distance(pos, bed.position) > 3.5 and all(
                fp.is_free(x + dx, y + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
            ):
                err = abs(heading - 15 * round(heading / 15))
                candidates.append((err, pos, 15 * round(heading / 15) % 360))
    assert candidates
    _, start, heading = min(candidates)
    targets = [i for i in scene.items if i.name in scene.task.needed_names()]
    placements = dict(scene.placements)
    for i in targets[:-1]:
        placements[i.id] = Placement(Relation.ON, bed.id)
    last = targets[-1].id
    placements[last] = Placement(Relation.FLOOR, room.id, position=start)
    starts = tuple(
        AgentStart(s.name, start if s.name == "alice" else s.position, heading if s.name == "alice" else s.heading)
        for s in scene.agent_starts
    )
    scene = dataclasses.replace(scene, placements=placements, agent_starts=starts)
    env = CoteamParallelEnv("tdwmat", 2)
    obs, infos = env.reset(seed=0, options={"scene": scene})
    assert infos["alice"]["progress"] == (9, 10)

    def act(prim: str) -> tuple:
        nonlocal obs
        while not obs["alice"].ready:
            obs, _, terms, truncs, infos = env.step({"bob": "[wait]"})
            assert not any(terms.values()) and not any(truncs.values())
        obs, rewards, terms, truncs, infos = env.step({"alice": prim, "bob": "[wait]"})
        assert infos["alice"]["failure"] == "", (prim, infos["alice"])
        return rewards, terms, truncs, infos

    _, terms, truncs, _ = act(f"[grasp] {last} 0")
    assert not any(terms.values())
    while distance(env.sim.world.agents["alice"].position, bed.position) > 2.5:
        _, terms, truncs, _ = act("[move_forward]")
        assert not any(terms.values()) and not any(truncs.values())
    rewards, terms, truncs, infos = act("[drop] 0")
    assert terms == {"alice": True, "bob": True} and truncs == {"alice": False, "bob": False}
    assert rewards["alice"] == 1.0 and infos["alice"]["progress"] == (10, 10)
    assert env.agents == []


# --- truncations -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("benchmark", "action"), [(Benchmark.CWAH, "[wait]"), (Benchmark.TDWMAT, "[turn_left]")])
def test_truncation_at_the_horizon(benchmark: Benchmark, action: str) -> None:
    spec = get_suite(f"{benchmark.value}-test").episodes()[1]
    horizon = spec.build().task.horizon
    env = CoteamParallelEnv(benchmark, 2)
    obs, _ = env.reset(seed=0, options={"episode": spec})
    steps = 0
    while True:
        clock_before = env.sim.clock
        obs, rewards, terms, truncs, infos = env.step({a: action for a in env.agents if obs[a].ready})
        steps += 1
        assert clock_before < horizon
        if env.sim.clock >= horizon:
            break
        assert not any(terms.values()) and not any(truncs.values())
        assert env.agents == ["alice", "bob"]
    assert truncs == {"alice": True, "bob": True}
    assert terms == {"alice": False, "bob": False}
    assert rewards == {"alice": 0.0, "bob": 0.0}
    assert env.agents == []
    assert infos["alice"]["clock"] == horizon
    if benchmark == Benchmark.CWAH:
        assert steps == horizon
    else:
        assert steps == math.ceil(horizon / 5)


def test_short_horizon_scene_truncates() -> None:
    scene = get_suite("cwah-test").episodes()[0].build()
    scene = dataclasses.replace(scene, task=dataclasses.replace(scene.task, horizon=3))
    env = CoteamParallelEnv("cwah", 1)
    env.reset(seed=0, options={"scene": scene})
    for _ in range(2):
        _, _, terms, truncs, _ = env.step({"alice": "[wait]"})
        assert truncs == {"alice": False}
    _, _, terms, truncs, _ = env.step({"alice": "[wait]"})
    assert truncs == {"alice": True} and terms == {"alice": False}
