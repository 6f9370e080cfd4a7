"""PCE: tree validation, system-side scoring, the symbolic decision loop, ablations, and the LLM path through a
real OpenAI client talking to the loopback server."""

from __future__ import annotations

import json

import pytest

from coteam.domain.actions import HighLevelAction, ObjectRef, Verb
from coteam.domain.world import Benchmark
from coteam.kit.explanation import tree_lines
from coteam.methods.pce import PceConfig
from coteam.methods.pce.reasoner import ABLATIONS
from coteam.methods.pce.scoring import (
    LeafScore,
    Weights,
    action_utilities,
    best_leaf,
    normalize,
    score_leaf,
)
from coteam.methods.pce.scripted import scripted_pce_model
from coteam.methods.pce.tree import Hypothesis, TreeError, depth, explained_tree, parse_tree, scenarios
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer

KNOWN = {2: "kitchen", 3: "bedroom", 24: "apple", 15: "dinnertable"}
AVAILABLE = [
    HighLevelAction(Verb.SEND_MESSAGE, text="<message>"),
    HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 2)),
    HighLevelAction(Verb.EXPLORE, ObjectRef("bedroom", 3)),
    HighLevelAction(Verb.GRAB, ObjectRef("apple", 24)),
]


def _parse(tree, max_depth=3, allow_messages=True):
    return parse_tree(
        tree,
        benchmark=Benchmark.CWAH,
        known_objects=KNOWN,
        available=AVAILABLE,
        max_depth=max_depth,
        allow_messages=allow_messages,
    )


def _leaf(text):
    return {"type": "action", "action": text}


def _hyp(text, yes, no):
    return {"type": "hypothesis", "text": text, "reason": "r", "True": yes, "False": no}


GOOD = _hyp(
    "<apple> (24) is still on the table",
    _leaf("[gograb] <apple> (24)"),
    _hyp("bob searched the kitchen", _leaf("[goexplore] <bedroom> (3)"), _leaf("[send_message] <where are you?>")),
)


def test_a_valid_tree_parses_with_leaves_in_depth_first_order():
    node = _parse(GOOD)
    assert isinstance(node, Hypothesis) and depth(node) == 2
    sc = scenarios(node)
    assert [s.index for s in sc] == [0, 1, 2]
    assert sc[0].leaf.action.verb == Verb.GRAB and sc[0].path == (("<apple> (24) is still on the table", True),)
    assert sc[2].leaf.action.is_message and sc[2].leaf.action.text == "where are you?"
    assert [p[1] for p in sc[2].path] == [False, False]


@pytest.mark.parametrize(
    ("tree", "problem"),
    [
        (_leaf("[gograb] <pear> (99)"), "not an available action"),
        (_leaf("[gograb] <banana> (24)"), "not an available action"),
        (_leaf("[goput] <dinnertable> (15)"), "not an available action"),
        (_hyp("x", _leaf("[gograb] <apple> (24)"), None), "expected an object"),
        ({"type": "hypothesis", "text": "x", "True": _leaf("[gograb] <apple> (24)")}, "needs both"),
        ({"type": "maybe"}, "'type' must be"),
    ],
)
def test_invalid_trees_are_rejected_with_the_exact_problem(tree, problem):
    with pytest.raises(TreeError, match=problem):
        _parse(tree)


def test_depth_and_message_limits():
    with pytest.raises(TreeError, match="at most 1"):
        _parse(GOOD, max_depth=1)
    with pytest.raises(TreeError, match="messages are not allowed"):
        _parse(GOOD, allow_messages=False)


def test_scoring_follows_the_formula():
    assert normalize(1) == 0.0 and normalize(5) == 1.0 and normalize(9) == 1.0
    w = Weights(alpha=1.0, beta=0.5, lam=2.0)
    move = score_leaf(LeafScore(0, likelihood=5, gain=3, cost_penalty=2), is_message=False, weights=w)
    assert move.expected_gain == pytest.approx(1.0 * 0.5)
    assert move.utility == pytest.approx(0.5 - 2.0 * 1.0 * 0.25)
    msg = score_leaf(LeafScore(1, likelihood=3, gain=5, cost_penalty=3), is_message=True, weights=w)
    assert msg.utility == pytest.approx(0.5 * 1.0 - 2.0 * 0.5 * 0.5)
    tie = score_leaf(LeafScore(2, likelihood=5, gain=3, cost_penalty=2), is_message=False, weights=w)
    assert best_leaf([tie, move], ["a", "b"]).leaf == 0  # equal utility: the leftmost leaf wins


