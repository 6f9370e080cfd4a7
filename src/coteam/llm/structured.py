"""Structured (JSON, pydantic-validated) answers from a chat model, with one repair round.

:func:`extract_json` finds the JSON in a model's free-text answer:

* fenced code blocks (```` ```json ... ``` ```` or a bare ```` ``` ````) are searched first, in order, then the whole
  text;
* within a text, the first top-level JSON **object** is returned; when the text holds no object, the first
  JSON array (so ``"I pick [2] because ... {"action": 2}"`` yields the object, and ``"[1, 2]"`` the array);
* prose before and after the JSON is ignored;
* trailing commas before ``}`` or ``]`` (a frequent slip of models) are tolerated, and so are raw control
  characters such as a newline or tab inside a string (small models under a grammar write them); nothing else is
  repaired (no single quotes, comments, or Python literals);
* ``ValueError`` when no JSON object or array is found, saying why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from coteam.llm.base import ChatBackend, Completion, DeadlineExceeded, LLMError, StructuredOutputError

M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_OPENERS = re.compile(r"[{\[]")
_MAX_CANDIDATES = 500
_DECODER = json.JSONDecoder(strict=False)


def _strip_trailing_commas(text: str) -> tuple[str, list[int]]:
    """Remove commas that directly precede ``}``/``]`` outside strings; also return cleaned->original positions."""
    out: list[str] = []
    pos: list[int] = []
    in_string = escaped = False
    n = len(text)
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                continue
        out.append(ch)
        pos.append(i)
    pos.append(n)
    return "".join(out), pos


def _decode_at(text: str, idx: int) -> tuple[Any, int] | str:
    """The JSON value starting at ``idx`` and the index just past it, or the decoder's complaint."""
    try:
        return _DECODER.raw_decode(text, idx)
    except json.JSONDecodeError as exc:
        error = exc
    cleaned, positions = _strip_trailing_commas(text[idx:])
    try:
        value, end = _DECODER.raw_decode(cleaned)
    except json.JSONDecodeError:
        return f"{error.msg} (line {error.lineno} column {error.colno})"
    return value, idx + positions[end]


def _scan(text: str) -> tuple[Any, str | None]:
    """First top-level object (else first array) in ``text``; ``(None, complaint)`` when there is none."""
    first_array: list[Any] | None = None
    first_error: str | None = None
    i = 0
    for _ in range(_MAX_CANDIDATES):
        m = _OPENERS.search(text, i)
        if m is None:
            break
        result = _decode_at(text, m.start())
        if isinstance(result, str):
            if first_error is None:
                first_error = f"{m.group()!r} at character {m.start()} does not start valid JSON: {result}"
            i = m.start() + 1
            continue
        value, end = result
        if isinstance(value, dict):
            return value, None
        if first_array is None:
            first_array = value
        i = max(end, m.start() + 1)
    if first_array is not None:
        return first_array, None
    return None, first_error or "no JSON object or array found"


def extract_json(text: str) -> Any:
    """The first JSON object (else array) in a model's free text; see the module docstring for the rules."""
    if not isinstance(text, str):
        raise TypeError(f"extract_json needs a str, got {type(text).__name__}")
    complaint = None
    for fence in _FENCE.finditer(text):
        value, err = _scan(fence.group(1))
        if err is None:
            return value
        complaint = complaint or f"in the fenced block: {err}"
    value, err = _scan(text)
    if err is None:
        return value
    raise ValueError(complaint or err)


def _short(value: Any, limit: int = 80) -> str:
    try:
        s = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def describe_error(exc: Exception) -> str:
    """What was wrong with an answer, in words a model can act on."""
    if isinstance(exc, ValidationError):
        parts = []
        for e in exc.errors(include_url=False):
            loc = ".".join(str(x) for x in e.get("loc", ())) or "(top level)"
            got = "" if e.get("type") == "missing" else f" (got {_short(e.get('input'))})"
            parts.append(f"field `{loc}`: {e.get('msg', 'invalid')}{got}")
        return f"the JSON does not match the schema: {'; '.join(parts)}"
    return str(exc) or type(exc).__name__


