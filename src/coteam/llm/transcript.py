"""Transcripts of chat calls (JSON lines) and a chat backend that replays them without a network.

Each line of a transcript is one served call::

    {"key": ..., "model": ..., "messages": [...], "params": {...}, "sampling": {...},
     "text": ..., "usage": {"prompt_tokens": ..., "completion_tokens": ..., "total_tokens": ..., "estimated": ...},
     "response_model": ..., "cached": false}

``key`` is :func:`coteam.llm.cache.cache_key` of the requested model, the messages and ``params`` — the
parameters the caller passed to ``complete`` (the backend's configured sampling defaults are recorded under
``sampling`` for information). :class:`ReplayChatBackend` looks calls up by the same key, so a method re-run
against a transcript receives exactly the recorded answers and usage.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coteam.llm.base import Completion, LLMError, Usage
from coteam.llm.cache import cache_key


class TranscriptRecorder:
    """Appends one JSON line per call to a ``.jsonl`` file (created with its folder). Thread-safe."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.count = 0

    def record(
        self,
        model: str,
        messages: list[dict[str, str]],
        params: Mapping[str, Any],
        completion: Completion,
        *,
        sampling: Mapping[str, Any] | None = None,
    ) -> None:
        entry = {
            "key": cache_key(model, messages, params),
            "model": model,
            "messages": messages,
            "params": dict(params),
            "sampling": dict(sampling or {}),
            "text": completion.text,
            "usage": completion.usage.to_dict(),
            "response_model": completion.model,
            "cached": completion.cached,
        }
        if completion.failed_attempts:
            entry["failed_attempts"] = completion.failed_attempts
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True)
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            self.count += 1


def load_transcript(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a transcript; an unterminated last line (a write cut short by a stopped run) is left out."""
    entries = []
    with Path(path).open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or not line.endswith("\n"):
                continue
            try:
                entry = json.loads(line)
                missing = [k for k in ("key", "model", "text", "usage") if k not in entry]
                if missing:
                    raise KeyError(f"missing {', '.join(missing)}")
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: not a transcript entry ({exc})") from exc
            entries.append(entry)
    return entries


class ReplayChatBackend:
    """Serves the answers of a recorded transcript; never touches the network.

    Requests are matched by key (model, messages, the caller's parameters). When the same request was recorded
    several times its answers are served in recorded order, and the last one is repeated after that. A request
    that was never recorded raises :class:`LLMError` naming it. ``model`` defaults to the transcript's first
    recorded model.
    """

    def __init__(self, path: str | Path, *, model: str | None = None):
        self.path = Path(path)
        entries = load_transcript(self.path)
        if model is None:
            if not entries:
                raise ValueError(f"transcript {self.path} is empty: pass the model name to replay it")
            model = str(entries[0]["model"])
        self.model = model
        self._answers: dict[str, list[Completion]] = {}
        for e in entries:
            u = e["usage"]
            completion = Completion(
                text=e["text"],
                usage=Usage(int(u["prompt_tokens"]), int(u["completion_tokens"]), bool(u.get("estimated", False))),
                model=str(e.get("response_model") or e.get("model") or self.model),
                cached=bool(e.get("cached", False)),
                failed_attempts=int(e.get("failed_attempts", 0)),
            )
            self._answers.setdefault(e["key"], []).append(completion)
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(v) for v in self._answers.values())

    def complete(self, messages: list[dict[str, str]], *, deadline: float | None = None, **params: Any) -> Completion:
        """The recorded answer (instantly: a ``deadline`` never runs out)."""
        key = cache_key(self.model, messages, params)
        with self._lock:
            answers = self._answers.get(key)
            if not answers:
                last = str(messages[-1].get("content", "")) if messages else ""
                snippet = last if len(last) <= 160 else last[:157] + "..."
                raise LLMError(
                    f"replay transcript {self.path} has no recorded answer for this request (model {self.model!r}, "
                    f"params {json.dumps(params, sort_keys=True)}, {len(messages)} message(s), key {key[:16]}); "
                    f"last message: {snippet!r}"
                )
            i = self._served.get(key, 0)
            self._served[key] = i + 1
            return answers[min(i, len(answers) - 1)]