def test_leaves_of_one_action_pool_their_expected_gain():
    """Scenarios are disjoint: an action right in two scenarios adds up their expected gains."""
    w = Weights()

    def leaf(i: int, likelihood: float, cost: float):
        return score_leaf(LeafScore(i, likelihood=likelihood, gain=5, cost_penalty=cost), is_message=False, weights=w)

    single = leaf(2, 3, 1)  # L=0.5, C=0: U=0.5
    spread = [leaf(0, 2.6, 3), leaf(1, 2.6, 3)]  # L=0.4 each, C=0.5: U=-0.1 each, together 0.3
    actions = ["check", "check", "explore"]
    assert action_utilities([*spread, single], actions) == {"check": pytest.approx(0.3), "explore": pytest.approx(0.5)}
    assert best_leaf([*spread, single], actions).leaf == 2
    lifted = [leaf(0, 3.4, 3), leaf(1, 3.4, 3)]  # L=0.6 each: together 1.2 - 0.5 = 0.7 > 0.5
    assert single.utility > max(s.utility for s in lifted)  # per leaf, the single leaf would have won
    assert best_leaf([*lifted, single], actions).leaf == 0
    with pytest.raises(ValueError, match="actions"):
        action_utilities([single], [])


def test_the_explained_tree_marks_the_choice():
    scores = [
        {"leaf": i, "likelihood": 0.5, "gain": 0.5, "cost_penalty": 0.1, "utility": u}
        for i, u in enumerate([0.2, 0.1, -0.3])
    ]
    text = "\n".join(tree_lines(explained_tree(GOOD, scores, chosen=0)))
    assert "? <apple> (24) is still on the table" in text
    assert "#0 [gograb] <apple> (24)" in text and "<== chosen" in text.splitlines()[1]


def test_config_switches_and_errors():
    cfg = PceConfig.parse_switches("pce", {"lambda": 1.5, "D": 2, "ablation": "no_evaluator"})
    assert cfg.lam == 1.5 and cfg.D == 2 and cfg.weights.lam == 1.5
    with pytest.raises(ValueError, match=r"pce: unknown switch 'lamda' \(did you mean 'lambda'\?\)"):
        PceConfig.parse_switches("pce", {"lamda": 1})
    with pytest.raises(ValueError, match=r"switch 'ablation'.*'no_planner'"):
        PceConfig.parse_switches("pce", {"ablation": "no_brain"})


def leaf_actions(tree: dict) -> list[str]:
    """Leaf action texts of a tree in JSON form, in scenario order (true branch first)."""
    if tree["type"] == "action":
        return [tree["action"]]
    return leaf_actions(tree["True"]) + leaf_actions(tree["False"])


@pytest.fixture(scope="module")
def cwah_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("pce") / "t.json"
    run_episode(get_suite("cwah-test").episodes()[0].build(), "pce", trace_path=path)
    return load_trace(path)


def test_symbolic_decisions_record_planner_tree_scores_and_choice(cwah_trace):
    decisions = [d for d in cwah_trace["decisions"] if d["rationale"].get("ablation") == "none"]
    assert decisions
    for d in decisions:
        r = d["rationale"]
        assert r["backend"] == "symbolic" and r["llm_fallbacks"] == 0
        if "announced" in r:  # the action announced by the previous decision: no roles asked
            assert d["action"] == r["announced"]
            continue
        assert {"planner", "tree", "scores", "chosen_leaf", "action"} <= set(r)
        texts = leaf_actions(r["tree"])
        best = max(r["action_utilities"].values())
        assert r["action_utilities"][texts[r["chosen_leaf"]]] == best
        assert texts.index(texts[r["chosen_leaf"]]) == r["chosen_leaf"]  # the leftmost leaf of that action
        if not d["action"].startswith("[send_message]"):
            assert d["action"] == r["action"]
        assert all(k in r["roles"] for k in ("pce.planner", "pce.composer", "pce.evaluator"))


@pytest.mark.parametrize("ablation", ABLATIONS[1:])
def test_every_ablation_runs_an_episode(ablation, tmp_path):
    path = tmp_path / "t.json"
    result = run_episode(
        get_suite("cwah-test").episodes()[6].build(), "pce", params={"ablation": ablation}, trace_path=path
    )
    assert result.transport_rate > 0
    rationales = [d["rationale"] for d in load_trace(path)["decisions"]]
    if ablation == "planner_only":
        assert all("tree" not in r and "scores" not in r for r in rationales)
    if ablation == "physical_only":
        assert result.messages == 0
    if ablation == "no_evaluator":
        assert all("scores" not in r for r in rationales)
    if ablation == "no_planner":
        assert all("planner" not in r for r in rationales)


