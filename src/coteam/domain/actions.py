"""The high-level action grammar every method speaks, in the two benchmark dialects.

C-WAH:   ``[goexplore] <kitchen> (11)``, ``[gocheck] <fridge> (31)``, ``[gograb] <apple> (52)``,
         ``[goput] <coffeetable> (40)``, ``[send_message] <text>``
TDW-MAT: ``go to <kitchen> (11)``, ``explore current room <kitchen> (11)``, ``go grasp <apple> (52)``,
         ``put <apple> (52) into the container <bowl> (60)``, ``transport objects I'm holding to the bed``,
         ``send a message: <text>``

Parsing never guesses: an unknown verb, a malformed argument, an id the agent does not know or a name that
does not match the id raises a subclass of :class:`ActionError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from coteam.domain.world import Benchmark

MAX_MESSAGE_CHARS = 500


class Verb(StrEnum):
    GOTO = "goto"  # TDW-MAT: walk to a room
    EXPLORE = "explore"  # C-WAH: go to a room and look; TDW-MAT: look around the current room
    CHECK = "check"  # C-WAH: go to a container and open it
    GRAB = "grab"
    PUT = "put"  # C-WAH: go to a goal surface/container and put held goal items there
    PUT_IN = "put_in"  # TDW-MAT: put a held item into a held carriable container
    TRANSPORT = "transport"  # TDW-MAT: carry everything held to the goal (the bed)
    SEND_MESSAGE = "send_message"


class ActionError(ValueError):
    """Base class of every action grammar / validation error."""


class ActionSyntaxError(ActionError):
    """The text is not an action of the dialect (unknown verb, malformed arguments)."""


class UnknownObjectError(ActionError):
    """The action names an object id the agent does not know, or a name that does not match the id."""


class ActionNotAvailableError(ActionError):
    """The action is well-formed but not among the agent's currently available actions."""


@dataclass(frozen=True)
class ObjectRef:
    name: str
    id: int

    def __str__(self) -> str:
        return f"<{self.name}> ({self.id})"


@dataclass(frozen=True)
class HighLevelAction:
    verb: Verb
    target: ObjectRef | None = None
    container: ObjectRef | None = None  # PUT_IN: the carriable container
    text: str = ""  # SEND_MESSAGE
    payload: str = field(
        default="", compare=False
    )  # SEND_MESSAGE: the structured payload as JSON (coteam.agent.messages)
    receiver: str = field(default="", compare=False)  # SEND_MESSAGE: the one teammate it is for ("": the whole team)

    @property
    def is_message(self) -> bool:
        return self.verb == Verb.SEND_MESSAGE

    def referenced_ids(self) -> list[int]:
        return [r.id for r in (self.target, self.container) if r is not None]


_REF = r"<(?P<{0}>[^<>()]+)>\s*\((?P<{1}>-?\d+)\)"
_CWAH_VERBS = {"goexplore": Verb.EXPLORE, "gocheck": Verb.CHECK, "gograb": Verb.GRAB, "goput": Verb.PUT}
_CWAH_WORDS = {v: k for k, v in _CWAH_VERBS.items()}
_CWAH_RE = re.compile(r"^\[(?P<verb>[a-z_]+)\]\s*(?P<rest>.*)$", re.S)
_CWAH_REF_RE = re.compile("^" + _REF.format("name", "id") + "$")
_TDW_PATTERNS: tuple[tuple[Verb, re.Pattern[str]], ...] = (
    (Verb.SEND_MESSAGE, re.compile(r"^send a message:\s*(?P<text>.*)$", re.S | re.I)),
    (Verb.TRANSPORT, re.compile(r"^transport objects i'?m holding to the bed\.?$", re.I)),
    (Verb.EXPLORE, re.compile(r"^explore current room\s+" + _REF.format("name", "id") + r"$", re.I)),
    (Verb.GOTO, re.compile(r"^go to\s+" + _REF.format("name", "id") + r"$", re.I)),
    (
        Verb.GRAB,
        re.compile(r"^go grasp\s+(?:target object\s+|container\s+)?" + _REF.format("name", "id") + r"$", re.I),
    ),
    (
        Verb.PUT_IN,
        re.compile(
            r"^put\s+" + _REF.format("name", "id") + r"\s+into the container\s+" + _REF.format("cname", "cid") + "$",
            re.I,
        ),
    ),
)
_TDW_VERBS = {v for v, _ in _TDW_PATTERNS}


