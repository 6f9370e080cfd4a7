"""The collaborative belief language (coteam.methods.cobel.belief_language): parser, printer, rules, rejection of bad
lines."""

from __future__ import annotations

import pytest

from coteam.domain.actions import ObjectRef
from coteam.methods.cobel.belief_language import (
    CWAH_RULES,
    TDWMAT_RULES,
    AgentRef,
    Attribute,
    Belief,
    BeliefError,
    EntityKind,
    Fact,
    Predicate,
    RuleSet,
    parse_belief,
    parse_beliefs,
    parse_rules,
)

APPLE, KITCHEN, FRIDGE, TABLE = (
    ObjectRef("apple", 52),
    ObjectRef("kitchen", 11),
    ObjectRef("fridge", 31),
    ObjectRef("coffeetable", 40),
)
KINDS = {
    APPLE: EntityKind.OBJECT,
    KITCHEN: EntityKind.ROOM,
    FRIDGE: EntityKind.CONTAINER,
    TABLE: EntityKind.SURFACE,
    AgentRef("alice"): EntityKind.AGENT,
    AgentRef("bob"): EntityKind.AGENT,
}

STATEMENTS = [
    Belief((), Fact(APPLE, Predicate.IN, KITCHEN)),
    Belief(("alice",), Fact(AgentRef("bob"), Predicate.HOLD, APPLE)),
    Belief(("alice", "bob"), Fact(KITCHEN, Attribute.EXPLORED, "part")),
    Belief(("bob",), Fact(FRIDGE, Attribute.STATE, "closed")),
    Belief(("alice", "bob"), Fact(APPLE, Predicate.ON, TABLE)),
    Belief(("bob",), Fact(AgentRef("alice"), Predicate.AT, KITCHEN)),
    Belief(("alice",), Fact(FRIDGE, Predicate.CONTAIN, APPLE)),
]


@pytest.mark.parametrize("belief", STATEMENTS, ids=str)
def test_printing_then_parsing_gives_the_same_belief(belief):
    assert parse_belief(str(belief)) == belief


def test_orders_and_the_texts_llms_write():
    first = parse_belief("Alice BELIEVE Bob BELIEVE <kitchen>(11) EXPLORED all")
    assert first.order == 1 and first.believers == ("alice", "bob") and first.fact.object == "all"
    assert parse_belief("alice believes <apple> ( 52 ) in <kitchen> (11).").order == 0
    assert parse_belief("- 2. <loaf_bread> (12849971) IN <kitchen> (2000)") == parse_belief(
        "<loaf_bread> (12849971) IN <kitchen> (2000)"
    )  # bullets and numbering go, names keep their underscores
    assert str(first) == "alice BELIEVE bob BELIEVE <kitchen> (11) EXPLORED all"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("alice BELIEVE bob BELIEVE carol BELIEVE <apple> (52) IN <kitchen> (11)", "nest at most 2"),
        ("<apple> (52) NEAR <kitchen> (11)", "unknown predicate"),
        ("<kitchen> (11) EXPLORED mostly", "EXPLORED takes one of none/part/all"),
        ("<apple> IN <kitchen> (11)", "unexpected text"),
        ("I think the apple is probably in the kitchen", "terms"),
        ("IN BELIEVE <apple> (52) IN <kitchen> (11)", "only an agent can believe"),
        ("<apple> (52) IN HOLD", "expected an entity after IN"),
        ("x" * 500, "longer than"),
        ("", "0 terms"),
    ],
)
def test_malformed_statements_get_a_one_line_reason(text, reason):
    with pytest.raises(BeliefError, match=reason) as info:
        parse_belief(text)
    assert "\n" not in str(info.value)


def test_a_garbled_answer_loses_only_its_bad_lines():
    answer = "\n".join(
        [
            "Zero order beliefs:",  # a heading, not a statement
            "alice BELIEVE <apple> (52) IN <kitchen> (11)",
            "alice BELIEVE <kitchen> (11) HOLD <apple> (52)",  # parses, but no rule lets a room hold
            "None",
            "alice BELIEVE <fridge> (31) STATE open",
            "alice BELIEVE <ghost> (999) IN <kitchen> (11)",  # an entity the agent does not know
        ]
    )
    parsed = parse_beliefs(answer, CWAH_RULES, KINDS.get)
    assert [str(b) for b in parsed.beliefs] == [
        "alice BELIEVE <apple> (52) IN <kitchen> (11)",
        "alice BELIEVE <fridge> (31) STATE open",
    ]
    assert len(parsed.rejected) == 2
    assert "no belief rule allows ?room HOLD ?object" in parsed.rejected[0]
    assert "unknown entity <ghost> (999)" in parsed.rejected[1]
    assert len(parse_beliefs(answer).beliefs) == 4  # without rules only the syntax is checked


def test_rule_sets_of_the_two_suites():
    tdw_text = TDWMAT_RULES.text()
    assert "?agent BELIEVE ?container CONTAIN ?object" in tdw_text
    assert "?agentA BELIEVE ?agentB BELIEVE ?room EXPLORED ?exploration_state" in tdw_text
    assert len(TDWMAT_RULES.zero_order) == len(TDWMAT_RULES.first_order) == 8
    on_table = parse_belief("alice BELIEVE bob BELIEVE <apple> (52) ON <coffeetable> (40)")
    assert CWAH_RULES.allows(on_table, KINDS.get)
    assert not TDWMAT_RULES.allows(on_table, KINDS.get)  # TDW-MAT has no surfaces to put things on


def test_negotiated_rules_are_parsed_with_their_prefixes_and_bad_lines_reported():
    rules, rejected = parse_rules(
        "?agent BELIEVE ?object IN ?room\n- ?agent BELIEVE ?agent AT ?room\n?agent BELIEVE ?object NEAR ?room",
        "?agentA BELIEVE ?agentB BELIEVE ?object IN ?room\n?agentA BELIEVE ?agentB BELIEVE ?room EXPLORED ?open_state",
    )
    assert [str(r) for r in rules.zero_order] == ["?object IN ?room", "?agent AT ?room"]
    assert [str(r) for r in rules.first_order] == ["?object IN ?room"]
    assert len(rejected) == 2 and "EXPLORED takes ?exploration_state" in rejected[1]
    zero_only = parse_belief("alice BELIEVE bob AT <kitchen> (11)")
    assert rules.allows(zero_only, KINDS.get)
    assert not rules.allows(Belief(("alice", "bob"), zero_only.fact), KINDS.get)
    with pytest.raises(BeliefError, match="at least one valid"):
        parse_rules("?agent BELIEVE ?object NEAR ?room", "?object IN ?room")
    assert RuleSet.symmetric(["?object IN ?room"]).zero_order == rules.first_order