def parse_structured(text: str, schema: type[M], validate: Callable[[M], None] | None = None) -> M:
    """extract_json + pydantic validation + the optional semantic check; ``ValueError`` on any failure."""
    value = schema.model_validate(extract_json(text))
    if validate is not None:
        validate(value)
    return value


def _schema_text(schema: type[BaseModel] | Mapping[str, Any]) -> str:
    data = schema if isinstance(schema, Mapping) else schema.model_json_schema()
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def repair_message(reason: str, schema: type[BaseModel] | Mapping[str, Any] | None) -> str:
    """The user message of the repair round: exactly what was wrong, and what is expected instead."""
    if schema is None:
        return f"That answer cannot be used: {reason}\nPlease answer again, fixing this."
    return (
        f"That answer cannot be used: {reason}\n"
        "Answer again with a single JSON object that fixes this and conforms to this JSON schema "
        f"(no text outside the JSON):\n{_schema_text(schema)}"
    )


def _ask(
    chat: ChatBackend,
    messages: list[dict[str, str]],
    parse: Callable[[str], Any],
    schema: type[BaseModel] | Mapping[str, Any] | None,
    params: dict[str, Any],
    deadline: float | None,
) -> tuple[Any, list[Completion]]:
    conversation = list(messages)
    if deadline is not None:
        params = {**params, "deadline": deadline}
    completions: list[Completion] = []
    reason = ""
    for round_ in range(2):
        try:
            completion = chat.complete(conversation, **params)
        except LLMError as exc:
            if not completions:
                raise
            kind = DeadlineExceeded if isinstance(exc, DeadlineExceeded) else LLMError
            raise kind(
                f"repair request failed: {exc}", completions=completions, failed_attempts=exc.failed_attempts
            ) from exc
        completions.append(completion)
        try:
            return parse(completion.text), completions
        except ValueError as exc:
            reason = describe_error(exc)
        if round_ == 0:
            conversation = [
                *conversation,
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": repair_message(reason, schema)},
            ]
    raise StructuredOutputError(reason, [c.text for c in completions], completions=completions)


def ask_structured(
    chat: ChatBackend,
    messages: list[dict[str, str]],
    schema: type[M],
    *,
    validate: Callable[[M], None] | None = None,
    request_schema: Mapping[str, Any] | None = None,
    name: str = "answer",
    deadline: float | None = None,
    **params: Any,
) -> tuple[M, list[Completion]]:
    """Ask for a JSON answer conforming to ``schema`` (and passing ``validate``, which raises ``ValueError``).

    ``request_schema`` is the JSON schema of this one question (``schema``'s, narrowed by
    :func:`coteam.llm.schema.narrow`); it is sent as the ``json_schema`` call parameter (``name`` names it) for a
    backend that can constrain the answer, and shown in the repair round. Without it, nothing is sent and the
    repair round shows ``schema``'s own JSON schema. ``deadline`` (``time.monotonic()``) goes to the backend,
    which raises :class:`~coteam.llm.base.DeadlineExceeded` once it passes.

    An invalid answer gets ONE repair round: the conversation is continued with the model's answer and a user
    message saying exactly what was wrong. Returns the validated model and every completion received; raises
    :class:`StructuredOutputError` (with ``.reason``, ``.raw`` and ``.completions``) when the repaired answer is
    still invalid, and :class:`LLMError` when the transport fails.
    """
    if request_schema is not None:
        params = {**params, "json_schema": {"name": name, "schema": dict(request_schema)}}
    shown = request_schema if request_schema is not None else schema
    return _ask(chat, messages, lambda text: parse_structured(text, schema, validate), shown, params, deadline)


def ask_text(
    chat: ChatBackend,
    messages: list[dict[str, str]],
    *,
    validate: Callable[[str], None] | None = None,
    deadline: float | None = None,
    **params: Any,
) -> tuple[str, list[Completion]]:
    """Free-text counterpart of :func:`ask_structured`: the answer is stripped text; ``validate`` may reject it."""

    def parse(text: str) -> str:
        text = text.strip()
        if not text:
            raise ValueError("the answer is empty")
        if validate is not None:
            validate(text)
        return text

    return _ask(chat, messages, parse, None, params, deadline)
