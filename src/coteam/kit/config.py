"""Typed method configs: every switch's name, type, default, range and help in one place.

A method's ``Config`` subclasses :class:`MethodConfig` (a frozen pydantic model that forbids unknown fields).
:meth:`MethodConfig.parse_switches` turns ``--set`` / YAML parameters into a validated config or a one-line
``ValueError`` that names the switch and what it accepts; :meth:`MethodConfig.switches` describes the switches for
``coteam methods`` and ``coteam bench``. Methods with LLM roles subclass :class:`RoleMethodConfig`, which adds the
backend and the model endpoint's settings.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from coteam.llm.config import StructuredOutput
from coteam.value.team import ValueConfig

SECRETS = {"api_key"}  # switches never written to results or traces


@dataclass(frozen=True)
class Switch:
    """One switch as users see it."""

    name: str
    kind: str  # "float", "int", "str", "bool" or "a | b | c"
    default: Any
    help: str
    range: str = ""  # e.g. ">= 1", "0 .. 5"

    def describe(self) -> str:
        extra = f", {self.range}" if self.range else ""
        default = "" if self.default is None else f"; default {self.default!r}"
        return f"{self.help} ({self.kind}{extra}{default})"


def _kind(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " | ".join(str(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_kind(a) for a in typing.get_args(annotation) if a is not type(None))
    return getattr(annotation, "__name__", str(annotation))


def _range(info: FieldInfo) -> str:
    bounds = []
    for m in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(m, attr, None)
            if value is not None:
                bounds.append(f"{sign} {value}")
    return ", ".join(bounds)


class MethodConfig(BaseModel):
    """Base of every method's switches. Subclass it and declare fields with ``Field(default, description=...)``;
    a switch whose name is not a Python identifier (``lambda``) is a field with an ``alias`` (the switch has that
    one name). Values are taken strictly: ``D=3`` but not ``D="3"`` or ``D=true`` (an int is a valid float).

    ``store`` is the kit's own switch: a file that the team's store (:mod:`coteam.kit.store`) is loaded from and
    saved to, so that it outlives episodes and runs (unset by default, so benchmark episodes stay independent)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    store: str | None = Field(
        None,
        description="SQLite file that keeps what the method learns across episodes and runs (default: nothing "
        "is kept; only methods that declare a store)",
    )

    def recorded(self) -> dict[str, Any]:
        """The switches as results and traces record them: by switch name, JSON values, no secrets."""
        return self.model_dump(mode="json", by_alias=True, exclude=SECRETS)

    @classmethod
    def switches(cls) -> list[Switch]:
        out = []
        for name, info in cls.model_fields.items():
            out.append(
                Switch(
                    info.alias or name,
                    _kind(info.annotation),
                    info.get_default(call_default_factory=True),
                    info.description or "",
                    _range(info),
                )
            )
        return out

    @classmethod
    def switch_names(cls) -> list[str]:
        return [s.name for s in cls.switches()]

    @classmethod
    def parse_switches(cls, method: str, params: Mapping[str, Any]) -> MethodConfig:
        """Validate ``params``; the first problem becomes a one-line ``ValueError``."""
        try:
            return cls.model_validate(dict(params))
        except ValidationError as exc:
            raise ValueError(cls._explain(method, exc)) from None

    @classmethod
    def _explain(cls, method: str, exc: ValidationError) -> str:
        names = cls.switch_names()
        by_name = {s.name: s for s in cls.switches()}
        error = exc.errors(include_url=False)[0]
        loc = [str(x) for x in error.get("loc", ())]
        switch = loc[0] if loc else ""
        if error.get("type") == "extra_forbidden":
            close = difflib.get_close_matches(switch, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            listed = ", ".join(names) or "none"
            return f"{method}: unknown switch {switch!r}{hint}; its switches are: {listed}"
        if switch in by_name:
            s = by_name[switch]
            return (
                f"{method}: bad value {error.get('input')!r} for switch {switch!r}: {error.get('msg', 'invalid')}; "
                f"expected {s.kind}{(' ' + s.range) if s.range else ''} ({s.help})"
            )
        message = str(error.get("msg", "invalid configuration")).removeprefix("Value error, ")
        return f"{method}: {message}"


Backend = Literal["symbolic", "llm", "hybrid"]


class RoleMethodConfig(MethodConfig):
    """A method whose roles run on the symbolic backend or on a chat model (any OpenAI-compatible endpoint)."""

    backend: Backend = Field(
        "symbolic",
        description="who answers the roles: the symbolic solvers, a chat model, or both (hybrid: the model only "
        "where the solvers are in doubt or lack knowledge)",
    )
    hybrid_margin: float = Field(
        0.3, ge=0, le=1, description="hybrid: ask the model when the best two options are this close (relative gap)"
    )
    model: str | None = Field(None, description="model name (default COTEAM_LLM_MODEL, else gpt-4o-mini)")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    api_key: str | None = Field(None, repr=False, description="API key (default OPENAI_API_KEY)")
    temperature: float | None = Field(None, ge=0, description="sampling temperature (default 0)")
    top_p: float | None = Field(None, gt=0, le=1, description="nucleus sampling (default 1)")
    max_tokens: int | None = Field(None, gt=0, description="answer length limit (default 1024)")
    timeout_s: float | None = Field(None, gt=0, description="seconds per request (default 60)")
    max_retries: int | None = Field(None, ge=0, description="retries after the first attempt (default 3)")
    backoff_s: float | None = Field(None, ge=0, description="wait before the first retry, doubled each time (1)")
    call_deadline_s: float | None = Field(
        None, gt=0, description="seconds one role call may take, retries included (default timeout_s)"
    )
    requests_per_minute: float | None = Field(
        None, gt=0, description="the endpoint's rate limit, kept across every worker of a run (default: none)"
    )
    structured_output: StructuredOutput | None = Field(
        None, description="how answers are held to their JSON schema: auto (detect), a response_format kind, or off"
    )
    decision_budget_s: float | None = Field(
        None, gt=0, description="seconds a decision's LLM roles may take; then symbolic answers (off when unset)"
    )
    breaker_failures: int = Field(2, ge=1, description="unanswered model calls in a row that open the circuit breaker")
    breaker_decisions: int = Field(
        20,
        ge=0,
        description="decisions answered symbolically once the breaker opens, doubled while the model "
        "stays silent (0: no breaker)",
    )
    transcript: str | None = Field(None, description="JSONL file recording every model call")
    replay: str | None = Field(None, description="JSONL transcript to answer from, offline")
    cache: str | None = Field(None, description="sqlite response cache")
    K_action: int = Field(5, ge=0, description="previous actions shown to the roles")
    K_message: int = Field(4, ge=0, description="previous messages shown to the roles")

    LLM_FIELDS: ClassVar[tuple[str, ...]] = (
        "model",
        "base_url",
        "api_key",
        "temperature",
        "top_p",
        "max_tokens",
        "timeout_s",
        "max_retries",
        "backoff_s",
        "structured_output",
        "call_deadline_s",
        "requests_per_minute",
    )

    @model_validator(mode="after")
    def _backend_settings(self) -> RoleMethodConfig:
        if self.backend == "symbolic":
            given = [k for k in ("transcript", "replay", "cache") if getattr(self, k) is not None]
            if given:
                raise ValueError(f"switch(es) {', '.join(given)} need backend=llm: the symbolic backend uses no model")
        elif self.replay is not None and (self.transcript is not None or self.cache is not None):
            raise ValueError(
                "switch replay serves a recorded transcript: it cannot be combined with transcript or cache"
            )
        return self

    def llm_settings(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.LLM_FIELDS if getattr(self, k) is not None}


class ValueRoleConfig(RoleMethodConfig):
    """A method with roles whose symbolic backend reads the team value model (:mod:`coteam.value`)."""

    particles: int = Field(ValueConfig().particles, ge=1, description="belief particles of the team value model")

    @property
    def value_config(self) -> ValueConfig:
        return replace(ValueConfig(), particles=self.particles)
