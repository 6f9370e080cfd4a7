"""The value types and errors shared by every part of :mod:`coteam.llm`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one or more chat calls.

    ``estimated`` is true when any part of the count was estimated locally (the server did not report usage).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )

    def __radd__(self, other: Any) -> Usage:
        # Lets ``sum(usages)`` work with its default start value 0.
        if other == 0:
            return self
        return NotImplemented

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total,
            "estimated": self.estimated,
        }


@dataclass(frozen=True)
class Completion:
    """One chat answer: the assistant's text, what it cost and which model produced it."""

    text: str
    usage: Usage
    model: str
    cached: bool = False  # served from a ResponseCache (no request was sent)
    failed_attempts: int = 0  # requests of the same call that got no answer before this one (retried)


class LLMError(RuntimeError):
    """A chat request that could not be answered (transport failure after the retries, replay miss, ...).

    ``completions`` holds the answers already received in the same exchange (e.g. the first reply when the
    repair request of :func:`coteam.llm.structured.ask_structured` failed), so their usage can still be counted;
    ``failed_attempts`` the requests that were sent and got no answer, so that they count as calls too.
    """

    def __init__(self, message: str, *, completions: Sequence[Completion] = (), failed_attempts: int = 0):
        super().__init__(message)
        self.completions: list[Completion] = list(completions)
        self.failed_attempts = failed_attempts  # requests sent that got no answer (each one an LLM call)


class EndpointConfigError(ValueError):
    """A model endpoint that cannot be used as configured (no API key for OpenAI's own endpoint, ...): a bad input,
    which the command line and the nodes report in one line, not a failed request."""


class DeadlineExceeded(LLMError):
    """The decision's time budget ran out before the model answered (see ``RoleSession``)."""


class StructuredOutputError(LLMError):
    """The model's output was still invalid after the repair round.

    ``reason`` says what was wrong with the last answer; ``raw`` holds the texts of every answer received.
    """

    def __init__(self, reason: str, raw: Sequence[str], *, completions: Sequence[Completion] = ()):
        super().__init__(f"invalid structured output after {len(raw)} answer(s): {reason}", completions=completions)
        self.reason = reason
        self.raw: list[str] = list(raw)


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model: messages in (``[{"role": ..., "content": ...}, ...]``), one completion out."""

    model: str

    def complete(self, messages: list[dict[str, str]], **params: Any) -> Completion:
        """One answer. ``params`` are request parameters (part of the cache key); a backend that can stop waiting
        also takes ``deadline`` (a ``time.monotonic()`` instant, not a parameter of the request) and raises
        :class:`DeadlineExceeded` once it passes."""
        ...
