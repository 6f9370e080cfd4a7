"""A persistent response cache: identical requests (model, messages, parameters) are answered from disk."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coteam.llm.base import Completion, Usage


def canonical_request(model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """The request as stable JSON: sorted keys, no whitespace, unicode kept. Parameters must be JSON values."""
    try:
        return json.dumps(
            {"model": model, "messages": [dict(m) for m in messages], "params": dict(params)},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
    except (TypeError, ValueError) as exc:
        raise TypeError(f"chat request is not JSON-serialisable, so it cannot be keyed: {exc}") from exc


def cache_key(model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """sha256 (hex) of :func:`canonical_request`."""
    return hashlib.sha256(canonical_request(model, messages, params).encode("utf-8")).hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


class ResponseCache:
    """An sqlite file of completions by :func:`cache_key`. Thread-safe; ``":memory:"`` gives a private cache.

    A stored completion keeps the usage of the call that produced it; :meth:`get` returns it with
    ``cached=True``.
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL" if self.path != ":memory:" else "PRAGMA journal_mode=MEMORY")
            self._db.execute(_SCHEMA)

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute(
                "SELECT model, text, prompt_tokens, completion_tokens, estimated FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        model, text, p, c, est = row
        return Completion(text=text, usage=Usage(p, c, bool(est)), model=model, cached=True)

    def put(self, key: str, completion: Completion) -> None:
        u = completion.usage
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    completion.model,
                    completion.text,
                    u.prompt_tokens,
                    u.completion_tokens,
                    int(u.estimated),
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
