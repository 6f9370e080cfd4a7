"""Answers several methods' roles share: a closed answer model (:class:`StrictAnswer`: unknown fields are an error the
repair round names), and a message a model writes to its teammates.

:func:`message_role` makes a method's message-writing role from its prompt template and its symbolic text: the
answer is ``{"message": text}`` (:class:`MessageAnswer`), asked with a schema that caps the text at the message
limit of the rules (a grammar-constrained model cannot write past it), and checked against the same rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from coteam.domain.actions import MAX_MESSAGE_CHARS, check_message_text
from coteam.llm import Role, RoleContext
from coteam.llm.schema import model_schema, narrow


class StrictAnswer(BaseModel):
    """An answer model that rejects fields it does not declare."""

    model_config = ConfigDict(extra="forbid")


class MessageAnswer(BaseModel):
    message: str = Field(min_length=1, description="the message text, in plain words")


def _check(answer: MessageAnswer, ctx: RoleContext) -> None:
    check_message_text(answer.message)


def _schema(ctx: RoleContext) -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_CHARS}
    return narrow(model_schema(MessageAnswer), replace={"message": text})


def message_role(name: str, template: str, symbolic_text: Callable[[RoleContext], str]) -> Role[MessageAnswer]:
    """The role ``name`` that writes a message with prompt ``template``; ``symbolic_text`` is the symbolic answer."""
    return Role(name, template, MessageAnswer, lambda ctx: MessageAnswer(message=symbolic_text(ctx)), _check, _schema)
