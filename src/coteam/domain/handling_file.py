"""Handling files: a home's handling limits as data (:class:`coteam.domain.world.HandlingLimits`), which the simulator
applies and nobody tells the robots or the methods.

A file (YAML, ``format: coteam-handling/1``) lists constraints; each names facts of an action and the values under
which it fails, and the failure reason the simulator reports then (terse or not: the methods learn from which
actions fail, not from the words)::

    format: coteam-handling/1
    constraints:
      - when: {verb: grab, item: [juice, wine], hands_in_use: [1, 2]}
        fails: needs both hands
      - when: {verb: grab, place: bookshelf, robot: [bob, dave]}
        fails: grasp failed

Facts (:data:`coteam.domain.world.HANDLING_FACTS`): ``verb`` (``grab``), ``item`` (the object's class), ``place`` (the
class of the fixture it is in or on; ``""`` elsewhere), ``robot``, ``held`` (a class of what the robot's hands
hold, any one of them), ``hands_in_use`` (0, 1 or 2). A value is one word or a list of them. The first constraint
that holds gives the reason. The strict suites' limits are two such files (``coteam_sim/handling/``);
``coteam run --handling FILE`` applies any file to any suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from coteam.domain.validation import first_problem, read_yaml
from coteam.domain.world import HANDLED_VERBS, HANDLING_FACTS, HandlingConstraint, HandlingLimits

HANDLING_FORMAT = "coteam-handling/1"


class HandlingFileError(ValueError):
    """A handling file that cannot be used; its message is one line naming the file and what is wrong."""


def _words(value: Any) -> list[str]:
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, str | int) for v in values):
        raise ValueError(f"give a word or a list of words, not {value!r}")
    return [str(v) for v in values]


Words = Annotated[list[str], BeforeValidator(_words)]


class _Constraint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    when: dict[str, Words] = Field(min_length=1)
    fails: str = Field(min_length=1)

    @field_validator("when")
    @classmethod
    def _known_facts(cls, when: dict[str, list[str]]) -> dict[str, list[str]]:
        unknown = [fact for fact in when if fact not in HANDLING_FACTS]
        if unknown:
            raise ValueError(f"unknown fact {unknown[0]!r}; facts are {', '.join(HANDLING_FACTS)}")
        verbs = [v for v in when.get("verb", []) if v not in HANDLED_VERBS]
        if verbs:
            raise ValueError(f"verb {verbs[0]!r} is not checked; handled verbs: {', '.join(HANDLED_VERBS)}")
        hands = [h for h in when.get("hands_in_use", []) if h not in ("0", "1", "2")]
        if hands:
            raise ValueError(f"hands_in_use {hands[0]!r}: 0, 1 or 2")
        return when


class _HandlingFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str
    constraints: list[_Constraint]

    @field_validator("format")
    @classmethod
    def _format(cls, value: str) -> str:
        if value != HANDLING_FORMAT:
            raise ValueError(f"format {value!r}, expected {HANDLING_FORMAT!r}")
        return value


def limits_from_dict(data: Any) -> HandlingLimits:
    """The limits a handling document states (the file's content, or a scene file's ``handling``); a
    ``ValueError`` of one line when it is malformed."""
    try:
        spec = _HandlingFile.model_validate(data)
    except ValidationError as exc:
        raise ValueError(first_problem(exc, schema=_HandlingFile)) from None
    return HandlingLimits(
        tuple(
            HandlingConstraint(tuple((fact, frozenset(values)) for fact, values in c.when.items()), c.fails)
            for c in spec.constraints
        )
    )


def limits_to_dict(limits: HandlingLimits) -> dict[str, Any]:
    """The handling document of ``limits`` (what :func:`limits_from_dict` reads)."""
    return {
        "format": HANDLING_FORMAT,
        "constraints": [
            {"when": {fact: sorted(values) for fact, values in c.when}, "fails": c.fails} for c in limits.constraints
        ],
    }


def load_handling(path: str | Path) -> HandlingLimits:
    """Read and validate a handling file; a :class:`HandlingFileError` of one line when it cannot be used."""
    path = Path(path)
    data = read_yaml(path, HandlingFileError)
    try:
        return limits_from_dict(data)
    except ValueError as exc:
        raise HandlingFileError(f"{path}: {exc}") from None
