"""Token estimates and per-episode token accounting (the papers' "Usages" metric).

Token estimates (:func:`estimate_tokens`) are used only when a server does not report usage. They work offline:

1. ``bpe-openai`` (a tiktoken-compatible tokenizer whose tables are embedded in the wheel), encoding
   ``o200k_base`` (the GPT-4o family). This is the normal case.
2. ``tiktoken``, only when the environment variable ``TIKTOKEN_CACHE_DIR`` is set: tiktoken downloads its tables
   on first use, so it is tried only when the user points it at a cache that should already hold them.
3. Otherwise a heuristic of one token per 4 characters (rounded up) — roughly right for English prose and
   JSON with the OpenAI tokenizers.

``COTEAM_TOKENIZER=heuristic`` forces the heuristic (e.g. to compare runs across machines with and without a
tokenizer installed). :func:`tokenizer_name` says which one is in use.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coteam.llm.base import Usage

log = logging.getLogger("coteam.llm")

ENCODING = "o200k_base"
CHARS_PER_TOKEN = 4
# Per-message overhead of the chat format (role markers), as OpenAI documents for its chat models.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REPLY_PRIMING = 3
_CHUNK = 100_000  # characters encoded at once (bpe-openai refuses very long inputs)


def _heuristic(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@functools.cache
def _tokenizer() -> tuple[str, Callable[[str], int]]:
    if os.environ.get("COTEAM_TOKENIZER", "").strip().lower() == "heuristic":
        return f"heuristic ({CHARS_PER_TOKEN} characters per token)", _heuristic
    try:
        with warnings.catch_warnings():  # it loads its tables with a deprecated importlib.resources call
            warnings.simplefilter("ignore", DeprecationWarning)
            import bpe_openai

            enc = bpe_openai.get_encoding(ENCODING)
            enc.encode_ordinary("warm up")
        return f"bpe-openai {ENCODING}", lambda text: len(enc.encode_ordinary(text))
    except Exception as exc:  # not installed, or a broken install: fall through
        log.debug("bpe-openai unavailable (%s)", exc)
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        try:
            import tiktoken

            tenc = tiktoken.get_encoding(ENCODING)
            return f"tiktoken {ENCODING}", lambda text: len(tenc.encode_ordinary(text))
        except Exception as exc:
            log.debug("tiktoken unavailable (%s)", exc)
    log.info("no offline tokenizer available; token estimates use %d characters per token", CHARS_PER_TOKEN)
    return f"heuristic ({CHARS_PER_TOKEN} characters per token)", _heuristic


def tokenizer_name() -> str:
    """Which tokenizer :func:`estimate_tokens` uses on this machine."""
    return _tokenizer()[0]


def estimate_tokens(text: str) -> int:
    """The number of tokens ``text`` encodes to (see the module docstring for how it is counted offline)."""
    if not text:
        return 0
    _, count = _tokenizer()
    try:
        return sum(count(text[i : i + _CHUNK]) for i in range(0, len(text), _CHUNK))
    except Exception as exc:  # a tokenizer refusing some input must not break accounting
        log.debug("tokenizer failed (%s); using the heuristic for this text", exc)
        return _heuristic(text)


def estimate_messages_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Estimated prompt tokens of a chat request: contents plus the chat format's per-message overhead."""
    msgs = list(messages)
    return sum(estimate_tokens(str(m.get("content") or "")) + TOKENS_PER_MESSAGE for m in msgs) + (
        TOKENS_PER_REPLY_PRIMING if msgs else 0
    )


def _bucket() -> dict[str, Any]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "fallbacks": 0}


class TokenLedger:
    """Counts LLM calls, tokens and fallbacks, in total and per role and per agent.

    Thread-safe. ``calls`` counts requests: ``add`` records one answered call (cache hits included: they stand
    for the call the method made, and are also counted in ``cached_calls``) with the attempts that failed before
    it; ``add_failed`` records requests that got no answer at all (both also in ``failed_calls``);
    ``add_fallback`` records that a role answered with its symbolic solver because the model's answer was
    unusable or missing.
    """

    MAX_LOGGED_FALLBACKS = 50

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.calls = 0
            self.fallbacks = 0
            self.prompt_tokens = 0
            self.completion_tokens = 0
            self.estimated_calls = 0
            self.cached_calls = 0
            self.failed_calls = 0
            self._roles: dict[str, dict[str, Any]] = {}
            self._agents: dict[str, dict[str, Any]] = {}
            self.fallback_log: list[dict[str, str]] = []

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens, self.estimated_calls > 0)

    def add(self, role: str, agent: str, usage: Usage, *, cached: bool = False, failed_attempts: int = 0) -> None:
        with self._lock:
            self.calls += 1 + failed_attempts
            self.failed_calls += failed_attempts
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.estimated_calls += int(usage.estimated)
            self.cached_calls += int(cached)
            for b in (self._roles.setdefault(role, _bucket()), self._agents.setdefault(agent, _bucket())):
                b["calls"] += 1 + failed_attempts
                b["prompt_tokens"] += usage.prompt_tokens
                b["completion_tokens"] += usage.completion_tokens
                b["total_tokens"] += usage.total

    def add_failed(self, role: str, agent: str, attempts: int) -> None:
        """``attempts`` requests of a role call that got no answer."""
        if attempts <= 0:
            return
        with self._lock:
            self.calls += attempts
            self.failed_calls += attempts
            for b in (self._roles.setdefault(role, _bucket()), self._agents.setdefault(agent, _bucket())):
                b["calls"] += attempts

    def add_fallback(self, role: str, agent: str, reason: str) -> None:
        with self._lock:
            self.fallbacks += 1
            self._roles.setdefault(role, _bucket())["fallbacks"] += 1
            self._agents.setdefault(agent, _bucket())["fallbacks"] += 1
            if len(self.fallback_log) < self.MAX_LOGGED_FALLBACKS:
                self.fallback_log.append({"role": role, "agent": agent, "reason": reason[:500]})

    def merge(self, other: TokenLedger) -> None:
        """Add another ledger's counts to this one (e.g. to sum a suite)."""
        snap = other.to_dict()
        with self._lock:
            self.calls += snap["calls"]
            self.fallbacks += snap["fallbacks"]
            self.prompt_tokens += snap["prompt_tokens"]
            self.completion_tokens += snap["completion_tokens"]
            self.estimated_calls += snap["estimated_calls"]
            self.cached_calls += snap["cached_calls"]
            self.failed_calls += snap["failed_calls"]
            for mine, theirs in ((self._roles, snap["by_role"]), (self._agents, snap["by_agent"])):
                for key, counts in theirs.items():
                    b = mine.setdefault(key, _bucket())
                    for k, v in counts.items():
                        b[k] += v
            room = self.MAX_LOGGED_FALLBACKS - len(self.fallback_log)
            self.fallback_log.extend(snap["fallback_log"][: max(room, 0)])

    def by_role(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in sorted(self._roles.items())}

    def by_agent(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in sorted(self._agents.items())}

    def to_dict(self) -> dict[str, Any]:
        by_role, by_agent = self.by_role(), self.by_agent()
        with self._lock:
            return {
                "calls": self.calls,
                "fallbacks": self.fallbacks,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "estimated_calls": self.estimated_calls,
                "cached_calls": self.cached_calls,
                "failed_calls": self.failed_calls,
                "by_role": by_role,
                "by_agent": by_agent,
                "fallback_log": [dict(e) for e in self.fallback_log],
            }

    def __repr__(self) -> str:
        return f"TokenLedger(calls={self.calls}, tokens={self.total_tokens}, fallbacks={self.fallbacks})"
