"""A document file's problems in one line: a YAML file that cannot be read or parsed, and a pydantic validation
error (where in the document, and what is wrong)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError


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


def first_problem(exc: ValidationError, root: str = "") -> str:
    """``"<where>: <what>"`` of ``exc``'s first error: the dotted path to it under ``root`` (``root`` alone, or "the
    file", when the document as a whole is wrong) and pydantic's message without its "Value error, " prefix."""
    first = exc.errors()[0]
    where = ".".join([*([root] if root else []), *(str(part) for part in first["loc"])]) or "the file"
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
