"""YAML files read with one-line errors that name the file, the problem and where it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_yaml(path: str | Path, loader: type = yaml.SafeLoader) -> Any:
    """The document in ``path`` (parsed by ``loader``, a SafeLoader or a subclass); a file that is not text or
    not valid YAML raises a one-line :class:`ValueError` (``FileNotFoundError`` when there is none)."""
    try:
        return yaml.load(Path(path).read_text(), Loader=loader)  # a SafeLoader or a subclass
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{path}: not valid YAML: {problem}{where}") from None
