"""Answers and roles several methods share: a closed answer model (:class:`StrictAnswer`: unknown fields are an
error the repair round names), a message a model writes to its teammates, and a pick from a lettered option list.

:func:`message_role` makes a method's message-writing role from its prompt template and its symbolic text: the
answer is ``{"message": text}`` (:class:`MessageAnswer`), asked with a schema that caps the text at the message
limit of the rules (a grammar-constrained model cannot write past it), and checked against the same rules.

:func:`choice_role` makes a role that picks one option of the question's lettered list (``RoleContext.data`` has a
``lettered``, :class:`Choosing`): the answer's letter field is one of the list's letters in the schema, checked
against the list, and named as the option's text for the hybrid backend's doubt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from coteam.domain.actions import MAX_MESSAGE_CHARS, check_message_text
from coteam.kit.lettered import Lettered, letter_schema, match_option
from coteam.llm import Doubt, Role, RoleContext
from coteam.llm.schema import model_schema, narrow

Q = TypeVar("Q")


class Choosing(Protocol):
    """A question that offers lettered options."""

    @property
    def lettered(self) -> Lettered: ...


C = TypeVar("C", bound=Choosing)
M = TypeVar("M", bound=BaseModel)


class StrictAnswer(BaseModel):
    """An answer model that rejects fields it does not declare."""

    model_config = ConfigDict(extra="forbid")


class MessageAnswer(BaseModel):
    message: str = Field(min_length=1, description="the message text, in plain words")


def _check(answer: MessageAnswer, ctx: RoleContext[Any]) -> None:
    check_message_text(answer.message)


def _schema(ctx: RoleContext[Any]) -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": MAX_MESSAGE_CHARS}
    return narrow(model_schema(MessageAnswer), replace={"message": text})


def message_role(name: str, template: str, symbolic_text: Callable[[RoleContext[Q]], str]) -> Role[Q, MessageAnswer]:
    """The role ``name`` that writes a message with prompt ``template``; ``symbolic_text`` is the symbolic answer."""
    return Role(name, template, MessageAnswer, lambda ctx: MessageAnswer(message=symbolic_text(ctx)), _check, _schema)


def choice_role(
    name: str,
    template: str,
    answer: type[M],
    letter_field: str,
    symbolic: Callable[[RoleContext[C]], M],
    *,
    constrain: Callable[[RoleContext[C]], dict[str, Any]] | None = None,
    doubt: Callable[[RoleContext[C], M], Doubt | None] | None = None,
) -> Role[C, M]:
    """The role ``name`` (prompt ``template``) whose ``answer``'s ``letter_field`` picks one option of the question's
    lettered list; ``symbolic`` is the symbolic answer. The schema allows the list's letters alone (``constrain``
    may narrow the answer's other fields too), an answer whose letter matches no option is rejected, and the option
    an answer picks is named by its text (what a ``doubt``'s scores name)."""

    def letter(value: M) -> str:
        return str(getattr(value, letter_field))

    def check(value: M, ctx: RoleContext[C]) -> None:
        match_option(letter(value), ctx.data.lettered)

    def letters_only(ctx: RoleContext[C]) -> dict[str, Any]:
        return narrow(model_schema(answer), replace={letter_field: letter_schema(ctx.data.lettered)})

    def chosen(ctx: RoleContext[C], value: M) -> str:
        lettered = ctx.data.lettered
        return lettered[match_option(letter(value), lettered)[0]]

    return Role(name, template, answer, symbolic, check, constrain or letters_only, doubt, chosen)
