"""Lettered option lists: how a model's answer names one of the available actions.

Methods that show a model the available actions as ``A. ...``, ``B. ...`` read its answer with
:func:`match_option`, which accepts, in order: the exact action text, a letter, the action's text quoted in prose,
the name or id of an object that only one physical option mentions. A model that is asked with a schema
(:mod:`coteam.llm.schema`) is held to an option by :func:`action_text_schema` or :func:`letter_schema`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coteam.agent.options import ActionOption
from coteam.domain.actions import HighLevelAction, Verb, format_action
from coteam.domain.world import Benchmark
from coteam.llm.schema import regex_literal

_MARKUP = re.compile(r"[*_`\"']")
_BARE = re.compile(r"^\(?([A-Za-z]{1,2})\)?[.):,]?$")  # the whole answer is a letter: "b", "(C)", "C."
_LEADING = re.compile(r"^\(?([A-Z]{1,2})\)?[.):,]\s")  # "C. because ...", "B) go", "A, since ..."
_PHRASE = re.compile(
    r"(?i:\b(?:option|answer|choice|choose|pick|select|letter)\b(?:\s+(?:is|would be|will be))?\s*[:#=-]?\s*)"
    r"\(?([A-Z]{1,2})\)?\b"
)  # "Option D", "The answer is C", "I choose B", "My choice: A"
_ID = re.compile(r"\((\d+)\)")
_NAME = re.compile(r"<([^<>]+)>")
_MESSAGE_PREFIXES = ("[send_message]", "send a message:")


def letter(index: int) -> str:
    """A, B, ..., Z, AA, AB, ... for option ``index``."""
    return chr(ord("A") + index) if index < 26 else letter(index // 26 - 1) + chr(ord("A") + index % 26)


class Lettered(dict[str, str]):
    """Actions lettered A, B, ... for a prompt: letter -> the action's text; ``str()`` is one ``A. text`` line
    each. :meth:`physical` letters a decision's physical options (and any actions a method adds)."""

    def __init__(self, actions: Sequence[HighLevelAction], texts: Sequence[str]):
        super().__init__((letter(i), t) for i, t in enumerate(texts))
        self.actions = list(actions)

    @classmethod
    def physical(cls, options: Sequence[ActionOption], *extra: HighLevelAction, benchmark: Benchmark) -> Lettered:
        physical = [o for o in options if not o.action.is_message]
        return cls(
            [*(o.action for o in physical), *extra],
            [*(o.text for o in physical), *(format_action(a, benchmark) for a in extra)],
        )

    def __str__(self) -> str:
        return "\n".join(f"{k}. {t}" for k, t in self.items())

    def action(self, key: str) -> HighLevelAction:
        """The action lettered ``key``."""
        return self.actions[list(self).index(key)]


def _norm(text: str) -> str:
    return " ".join(re.sub(r"\s+-\s+my cost:.*$", "", text.strip().strip("\"'`.")).lower().split())


def _letter(answer: str, keys: Mapping[str, str]) -> str | None:
    plain = _MARKUP.sub("", answer).strip()
    for pattern in (_BARE, _LEADING, _PHRASE):
        m = pattern.search(plain)
        if m and m.group(1).upper() in keys:
            return m.group(1).upper()
    return None


def match_option(answer: str, lettered: Mapping[str, str]) -> tuple[str, str]:
    """The letter of the option ``answer`` means, and how it was matched: ``exact`` (the action's text), ``letter``,
    ``text`` (the action's text quoted in prose) or ``name`` (an object name or id only one physical option
    mentions). ``ValueError`` saying what to answer when it means none."""
    wanted = _norm(answer)
    for key, text in lettered.items():
        if _norm(text) == wanted:
            return key, "exact"
    key = _letter(answer, lettered)
    if key is not None:
        return key, "letter"
    quoted = [k for k, t in lettered.items() if _norm(t) and _norm(t) in wanted]
    if quoted:  # the longest quote
        return max(quoted, key=lambda k: len(lettered[k])), "text"
    physical = {k: t for k, t in lettered.items() if not t.lower().startswith(_MESSAGE_PREFIXES)}
    ids = set(_ID.findall(answer))
    by_id = [k for k, t in physical.items() if ids & set(_ID.findall(t))]
    if len(by_id) == 1:
        return by_id[0], "name"
    names = {n.strip().lower() for n in _NAME.findall(answer)}
    by_name = [k for k, t in physical.items() if names & {n.lower() for n in _NAME.findall(t)}]
    if len(by_name) == 1:
        return by_name[0], "name"
    raise ValueError(
        f"{answer.strip()[:80]!r} names none of the actions: answer with one letter from {', '.join(lettered)}"
    )


def action_text_schema(texts: Iterable[str], benchmark: Benchmark, *, messages: bool) -> dict[str, Any]:
    """The JSON schema of a string that is one of the physical actions ``texts`` or, with ``messages``, a message
    in ``benchmark``'s grammar with text of the model's own."""
    choices: dict[str, Any] = {"type": "string", "enum": list(dict.fromkeys(texts))}
    if not messages:
        return choices
    before, _, after = format_action(HighLevelAction(Verb.SEND_MESSAGE, text="\x00"), benchmark).partition("\x00")
    free = "[^<>\\n]+" if benchmark == Benchmark.CWAH else "[^\\n]+"
    message = {"type": "string", "pattern": f"^{regex_literal(before)}{free}{regex_literal(after)}$"}
    return {"anyOf": [choices, message]}


def letter_schema(lettered: Mapping[str, str], *extra: str) -> dict[str, Any]:
    """The JSON schema of an answer that is one letter of ``lettered`` (or one of the ``extra`` words)."""
    return {"type": "string", "enum": [*lettered, *extra]}
