"""The LLM layer every reasoning method uses: chat backends, structured output, prompts, roles, accounting.

A method asks *roles* through a :class:`RoleBackend` obtained from :func:`make_backend`:

* ``"symbolic"``: the roles' deterministic solvers, no model;
* ``"llm"``: a chat model through any OpenAI-compatible endpoint (:class:`LLMConfig`, by default from the
  environment), with an optional response cache and transcript; or, with ``replay=``, the answers of a recorded
  transcript (no network);
* ``"hybrid"``: the solvers, and the chat model of ``"llm"`` only where a solver is in doubt.
"""

from __future__ import annotations

from pathlib import Path

from coteam.llm.accounting import TokenLedger, estimate_messages_tokens, estimate_tokens, tokenizer_name
from coteam.llm.base import ChatBackend, Completion, EndpointConfigError, LLMError, StructuredOutputError, Usage
from coteam.llm.cache import ResponseCache, cache_key
from coteam.llm.config import LLMConfig
from coteam.llm.openai_backend import OpenAIChatBackend
from coteam.llm.prompts import PromptLibrary
from coteam.llm.roles import (
    CircuitBreaker,
    Doubt,
    HybridBackend,
    LLMBackend,
    Role,
    RoleAnswer,
    RoleBackend,
    RoleContext,
    SymbolicBackend,
)
from coteam.llm.structured import ask_structured, ask_text, extract_json
from coteam.llm.transcript import ReplayChatBackend, TranscriptRecorder

_BACKENDS = {
    "hybrid": "the symbolic solvers; the chat model only where they are in doubt (margin=) or lack knowledge",
    "llm": "a chat model through an OpenAI-compatible endpoint (or a recorded transcript with replay=)",
    "symbolic": "the roles' deterministic symbolic solvers (no model, no tokens)",
}


def backends() -> list[str]:
    """The names :func:`make_backend` accepts."""
    return sorted(_BACKENDS)


def make_backend(
    name: str,
    *,
    config: LLMConfig | None = None,
    prompts: PromptLibrary | None = None,
    transcript: str | Path | None = None,
    replay: str | Path | None = None,
    cache: str | Path | None = None,
    margin: float = 0.0,
) -> RoleBackend:
    """The one registry of role backends.

    ``"symbolic"`` -> :class:`SymbolicBackend`. ``"hybrid"`` -> :class:`HybridBackend` asking, within ``margin``,
    the :class:`LLMBackend` that ``"llm"`` builds. ``"llm"`` -> :class:`LLMBackend` over an
    :class:`OpenAIChatBackend` built from ``config`` (default :meth:`LLMConfig.from_env`), with a
    :class:`ResponseCache` at ``cache`` and a :class:`TranscriptRecorder` at ``transcript`` when given; with
    ``replay`` (a transcript path) over a :class:`ReplayChatBackend` instead (``config`` is then not used: the
    transcript names its model, and no request leaves the process). Unknown names raise ``KeyError``
    listing the known ones; model options given to ``"symbolic"`` raise ``ValueError``.
    """
    if name not in _BACKENDS:
        raise KeyError(f"unknown backend {name!r}; known backends: {', '.join(backends())}")
    if name == "symbolic":
        given = [k for k, v in (("transcript", transcript), ("replay", replay), ("cache", cache)) if v is not None]
        if given:
            raise ValueError(f"the symbolic backend uses no model: {', '.join(given)} cannot be used with it")
        return SymbolicBackend()
    library = prompts if prompts is not None else PromptLibrary()
    if replay is not None:
        if transcript is not None or cache is not None:
            raise ValueError("replay= serves a recorded transcript: it cannot be combined with transcript= or cache=")
        chat: ChatBackend = ReplayChatBackend(replay)
    else:
        chat = OpenAIChatBackend(
            config if config is not None else LLMConfig.from_env(),
            cache=ResponseCache(cache) if cache is not None else None,
            recorder=TranscriptRecorder(transcript) if transcript is not None else None,
        )
    llm = LLMBackend(chat, library)
    return HybridBackend(llm, margin) if name == "hybrid" else llm


__all__ = [
    "ChatBackend",
    "CircuitBreaker",
    "Completion",
    "Doubt",
    "EndpointConfigError",
    "HybridBackend",
    "LLMBackend",
    "LLMConfig",
    "LLMError",
    "OpenAIChatBackend",
    "PromptLibrary",
    "ReplayChatBackend",
    "ResponseCache",
    "Role",
    "RoleAnswer",
    "RoleBackend",
    "RoleContext",
    "StructuredOutputError",
    "SymbolicBackend",
    "TokenLedger",
    "TranscriptRecorder",
    "Usage",
    "ask_structured",
    "ask_text",
    "backends",
    "cache_key",
    "estimate_messages_tokens",
    "estimate_tokens",
    "extract_json",
    "make_backend",
    "tokenizer_name",
]
