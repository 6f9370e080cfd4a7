"""JSON schemas for constrained answers: a role's pydantic schema narrowed to one question, and the
``response_format`` variants that OpenAI-compatible servers accept.

A role asks for an answer that validates against its pydantic model. When the options are known (the actions
available now, the leaves to score) its question narrows the model's JSON schema with :func:`narrow`: ``enum``
lists, exact array lengths, recursive trees. The chat backend sends the result as a structured-output request,
so a server that supports it can only generate answers of that shape (llama.cpp and vLLM turn the schema into
a grammar; OpenAI and Ollama enforce it too). The variants (:data:`ResponseFormatKind`):

* ``json_schema``: ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` — the OpenAI API's
  structured outputs, also accepted by vLLM, Ollama (>= 0.5) and llama.cpp's own ``llama-server``;
* ``json_object_schema``: ``{"type": "json_object", "schema": ...}`` — llama-cpp-python's server (and Anyscale);
* ``json_object``: ``{"type": "json_object"}`` — JSON mode without a schema (the older OpenAI API and servers
  that know no schemas): the answer is JSON, its shape is checked afterwards.

``strict`` is set when the schema meets OpenAI's strict-mode rules (every object closed, every property
required); :func:`strict_form` rewrites a schema into that form where it can.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

ResponseFormatKind = Literal["json_schema", "json_object_schema", "json_object"]
RESPONSE_FORMAT_KINDS: tuple[ResponseFormatKind, ...] = ("json_schema", "json_object_schema", "json_object")
_NAME = re.compile(r"[^A-Za-z0-9_-]")


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a pydantic model, with its ``$ref`` s inlined (servers' grammar converters differ in
    how they resolve references; an inlined schema works with all of them) and without pydantic's titles."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return inline(copy.deepcopy(defs[ref.removeprefix("#/$defs/")]))
            return {
                k: inline(v, k == "properties" and not in_properties)
                for k, v in node.items()
                if in_properties or k != "title"
            }
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def _at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema
    for part in path.split("."):
        if node.get("type") == "array":
            node = node["items"]
        props = node.get("properties")
        if not isinstance(props, dict) or part not in props:
            raise KeyError(f"the schema has no field {path!r} (stopped at {part!r})")
        node = props[part]
    return node


def narrow(
    schema: Mapping[str, Any],
    *,
    enums: Mapping[str, Sequence[Any]] | None = None,
    lengths: Mapping[str, int] | None = None,
    replace: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A copy of ``schema`` with fields narrowed for one question. Paths are dotted field names; a path walks
    through arrays into their items (``"scenarios.leaf"``).

    ``enums``: the field takes one of these values (a string field with an empty list is left free);
    ``lengths``: the array field has exactly this many items; ``replace``: the field's schema is replaced.
    """
    out = copy.deepcopy(dict(schema))
    for path, values in (enums or {}).items():
        if values:
            node = _at(out, path)
            for key in ("minLength", "maxLength", "pattern", "format"):
                node.pop(key, None)
            node["enum"] = list(dict.fromkeys(values))
    for path, n in (lengths or {}).items():
        node = _at(out, path)
        node["minItems"] = node["maxItems"] = n
    for path, sub in (replace or {}).items():
        node = _at(out, path)
        node.clear()
        node.update(copy.deepcopy(dict(sub)))
    return out


def regex_literal(text: str) -> str:
    """``text`` as a regular expression that matches it, only the special characters escaped (the grammar converters
    of llama.cpp and vLLM read a small regex dialect, so a ``pattern`` keeps to it)."""
    return re.sub(r"([\\\[\](){}.*+?^$|])", r"\\\1", text)


def strict_form(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` rewritten for OpenAI's strict mode (every object closed with all properties required, no
    defaults), or ``None`` when it has an open object (a free-form mapping) that strict mode cannot express."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        node = {k: walk(v) for k, v in node.items() if k not in ("default", "title")}
        if node.get("type") == "object":
            props = node.get("properties")
            if not props or node.get("additionalProperties") not in (None, False):
                raise _Open
            node["required"] = list(props)
            node["additionalProperties"] = False
        return node

    try:
        return walk(dict(schema))
    except _Open:
        return None


class _Open(Exception):
    pass


def response_format(kind: ResponseFormatKind, name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` request field of one variant (see the module docstring)."""
    if kind == "json_schema":
        strict = strict_form(schema)
        return {
            "type": "json_schema",
            "json_schema": {
                "name": _NAME.sub("_", name)[:64] or "answer",
                "schema": strict if strict is not None else dict(schema),
                "strict": strict is not None,
            },
        }
    if kind == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    if kind == "json_object":
        return {"type": "json_object"}
    raise ValueError(f"unknown response format {kind!r}; known: {', '.join(RESPONSE_FORMAT_KINDS)}")
