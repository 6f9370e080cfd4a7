"""A method's cross-episode store: what it learns, in SQLite (stdlib ``sqlite3``), optionally persisted to a file.

A method declares its store with a :class:`StoreSchema` (its tables and a version). The team's :class:`MethodStore`
is an in-memory database with those tables. Without a file it is emptied at every episode's start, so benchmark
episodes stay independent. With ``--set store=PATH`` it is loaded from ``PATH`` when the team is made (a missing
file is an empty store), kept across episodes, and written back atomically at each episode's end (a copy next to
it, then a rename: a killed run leaves the last complete store). A file that is not a coteam store, is the store of
another method, or was written by a newer version of this method's schema is refused with a one-line
:class:`StoreError` naming it and how to start fresh; nothing is overwritten silently.

:meth:`MethodStore.digest` hashes the content (not the file's bytes): results record it after every episode, and a
resumed run checks that the file still holds what its last finished episode left.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = "coteam-store"


class StoreError(ValueError):
    """A store file that cannot be used (the message is one line, naming the file and how to start fresh)."""


@dataclass(frozen=True)
class StoreSchema:
    """A method's store: ``tables`` maps each table's name to its column definitions (SQL), e.g.
    ``{"rules": "kind TEXT, text TEXT UNIQUE, support INTEGER"}``; raise ``version`` whenever they change."""

    version: int
    tables: Mapping[str, str] = field(default_factory=dict)


class MethodStore:
    """One team's store (see the module docstring); ``db`` is its open connection."""

    def __init__(self, method: str, schema: StoreSchema, path: str | os.PathLike[str] | None = None):
        self.method = method
        self.schema = schema
        self.path = Path(path) if path is not None else None
        self.db = sqlite3.connect(":memory:")
        if self.path is not None and self.path.exists():
            self._load(self.path)
        else:
            self._create()

    @property
    def persisted(self) -> bool:
        return self.path is not None

    def _create(self) -> None:
        with self.db:
            self.db.execute("CREATE TABLE coteam_store (key TEXT PRIMARY KEY, value TEXT)")
            meta = {"format": FORMAT, "method": self.method, "version": str(self.schema.version)}
            self.db.executemany("INSERT INTO coteam_store VALUES (?, ?)", sorted(meta.items()))
            for name, columns in self.schema.tables.items():
                self.db.execute(f"CREATE TABLE {name} ({columns})")

    def _load(self, path: Path) -> None:
        fresh = "move it away or pass another store=PATH to start with an empty store"
        try:
            source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                meta = dict(source.execute("SELECT key, value FROM coteam_store").fetchall())
                source.backup(self.db)
            finally:
                source.close()
        except sqlite3.Error as exc:
            raise StoreError(f"store {path} is not a coteam store ({exc}): {fresh}") from None
        if meta.get("format") != FORMAT or meta.get("method") != self.method:
            owner = meta.get("method", "unknown")
            raise StoreError(f"store {path} belongs to method {owner!r}, not {self.method!r}: {fresh}")
        version = int(meta.get("version", "0"))
        if version > self.schema.version:
            raise StoreError(
                f"store {path} was written by a newer {self.method} (store version {version}, this one reads "
                f"up to {self.schema.version}): upgrade coteam, or {fresh}"
            )
        missing = set(self.schema.tables) - {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        if missing:
            raise StoreError(f"store {path} lacks table(s) {', '.join(sorted(missing))}: {fresh}")

    def clear(self) -> None:
        """Empty every table of the schema."""
        with self.db:
            for name in self.schema.tables:
                self.db.execute(f"DELETE FROM {name}")

    def save(self) -> None:
        """Write the store to its file atomically (a store without a file has nothing to do)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.unlink(missing_ok=True)
        target = sqlite3.connect(partial)
        try:
            self.db.backup(target)
        finally:
            target.close()
        with open(partial, "rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def digest(self) -> str:
        """SHA-256 of the content: the schema's version and every table's rows in insertion order."""
        h = hashlib.sha256(f"{self.method}:{self.schema.version}".encode())
        for name in sorted(self.schema.tables):
            h.update(f"\n{name}".encode())
            for row in self.db.execute(f"SELECT * FROM {name} ORDER BY rowid"):
                h.update(json.dumps(row, default=repr).encode())
        return h.hexdigest()
