"""The Mind-Map agent's long-term memory: a typed, schema-bound map of the teammates' intentions, the cooperative
plan and the talk strategy, kept per robot across steps, and the key matching that holds a model's map to it.

Three components (any subset, for the paper's ablation over them):

* ``inferred_intentions`` -- per teammate, what it aims at and why I think so, and whether it *said* so (a stated
  intention is never taken for a done action);
* ``cooperative_strategy`` -- pending clarifications (information gaps), the long-term plan (who does what), the
  immediate focus (what I do now);
* ``communication_strategy`` -- a summary of the dialogue, a message draft, the reason to send it and the reason
  not to.

:func:`match_keys` repairs a model's JSON against the schema before it is validated: a key written with other
case, spaces or punctuation, or misspelt (close enough to one expected key and to no other), is renamed; a
missing key is filled from the previous map (or left empty); an extra key is dropped. Each change is one repair,
listed. What still does not validate is not repairable.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coteam.domain.validation import first_problem

COMPONENTS = ("inferred_intentions", "cooperative_strategy", "communication_strategy")
MAX_LINES = 8  # list fields (clarifications, plan steps)
MAX_TEXT = 300  # text fields; the message draft is held to the message limit by the rules
FUZZY_CUTOFF = 0.75  # how close a misspelt key must be to an expected one (difflib's ratio)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Intention(_Strict):
    aim: str = Field("", max_length=MAX_TEXT, description="what the teammate aims at or does now")
    why: str = Field("", max_length=MAX_TEXT, description="the evidence: what it said, where it was seen going")
    said: bool = Field(False, description="it said so: an intention, not a done action")


class CooperativeStrategy(_Strict):
    pending_clarifications: list[str] = Field(default_factory=list, max_length=MAX_LINES)
    long_term_plan: list[str] = Field(default_factory=list, max_length=MAX_LINES)
    immediate_focus: str = Field("", max_length=MAX_TEXT)


class CommunicationStrategy(_Strict):
    dialogue_summary: str = Field("", max_length=MAX_TEXT)
    message_draft: str = Field("", max_length=500)
    reason_to_send: str = Field("", max_length=MAX_TEXT)
    reason_not_to_send: str = Field("", max_length=MAX_TEXT)


class MindMap(_Strict):
    """One robot's mind map; a component left out of the method's schema (ablation) stays None."""

    inferred_intentions: dict[str, Intention] | None = None
    cooperative_strategy: CooperativeStrategy | None = None
    communication_strategy: CommunicationStrategy | None = None

    def changes(self, before: MindMap | None) -> list[str]:
        """What differs from ``before``, one line per changed field (``coteam explain``)."""
        old = _flat(before.model_dump()) if before is not None else {}
        new = _flat(self.model_dump())
        return [f"{k}: {old.get(k)!r} -> {v!r}" for k, v in new.items() if old.get(k) != v] + [
            f"{k}: removed" for k in old if k not in new
        ]


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): data}


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _match_one(key: str, expected: list[str]) -> str | None:
    """The expected key ``key`` stands for: the same after normalising case and punctuation, or the one close
    misspelling that is closer to it than to any other expected key."""
    by_norm = {_norm(e): e for e in expected}
    if _norm(key) in by_norm:
        return by_norm[_norm(key)]
    close = difflib.get_close_matches(_norm(key), list(by_norm), n=2, cutoff=FUZZY_CUTOFF)
    if len(close) == 1 or (len(close) == 2 and _ratio(key, close[0]) > _ratio(key, close[1])):
        return by_norm[close[0]]
    return None


def _ratio(key: str, other: str) -> float:
    return difflib.SequenceMatcher(None, _norm(key), other).ratio()


def _match_object(raw: Any, model: type[BaseModel], previous: dict[str, Any], path: str, repairs: list[str]) -> Any:
    if not isinstance(raw, dict):
        return raw  # left to the validation to refuse
    fields = list(model.model_fields)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = _match_one(str(key), fields)
        if name is None:
            repairs.append(f"dropped {path}{key}")
            continue
        if name != key:
            repairs.append(f"renamed {path}{key} -> {path}{name}")
        if name in out:
            repairs.append(f"dropped a second {path}{name}")
            continue
        out[name] = value
    for name in fields:
        if name not in out and name in previous:
            out[name] = previous[name]
            repairs.append(f"filled {path}{name} from the previous map")
        elif name not in out:
            repairs.append(f"filled {path}{name} empty")
    return out


def match_keys(raw: Any, previous: MindMap | None, components: tuple[str, ...]) -> tuple[MindMap, list[str]]:
    """``raw`` (a model's parsed JSON) held to the mind-map schema of ``components``: the map and the repairs made.
    Raises ``ValueError`` (one line) when it cannot be repaired."""
    if not isinstance(raw, dict):
        raise ValueError(f"a mind map is a JSON object, not {type(raw).__name__}")
    repairs: list[str] = []
    before = previous.model_dump() if previous is not None else {}
    top: dict[str, Any] = {}
    for key, value in raw.items():
        name = _match_one(str(key), list(components))
        if name is None:
            repairs.append(f"dropped {key}")
            continue
        if name != key:
            repairs.append(f"renamed {key} -> {name}")
        top[name] = value
    for name in components:
        if name not in top:
            top[name] = before.get(name) or {}
            repairs.append(f"filled {name} {'from the previous map' if before.get(name) else 'empty'}")
    if "inferred_intentions" in top:
        intentions = top["inferred_intentions"]
        if isinstance(intentions, dict):
            earlier = before.get("inferred_intentions") or {}
            top["inferred_intentions"] = {
                mate: _match_object(v, Intention, earlier.get(mate) or {}, f"inferred_intentions.{mate}.", repairs)
                for mate, v in intentions.items()
            }
    strategies: tuple[tuple[str, type[BaseModel]], ...] = (
        ("cooperative_strategy", CooperativeStrategy),
        ("communication_strategy", CommunicationStrategy),
    )
    for name, model in strategies:
        if name in top:
            top[name] = _match_object(top[name], model, before.get(name) or {}, f"{name}.", repairs)
    try:
        return MindMap.model_validate(top), repairs
    except ValidationError as exc:
        raise ValueError(f"mind map not repairable: {first_problem(exc, schema=MindMap)}") from None


def mind_map_schema(components: tuple[str, ...]) -> dict[str, Any]:
    """The JSON schema a model's mind map of ``components`` is asked in (every key required, nothing else)."""

    def closed(model: type[BaseModel]) -> dict[str, Any]:
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema["properties"].values():
            prop.pop("title", None)
            prop.pop("default", None)
        schema["required"] = list(model.model_fields)
        return schema

    intention = closed(Intention)
    parts = {
        "inferred_intentions": {"type": "object", "additionalProperties": intention},
        "cooperative_strategy": closed(CooperativeStrategy),
        "communication_strategy": closed(CommunicationStrategy),
    }
    return {
        "type": "object",
        "properties": {c: parts[c] for c in components},
        "required": list(components),
        "additionalProperties": False,
    }
