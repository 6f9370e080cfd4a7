"""What a team learns from an episode (the EpisodeOutcome) and the store it keeps it in: persisted with
``store=PATH``, saved at every episode's end, resumed after a kill, refused with one line when the file is not
this method's store."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coteam.agent.reasoning import Decision, EpisodeOutcome
from coteam.cli import main
from coteam.kit import AgentReasoner, PerAgentTeam, TeamWrapper
from coteam.kit.policies import rule_based_choice
from coteam.kit.store import MethodStore, StoreError, StoreSchema, TableMerge
from coteam.registry import make_team, register_method, unregister_method
from coteam_harness.cli import run_suite
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite

HERE = Path(__file__).resolve().parent
NAME = "learner"


class _RuleAgent(AgentReasoner):
    def decide(self, ctx):
        option, rule = rule_based_choice(ctx)
        return Decision(option.action, {"rule": rule})


class LearnerTeam(PerAgentTeam):
    """The rule policy, keeping every episode's outcome: its steps, failed actions and goal predicates."""

    Agent = _RuleAgent
    store_schema = StoreSchema(
        1,
        {
            "episodes": "name TEXT, steps INTEGER, rate REAL",
            "failures": "episode TEXT, agent TEXT, step INTEGER, action TEXT, reason TEXT",
            "goals": "episode TEXT, item TEXT, wanted INTEGER, done INTEGER",
        },
    )

    def learn(self, outcome: EpisodeOutcome) -> None:
        with self.store.db as db:
            db.execute(
                "INSERT INTO episodes VALUES (?, ?, ?)", (outcome.episode, outcome.steps, outcome.transport_rate)
            )
            db.executemany(
                "INSERT INTO failures VALUES (?, ?, ?, ?, ?)",
                [(outcome.episode, f.agent, f.step, f.action, f.reason) for f in outcome.failed_actions],
            )
            db.executemany(
                "INSERT INTO goals VALUES (?, ?, ?, ?)",
                [(outcome.episode, g.predicate.item, g.predicate.count, g.done) for g in outcome.goals],
            )


@pytest.fixture
def learner():
    register_method(NAME, LearnerTeam)
    yield NAME
    unregister_method(NAME)


def _rows(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in ("episodes", "goals")}


SPECS = get_suite("cwah-test").episodes()[:3]


# --- the outcome ----------------------------------------------------------------------------------------------
class _Watching(TeamWrapper):
    """A team that keeps the outcomes its episodes end with."""

    def __init__(self, inner):
        super().__init__(inner)
        self.outcomes: list[EpisodeOutcome] = []

    def end_episode(self, outcome):
        self.outcomes.append(outcome)
        super().end_episode(outcome)


def test_the_outcome_holds_the_verdict_goals_failed_actions_and_messages(tmp_path):
    team = _Watching(make_team("pce"))
    result = run_episode(get_suite("cwah-test").episodes()[6].build(), team, n_agents=2, trace_path=tmp_path / "t.json")
    (outcome,) = team.outcomes
    assert (outcome.success, outcome.steps, outcome.transport_rate) == (True, result.steps, 1.0)
    assert outcome.goals and outcome.goals_met == tuple(g.predicate for g in outcome.goals) and not outcome.goals_missed
    assert all(g.done == g.predicate.count for g in outcome.goals)
    sent = load_trace(tmp_path / "t.json")["messages"]
    assert [(m.sender, m.text) for m in outcome.messages] == [(m["sender"], m["text"]) for m in sent]
    assert len(outcome.messages) == result.messages == 1
    failed = [o for o in load_trace(tmp_path / "t.json")["outcomes"] if not o["success"]]
    assert [(f.agent, f.reason) for f in outcome.failed_actions] == sorted(
        ((o["agent"], o["reason"]) for o in failed), key=lambda x: x[0]
    )


