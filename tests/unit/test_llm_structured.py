"""coteam.llm.structured: JSON extraction, validation and the single repair round."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from coteam.llm import Completion, LLMConfig, LLMError, OpenAIChatBackend, StructuredOutputError, Usage
from coteam.llm.structured import ask_structured, ask_text, extract_json
from coteam_testkit.llm_server import LoopbackOpenAIServer


class Pick(BaseModel):
    action: int = Field(ge=0)
    reason: str = ""


AVAILABLE = (1, 2, 3)


def only_available(p: Pick) -> None:
    if p.action not in AVAILABLE:
        raise ValueError(f"action {p.action} is not available; choose one of {', '.join(map(str, AVAILABLE))}")


ASK = [{"role": "user", "content": "Pick an action."}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"action": 2}', {"action": 2}),
        ('Sure. I will go: {"action": 2, "reason": "closest"} -- done.', {"action": 2, "reason": "closest"}),
        ('Here:\n```json\n{"action": 3}\n```\nThanks', {"action": 3}),
        ('```\n{"action": 1}\n```', {"action": 1}),
        ('Decoy {"action": 9} outside, ```json\n{"action": 4}\n``` in the fence', {"action": 4}),
        ('{"a": [1, 2,], "b": {"c": 1,},}', {"a": [1, 2], "b": {"c": 1}}),  # trailing commas tolerated
        ('{"text": "a, ]} b,}"}', {"text": "a, ]} b,}"}),  # commas/brackets inside strings untouched
        ('Option [2] looks best: {"action": 2}', {"action": 2}),  # an object beats an earlier array
        ("[1, 2, 3] are fine", [1, 2, 3]),
        ('[{"action": 1}, {"action": 2}]', [{"action": 1}, {"action": 2}]),  # not the inner object
        ('I like {curly} words, then {"action": 5}', {"action": 5}),
        ('{"nested": {"deep": [1, {"x": "}"}]}}', {"nested": {"deep": [1, {"x": "}"}]}}),
        ('{"s": "caf\\u00e9 ünï"}', {"s": "café ünï"}),
        ('{"reasoning": "first\nsecond\tthird", "answer": "B"}', {"reasoning": "first\nsecond\tthird", "answer": "B"}),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "{not json}", "{'single': 'quotes'}", '```json\n{"a": \n```'])
def test_extract_json_raises_value_error(text):
    with pytest.raises(ValueError):
        extract_json(text)


def test_extract_json_says_why():
    with pytest.raises(ValueError, match="no JSON object or array"):
        extract_json("nothing")
    with pytest.raises(ValueError, match="does not start valid JSON"):
        extract_json("{'action': 1}")


def chat(server: LoopbackOpenAIServer) -> OpenAIChatBackend:
    return OpenAIChatBackend(LLMConfig("loopback-model", server.base_url, "k", backoff_s=0.001))


def test_valid_answer_needs_one_call():
    with LoopbackOpenAIServer(['Going with ```json\n{"action": 2, "reason": "near"}\n```']) as server:
        value, completions = ask_structured(chat(server), ASK, Pick, validate=only_available)
        assert value == Pick(action=2, reason="near")
        assert len(completions) == 1 and len(server.requests) == 1


def test_semantic_error_gets_a_repair_round_that_states_it():
    replies = ['```json\n{"action": 7}\n```', '{"action": 2}']
    with LoopbackOpenAIServer(replies) as server:
        value, completions = ask_structured(chat(server), ASK, Pick, validate=only_available)
        assert value == Pick(action=2)
        assert [c.text for c in completions] == replies
        first, repair = server.requests
        assert first["messages"] == ASK
        msgs = repair["messages"]
        assert msgs[: len(ASK)] == ASK and len(msgs) == len(ASK) + 2
        assert msgs[-2] == {"role": "assistant", "content": replies[0]}
        assert msgs[-1]["role"] == "user"
        assert "action 7 is not available; choose one of 1, 2, 3" in msgs[-1]["content"]


def test_schema_error_repair_names_the_field():
    with LoopbackOpenAIServer(['{"act": 1}', '{"action": -4}', '{"action": 1}']) as server:
        with pytest.raises(StructuredOutputError) as info:
            ask_structured(chat(server), ASK, Pick)
        repair = server.requests[1]["messages"][-1]["content"]
        assert "`action`" in repair and "Field required" in repair and '"properties"' in repair
        err = info.value
        assert err.raw == ['{"act": 1}', '{"action": -4}']
        assert "`action`" in err.reason and "greater than or equal to 0" in err.reason and "-4" in err.reason
        assert len(err.completions) == 2 and isinstance(err, LLMError)
        assert len(server.requests) == 2  # exactly one repair round


def test_no_json_at_all_is_reported_and_repaired():
    with LoopbackOpenAIServer(["I would rather walk around.", '{"action": 3}']) as server:
        value, completions = ask_structured(chat(server), ASK, Pick)
        assert value.action == 3 and len(completions) == 2
        assert "no JSON object or array found" in server.requests[1]["messages"][-1]["content"]


class FakeChat:
    """A ChatBackend double: scripted replies, then a transport failure."""

    model = "fake"

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.seen: list[list[dict[str, str]]] = []

    def complete(self, messages, **params):
        self.seen.append(messages)
        if not self.replies:
            raise LLMError("transport down")
        return Completion(self.replies.pop(0), Usage(10, 2), self.model)


def test_transport_failure_during_repair_keeps_the_first_completion():
    with pytest.raises(LLMError) as info:
        ask_structured(FakeChat(["garbage"]), ASK, Pick)
    assert not isinstance(info.value, StructuredOutputError)
    assert "transport down" in str(info.value)
    assert [c.text for c in info.value.completions] == ["garbage"]


def test_ask_text_validates_and_repairs():
    def short(text: str) -> None:
        if len(text) > 10:
            raise ValueError(f"the message has {len(text)} characters; at most 10 are allowed")

    fake = FakeChat(["  this message is far too long  ", "  ok, go  "])
    text, completions = ask_text(fake, ASK, validate=short)
    assert text == "ok, go" and len(completions) == 2
    assert "28 characters; at most 10" in fake.seen[1][-1]["content"]
    with pytest.raises(StructuredOutputError, match="empty"):
        ask_text(FakeChat(["", "   "]), ASK)
