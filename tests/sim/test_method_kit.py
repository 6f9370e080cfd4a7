"""The method kit: registry and typed configs, the team lifecycle, structured messages, the architecture doc's
30-line method, and the rule that a method is only its decision procedure and its prompts."""

from __future__ import annotations

import ast
import itertools
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from coteam.agent.messages import TeamStatus
from coteam.agent.reasoning import AgentBrain, Decision, EpisodeInfo
from coteam.domain.actions import HighLevelAction, Verb
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import Message
from coteam.kit import AgentReasoner, CentralisedTeam, Lettered, PerAgentTeam, RoleMethodConfig, match_option
from coteam.kit.policies import rule_based_choice
from coteam.kit.store import StoreSchema
from coteam.kit.team import TeamRound
from coteam.llm import Role
from coteam.registry import make_team, method_class, method_names, register_method, unregister_method
from coteam_harness.cli import run_suite
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.engine import Simulator
from coteam_sim.suites import get_suite

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


@pytest.fixture
def registered():
    names: list[str] = []

    def register(name: str, cls: type) -> str:
        register_method(name, cls)
        names.append(name)
        return name

    yield register
    for n in names:
        unregister_method(n)


# --- registry and configs ----------------------------------------------------------------------------------------
def test_every_method_comes_from_the_entry_point_group_and_the_core_imports_none():
    assert {"pce", "coela", "mhp", "rhp", "random", "oracle"} <= set(method_names())
    code = (
        "import sys, coteam.agent.reasoning, coteam.registry, coteam.kit; "
        "print(sorted(m for m in sys.modules if m.startswith(('coteam.methods.', 'coteam.teams.'))))"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for path in [*(ROOT / "src" / "coteam").glob("*.py"), *(ROOT / "src" / "coteam" / "kit").glob("*.py")]:
        imports = re.findall(r"^\s*(?:from|import) (coteam\.(?:methods|teams)\S*)", path.read_text(), re.M)
        assert not imports, f"{path.name} imports {imports}"
    explain = (ROOT / "src" / "coteam" / "explain.py").read_text()
    assert not re.search(r"rationale(\[|\.get\(|\.pop\()", explain)  # the method reads its own keys


@pytest.mark.parametrize("name", ["pce", "coela", "mhp", "rhp", "random", "oracle"])
def test_an_unknown_switch_is_a_one_line_error_naming_it_for_every_method(name):
    with pytest.raises(ValueError) as err:
        make_team(name, {"lamda": 1})
    message = str(err.value)
    assert message.startswith(f"{name}: unknown switch 'lamda'") and "\n" not in message
    assert "its switches are:" in message


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("pce", {"lambda": "abc"}, "pce: bad value 'abc' for switch 'lambda'"),
        ("pce", {"D": 0}, "switch 'D'"),
        ("pce", {"ablation": "no_brain"}, "'no_planner'"),
        ("mhp", {"iterations": "many"}, "switch 'iterations'"),
        ("coela", {"backend": "magic"}, "symbolic | llm"),
        ("coela", {"cache": "x.sqlite"}, "coela: switch(es) cache need backend=llm"),
        ("pce", {"K_action": True}, "switch 'K_action'"),
        ("pce", {"D": "3"}, "switch 'D'"),
        ("pce", {"lam": 2}, "unknown switch 'lam'"),
    ],
)
def test_an_ill_typed_switch_names_the_switch_and_what_it_accepts(name, params, expected):
    with pytest.raises(ValueError) as err:
        make_team(name, params)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_pce_lambda_is_a_switch_named_lambda():
    team = make_team("pce", {"lambda": 1.5, "D": 2})
    assert team.config.lam == 1.5 and team.config.D == 2
    assert "lambda" in method_class("pce").Config.switch_names()


