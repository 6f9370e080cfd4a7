"""Connection and sampling settings of a chat model."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Literal, get_args

DEFAULT_MODEL = "gpt-4o-mini"
StructuredOutput = Literal["auto", "json_schema", "json_object_schema", "json_object", "off"]


@dataclass(frozen=True)
class LLMConfig:
    """Where the model is served and how it is sampled.

    ``base_url`` ``None`` means the default OpenAI endpoint; any OpenAI-compatible server (vLLM, Ollama,
    llama.cpp, ...) is reached by its ``.../v1`` URL. ``max_retries`` counts the retries after the first attempt;
    the wait before retry ``k`` (0-based) is ``backoff_s * 2**k`` (or longer when the server sends Retry-After).
    ``structured_output`` says how a role's JSON schema reaches the server (:mod:`coteam.llm.schema`): ``auto``
    tries the ``response_format`` variants in turn and keeps the first one the server accepts; a variant's name
    uses only that one; ``off`` sends none (the prompt shows the expected JSON and a repair round fixes slips).
    ``call_deadline_s`` bounds one call, its retries and their waits included (default: ``timeout_s``), so a dead
    or hanging endpoint costs at most that long per call. ``requests_per_minute`` spaces the requests to the
    endpoint evenly (:mod:`coteam.llm.ratelimit`: across every worker of a run); None: as fast as answers come.
    """

    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 1.0
    structured_output: StructuredOutput = "auto"
    call_deadline_s: float | None = None
    requests_per_minute: float | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("LLMConfig.model must be a non-empty model name")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"bad sampling settings: temperature={self.temperature}, top_p={self.top_p}")
        bad_deadline = self.call_deadline_s is not None and self.call_deadline_s <= 0
        if self.max_tokens <= 0 or self.timeout_s <= 0 or bad_deadline:
            raise ValueError(
                f"bad limits: max_tokens={self.max_tokens}, timeout_s={self.timeout_s}, "
                f"call_deadline_s={self.call_deadline_s}"
            )
        if self.requests_per_minute is not None and self.requests_per_minute <= 0:
            raise ValueError(f"bad rate limit: requests_per_minute={self.requests_per_minute} (must be above 0)")
        if self.max_retries < 0 or self.backoff_s < 0:
            raise ValueError(f"bad retry settings: max_retries={self.max_retries}, backoff_s={self.backoff_s}")
        if self.structured_output not in get_args(StructuredOutput):
            raise ValueError(
                f"bad structured_output {self.structured_output!r}; known: {', '.join(get_args(StructuredOutput))}"
            )

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMConfig:
        """Read ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and ``COTEAM_LLM_MODEL`` (default ``gpt-4o-mini``).

        Keyword overrides win over the environment; an override of ``None`` is ignored (so command-line options
        that were not given can be passed straight through). Empty environment variables count as unset.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown LLMConfig field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        values: dict[str, Any] = {
            "model": os.environ.get("COTEAM_LLM_MODEL") or DEFAULT_MODEL,
            "base_url": os.environ.get("OPENAI_BASE_URL") or None,
            "api_key": os.environ.get("OPENAI_API_KEY") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def call_budget_s(self) -> float:
        """Seconds one call may take, retries included."""
        return self.call_deadline_s if self.call_deadline_s is not None else self.timeout_s

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters sent with every request (a call's own parameters override them)."""
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens}

    def describe(self) -> str:
        """A one-line description without the API key."""
        return f"model {self.model!r} at {self.base_url or 'the default OpenAI endpoint'}"
