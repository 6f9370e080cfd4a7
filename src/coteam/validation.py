"""A pydantic validation error in one line: where in the document, and what is wrong."""

from __future__ import annotations

from pydantic import ValidationError


def first_problem(exc: ValidationError, root: str = "") -> str:
    """``"<where>: <what>"`` of ``exc``'s first error: the dotted path to it under ``root`` (``root`` alone, or "the
    file", when the document as a whole is wrong) and pydantic's message without its "Value error, " prefix."""
    first = exc.errors()[0]
    where = ".".join([*([root] if root else []), *(str(part) for part in first["loc"])]) or "the file"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
