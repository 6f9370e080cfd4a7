"""Prompt templates: one Markdown file per template in a folder (package data): each method's ``prompts/`` folder
(``coteam/methods/<method>/prompts/``, loaded by the role toolkit), or ``coteam/llm/prompts/`` by default.

File format (``<name>.md``; the template's name is the file name without ``.md``)::

    Notes for maintainers (optional; everything above ---system--- is not sent)
    ---system---
    You are {{agent}}, a household robot ...
    ---user---
    Goal: {{goal}}
    Reply with JSON like {"action": 3}.

* A line ``---user---`` (alone on its line) is required, once; the text after it is the user message.
* A line ``---system---`` is optional. With it, the text between it and ``---user---`` is the system message
  and anything above it is a comment. Without it, everything above ``---user---`` is the system message.
  An empty system part sends no system message.
* Placeholders are ``{{name}}`` (``name`` a Python identifier, spaces inside the braces allowed). Single braces
  are literal text, so JSON examples need no escaping. Substitution is one pass: braces inside slot values are
  never expanded.
* :meth:`PromptLibrary.render` raises ``KeyError`` naming any placeholder without a slot and any slot without a
  placeholder; surrounding blank lines of each part are dropped.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
SYSTEM_MARKER = "---system---"
USER_MARKER = "---user---"
SUFFIX = ".md"


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str

    @property
    def slots(self) -> frozenset[str]:
        return frozenset(PLACEHOLDER.findall(self.system) + PLACEHOLDER.findall(self.user))


def parse_template(name: str, text: str) -> Template:
    lines = text.splitlines()
    marks = {m: [i for i, line in enumerate(lines) if line.strip() == m] for m in (SYSTEM_MARKER, USER_MARKER)}
    users, systems = marks[USER_MARKER], marks[SYSTEM_MARKER]
    if len(users) != 1:
        raise ValueError(f"prompt template {name!r} needs exactly one line {USER_MARKER!r} (found {len(users)})")
    if len(systems) > 1 or (systems and systems[0] > users[0]):
        raise ValueError(f"prompt template {name!r}: at most one {SYSTEM_MARKER!r} line, before {USER_MARKER!r}")
    start = systems[0] + 1 if systems else 0
    system = "\n".join(lines[start : users[0]]).strip("\n")
    user = "\n".join(lines[users[0] + 1 :]).strip("\n")
    return Template(name, system, user)


def _fill(template: Template, slots: dict[str, str]) -> tuple[str, str]:
    wanted = template.slots
    missing = sorted(wanted - slots.keys())
    unknown = sorted(slots.keys() - wanted)
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing slot(s) {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown slot(s) {', '.join(unknown)} (the template has: {', '.join(sorted(wanted))})")
        raise KeyError(f"prompt template {template.name!r}: {'; '.join(parts)}")
    values = {}
    for k, v in slots.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise TypeError(f"prompt template {template.name!r}: slot {k!r} must be text, got {type(v).__name__}")
        values[k] = str(v)

    def sub(text: str) -> str:
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], text)

    return sub(template.system), sub(template.user)


class PromptLibrary:
    """The prompt templates of a folder (default: the package's ``prompts`` folder)."""

    def __init__(self, package_dir: str | Path | Traversable | None = None):
        if package_dir is None:
            package_dir = resources.files("coteam.llm") / "prompts"
        elif isinstance(package_dir, str):
            package_dir = Path(package_dir)
        if not package_dir.is_dir():
            raise FileNotFoundError(f"prompt folder {package_dir} does not exist")
        self.package_dir = package_dir
        self._templates: dict[str, Template] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return sorted(
            p.name[: -len(SUFFIX)] for p in self.package_dir.iterdir() if p.name.endswith(SUFFIX) and p.is_file()
        )

    def template(self, name: str) -> Template:
        with self._lock:
            cached = self._templates.get(name)
        if cached is not None:
            return cached
        path = self.package_dir / f"{name}{SUFFIX}"
        if "/" in name or "\\" in name or not path.is_file():
            raise KeyError(f"unknown prompt template {name!r}; known: {', '.join(self.names()) or '(none)'}")
        template = parse_template(name, path.read_text(encoding="utf-8"))
        with self._lock:
            self._templates[name] = template
        return template

    def slots(self, name: str) -> frozenset[str]:
        """The placeholders of a template."""
        return self.template(name).slots

    def render(self, name: str, /, **slots: str) -> list[dict[str, str]]:
        """The chat messages of template ``name`` with its placeholders filled from ``slots``.

        ``name`` is positional-only, so a template may itself use a ``{{name}}`` slot.
        """
        system, user = _fill(self.template(name), slots)
        messages = [{"role": "system", "content": system}] if system.strip() else []
        messages.append({"role": "user", "content": user})
        return messages
