"""What one agent perceives at one step: the agent-facing observation model."""

from __future__ import annotations

from dataclasses import dataclass, field

from coteam.world import ObjectKind, Relation, Vec2


@dataclass(frozen=True)
class ObjectView:
    """One perceived object. ``location``/``holder`` say where it is (e.g. IN container 31, ON table 40)."""

    id: int
    name: str
    kind: ObjectKind
    room: int
    position: Vec2
    category: str = ""
    is_open: bool | None = None  # containers only
    location: Relation | None = None  # items only
    holder: int = -1  # fixture/carrier id for ON/IN, -1 otherwise
    held_by: str = ""  # agent name when held
    capacity: int = 0  # carriable containers (TDW-MAT)


@dataclass(frozen=True)
class TeammateView:
    name: str
    position: Vec2
    room: int
    holding: tuple[int | None, ...]


@dataclass(frozen=True)
class Message:
    sender: str
    text: str
    step: int  # step (C-WAH) or frame (TDW-MAT) at which it was sent


@dataclass(frozen=True)
class Observation:
    agent: str
    step: int  # environment steps taken so far
    frames: int  # TDW-MAT frame clock (equals ``step`` in C-WAH)
    position: Vec2
    heading: int
    room: int
    holding: tuple[int | None, ...]
    visible: tuple[ObjectView, ...]
    teammates: tuple[TeammateView, ...] = ()
    messages: tuple[Message, ...] = ()
    # Outcome of this agent's last primitive: "" when it succeeded, else a failure reason.
    last_failure: str = ""
    # TDW-MAT: False while the agent's previous primitive is still running (no new action is read).
    ready: bool = True
    # Headings (degrees) this observation covered, for room-exploration bookkeeping (TDW-MAT field of view).
    view_headings: tuple[int, ...] = field(default=())