def test_coteam_run_with_a_wrong_switch_fails_before_any_episode(tmp_path):
    for name in ("pce", "coela", "mhp"):
        out = tmp_path / name
        argv = [
            "-m",
            "coteam.cli",
            "run",
            "--suite",
            "cwah-test",
            "--team",
            name,
            "--set",
            "lamda=1",
            "--out",
            str(out),
        ]
        proc = subprocess.run([PY, *argv], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "unknown switch 'lamda'" in lines[0]
        assert not out.exists()  # nothing ran


def test_bench_rejects_a_switch_no_method_has(tmp_path):
    from coteam.cli import main

    argv = ["bench", "--suite", "cwah-test", "--methods", "rhp,mhp", "--set", "lambda=2", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert not any(tmp_path.iterdir())


# --- lifecycle -----------------------------------------------------------------------------------------------
class _CountingAgent(AgentReasoner):
    def decide(self, ctx):
        option, _ = rule_based_choice(ctx)
        return Decision(option.action)


class _CountingTeam(PerAgentTeam):
    Agent = _CountingAgent

    def start_episode(self, info):
        super().start_episode(info)
        self.outcomes = getattr(self, "outcomes", [])

    def learn(self, outcome):
        self.outcomes.append(outcome)


def test_a_team_is_reset_not_rebuilt_between_episodes(registered, tmp_path):
    name = registered("counting", _CountingTeam)
    built: list[object] = []
    original = _CountingTeam.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    _CountingTeam.__init__ = counting_init  # type: ignore[method-assign]
    try:
        specs = get_suite("cwah-test").episodes()[:2]
        results = run_suite(specs, name, 2, {}, tmp_path, seed=0, quiet=True)
    finally:
        _CountingTeam.__init__ = original  # type: ignore[method-assign]
    assert len(built) == 1
    team = built[0]
    assert team.episodes == 2 and team.store is None
    assert [o.episode for o in team.outcomes] == [s.name for s in specs]
    assert [o.steps for o in team.outcomes] == [r.steps for r in results]


def test_one_llm_backend_serves_every_agent_and_episode_of_a_run(monkeypatch):
    from coteam.methods.pce.scripted import scripted_pce_model
    from coteam_testkit.llm_server import LoopbackOpenAIServer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LoopbackOpenAIServer(scripted_pce_model) as server:
        team = make_team("pce", {"backend": "llm", "base_url": server.base_url, "max_retries": 0})
        backend = team.roles.backend
        assert backend.name == "llm"
        calls = 0
        for spec in get_suite("cwah-test").episodes()[:2]:
            calls += run_episode(spec.build(), team, n_agents=2).llm_calls
            assert team.roles.backend is backend
            assert all(agent.roles.backend is backend for agent in team.agents.values())
        assert backend.ledger.calls == calls == len(server.requests) > 0  # one client and ledger for the run


class _PooledCentralTeam(CentralisedTeam):
    """One planner for the whole team under partial observability: each robot waiting for an action takes the
    nearest useful one that no other robot is doing or was given in this round."""

    def start_episode(self, info):
        super().start_episode(info)
        self.rounds: list[TeamRound] = []

    def plan_round(self, round):
        self.rounds.append(round)
        taken = {a.target for a in round.running.values()}
        decisions = {}
        for agent, ctx in round.contexts.items():
            option, rule = rule_based_choice(ctx)
            free = [o for o in ctx.options if not o.action.is_message and o.action.target not in taken]
            if option.action.target in taken and free:
                option = min(free, key=lambda o: (o.my_distance, o.text))
            taken.add(option.action.target)
            decisions[agent] = Decision(option.action, {"method": "pooled", "rule": rule})
        return decisions


def test_a_centralised_team_decides_for_every_waiting_robot_from_the_union_of_their_observations(registered):
    name = registered("pooled", _PooledCentralTeam)
    team = make_team(name)
    assert not team.full_observability and team.centralised
    result = run_episode(get_suite("cwah-test").episodes()[0].build(), team, n_agents=2)
    assert result.success
    first = team.rounds[0]
    assert list(first.contexts) == ["alice", "bob"] and not first.running  # both robots, in one round
    assert len(team.rounds) < result.decisions  # the robot asking second in a round took the action planned then
    alice, bob = (team.memories[a] for a in ("alice", "bob"))
    assert alice.objects.keys() == bob.objects.keys()  # every robot holds what any of them saw
    assert any(r.running for r in team.rounds)  # busy robots' actions are known to the planner


def test_a_robot_that_leaves_a_centralised_team_is_planned_without_until_it_joins_again(registered):
    from coteam.agent.reasoning import AgentBrain, EpisodeInfo
    from coteam.domain.navigation import NavGrid

    team = make_team(registered("pooled", _PooledCentralTeam))
    scene = get_suite("cwah-test").episodes()[0].build()
    info = EpisodeInfo.for_scene(scene, ("alice", "bob"), 0)
    team.reset(info)
    nav = NavGrid(info.floorplan)
    alice, bob = (AgentBrain(a, info, team, nav) for a in info.agents)
    assert not alice.allow_messages, "one planner for the team: its robots have nothing to tell each other"
    bob.decide()  # one round for both: alice takes the action planned for her then
    alice.decide()
    alice.memory.record_action(alice.memory.actions[-1].action, "done")
    alice.decide()
    assert team.rounds[-1].running.keys() == {"bob"}, "bob's action runs: alice's round knows it"
    team.leave("bob")
    alice.memory.record_action(alice.memory.actions[-1].action, "done")
    alice.decide()
    assert team.rounds[-1].memories.keys() == team.rounds[-1].contexts.keys() == {"alice"}
    assert not team.rounds[-1].running, "the planner no longer counts on bob's action"
    team.join("bob", bob.memory)
    alice.memory.record_action(alice.memory.actions[-1].action, "done")
    alice.decide()
    assert team.rounds[-1].memories.keys() == {"alice", "bob"}


class _Assignment(BaseModel):
    assign: dict[str, str] = Field(description="robot -> the letter of its action")


def _rules_assign(ctx):
    """The symbolic answer: each waiting robot's rule-policy choice, as its letter."""
    out = {}
    for agent, c in ctx.data.contexts.items():
        option, _ = rule_based_choice(c)
        out[agent] = next(
            k for k, t in Lettered.physical(c.options, benchmark=c.memory.benchmark).items() if t == option.text
        )
    return _Assignment(assign=out)


def _check_assign(answer, ctx):
    for agent, c in ctx.data.contexts.items():
        match_option(answer.assign.get(agent, ""), Lettered.physical(c.options, benchmark=c.memory.benchmark))


_ASSIGN = Role("joint.assign", "joint_assign", _Assignment, _rules_assign, _check_assign)


class _JointRoleTeam(CentralisedTeam):
    """One role call per round assigns every waiting robot its action (a centralised method with roles)."""

    Config = RoleMethodConfig
    folder: Path

    @classmethod
    def prompt_folder(cls):
        return cls.folder

    def plan_round(self, round):
        session = self.session(round)
        answer = session.ask(_ASSIGN, round).value
        decisions = {}
        for agent, ctx in round.contexts.items():
            lettered = Lettered.physical(ctx.options, benchmark=ctx.memory.benchmark)
            action = lettered.action(match_option(answer.assign[agent], lettered)[0])
            decisions[agent] = Decision(action, {"method": "joint"})
        decisions[round.asking] = session.decision(decisions[round.asking].action, {"method": "joint"})
        return decisions


def _joint_model(request):
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    robots = re.findall(r"^(\w+): waiting for an action$", user, re.M)
    return json.dumps({"assign": dict.fromkeys(robots, "A")})


def test_a_centralised_role_method_asks_once_per_round_with_the_teams_slots(registered, tmp_path, monkeypatch):
    from coteam_testkit.llm_server import LoopbackOpenAIServer

    (tmp_path / "joint_assign.md").write_text(
        "---system---\nAssign each robot waiting for an action one of its actions. Reply with JSON.\n---user---\n"
        "{{goal}}\n{{progress}}\nRobots:\n{{robots}}\nLast actions:\n{{actions}}\nOptions:\n{{available}}\n"
    )
    monkeypatch.setattr(_JointRoleTeam, "folder", tmp_path, raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    name = registered("joint", _JointRoleTeam)
    scene = get_suite("cwah-test").episodes()[0].build()
    symbolic = run_episode(scene, make_team(name), n_agents=2)
    assert symbolic.success and symbolic.llm_calls == 0
    with LoopbackOpenAIServer(_joint_model) as server:
        team = make_team(name, {"backend": "llm", "base_url": server.base_url, "max_retries": 0})
        llm = run_episode(scene, team, n_agents=2)
        first = server.requests[0]["messages"][-1]["content"]
    assert "alice: waiting for an action" in first and "bob: waiting for an action" in first  # one call, both
    assert llm.llm_calls == len(server.requests) < llm.decisions and llm.tokens > 0


# --- messages --------------------------------------------------------------------------------------------------
class _Count(BaseModel):
    n: int = Field(le=3)


class _ForgingAgent(AgentReasoner):
    """Sends one message whose payload the receiver must reject (n > 3, built without validation)."""

    sent = False

    def decide(self, ctx):
        if not self.sent and any(o.action.is_message for o in ctx.options):
            self.sent = True
            return Decision(HighLevelAction(Verb.SEND_MESSAGE, text="count: 5"), payload=_Count.model_construct(n=5))
        option, _ = rule_based_choice(ctx)
        return Decision(option.action)


class _ForgingTeam(PerAgentTeam):
    Agent = _ForgingAgent
    payload_types = (_Count,)

    def start_episode(self, info):
        super().start_episode(info)
        self.received: list[Message] = []

    def on_message(self, agent, message):
        self.received.append(message)


def test_a_malformed_payload_is_dropped_and_counted_and_its_text_delivered(registered, tmp_path):
    name = registered("forging", _ForgingTeam)
    team = make_team(name)
    result = run_episode(get_suite("cwah-test").episodes()[0].build(), team, n_agents=2, trace_path=tmp_path / "t.json")
    assert result.messages == 2 and result.payloads_dropped == 2
    assert {m.text for m in team.received} == {"count: 5"} and all(m.payload is None for m in team.received)
    sent = load_trace(tmp_path / "t.json")["messages"]
    assert all(json.loads(m["payload"]) == {"n": 5} for m in sent)


def _pce_pair() -> tuple[Simulator, AgentBrain, AgentBrain]:
    """A two-robot pce team at the start of cwah-test episode 0: the simulator and both brains."""
    scene = get_suite("cwah-test").episodes()[0].build()
    team = make_team("pce")
    info = EpisodeInfo.for_scene(scene, ("alice", "bob"), 0)
    team.reset(info)
    sim = Simulator(scene, info.agents)
    return sim, *(AgentBrain(a, info, team, NavGrid(scene.floorplan)) for a in info.agents)


@pytest.mark.parametrize("raw", ["{not json", '["a list"]', '{"kind": "status"}', "x" * 9000, b"\xff\xfe"])
def test_the_brain_drops_a_bad_payload_with_a_warning_and_keeps_the_text(raw, caplog):
    sim, alice, _ = _pce_pair()
    with caplog.at_level("WARNING", logger="coteam.agent.reasoning"):
        alice.observe(replace(sim.observe("alice"), messages=(Message("bob", "hello", 0, raw),)))
    assert alice.payloads_dropped == 1 and "payload of bob's message (step 0) dropped" in caplog.text
    assert alice.memory.messages[-1].text == "hello" and alice.memory.messages[-1].payload is None


@pytest.mark.parametrize("raw", [None, "", b"", "{}", {}])
def test_no_payload_is_not_a_bad_payload(raw):
    sim, alice, _ = _pce_pair()
    alice.observe(replace(sim.observe("alice"), messages=(Message("bob", "hello", 0, raw),)))
    assert alice.payloads_dropped == 0 and alice.memory.messages[-1].payload is None


def test_a_status_that_speaks_for_another_robot_is_dropped():
    sim, alice, bob = _pce_pair()
    bob.observe(sim.observe("bob"))
    forged = TeamStatus.of(bob.memory).model_dump_json()
    alice.observe(replace(sim.observe("alice"), messages=(Message("carol", "hi", 0, forged),)))
    assert alice.payloads_dropped == 1 and alice.memory.messages[-1].payload is None


def test_a_status_payload_is_validated_into_the_typed_report():
    sim, alice, bob = _pce_pair()
    bob.observe(sim.observe("bob"))
    status = TeamStatus.of(bob.memory)
    alice.observe(replace(sim.observe("alice"), messages=(Message("bob", status.text(), 0, status.model_dump_json()),)))
    assert alice.memory.messages[-1].payload == status and alice.payloads_dropped == 0


# --- the doc's example, and no copies between methods -------------------------------------------------------------
def test_the_architecture_docs_30_line_method_runs(tmp_path):
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"### A method in 30 lines\n.*?```python\n(.*?)```", doc, re.S)
    assert block is not None
    code = block.group(1)
    assert len([line for line in code.splitlines() if line.strip()]) <= 32
    namespace: dict = {"__name__": "greedy_example"}
    try:
        exec(compile(code, "architecture.md", "exec"), namespace)
        result = run_episode(get_suite("cwah-test").episodes()[0].build(), make_team("greedy"), n_agents=2)
        quiet = run_episode(get_suite("cwah-test").episodes()[0].build(), make_team("greedy", {"report": False}))
    finally:
        unregister_method("greedy")
    assert result.success and result.messages > 0 and quiet.messages == 0


def _picker_package(root: Path) -> Path:
    """The architecture doc's 40-line role method and its two prompts, written as the package ``picker``."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("### A role method in 40 lines", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    prompts = re.findall(r"`picker/prompts/(\w+\.md)`:\n\n```text\n(.*?)```", section, re.S)
    assert code is not None and len(prompts) == 2
    assert len([line for line in code.group(1).splitlines() if line.strip()]) <= 42
    (root / "picker" / "prompts").mkdir(parents=True)
    (root / "picker" / "__init__.py").write_text(code.group(1))
    for name, text in prompts:
        (root / "picker" / "prompts" / name).write_text(text)
    return root


def _picker_model(request: dict) -> str:
    """A model that reports in JSON and picks a put, else a grab, else a container to check, else the first
    option; its first answer names no option (a repair round follows)."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "Actions:" not in user:
        return json.dumps({"message": "I found something for the task."})
    if not _picker_model.answered:
        _picker_model.answered = True
        return "the one with the apple"
    lines = re.findall(r"^([A-Z]+)\. (.*)$", user, re.M)
    for verb in ("[goput]", "[gograb]", "[gocheck]"):
        for key, text in lines:
            if text.startswith(verb):
                return key
    return lines[0][0]


def test_the_architecture_docs_role_method_runs_on_both_backends(tmp_path, monkeypatch):
    from coteam_testkit.llm_server import LoopbackOpenAIServer

    monkeypatch.syspath_prepend(str(_picker_package(tmp_path)))
    monkeypatch.delitem(sys.modules, "picker", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    try:
        __import__("picker")
        symbolic = run_episode(scene, make_team("picker"), n_agents=2, trace_path=tmp_path / "t.json")
        silent = run_episode(scene, make_team("picker", {"report": False}), n_agents=2)
        _picker_model.answered = False
        with LoopbackOpenAIServer(_picker_model) as server:
            team = make_team("picker", {"backend": "llm", "base_url": server.base_url, "max_retries": 0})
            llm = run_episode(scene, team, n_agents=2)
            sent = sum(u["total_tokens"] for u in server.usages)
    finally:
        unregister_method("picker")
    assert symbolic.success and symbolic.messages > 0 and symbolic.llm_calls == 0
    assert silent.steps == run_episode(scene, "rhp", n_agents=2).steps  # symbolic, silent: the rule policy
    decision = load_trace(tmp_path / "t.json")["decisions"][0]["rationale"]
    assert decision["method"] == "picker" and decision["action"] and "picker.choose" in decision["roles"]
    assert llm.success and llm.llm_calls == len(server.requests) > 0 and llm.tokens == sent
    assert llm.messages > 0 and llm.llm_fallbacks == 0  # the unmatched answer was repaired


def _code_lines(package: Path) -> list[str]:
    """A package's code lines, whitespace folded, without blanks, comments, imports and docstrings."""
    out = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        skipped = {
            n
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Import | ast.ImportFrom)
            or (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            )
            for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
        }
        for n, line in enumerate(text.splitlines(), 1):
            folded = " ".join(line.split())
            if n not in skipped and len(folded) > 3 and not folded.startswith("#"):
                out.append(folded)
    return out


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def test_no_two_methods_share_code():
    """No run of 6 identical code lines stands in two methods: what they share comes from the kit (the
    ``duplicates`` tool's check, kept without the tool)."""
    methods = ROOT / "src" / "coteam" / "methods"
    packages = sorted(p for p in methods.iterdir() if (p / "__init__.py").exists())
    assert {"pce", "coela", "cobel"} <= {p.name for p in packages}
    for a, b in itertools.combinations(packages, 2):
        first, second = _code_lines(a), _code_lines(b)
        runs = {tuple(first[i : i + 6]) for i in range(len(first) - 5)}
        shared = [second[i : i + 6] for i in range(len(second) - 5) if tuple(second[i : i + 6]) in runs]
        assert not shared, f"{a.name} and {b.name} share: {shared[0]}"
        for one, other in ((a, b), (b, a)):  # nor import one another
            assert f"coteam.methods.{other.name}" not in "\n".join(p.read_text() for p in one.rglob("*.py"))


def test_coteam_methods_lists_every_switch_of_a_role_method(capsys, monkeypatch, registered):
    from coteam.cli import main

    monkeypatch.setenv("COLUMNS", "400")
    assert main(["methods"]) == 0
    text = capsys.readouterr().out
    for switch in ("structured_output", "decision_budget_s", "transcript, replay, cache", "full_observability"):
        assert switch in text, switch
    learning = type("LearningTeam", (PerAgentTeam,), {"store_schema": StoreSchema(1, {"seen": "item TEXT"})})
    registered("learning", learning)
    assert main(["methods"]) == 0
    with_learning = capsys.readouterr().out
    stores = re.compile(r"│ store +│")  # the switch's row: offered by the methods that learn only
    assert len(stores.findall(text)) + 1 == len(stores.findall(with_learning))
    assert main(["methods", "oracle"]) == 0
    one = capsys.readouterr().out
    assert "full_observability" in one and "pce" not in one
    monkeypatch.setenv("COLUMNS", "80")  # a terminal's width: a table a method, its switch names never broken
    assert main(["methods"]) == 0
    narrow = capsys.readouterr().out
    assert max(len(line) for line in narrow.splitlines()) <= 80
    for switch in ("structured_output", "decision_budget_s", "full_observability", "plan_length"):
        assert switch in narrow, switch


def test_coteam_methods_names_an_unknown_method_in_one_line(capsys):
    from coteam.cli import main

    assert main(["methods", "orakel"]) == 2
    assert "unknown method 'orakel'; known methods:" in capsys.readouterr().err