# --- the LLM path ----------------------------------------------------------------------------------------
def test_llm_backend_uses_the_model_and_counts_exactly_what_the_server_reported(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    with LoopbackOpenAIServer(scripted_pce_model) as server:
        params = {"backend": "llm", "base_url": server.base_url, "model": "loopback-model", "max_retries": 0}
        result = run_episode(scene, "pce", params=params, trace_path=tmp_path / "t.json")
        sent = sum(u["total_tokens"] for u in server.usages)
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert result.success
    assert result.llm_calls == len(server.requests) > 0
    assert result.tokens == sent
    assert result.llm_fallbacks == 0
    assert any("Goal:" in p and "Available actions" in p and "What I know" in p for p in prompts)
    roles = load_trace(tmp_path / "t.json")["decisions"][0]["rationale"]["roles"]
    assert roles["pce.planner"]["source"] == "llm" and roles["pce.evaluator"]["source"] == "llm"


def test_a_model_that_talks_nonsense_still_finishes_the_episode(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    with LoopbackOpenAIServer(["I would rather write a poem about apples.", '{"tree": "nope"}']) as server:
        result = run_episode(scene, "pce", params={"backend": "llm", "base_url": server.base_url, "max_retries": 0})
        sent = sum(u["total_tokens"] for u in server.usages)
    assert result.transport_rate == 1.0
    assert result.llm_fallbacks > 0
    assert result.tokens == sent


def test_explain_prints_the_tree_with_scores_and_draws_it(cwah_trace, tmp_path, capsys):
    from coteam.cli import main

    path = tmp_path / "trace.json"
    path.write_text(json.dumps(cwah_trace))
    decision = next(d for d in cwah_trace["decisions"] if d["rationale"].get("tree"))
    png = tmp_path / "tree.png"
    argv = ["explain", str(path), "--agent", decision["agent"], "--step", str(decision["step"]), "--png", str(png)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"chose: {decision['action']}" in out and "<== chosen" in out and "U=" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["explain", str(path), "--agent", "nobody", "--step", "3"]) == 2


def test_the_symbolic_composer_expands_the_planners_proposal(tmp_path):
    """The Composer branches first on the assumptions the Planner's candidate rests on (where one changes the best
    action, a tree branches on it); without a Planner (`no_planner`) on the most uncertain facts, and the trees and
    decisions part (cwah seed 101, episode 0, a tuning episode)."""

    def branched_on(tree) -> set[str]:
        if not tree or tree.get("type") != "hypothesis":
            return set()
        return {tree["text"]} | branched_on(tree["True"]) | branched_on(tree["False"])

    scene = get_suite("cwah").episodes(seed=101, count=1)[0].build()
    trees = {}
    for ablation in ("none", "no_planner"):
        run_episode(scene, "pce", params={"ablation": ablation}, trace_path=tmp_path / f"{ablation}.json")
        decisions = load_trace(tmp_path / f"{ablation}.json")["decisions"]
        trees[ablation] = [d["rationale"].get("tree") for d in decisions]
        if ablation == "none":
            planned = [
                set(d["rationale"].get("planner", {}).get("assumptions", ())) & branched_on(d["rationale"].get("tree"))
                for d in decisions
            ]
    assert any(planned), "some tree branches on an assumption the Planner named"
    assert trees["none"] != trees["no_planner"]


def test_physical_only_shows_the_roles_no_message_among_the_available_actions(tmp_path, monkeypatch):
    """The ablation takes messages out of what the model reads, not only out of what it may choose."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    shown = {}
    for ablation in ("none", "physical_only"):
        with LoopbackOpenAIServer(scripted_pce_model) as server:
            params = {"backend": "llm", "base_url": server.base_url, "max_retries": 0, "ablation": ablation}
            run_episode(scene, "pce", params=params)
            prompts = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "user"]
        shown[ablation] = [p.split("Available actions", 1)[1] for p in prompts if "Available actions" in p]
    assert any("[send_message]" in p for p in shown["none"])
    assert shown["physical_only"] and not any("[send_message]" in p for p in shown["physical_only"])


@pytest.mark.parametrize(
    ("ablation", "left_out"),
    [("no_planner", "pce.planner"), ("no_composer", "pce.composer"), ("no_evaluator", "pce.evaluator")],
)
def test_an_llm_ablation_asks_the_model_nothing_of_the_module_it_takes_out(ablation, left_out, tmp_path, monkeypatch):
    """On the LLM path a module switched off is never asked, and what it would have said reaches no other prompt:
    without the Planner the Composer's prompt says there is none, instead of a candidate and its reasoning."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scene = get_suite("cwah-test").episodes()[0].build()
    with LoopbackOpenAIServer(scripted_pce_model) as server:
        params = {"backend": "llm", "base_url": server.base_url, "max_retries": 0, "ablation": ablation}
        run_episode(scene, "pce", params=params, trace_path=tmp_path / "t.json")
        prompts = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "user"]
    asked = {role for d in load_trace(tmp_path / "t.json")["decisions"] for role in d["rationale"].get("roles", {})}
    assert asked and left_out not in {role.split("#")[0] for role in asked}, asked
    if ablation == "no_planner":
        composer = [p for p in prompts if "(no planner in this configuration)" in p]
        assert composer, "the Composer is told there is no Planner"
