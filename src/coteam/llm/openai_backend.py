"""A chat backend on the official ``openai`` client: OpenAI itself or any OpenAI-compatible server."""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import replace
from typing import Any

import openai

from coteam.llm.accounting import estimate_messages_tokens, estimate_tokens
from coteam.llm.base import Completion, DeadlineExceeded, EndpointConfigError, LLMError, Usage
from coteam.llm.cache import ResponseCache, cache_key
from coteam.llm.config import LLMConfig
from coteam.llm.ratelimit import reserve_turn
from coteam.llm.schema import RESPONSE_FORMAT_KINDS, ResponseFormatKind, response_format
from coteam.llm.transcript import TranscriptRecorder

log = logging.getLogger("coteam.llm")

# Placeholder key for local servers that ignore authentication (vLLM, Ollama, llama.cpp).
LOCAL_SERVER_API_KEY = "not-needed"
MAX_RETRY_AFTER_S = 60.0
# Words of a server's complaint about a response_format it does not support (HTTP 400 or 422; llama-cpp-python's
# server answers 500 with the request's validation error).
_FORMAT_COMPLAINT = re.compile(r"response_format|json_schema|json_object|grammar", re.IGNORECASE)
_FORMAT_STATUSES = (400, 422, 500)


def _retryable(exc: Exception) -> bool:
    """Rate limits (429), timeouts (incl. HTTP 408), connection errors and server errors (5xx) are retried."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 429) or exc.status_code >= 500
    return False


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        message = str(exc.message).removeprefix(f"Error code: {exc.status_code} - ")
        return f"HTTP {exc.status_code}: {message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection error ({cause})" if cause else "connection error"
    return f"{type(exc).__name__}: {exc}"


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except (TypeError, ValueError):
        return None


class OpenAIChatBackend:
    """Chat completions through ``openai.OpenAI`` with our own retry loop (the client's retries are off).

    Every request carries the config's sampling parameters (temperature, top_p, max_tokens), overridden by the
    call's own ``params``. Usage comes from the response; when the server omits it, it is estimated with
    :func:`estimate_tokens` and marked ``estimated``. With a ``cache`` an identical request (model, messages,
    effective parameters) is answered from it (``cached=True``, no HTTP request); with a ``recorder`` every served
    call — cache hits included — is appended to the transcript.

    A call's ``json_schema`` parameter (``{"name": ..., "schema": ...}``, part of the cache key and transcript
    like every parameter) is sent as the ``response_format`` variant the server supports
    (``config.structured_output``; :mod:`coteam.llm.schema`). With ``auto`` the variants are tried in turn: a
    server that rejects one (an HTTP error naming the format) is asked again at once with the next, and the one it
    accepts is kept for the backend's life (:attr:`response_format_kind`; ``None`` once none is accepted: the
    schema then only shapes the prompt's repair round).
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        cache: ResponseCache | None = None,
        recorder: TranscriptRecorder | None = None,
    ):
        self.config = config
        self.model = config.model
        self.cache = cache
        self.recorder = recorder
        api_key = config.api_key
        if api_key is None:
            if config.base_url is None:
                raise EndpointConfigError(
                    "no API key for the default OpenAI endpoint: set OPENAI_API_KEY, or OPENAI_BASE_URL to the "
                    "URL of an OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)"
                )
            api_key = LOCAL_SERVER_API_KEY
        self._client = openai.OpenAI(api_key=api_key, base_url=config.base_url, timeout=config.timeout_s, max_retries=0)
        mode = config.structured_output
        self._format_kinds: list[ResponseFormatKind] = (
            [] if mode == "off" else list(RESPONSE_FORMAT_KINDS) if mode == "auto" else [mode]
        )

    @property
    def response_format_kind(self) -> ResponseFormatKind | None:
        """The ``response_format`` variant sent with schema-carrying calls (None: none, the prompt alone)."""
        return self._format_kinds[0] if self._format_kinds else None

    def complete(self, messages: list[dict[str, str]], *, deadline: float | None = None, **params: Any) -> Completion:
        """One answer; with a ``deadline`` (``time.monotonic()``) no attempt or retry wait runs past it."""
        request = {**self.config.sampling(), **params}
        key = cache_key(self.model, messages, request) if self.cache is not None else ""
        completion = self.cache.get(key) if self.cache is not None else None
        if completion is None:
            completion = self._request(messages, request, deadline)
            if self.cache is not None:
                self.cache.put(key, completion)
        if self.recorder is not None:
            self.recorder.record(self.model, messages, params, completion, sampling=self.config.sampling())
        return completion

    def _request(self, messages: list[dict[str, str]], request: dict[str, Any], deadline: float | None) -> Completion:
        """One answer within the call's own deadline (``config.call_budget_s``) and the decision's ``deadline``;
        the attempts that got no answer are counted in the completion or the error (``failed_attempts``)."""
        request = dict(request)
        wanted = request.pop("json_schema", None)
        attempts = self.config.max_retries + 1
        call_end = time.monotonic() + self.config.call_budget_s
        attempt = 0
        last = ""
        while attempt < attempts:
            kind = self.response_format_kind if wanted is not None else None
            sent = dict(request)
            now = time.monotonic()
            if deadline is not None and deadline - now <= 0:
                raise DeadlineExceeded(
                    f"the decision budget ran out before {self.config.describe()} replied{last}",
                    failed_attempts=attempt,
                )
            if call_end - now <= 0:
                raise self._gave_up(attempt, last)
            if self.config.requests_per_minute is not None:
                now = self._wait_turn(deadline, call_end, attempt, last)
            budget = math.inf if deadline is None else deadline - now
            sent["timeout"] = min(self.config.timeout_s, call_end - now, budget)
            if kind is not None:
                sent["response_format"] = response_format(kind, str(wanted["name"]), wanted["schema"])
            try:
                response = self._client.chat.completions.create(model=self.model, messages=messages, **sent)
            except openai.OpenAIError as exc:
                if kind is not None and self._format_rejected(exc):
                    self._format_kinds.pop(0)
                    log.warning(
                        "%s does not accept response_format %s (%s); %s",
                        self.config.describe(),
                        kind,
                        _describe(exc)[:200],
                        f"trying {self._format_kinds[0]}" if self._format_kinds else "the prompt alone asks for JSON",
                    )
                    continue
                attempt += 1
                last = f"; last error: {_describe(exc)}"
                if not _retryable(exc):
                    raise LLMError(
                        f"LLM request to {self.config.describe()} was rejected: {_describe(exc)}",
                        failed_attempts=attempt,
                    ) from exc
                if attempt == attempts:
                    raise LLMError(
                        f"LLM request to {self.config.describe()} failed after {attempts} attempt(s){last}",
                        failed_attempts=attempt,
                    ) from exc
                delay = self.config.backoff_s * 2 ** (attempt - 1)
                delay = max(delay, _retry_after(exc) or 0.0)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise DeadlineExceeded(
                        f"the decision's time budget ran out waiting for {self.config.describe()}{last}",
                        failed_attempts=attempt,
                    ) from exc
                if time.monotonic() + delay >= call_end:
                    raise self._gave_up(attempt, last) from exc
                log.warning(
                    "LLM request failed (%s); retry %d/%d in %.2fs", _describe(exc), attempt, attempts - 1, delay
                )
                time.sleep(delay)
                continue
            return replace(self._to_completion(response, messages), failed_attempts=attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait_turn(self, deadline: float | None, call_end: float, attempt: int, last: str) -> float:
        """Wait for this request's slot under the endpoint's rate limit; the time then. A slot past the decision's
        deadline or the call's own gives up now (and is not booked)."""
        assert self.config.requests_per_minute is not None
        now = time.monotonic()
        latest = min(call_end, math.inf if deadline is None else deadline)
        wait = reserve_turn(self.config.base_url or "openai", self.config.requests_per_minute, latest - now)
        if deadline is not None and now + wait >= deadline:
            raise DeadlineExceeded(
                f"the decision budget runs out before the rate limit of {self.config.describe()} lets a request "
                f"through (next slot in {wait:.1f} s){last}",
                failed_attempts=attempt,
            )
        if now + wait >= call_end:
            raise self._gave_up(attempt, last)
        time.sleep(wait)
        return now + wait

    def _gave_up(self, attempts: int, last: str) -> LLMError:
        return LLMError(
            f"no answer from {self.config.describe()} within the call deadline of {self.config.call_budget_s:g} s "
            f"({attempts} attempt(s)){last}",
            failed_attempts=attempts,
        )

    def _format_rejected(self, exc: Exception) -> bool:
        """A complaint about the response format, while ``auto`` still has variants to try."""
        return (
            self.config.structured_output == "auto"
            and isinstance(exc, openai.APIStatusError)
            and exc.status_code in _FORMAT_STATUSES
            and bool(_FORMAT_COMPLAINT.search(str(exc.message)))
        )

    def _to_completion(self, response: Any, messages: list[dict[str, str]]) -> Completion:
        if not getattr(response, "choices", None):
            raise LLMError(f"LLM response from {self.config.describe()} has no choices: {response!r:.300}")
        choice = response.choices[0]
        text = choice.message.content or ""
        if choice.finish_reason == "length":
            log.info("LLM answer was cut at max_tokens=%s", self.config.max_tokens)
        u = response.usage
        if u is not None and u.prompt_tokens is not None and u.completion_tokens is not None:
            usage = Usage(int(u.prompt_tokens), int(u.completion_tokens), estimated=False)
        else:
            usage = Usage(estimate_messages_tokens(messages), estimate_tokens(text), estimated=True)
        return Completion(text=text, usage=usage, model=response.model or self.model)

    def close(self) -> None:
        self._client.close()