def test_failed_actions_carry_their_reason_and_the_episodes_end_is_not_one():
    from coteam.agent.memory import AgentMemory
    from coteam.agent.reasoning import EPISODE_OVER, FAILED
    from coteam.domain.world import Benchmark

    scene = SPECS[0].build()
    memory = AgentMemory("alice", Benchmark.CWAH, scene.floorplan, scene.task)
    memory.record_action("[gograb] <apple> (3)", FAILED + "taken by bob")
    memory.record_action("[goexplore] <kitchen> (1)", FAILED + EPISODE_OVER)
    memory.record_action("[goexplore] <bedroom> (2)", "done")
    outcome = EpisodeOutcome.of("e", False, 250, 0.0, [memory])
    assert [(f.agent, f.action, f.reason) for f in outcome.failed_actions] == [
        ("alice", "[gograb] <apple> (3)", "taken by bob")
    ]
    assert outcome.goals_missed == tuple(p for p in scene.task.predicates) and not outcome.goals_met


# --- the store -----------------------------------------------------------------------------------------------
def test_without_a_file_the_store_is_emptied_every_episode(learner):
    team = make_team(learner)
    results = [run_episode(spec.build(), team, n_agents=2) for spec in SPECS[:2]]
    assert not team.store.persisted and [r.store_sha256 for r in results] == [None, None]
    assert [r[0] for r in team.store.db.execute("SELECT name FROM episodes")] == [SPECS[1].name]


def test_a_store_file_keeps_what_every_episode_taught(learner, tmp_path):
    path = tmp_path / "learner.sqlite"
    results = run_suite(SPECS, learner, 2, {"store": str(path)}, tmp_path / "run", seed=0, quiet=True)
    rows = _rows(path)
    assert [r[0] for r in rows["episodes"]] == [s.name for s in SPECS]
    assert len({r.store_sha256 for r in results}) == 3
    assert MethodStore(learner, LearnerTeam.store_schema, path).digest() == results[-1].store_sha256
    recorded = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [e["store_sha256"] for e in recorded["episodes"]] == [r.store_sha256 for r in results]


_KILLABLE = """
import sys
sys.path.insert(0, {here!r})
from test_method_store import NAME, SPECS, LearnerTeam
from coteam.registry import register_method
from coteam_harness.cli import run_suite
register_method(NAME, LearnerTeam)
run_suite(SPECS, NAME, 2, {{"store": {store!r}}}, __import__("pathlib").Path({out!r}), seed=0, quiet=True)
"""


def test_a_run_killed_after_two_episodes_resumes_to_the_store_of_an_uninterrupted_run(learner, tmp_path):
    whole = tmp_path / "whole.sqlite"
    run_suite(SPECS, learner, 2, {"store": str(whole)}, tmp_path / "whole", seed=0, quiet=True)

    store, out = tmp_path / "killed.sqlite", tmp_path / "killed"
    code = _KILLABLE.format(here=str(HERE), store=str(store), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", code])
    journal = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 3:  # the meta line and two episodes
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    proc.wait(30)
    finished = len(journal.read_text().splitlines()) - 1
    assert proc.returncode == -signal.SIGKILL and finished == 2
    assert [r[0] for r in _rows(store)["episodes"]] == [s.name for s in SPECS[:2]]

    run_suite(SPECS, learner, 2, {"store": str(store)}, out, seed=0, quiet=True, resume=True)
    assert _rows(store) == _rows(whole)
    digest = MethodStore(learner, LearnerTeam.store_schema, store).digest()
    assert digest == MethodStore(learner, LearnerTeam.store_schema, whole).digest()


def test_a_resumed_run_refuses_a_store_that_changed_since(learner, tmp_path):
    path = tmp_path / "s.sqlite"
    run_suite(SPECS[:2], learner, 2, {"store": str(path)}, tmp_path / "run", seed=0, quiet=True)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM episodes")
    with pytest.raises(ValueError, match="does not hold what episode cwah-test/1 left in it"):
        run_suite(SPECS, learner, 2, {"store": str(path)}, tmp_path / "run", seed=0, quiet=True, resume=True)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"this is not a database at all" * 100, "is not a coteam store"),
        (b"", "is not a coteam store"),
        ("other", "belongs to method 'other', not 'learner'"),
        ("newer", "was written by a newer learner (store version 2, this one reads up to 1)"),
    ],
)
def test_a_bad_store_file_is_one_line_naming_it_and_nothing_is_overwritten(
    learner, tmp_path, capsys, content, expected
):
    path = tmp_path / "s.sqlite"
    if content == "other":
        MethodStore("other", StoreSchema(1, {"t": "x INTEGER"}), path).save()
    elif content == "newer":
        MethodStore(learner, StoreSchema(2, LearnerTeam.store_schema.tables), path).save()
    else:
        path.write_bytes(content)
    before = path.read_bytes()
    with pytest.raises(StoreError) as err:
        make_team(learner, {"store": str(path)})
    message = str(err.value)
    assert expected in message and str(path) in message and "\n" not in message
    assert "start with an empty store" in message
    argv = ["run", "--suite", "cwah-test", "--team", learner, "--episodes", "0", "--set", f"store={path}"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert path.read_bytes() == before and not (tmp_path / "run").exists()


def test_a_method_that_keeps_nothing_refuses_a_store():
    with pytest.raises(ValueError, match="rhp: switch store: this method keeps nothing across episodes"):
        make_team("rhp", {"store": "x.sqlite"})


SHARED = StoreSchema(
    1,
    {"log": "run TEXT, n INTEGER", "rules": "rule TEXT UNIQUE, kind TEXT, support INTEGER, failures INTEGER"},
    keyed={"rules": TableMerge(key=("rule",), counters=("support", "failures"))},
)


def _content(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as db:
        return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall()) for t in ("log", "rules")}


