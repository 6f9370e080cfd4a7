"""The high-level action grammar: parse / format round trips, tolerance, typed rejections, message limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coteam.domain.actions import (
    MAX_MESSAGE_CHARS,
    ActionError,
    ActionNotAvailableError,
    ActionSyntaxError,
    HighLevelAction,
    ObjectRef,
    UnknownObjectError,
    Verb,
    format_action,
    parse_action,
    truncate_message,
    validate_action,
)
from coteam.domain.world import Benchmark

CWAH = Benchmark.CWAH
TDW = Benchmark.TDWMAT

CWAH_EXAMPLES = {
    "[goexplore] <kitchen> (11)": HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 11)),
    "[gocheck] <fridge> (31)": HighLevelAction(Verb.CHECK, ObjectRef("fridge", 31)),
    "[gograb] <apple> (52)": HighLevelAction(Verb.GRAB, ObjectRef("apple", 52)),
    "[goput] <coffeetable> (40)": HighLevelAction(Verb.PUT, ObjectRef("coffeetable", 40)),
    "[send_message] <hello>": HighLevelAction(Verb.SEND_MESSAGE, text="hello"),
}
TDW_EXAMPLES = {
    "go to <kitchen> (11)": HighLevelAction(Verb.GOTO, ObjectRef("kitchen", 11)),
    "explore current room <kitchen> (11)": HighLevelAction(Verb.EXPLORE, ObjectRef("kitchen", 11)),
    "go grasp <apple> (52)": HighLevelAction(Verb.GRAB, ObjectRef("apple", 52)),
    "put <apple> (52) into the container <bowl> (60)": HighLevelAction(
        Verb.PUT_IN, ObjectRef("apple", 52), ObjectRef("bowl", 60)
    ),
    "transport objects I'm holding to the bed": HighLevelAction(Verb.TRANSPORT),
    "send a message: hi": HighLevelAction(Verb.SEND_MESSAGE, text="hi"),
}
ALL_EXAMPLES = [(s, a, CWAH) for s, a in CWAH_EXAMPLES.items()] + [(s, a, TDW) for s, a in TDW_EXAMPLES.items()]
CWAH_VERBS = (Verb.EXPLORE, Verb.CHECK, Verb.GRAB, Verb.PUT)
TDW_REF_VERBS = (Verb.GOTO, Verb.EXPLORE, Verb.GRAB)


# --- round trips -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "action", "benchmark"), ALL_EXAMPLES, ids=[s for s, _, _ in ALL_EXAMPLES])
def test_parse_gives_expected_action(text: str, action: HighLevelAction, benchmark: Benchmark) -> None:
    assert parse_action(text, benchmark) == action


@pytest.mark.parametrize(("text", "action", "benchmark"), ALL_EXAMPLES, ids=[s for s, _, _ in ALL_EXAMPLES])
def test_canonical_string_round_trip(text: str, action: HighLevelAction, benchmark: Benchmark) -> None:
    assert format_action(parse_action(text, benchmark), benchmark) == text
    assert parse_action(format_action(action, benchmark), benchmark) == action


def test_every_verb_of_each_dialect_is_covered() -> None:
    assert {a.verb for a in CWAH_EXAMPLES.values()} == {*CWAH_VERBS, Verb.SEND_MESSAGE}
    assert {a.verb for a in TDW_EXAMPLES.values()} == set(Verb) - {Verb.CHECK, Verb.PUT}


names = st.from_regex(r"[a-z][a-z0-9_]{0,10}( [a-z0-9_]{1,6}){0,2}", fullmatch=True)
ids = st.integers(min_value=-3, max_value=10**6)
refs = st.builds(ObjectRef, names, ids)
message_texts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="<>\r\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=60,
).map(str.strip)


@st.composite
def actions_and_dialect(draw: st.DrawFn) -> tuple[HighLevelAction, Benchmark]:
    benchmark = draw(st.sampled_from([CWAH, TDW]))
    kind = draw(st.sampled_from(["ref", "message", "put_in", "transport"]))
    if kind == "message":
        return HighLevelAction(Verb.SEND_MESSAGE, text=draw(message_texts)), benchmark
    if benchmark == CWAH or kind == "ref":
        verbs = CWAH_VERBS if benchmark == CWAH else TDW_REF_VERBS
        return HighLevelAction(draw(st.sampled_from(verbs)), draw(refs)), benchmark
    if kind == "put_in":
        return HighLevelAction(Verb.PUT_IN, draw(refs), draw(refs)), benchmark
    return HighLevelAction(Verb.TRANSPORT), benchmark


@settings(max_examples=150, deadline=None)
@given(actions_and_dialect())
def test_hypothesis_round_trip(case: tuple[HighLevelAction, Benchmark]) -> None:
    action, benchmark = case
    text = format_action(action, benchmark)
    assert parse_action(text, benchmark) == action
    assert format_action(parse_action(text, benchmark), benchmark) == text


@settings(max_examples=60, deadline=None)
@given(actions_and_dialect(), st.floats(min_value=0, max_value=500, allow_nan=False))
def test_cost_annotation_is_tolerated(case: tuple[HighLevelAction, Benchmark], cost: float) -> None:
    action, benchmark = case
    if action.is_message:
        return
    text = format_action(action, benchmark)
    assert parse_action(f"{text} - my cost: {cost:.1f} m", benchmark) == action
    assert parse_action(f"{text} - my cost: {cost:.1f} m, teammate cost: 2.0 m", benchmark) == action


@pytest.mark.parametrize(
    ("text", "benchmark", "expected"),
    [
        ("[gograb] <apple> (52) - my cost: 3.4 m", CWAH, CWAH_EXAMPLES["[gograb] <apple> (52)"]),
        (
            "[goexplore] <kitchen> (11) - my cost: 3.4 m, teammate cost: 7.0 m",
            CWAH,
            CWAH_EXAMPLES["[goexplore] <kitchen> (11)"],
        ),
        ("go grasp <apple> (52) - my cost: 3.4 m", TDW, TDW_EXAMPLES["go grasp <apple> (52)"]),
        (
            "transport objects I'm holding to the bed - my cost: 12.0 m",
            TDW,
            TDW_EXAMPLES["transport objects I'm holding to the bed"],
        ),
        ("  [gocheck] <fridge> (31)  ", CWAH, CWAH_EXAMPLES["[gocheck] <fridge> (31)"]),
        ("Go To <kitchen> (11)", TDW, TDW_EXAMPLES["go to <kitchen> (11)"]),
    ],
)
def test_tolerated_variants(text: str, benchmark: Benchmark, expected: HighLevelAction) -> None:
    assert parse_action(text, benchmark) == expected


def test_message_text_keeps_a_cost_like_suffix() -> None:
    # Messages are free text: the option annotation is stripped from actions only.
    msg = parse_action("send a message: go - my cost: 3.4 m", TDW)
    assert msg == HighLevelAction(Verb.SEND_MESSAGE, text="go - my cost: 3.4 m")
    msg = parse_action("[send_message] <go - my cost: 3.4 m>", CWAH)
    assert msg.text == "go - my cost: 3.4 m"


# --- rejections --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "benchmark"),
    [
        ("[gofly] <kitchen> (11)", CWAH),
        ("[walktowards] <kitchen> (11)", CWAH),
        ("[gograb] apple 52", CWAH),
        ("[gograb] <apple>", CWAH),
        ("[gograb] <apple> (x)", CWAH),
        ("[gograb] <apple> (52) <pear> (53)", CWAH),
        ("[gograb]", CWAH),
        ("gograb <apple> (52)", CWAH),
        ("go grasp <apple> (52)", CWAH),
        ("", CWAH),
        ("   ", TDW),
        ("fly to <kitchen> (11)", TDW),
        ("go to kitchen", TDW),
        ("go to <kitchen> (eleven)", TDW),
        ("[goexplore] <kitchen> (11)", TDW),
        ("put <apple> (52) into <bowl> (60)", TDW),
        ("put <apple> (52) into the container", TDW),
        ("transport objects to the kitchen", TDW),
        ("go grasp <apple> (52) and <pear> (53)", TDW),
    ],
)
def test_syntax_errors(text: str, benchmark: Benchmark) -> None:
    with pytest.raises(ActionSyntaxError):
        parse_action(text, benchmark)


@pytest.mark.parametrize("value", [None, 52, b"[gograb] <apple> (52)", ["[gograb] <apple> (52)"]])
def test_non_text_is_a_syntax_error(value: object) -> None:
    with pytest.raises(ActionSyntaxError):
        parse_action(value, CWAH)  # type: ignore[arg-type]


def test_error_hierarchy() -> None:
    for cls in (ActionSyntaxError, UnknownObjectError, ActionNotAvailableError):
        assert issubclass(cls, ActionError)
        assert issubclass(cls, ValueError)


@pytest.mark.parametrize(
    ("action", "benchmark"),
    [
        (HighLevelAction(Verb.GOTO, ObjectRef("kitchen", 11)), CWAH),
        (HighLevelAction(Verb.TRANSPORT), CWAH),
        (HighLevelAction(Verb.PUT_IN, ObjectRef("apple", 52), ObjectRef("bowl", 60)), CWAH),
        (HighLevelAction(Verb.GRAB), CWAH),
        (HighLevelAction(Verb.CHECK, ObjectRef("fridge", 31)), TDW),
        (HighLevelAction(Verb.PUT, ObjectRef("coffeetable", 40)), TDW),
        (HighLevelAction(Verb.GOTO), TDW),
        (HighLevelAction(Verb.PUT_IN, ObjectRef("apple", 52)), TDW),
    ],
)
def test_format_rejects_actions_without_a_form(action: HighLevelAction, benchmark: Benchmark) -> None:
    with pytest.raises(ActionSyntaxError):
        format_action(action, benchmark)


KNOWN = {11: "kitchen", 31: "fridge", 52: "apple", 60: "bowl", 40: "coffeetable"}


def test_validate_accepts_known_objects() -> None:
    for action in [*CWAH_EXAMPLES.values(), *TDW_EXAMPLES.values()]:
        assert validate_action(action, KNOWN) is action


@pytest.mark.parametrize(
    "text",
    ["[gograb] <apple> (99)", "[gograb] <pear> (52)", "[goexplore] <bedroom> (11)", "[gocheck] <Fridge> (31)"],
)
def test_validate_unknown_or_mismatched_ids(text: str) -> None:
    with pytest.raises(UnknownObjectError):
        validate_action(parse_action(text, CWAH), KNOWN)


def test_validate_checks_the_container_too() -> None:
    with pytest.raises(UnknownObjectError):
        validate_action(parse_action("put <apple> (52) into the container <bowl> (61)", TDW), KNOWN)
    with pytest.raises(UnknownObjectError):
        validate_action(parse_action("put <apple> (52) into the container <basket> (60)", TDW), KNOWN)


def test_validate_availability() -> None:
    grab = parse_action("[gograb] <apple> (52)", CWAH)
    explore = parse_action("[goexplore] <kitchen> (11)", CWAH)
    placeholder = HighLevelAction(Verb.SEND_MESSAGE, text="<message>")
    assert validate_action(grab, KNOWN, [grab, explore]) == grab
    with pytest.raises(ActionNotAvailableError):
        validate_action(grab, KNOWN, [explore])
    with pytest.raises(ActionNotAvailableError):
        validate_action(grab, KNOWN, [])
    # Messages match by verb only: any text is fine when messaging is offered at all.
    msg = HighLevelAction(Verb.SEND_MESSAGE, text="I have the apple")
    assert validate_action(msg, KNOWN, [explore, placeholder]) == msg
    with pytest.raises(ActionNotAvailableError):
        validate_action(msg, KNOWN, [explore, grab])
    # An unknown id is reported as such even when availability is checked as well.
    with pytest.raises(UnknownObjectError):
        validate_action(parse_action("[gograb] <apple> (99)", CWAH), KNOWN, [grab])


def test_validate_consumes_a_one_shot_iterable_of_options() -> None:
    grab = parse_action("[gograb] <apple> (52)", CWAH)
    assert validate_action(grab, KNOWN, iter([grab])) == grab


# --- messages ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 499, 500, 501, 1200])
def test_truncate_message(n: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(n))
    out = truncate_message(text)
    assert MAX_MESSAGE_CHARS == 500
    assert len(out) == min(n, 500)
    assert text.startswith(out)


def test_long_message_parses_untruncated_then_truncates() -> None:
    long = "x" * 800
    action = parse_action(f"send a message: {long}", TDW)
    assert action.text == long
    assert truncate_message(action.text) == "x" * 500
