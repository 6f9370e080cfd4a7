"""A planner's memory journal (``coteam_ros.memory_journal``): what a planner took in, recalled by the same robot in
the same episode after a restart, so that its memory is what it was; another episode's journal or a line cut short
by a kill is said in one line and loses nothing before it."""

from __future__ import annotations

from pathlib import Path

from coteam_ros.memory_journal import MemoryJournal
from coteam_sim.engine import Simulator
from coteam_sim.primitives import Primitive, PrimitiveKind
from coteam_sim.suites import get_suite
from scenario import method_brain

SCENE = get_suite("cwah-test").episodes()[0].build()


def _walked(steps: int) -> tuple[Simulator, list]:
    """alice's observations while she walks to the far room for ``steps`` steps."""
    sim = Simulator(SCENE, ("alice", "bob"), seed=0)
    far = max(SCENE.floorplan.rooms, key=lambda r: r.id).id
    seen = [sim.observe("alice")]
    for _ in range(steps):
        sim.step({"alice": Primitive(PrimitiveKind.WALK, (far,))})
        seen.append(sim.observe("alice"))
    return sim, seen


def _memory(brain) -> tuple:
    m = brain.memory
    return (m.step, m.position, m.room, dict(m.objects), dict(m.last_seen), dict(m.room_visits), set(m.checked))


def test_a_restarted_planner_recalls_the_memory_it_had(tmp_path: Path) -> None:
    sim, seen = _walked(12)
    before = method_brain(sim)
    journal = MemoryJournal(tmp_path / "alice.memory.jsonl", "alice", SCENE.name, 0)
    assert journal.recall(print) == []  # nothing yet
    for obs in seen[1:]:
        before.observe(obs)
        journal.keep(obs)
    journal.close()

    again = MemoryJournal(tmp_path / "alice.memory.jsonl", "alice", SCENE.name, 0)
    recalled = again.recall(print)
    assert recalled == seen[1:]
    after = method_brain(sim)
    for obs in recalled:
        after.observe(obs)
    assert _memory(after) == _memory(before)
    again.keep(seen[-1])  # it goes on after what it recalled
    again.close()
    assert len((tmp_path / "alice.memory.jsonl").read_text().splitlines()) == 1 + len(seen)


def test_another_episodes_journal_or_a_line_cut_short_is_said_in_one_line(tmp_path: Path) -> None:
    _, seen = _walked(3)
    path = tmp_path / "alice.memory.jsonl"
    journal = MemoryJournal(path, "alice", SCENE.name, 0)
    journal.recall(print)
    for obs in seen:
        journal.keep(obs)
    journal.close()
    path.write_text(path.read_text() + '{"agent": "alice", "step"')  # killed while writing a line

    said: list[str] = []
    assert MemoryJournal(path, "alice", SCENE.name, 0).recall(said.append) == seen
    assert len(said) == 1 and "line 6 cannot be read" in said[0] and "recalled the 4 before it" in said[0]

    said.clear()
    assert MemoryJournal(path, "alice", SCENE.name, seed=1).recall(said.append) == []  # another episode's seed
    assert said == [f"{path}: a memory of another episode or robot: starting afresh"]
    assert len(path.read_text().splitlines()) == 1  # only the new header: the old memory is not mixed in
