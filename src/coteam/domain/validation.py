"""A document file's problems in one line: a YAML file that cannot be read or parsed, and a pydantic validation
error (where in the document, and what is wrong). Every document coteam reads (team, world, safety, handling and
sweep files, a robot's body, a model's structured answer) says its problem through here."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError


def read_yaml(path: str | Path, error: type[ValueError] = ValueError, loader: type = yaml.SafeLoader) -> Any:
    """The YAML document in ``path`` (parsed by ``loader``, a SafeLoader or a subclass); an ``error`` of one line
    naming the file when it cannot be read, is no text or is not YAML (the problem, and its line and column). Every
    YAML file coteam reads goes through here."""
    try:
        return yaml.load(Path(path).read_text(), Loader=loader)
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{path}: not valid YAML: {problem}{where}") from None


class ProblemAt(ValueError):
    """A validator's problem with ``key`` (a path below the model it validates): :func:`first_problem` names the
    key, not the model."""

    def __init__(self, key: str | tuple[str, ...], problem: str):
        super().__init__(problem)
        self.key = (key,) if isinstance(key, str) else key


def first_problem(exc: ValidationError, root: str = "", schema: type[BaseModel] | None = None) -> str:
    """Every pydantic error of coteam's documents as one line, ``"<where>: <what>"``: where is the key path to the
    first problem (``robots[1].remap.odom``) under ``root`` (``root`` alone, or "top level", when the document as a
    whole is wrong); a misspelt key comes first, as it explains the rest. What is said in a person's words: what a
    key takes and what it got, what is required, the choices. Given the document's ``schema`` (the model validated),
    an unknown key lists the keys allowed there and a missing one shows its example."""
    errors = exc.errors(include_url=False)
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc, kind, value, ctx = tuple(error["loc"]), error["type"], error.get("input"), error.get("ctx", {})
    if isinstance(ctx.get("error"), ProblemAt):
        loc += ctx["error"].key
    field = _field_at(schema, loc) if schema is not None else None
    if kind == "too_short":
        problem = f"expected a non-empty {'mapping' if isinstance(value, dict) else 'list'}, got {_kind(value)}"
    elif kind in _EXPECTED:
        problem = f"expected {_EXPECTED[kind]}, got {_kind(value)}"
    elif kind == "missing":
        examples = getattr(field, "examples", None)
        problem = f"required ({loc[-1]}: {examples[0]})" if examples else "required"
    elif kind == "extra_forbidden" and schema is not None:
        problem = f"unknown key (allowed here: {', '.join(_model_at(schema, loc).model_fields)})"
    elif kind == "extra_forbidden":
        problem = "unknown key"
    elif kind == "literal_error" and field is not None:
        problem = f"expected one of {', '.join(map(str, typing.get_args(field.annotation)))}, got {value!r}"
    elif kind == "greater_than_equal":
        problem = f"must be >= {ctx['ge']}, got {value}"
    elif kind in ("greater_than", "finite_number") and isinstance(value, int | float):
        problem = f"must be a positive number, got {float(value)}"
    elif kind == "value_error":
        problem = str(ctx["error"])
    else:
        problem = str(error["msg"])
    where = _key_path((*([root] if root else []), *loc)) or "top level"
    return f"{where}: {problem}"


_EXPECTED = {  # pydantic's error types of a value of the wrong kind: what the key takes
    "model_type": "a mapping",
    "dict_type": "a mapping",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a non-empty string",
    "string_too_short": "a non-empty string",
    "tuple_type": "a non-empty list",
}


def _model_at(schema: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model (a section of the document) that holds the key at ``loc``."""
    model = schema
    for part in loc[:-1]:
        if isinstance(part, str) and part in model.model_fields:
            annotation = model.model_fields[part].annotation
            # a section, a section or None, a list or tuple or mapping of sections
            candidates = (annotation, *typing.get_args(annotation))
            model = next((a for a in candidates if isinstance(a, type) and issubclass(a, BaseModel)), model)
    return model


def _field_at(schema: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    return _model_at(schema, loc).model_fields.get(str(loc[-1])) if loc else None


def _key_path(loc: tuple[int | str, ...]) -> str:
    """``robots[1].remap.odom`` for ``("robots", 1, "remap", "odom")``."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, bool | int | float):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, list | dict) and not value:
        return f"an empty {type(value).__name__}"
    return f"a {type(value).__name__}"