def test_two_runs_sharing_a_file_merge_instead_of_overwriting(tmp_path):
    path = tmp_path / "shared.sqlite"
    first = MethodStore("m", SHARED, path)  # an earlier run leaves one log row and one rule
    with first.db as db:
        db.execute("INSERT INTO log VALUES ('first', 0)")
        db.execute("INSERT INTO rules VALUES ('grab needs a free hand', 'ActionValidity', 1, 1)")
    first.save()
    a, b = MethodStore("m", SHARED, path), MethodStore("m", SHARED, path)  # both load the same content
    with a.db as db:
        db.execute("INSERT INTO log VALUES ('a', 1)")
        db.execute("UPDATE rules SET support = support + 2, kind = 'ObjectReachability'")
        db.execute("INSERT INTO rules VALUES ('same place twice', 'LoadBalance', 1, 0)")
    with b.db as db:
        db.execute("INSERT INTO log VALUES ('b', 1)")
        db.execute("INSERT INTO log VALUES ('b', 2)")
        db.execute("DELETE FROM log WHERE run = 'first'")
        db.execute("UPDATE rules SET support = support + 5, failures = failures + 1")
        db.execute("INSERT INTO rules VALUES ('same place twice', 'LoadBalance', 3, 1)")
    a.save()
    b.save()
    assert _content(path) == {
        "log": [("a", 1), ("b", 1), ("b", 2)],
        "rules": [
            ("grab needs a free hand", "ObjectReachability", 8, 2),  # support 1 + 2 + 5, failures 1 + 1; a's kind
            ("same place twice", "LoadBalance", 4, 1),  # added by both: counters add up
        ],
    }
    assert _content(path)["rules"] == sorted(b.db.execute("SELECT * FROM rules").fetchall())  # b now holds it all
    c = MethodStore("m", SHARED, path)
    with c.db as db:
        db.execute("DELETE FROM rules WHERE rule = 'same place twice'")
    c.save()
    assert [r[0] for r in _content(path)["rules"]] == ["grab needs a free hand"]


WRITER = """
import sys, time
from coteam.kit.store import MethodStore
from test_method_store import SHARED
path, run, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
store = MethodStore("m", SHARED, path)
while time.time() < start:
    time.sleep(0.005)
for i in range(25):
    with store.db as db:
        db.execute("INSERT INTO log VALUES (?, ?)", (run, i))
        db.execute("INSERT OR IGNORE INTO rules VALUES ('shared', 'LoadBalance', 0, 0)")
        db.execute("UPDATE rules SET support = support + 1 WHERE rule = 'shared'")
    store.save()
"""


def test_two_processes_saving_one_file_at_once_lose_nothing_and_leave_it_readable(tmp_path):
    path = tmp_path / "shared.sqlite"
    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), run, start], cwd=HERE) for run in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    content = _content(path)
    assert content["log"] == sorted((run, i) for run in ("a", "b") for i in range(25))
    assert content["rules"] == [("shared", "LoadBalance", 50, 0)]
    assert not path.with_name(path.name + ".partial").exists()