def _strip_message(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == "<" and text[-1] == ">":
        text = text[1:-1].strip()
    return text


def parse_action(text: str, benchmark: Benchmark) -> HighLevelAction:
    """Parse one action string of ``benchmark``'s dialect. Raises :class:`ActionSyntaxError`."""
    if not isinstance(text, str):
        raise ActionSyntaxError(f"an action must be text, got {type(text).__name__}")
    s = text.strip()
    # Tolerate the annotation the option list adds ("- my cost: 3.4 m") when an answer copies it verbatim.
    s = re.sub(r"\s+-\s+my cost:.*$", "", s, flags=re.S) if not is_message_text(s) else s
    if not s:
        raise ActionSyntaxError("empty action")
    if benchmark == Benchmark.CWAH:
        return _parse_cwah(s)
    return _parse_tdw(s)


def is_message_text(s: str) -> bool:
    """Whether an action text is a message (either benchmark's form)."""
    return s.lower().startswith(("[send_message]", "send a message:"))


def _parse_cwah(s: str) -> HighLevelAction:
    m = _CWAH_RE.match(s)
    if not m:
        raise ActionSyntaxError(f"not a C-WAH action (expected '[verb] <name> (id)'): {s[:80]!r}")
    word, rest = m.group("verb"), m.group("rest").strip()
    if word == "send_message":
        return HighLevelAction(Verb.SEND_MESSAGE, text=_strip_message(rest))
    verb = _CWAH_VERBS.get(word)
    if verb is None:
        raise ActionSyntaxError(
            f"unknown C-WAH verb [{word}]; expected one of {sorted([*_CWAH_VERBS, 'send_message'])}"
        )
    ref = _CWAH_REF_RE.match(rest)
    if not ref:
        raise ActionSyntaxError(f"[{word}] needs one argument '<name> (id)', got {rest[:80]!r}")
    return HighLevelAction(verb, ObjectRef(ref.group("name").strip(), int(ref.group("id"))))


def _parse_tdw(s: str) -> HighLevelAction:
    for verb, pattern in _TDW_PATTERNS:
        m = pattern.match(s)
        if not m:
            continue
        groups = m.groupdict()
        if verb == Verb.SEND_MESSAGE:
            return HighLevelAction(verb, text=_strip_message(groups["text"]))
        if verb == Verb.TRANSPORT:
            return HighLevelAction(verb)
        target = ObjectRef(groups["name"].strip(), int(groups["id"]))
        container = ObjectRef(groups["cname"].strip(), int(groups["cid"])) if groups.get("cname") else None
        return HighLevelAction(verb, target, container)
    raise ActionSyntaxError(
        "not a TDW-MAT action (expected 'go to <room> (id)', 'explore current room <room> (id)', "
        "'go grasp <object> (id)', 'put <object> (id) into the container <container> (id)', "
        f"'transport objects I'm holding to the bed' or 'send a message: ...'): {s[:80]!r}"
    )


def format_action(action: HighLevelAction, benchmark: Benchmark) -> str:
    """The canonical text of ``action`` in ``benchmark``'s dialect (inverse of :func:`parse_action`)."""
    if benchmark == Benchmark.CWAH:
        if action.verb == Verb.SEND_MESSAGE:
            return f"[send_message] <{action.text}>"
        word = _CWAH_WORDS.get(action.verb)
        if word is None or action.target is None:
            raise ActionSyntaxError(f"{action.verb.value} has no C-WAH form")
        return f"[{word}] {action.target}"
    if action.verb not in _TDW_VERBS:
        raise ActionSyntaxError(f"{action.verb.value} has no TDW-MAT form")
    if action.verb == Verb.SEND_MESSAGE:
        return f"send a message: {action.text}"
    if action.verb == Verb.TRANSPORT:
        return "transport objects I'm holding to the bed"
    if action.target is None:
        raise ActionSyntaxError(f"{action.verb.value} needs a target")
    if action.verb == Verb.GOTO:
        return f"go to {action.target}"
    if action.verb == Verb.EXPLORE:
        return f"explore current room {action.target}"
    if action.verb == Verb.GRAB:
        return f"go grasp {action.target}"
    if action.container is None:
        raise ActionSyntaxError("put needs a container")
    return f"put {action.target} into the container {action.container}"


def validate_action(
    action: HighLevelAction,
    known_objects: Mapping[int, str],
    available: Iterable[HighLevelAction] | None = None,
) -> HighLevelAction:
    """Check ids and names against what the agent knows, and membership in ``available`` when given.

    Messages are matched by verb only (their text is free). Returns the action unchanged when valid.
    """
    for ref in (action.target, action.container):
        if ref is None:
            continue
        if ref.id not in known_objects:
            raise UnknownObjectError(f"object id {ref.id} ({ref.name!r}) is unknown to this agent")
        if known_objects[ref.id] != ref.name:
            raise UnknownObjectError(f"object {ref.id} is a {known_objects[ref.id]!r}, not a {ref.name!r}")
    if available is not None:
        options = list(available)
        if action.is_message:
            if not any(o.is_message for o in options):
                raise ActionNotAvailableError("sending a message is not available now")
        elif action not in options:
            raise ActionNotAvailableError(f"{action.verb.value} {action.target} is not an available action now")
    return action


def truncate_message(text: str) -> str:
    return text[:MAX_MESSAGE_CHARS]


def check_message_text(text: str) -> None:
    """``ValueError`` saying what is wrong with a message a model wrote: empty, or longer than the rules allow."""
    if not text.strip():
        raise ValueError("the message is empty")
    if len(text.strip()) > MAX_MESSAGE_CHARS:
        raise ValueError(f"the message has {len(text.strip())} characters; at most {MAX_MESSAGE_CHARS} are allowed")
