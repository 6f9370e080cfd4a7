"""What one agent perceives at one step: the agent-facing observation model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from coteam.domain.world import Container, ObjectKind, Relation, Scene, Vec2, WorldState


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
    """A team message as delivered: its text, and the sender's structured payload (:mod:`coteam.agent.messages`) --
    JSON text as it travels, the receiving method's validated payload model once in an agent's memory."""

    sender: str
    text: str
    step: int  # step (C-WAH) or frame (TDW-MAT) at which it was sent
    payload: Any = field(default=None, compare=False)
    receiver: str = field(default="", compare=False)  # the one teammate it was for ("": the whole team)


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
    # None: the simulator's complete view of what the agent can see (an item it would show and does not is gone).
    # A tuple: a camera's view, where an item not shown may just not have been detected; only the contents of these
    # fixtures are shown completely (the hand camera's, at reach).
    complete_fixtures: tuple[int, ...] | None = None
    # With a camera's view: the items whose remembered place the camera looked through and saw empty.
    seen_empty: tuple[int, ...] = ()
    # Real robots: the items the agent's own arm put down since its last observation (the arm's word).
    put_down: tuple[int, ...] = ()


# --- JSON form (what the ROS sim bridge publishes as a robot's status) ---------------------------------------------
def observation_to_dict(obs: Observation) -> dict[str, Any]:
    """A JSON-ready dict that :func:`observation_from_dict` turns back into an equal :class:`Observation`."""
    return {
        "agent": obs.agent,
        "step": obs.step,
        "frames": obs.frames,
        "position": list(obs.position),
        "heading": obs.heading,
        "room": obs.room,
        "holding": list(obs.holding),
        "visible": [view_to_dict(v) for v in obs.visible],
        "teammates": [[t.name, list(t.position), t.room, list(t.holding)] for t in obs.teammates],
        "messages": [[m.sender, m.text, m.step] for m in obs.messages],
        "last_failure": obs.last_failure,
        "ready": obs.ready,
        "view_headings": list(obs.view_headings),
        "complete_fixtures": None if obs.complete_fixtures is None else list(obs.complete_fixtures),
        "seen_empty": list(obs.seen_empty),
        "put_down": list(obs.put_down),
    }


_VIEW_PLAIN = ("id", "name", "room", "category", "is_open", "holder", "held_by", "capacity")


def view_to_dict(view: ObjectView) -> dict[str, Any]:
    """A JSON-ready dict that :func:`view_from_dict` turns back into an equal :class:`ObjectView`."""
    return {
        **{k: getattr(view, k) for k in _VIEW_PLAIN},
        "kind": view.kind.value,
        "position": list(view.position),
        "location": view.location.value if view.location is not None else None,
    }


def view_from_dict(d: dict[str, Any]) -> ObjectView:
    """Inverse of :func:`view_to_dict` (a malformed dict raises ``KeyError``, ``TypeError`` or ``ValueError``)."""
    return ObjectView(
        **{k: d[k] for k in _VIEW_PLAIN},
        kind=ObjectKind(d["kind"]),
        position=_vec(d["position"]),
        location=None if d["location"] is None else Relation(d["location"]),
    )


def observation_from_dict(d: dict[str, Any]) -> Observation:
    """Inverse of :func:`observation_to_dict`; raises ``ValueError`` naming the problem on malformed input."""
    try:
        return Observation(
            agent=str(d["agent"]),
            step=int(d["step"]),
            frames=int(d["frames"]),
            position=_vec(d["position"]),
            heading=int(d["heading"]),
            room=int(d["room"]),
            holding=tuple(None if h is None else int(h) for h in d["holding"]),
            visible=tuple(view_from_dict(v) for v in d["visible"]),
            teammates=tuple(
                TeammateView(str(n), _vec(p), int(r), tuple(None if h is None else int(h) for h in held))
                for n, p, r, held in d["teammates"]
            ),
            messages=tuple(Message(str(s), str(t), int(k)) for s, t, k in d["messages"]),
            last_failure=str(d["last_failure"]),
            ready=bool(d["ready"]),
            view_headings=tuple(int(h) for h in d["view_headings"]),
            complete_fixtures=None if d.get("complete_fixtures") is None else tuple(map(int, d["complete_fixtures"])),
            seen_empty=tuple(int(i) for i in d.get("seen_empty", ())),
            put_down=tuple(int(i) for i in d.get("put_down", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed observation: {exc!r}") from None


def _vec(value: Any) -> Vec2:
    x, y = value
    return (float(x), float(y))


def object_view(world: WorldState, object_id: int) -> ObjectView:
    """How an object of ``world`` looks to an agent that sees it."""
    pos = world.position_of(object_id)
    room = world.scene.floorplan.room_at(pos)
    room_id = room.id if room else -1
    if world.is_fixture(object_id):
        f = world.fixture(object_id)
        if isinstance(f, Container):
            return ObjectView(f.id, f.name, ObjectKind.CONTAINER, room_id, pos, is_open=world.is_open[f.id])
        return ObjectView(f.id, f.name, ObjectKind.SURFACE, room_id, pos)
    item = world.item(object_id)
    p = world.placements[object_id]
    return ObjectView(
        item.id,
        item.name,
        ObjectKind.ITEM,
        room_id,
        pos,
        item.category,
        location=p.relation,
        holder=p.target if p.relation in (Relation.IN, Relation.ON) else -1,
        held_by=world.held_by(object_id) or "",
        capacity=item.capacity,
    )


def task_landmarks(scene: Scene) -> tuple[ObjectView, ...]:
    """Objects every agent knows from the task description at the start: the goal targets."""
    return fixture_views(scene, {p.target for p in scene.task.predicates})


def fixture_views(scene: Scene, fixtures: Iterable[int]) -> tuple[ObjectView, ...]:
    """The home's fixtures ``fixtures`` as a robot knows them from its world file (as the home starts)."""
    world = WorldState(scene, ())
    return tuple(object_view(world, f) for f in sorted(set(fixtures)))
