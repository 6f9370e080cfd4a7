"""Schema-constrained answers: a role's schema narrowed to one question, the response_format variants, and how the
chat backend finds the one a server accepts."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, Field

from coteam.domain.actions import MAX_MESSAGE_CHARS, HighLevelAction, Verb, format_action
from coteam.domain.world import Benchmark
from coteam.kit.answers import MessageAnswer
from coteam.kit.lettered import action_text_schema, letter_schema
from coteam.llm import LLMConfig, LLMError, OpenAIChatBackend, RoleContext, ask_structured
from coteam.llm.schema import model_schema, narrow, response_format, strict_form
from coteam.methods.pce.scripted import scripted_pce_model
from coteam_harness.runner import run_episode
from coteam_sim.suites import get_suite
from coteam_testkit.llm_server import LoopbackOpenAIServer


class Inner(BaseModel):
    leaf: int = Field(ge=0)
    score: float = 1.0


class Answer(BaseModel):
    pick: str = Field(min_length=1)
    items: list[Inner] = Field(default_factory=list)


MSGS = [{"role": "user", "content": "Answer in JSON."}]
SCHEMA = {"name": "test.role", "schema": model_schema(Answer)}


# --- schemas ---------------------------------------------------------------------------------------------------
def test_model_schema_inlines_references():
    schema = model_schema(Answer)
    assert "$defs" not in schema and "$ref" not in str(schema)
    assert schema["properties"]["items"]["items"]["properties"]["leaf"]["minimum"] == 0


def test_narrow_sets_enums_lengths_and_replacements_without_touching_the_original():
    base = model_schema(Answer)
    narrowed = narrow(
        base,
        enums={"pick": ["a", "b", "a"], "items.leaf": [0, 1]},
        lengths={"items": 2},
        replace={"items.score": {"type": "integer", "enum": [1, 2]}},
    )
    assert narrowed["properties"]["pick"] == {"type": "string", "enum": ["a", "b"]}  # minLength dropped, deduplicated
    items = narrowed["properties"]["items"]
    assert items["minItems"] == items["maxItems"] == 2
    assert items["items"]["properties"]["leaf"]["enum"] == [0, 1]
    assert items["items"]["properties"]["score"] == {"type": "integer", "enum": [1, 2]}
    assert "enum" not in base["properties"]["pick"]
    with pytest.raises(KeyError, match="no field 'nope'"):
        narrow(base, enums={"nope": ["x"]})


def test_strict_form_closes_objects_and_refuses_free_mappings():
    strict = strict_form(model_schema(Answer))
    assert strict is not None
    assert strict["required"] == ["pick", "items"] and strict["additionalProperties"] is False
    inner = strict["properties"]["items"]["items"]
    assert inner["required"] == ["leaf", "score"] and "default" not in str(strict)
    assert strict_form({"type": "object", "properties": {"tree": {"type": "object"}}}) is None


def test_response_format_variants():
    schema = model_schema(Answer)
    js = response_format("json_schema", "pce.planner", schema)
    assert js["type"] == "json_schema" and js["json_schema"]["name"] == "pce_planner"
    assert js["json_schema"]["strict"] is True
    free = response_format("json_schema", "x", {"type": "object", "properties": {"t": {"type": "object"}}})
    assert free["json_schema"]["strict"] is False
    assert response_format("json_object_schema", "x", schema) == {"type": "json_object", "schema": schema}
    assert response_format("json_object", "x", schema) == {"type": "json_object"}
    with pytest.raises(ValueError, match="unknown response format"):
        response_format("grammar", "x", schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("benchmark", [Benchmark.CWAH, Benchmark.TDWMAT])
def test_an_action_answer_is_an_option_or_a_message_of_the_grammar(benchmark):
    schema = action_text_schema(["a", "b"], benchmark, messages=True)
    options, message = schema["anyOf"]
    assert options["enum"] == ["a", "b"]
    said = format_action(HighLevelAction(Verb.SEND_MESSAGE, text="the apple (3) is in the fridge"), benchmark)
    assert re.fullmatch(message["pattern"].strip("^$"), said)
    assert not re.fullmatch(message["pattern"].strip("^$"), said + "\nand more")
    assert action_text_schema(["a"], benchmark, messages=False) == {"type": "string", "enum": ["a"]}
    assert letter_schema({"A": "x", "B": "y"}, "DONE") == {"type": "string", "enum": ["A", "B", "DONE"]}


# --- what the backend sends ------------------------------------------------------------------------------------
def _chat(server: LoopbackOpenAIServer, mode: str = "auto") -> OpenAIChatBackend:
    config = LLMConfig("loopback-model", server.base_url, "k", backoff_s=0.001, structured_output=mode)  # type: ignore[arg-type]
    return OpenAIChatBackend(config)


def _kinds(server: LoopbackOpenAIServer) -> list[str | None]:
    out = []
    for r in server.requests:
        f = r.get("response_format")
        out.append(None if f is None else "json_object_schema" if "schema" in f else f["type"])
    return out


def test_auto_keeps_the_first_variant_the_server_accepts():
    with LoopbackOpenAIServer(['{"pick": "a"}'], formats={"json_object_schema"}) as server:
        chat = _chat(server)
        for _ in range(2):
            value, completions = ask_structured(chat, MSGS, Answer, request_schema=SCHEMA["schema"], name="r")
            assert value.pick == "a" and len(completions) == 1
        assert _kinds(server) == ["json_schema", "json_object_schema", "json_object_schema"]
        assert server.requests[-1]["response_format"]["schema"] == SCHEMA["schema"]
        assert chat.response_format_kind == "json_object_schema"
        assert "json_schema" not in server.requests[-1]  # the call parameter is not sent as such


def test_a_server_without_structured_output_gets_the_prompt_alone():
    with LoopbackOpenAIServer(['{"pick": "a"}'], formats=set()) as server:
        chat = _chat(server)
        ask_structured(chat, MSGS, Answer, request_schema=SCHEMA["schema"])
        ask_structured(chat, MSGS, Answer, request_schema=SCHEMA["schema"])
        assert _kinds(server) == ["json_schema", "json_object_schema", "json_object", None, None]
        assert chat.response_format_kind is None


def test_calls_without_a_schema_and_structured_output_off_send_no_format():
    with LoopbackOpenAIServer(['{"pick": "a"}']) as server:
        _chat(server).complete(MSGS)
        ask_structured(_chat(server, "off"), MSGS, Answer, request_schema=SCHEMA["schema"])
        assert _kinds(server) == [None, None]


def test_a_chosen_variant_the_server_rejects_is_a_clear_error():
    with LoopbackOpenAIServer(['{"pick": "a"}'], formats={"json_object"}) as server:
        with pytest.raises(LLMError, match="rejected: HTTP 400: response_format json_schema is not supported"):
            ask_structured(_chat(server, "json_schema"), MSGS, Answer, request_schema=SCHEMA["schema"])
        assert len(server.requests) == 1


def test_the_repair_round_shows_the_narrowed_schema():
    narrowed = narrow(model_schema(Answer), enums={"pick": ["only-this"]})
    with LoopbackOpenAIServer(['{"pick": "other"}', '{"pick": "only-this"}']) as server:

        def check(a: Answer) -> None:
            if a.pick != "only-this":
                raise ValueError("pick the listed value")

        value, _ = ask_structured(_chat(server, "off"), MSGS, Answer, validate=check, request_schema=narrowed)
        assert value.pick == "only-this"
        assert '"enum":["only-this"]' in server.requests[1]["messages"][-1]["content"]


def test_pce_roles_send_their_options_as_enums(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = get_suite("cwah-test").episodes()[0]
    with LoopbackOpenAIServer(scripted_pce_model) as server:
        params = {"backend": "llm", "base_url": server.base_url, "model": "loopback-model"}
        run_episode(spec.build(), "pce", params=params, trace_path=tmp_path / "t.json")
    by_role = {}
    for r in server.requests:
        f = r["response_format"]["json_schema"]
        by_role.setdefault(f["name"], f["schema"])
    assert set(by_role) >= {"pce_planner", "pce_composer", "pce_evaluator"}
    options, message = by_role["pce_planner"]["properties"]["candidate"]["anyOf"]
    assert options["enum"] and all(t.startswith("[") for t in options["enum"])
    assert message["pattern"].startswith("^\\[send_message\\] <")
    scores = by_role["pce_evaluator"]["properties"]["scenarios"]
    assert scores["minItems"] == scores["maxItems"] >= 1
    assert scores["items"]["properties"]["gain"]["enum"] == [1, 2, 3, 4, 5]
    leaf, hypothesis = by_role["pce_composer"]["properties"]["tree"]["anyOf"]  # the first decision's: same options
    assert leaf["properties"]["action"]["anyOf"][0]["enum"] == options["enum"]
    assert hypothesis["properties"]["True"]["anyOf"][0] == leaf  # one level down: the depth limit is spelled out


def test_every_message_role_caps_the_text_at_the_rules_limit():
    from coteam.methods.cobel.roles import MESSAGE
    from coteam.methods.coela.team import DRAFT
    from coteam.methods.pce.roles import COMMUNICATOR

    ctx = RoleContext("alice", {}, None)
    for role in (COMMUNICATOR, DRAFT, MESSAGE):
        schema = role.request_schema(ctx)
        assert schema is not None and schema["properties"]["message"]["maxLength"] == MAX_MESSAGE_CHARS
        assert role.validate is not None
        role.validate(MessageAnswer(message="x" * MAX_MESSAGE_CHARS), ctx)
        with pytest.raises(ValueError, match="at most 500"):
            role.validate(MessageAnswer(message="x" * (MAX_MESSAGE_CHARS + 1)), ctx)
