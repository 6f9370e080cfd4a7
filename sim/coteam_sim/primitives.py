"""Low-level primitives the simulator executes, one per agent per step (C-WAH) or per action (TDW-MAT).

Text form: ``[walktowards] 12``, ``[walkto] 10500 3250`` (towards a point, x y in millimetres), ``[open] 31``,
``[close] 31``, ``[grab] 52``, ``[putin] 52 31``,
``[putback] 52 40``, ``[move_forward]``, ``[turn_left]``, ``[turn_right]``, ``[grasp] 52 0``,
``[put_in] 0``, ``[drop] 1``, ``[send_message] text``, ``[wait]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from coteam.domain.world import Benchmark


class PrimitiveKind(StrEnum):
    WALK = "walktowards"
    WALK_TO = "walkto"  # towards a point: x y in millimetres (map frame)
    OPEN = "open"
    CLOSE = "close"
    GRAB = "grab"
    PUT_IN = "putin"
    PUT_ON = "putback"
    MOVE_FORWARD = "move_forward"
    TURN_LEFT = "turn_left"
    TURN_RIGHT = "turn_right"
    GRASP = "grasp"
    PUT_INTO_CARRIER = "put_in"
    DROP = "drop"
    SEND_MESSAGE = "send_message"
    WAIT = "wait"


CWAH_KINDS = frozenset(
    {
        PrimitiveKind.WALK,
        PrimitiveKind.WALK_TO,
        PrimitiveKind.OPEN,
        PrimitiveKind.CLOSE,
        PrimitiveKind.GRAB,
        PrimitiveKind.PUT_IN,
        PrimitiveKind.PUT_ON,
        PrimitiveKind.SEND_MESSAGE,
        PrimitiveKind.WAIT,
    }
)
TDW_KINDS = frozenset(
    {
        PrimitiveKind.MOVE_FORWARD,
        PrimitiveKind.TURN_LEFT,
        PrimitiveKind.TURN_RIGHT,
        PrimitiveKind.GRASP,
        PrimitiveKind.PUT_INTO_CARRIER,
        PrimitiveKind.DROP,
        PrimitiveKind.SEND_MESSAGE,
        PrimitiveKind.WAIT,
    }
)
_ARITY = {
    PrimitiveKind.WALK: 1,
    PrimitiveKind.WALK_TO: 2,
    PrimitiveKind.OPEN: 1,
    PrimitiveKind.CLOSE: 1,
    PrimitiveKind.GRAB: 1,
    PrimitiveKind.PUT_IN: 2,
    PrimitiveKind.PUT_ON: 2,
    PrimitiveKind.GRASP: 2,
    PrimitiveKind.PUT_INTO_CARRIER: 1,
    PrimitiveKind.DROP: 1,
}


class PrimitiveError(ValueError):
    """Malformed primitive text, or a primitive of the other benchmark."""


@dataclass(frozen=True)
class Primitive:
    kind: PrimitiveKind
    args: tuple[int, ...] = ()
    text: str = ""
    payload: str = field(default="", compare=False)  # a message's structured payload (JSON), delivered as is
    receiver: str = field(default="", compare=False)  # a message for one teammate only ("": the whole team)

    def __str__(self) -> str:
        if self.kind == PrimitiveKind.SEND_MESSAGE:
            return f"[{self.kind.value}] {self.text}"
        return " ".join([f"[{self.kind.value}]", *map(str, self.args)])


_RE = re.compile(r"^\[(?P<kind>[a-z_]+)\]\s*(?P<rest>.*)$", re.S)


def parse_primitive(text: str | Primitive, benchmark: Benchmark) -> Primitive:
    if isinstance(text, Primitive):
        prim = text
    else:
        if not isinstance(text, str):
            raise PrimitiveError(f"a primitive must be text or Primitive, got {type(text).__name__}")
        m = _RE.match(text.strip())
        if not m:
            raise PrimitiveError(f"not a primitive (expected '[kind] args'): {text[:60]!r}")
        try:
            kind = PrimitiveKind(m.group("kind"))
        except ValueError:
            raise PrimitiveError(f"unknown primitive [{m.group('kind')}]") from None
        rest = m.group("rest")
        if kind == PrimitiveKind.SEND_MESSAGE:
            prim = Primitive(kind, text=rest.strip())
        else:
            parts = rest.split()
            if not all(re.fullmatch(r"-?\d+", p) for p in parts):
                raise PrimitiveError(f"[{kind.value}] takes integer arguments, got {rest[:60]!r}")
            prim = Primitive(kind, tuple(int(p) for p in parts))
    allowed = CWAH_KINDS if benchmark == Benchmark.CWAH else TDW_KINDS
    if prim.kind not in allowed:
        raise PrimitiveError(f"[{prim.kind.value}] is not a {benchmark.value} primitive")
    if len(prim.args) != _ARITY.get(prim.kind, 0):
        raise PrimitiveError(f"[{prim.kind.value}] takes {_ARITY.get(prim.kind, 0)} arguments, got {len(prim.args)}")
    return prim
