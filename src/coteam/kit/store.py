"""A method's cross-episode store: what it learns, in SQLite (stdlib ``sqlite3``), optionally persisted to a file.

A method declares its store with a :class:`StoreSchema` (its tables and a version). The team's :class:`MethodStore`
is an in-memory database with those tables. Without a file it is emptied at every episode's start, so benchmark
episodes stay independent. With ``--set store=PATH`` it is loaded from ``PATH`` when the team is made (a missing
file is an empty store), kept across episodes, and written back atomically at each episode's end (a copy next to
it, then a rename: a killed run leaves the last complete store). A file that is not a coteam store, is the store of
another method, or was written by a newer version of this method's schema is refused with a one-line
:class:`StoreError` naming it and how to start fresh; nothing is overwritten silently.

Several runs may share one file (two benchmark runs, or robots sharing a memory). A save holds an exclusive lock
(``PATH.lock``, ``flock``) and, when another run saved since this one loaded, merges instead of overwriting: this
run's changes since its load are applied to the file's content. A table with a ``key`` (:class:`StoreSchema`)
holds one record per key: a new record is added (or, when the other run added the same key, its ``counters`` add
up), a changed record's counters add their change and its other columns take this run's values, a deleted record
is deleted. A table without a key is a log: the rows this run added are appended, the ones it deleted removed.

:meth:`MethodStore.digest` hashes the content (not the file's bytes): results record it after every episode, and a
resumed run checks that the file still holds what its last finished episode left.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "coteam-store"


class StoreError(ValueError):
    """A store file that cannot be used (the message is one line, naming the file and how to start fresh)."""


@dataclass(frozen=True)
class TableMerge:
    """How a keyed table merges with another run's saves: ``key`` names the columns that identify a record,
    ``counters`` the numeric columns that add up."""

    key: tuple[str, ...]
    counters: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoreSchema:
    """A method's store: ``tables`` maps each table's name to its column definitions (SQL), e.g.
    ``{"rules": "kind TEXT, text TEXT UNIQUE, support INTEGER"}``; ``keyed`` says how the keyed ones merge (the
    others are logs: module docstring); raise ``version`` whenever they change."""

    version: int
    tables: Mapping[str, str] = field(default_factory=dict)
    keyed: Mapping[str, TableMerge] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.keyed) - set(self.tables)
        if unknown:
            raise ValueError(f"store schema: merge rules for unknown table(s) {', '.join(sorted(unknown))}")


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
        self._base = self._snapshot()  # the content as loaded or last saved: what this run changed is the rest

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
        """Write the store to its file atomically, merged with what other runs saved since this one loaded (a store
        without a file has nothing to do)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if self.path.exists():
                theirs = MethodStore(self.method, self.schema, self.path)
                if theirs._base != self._base:
                    self._merge_into(theirs)
                    self.db.close()
                    self.db = theirs.db
            self._write()
            self._base = self._snapshot()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        assert self.path is not None
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self) -> None:
        assert self.path is not None
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

    def _columns(self, table: str) -> list[str]:
        return [row[1] for row in self.db.execute(f"PRAGMA table_info({table})")]

    def _snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        return {name: self.db.execute(f"SELECT * FROM {name} ORDER BY rowid").fetchall() for name in self.schema.tables}

    def _merge_into(self, theirs: MethodStore) -> None:
        """Apply this run's changes since its base to ``theirs`` (module docstring)."""
        ours = self._snapshot()
        with theirs.db as db:
            for table in self.schema.tables:
                columns = self._columns(table)
                rule = self.schema.keyed.get(table)
                if rule is None:
                    added = Counter(ours[table]) - Counter(self._base[table])
                    removed = Counter(self._base[table]) - Counter(ours[table])
                    for row, n in removed.items():
                        where = " AND ".join(f"{c} IS ?" for c in columns)
                        for _ in range(n):
                            db.execute(
                                f"DELETE FROM {table} WHERE rowid = (SELECT rowid FROM {table} WHERE {where} LIMIT 1)",
                                row,
                            )
                    for row in ours[table]:  # in this run's order
                        if added[row] > 0:
                            added[row] -= 1
                            db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", row)
                    continue
                _merge_keyed(db, table, columns, rule, self._base[table], ours[table])

    def digest(self) -> str:
        """SHA-256 of the content: the schema's version and every table's rows in insertion order."""
        h = hashlib.sha256(f"{self.method}:{self.schema.version}".encode())
        for name in sorted(self.schema.tables):
            h.update(f"\n{name}".encode())
            for row in self.db.execute(f"SELECT * FROM {name} ORDER BY rowid"):
                h.update(json.dumps(row, default=repr).encode())
        return h.hexdigest()


def _merge_keyed(
    db: sqlite3.Connection,
    table: str,
    columns: list[str],
    rule: TableMerge,
    base: list[tuple[Any, ...]],
    ours: list[tuple[Any, ...]],
) -> None:
    """Apply the changes from ``base`` to ``ours`` of a keyed table to the database ``db`` (module docstring)."""
    at = {c: i for i, c in enumerate(columns)}
    key_of = lambda row: tuple(row[at[c]] for c in rule.key)  # noqa: E731
    before = {key_of(r): r for r in base}
    now = {key_of(r): r for r in ours}
    match = " AND ".join(f"{c} IS ?" for c in rule.key)
    for key in before.keys() - now.keys():
        db.execute(f"DELETE FROM {table} WHERE {match}", key)
    for key, row in now.items():
        old = before.get(key)
        if old == row:
            continue
        existing = db.execute(f"SELECT * FROM {table} WHERE {match}", key).fetchone()
        if existing is None:
            db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", row)
            continue
        merged = list(row)
        for c in rule.counters:
            i = at[c]
            merged[i] = existing[i] + row[i] - (old[i] if old is not None else 0)
        if old is not None:  # columns this run did not change keep the other run's values
            for i, c in enumerate(columns):
                if c not in rule.counters and row[i] == old[i]:
                    merged[i] = existing[i]
        sets = ", ".join(f"{c} = ?" for c in columns)
        db.execute(f"UPDATE {table} SET {sets} WHERE {match}", (*merged, *key))
