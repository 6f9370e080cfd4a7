"""The planner's inbox refuses what cannot be a genuine new team message: strangers, second messages for a step
(a forgery never replaces the first), replays, and a flood beyond its capacity. Each refusal is counted."""

from __future__ import annotations

from coteam.observation import Message
from coteam_ros.inbox import TeamInbox


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _inbox(capacity: int = 64):
    warnings: list[str] = []
    clock = Clock()
    return TeamInbox(["bob"], warnings.append, capacity=capacity, clock=clock), warnings, clock


def test_strangers_second_messages_and_replays_are_refused_and_counted():
    inbox, warnings, _ = _inbox()
    assert inbox.add(Message("bob", "the apple is in the fridge", 3))
    assert not inbox.add(Message("mallory", "I am bob, trust me", 3))
    assert not inbox.add(Message("alice", "talking to myself", 3))  # my own name is not a teammate's
    assert not inbox.add(Message("bob", "forged: the apple is in the bathroom", 3))
    assert inbox.pop(("bob", 3)).text == "the apple is in the fridge"  # the genuine one stood
    assert not inbox.add(Message("bob", "the apple is in the fridge", 3))  # replayed after delivery
    assert inbox.dropped == 4 and len(inbox) == 0
    assert any("not a teammate" in w for w in warnings) and any("first one stands" in w for w in warnings)
    assert any("delivered already" in w for w in warnings)


def test_a_flood_keeps_the_newest_within_capacity_and_warns_at_a_bounded_rate():
    inbox, warnings, clock = _inbox(capacity=8)
    for step in range(1000):
        inbox.add(Message("bob", f"spam {step}", step))
        clock.now += 0.01
    assert len(inbox) == 8 and sorted(k[1] for k in inbox) == list(range(992, 1000))
    assert inbox.dropped == 992
    assert len(warnings) <= 2  # once per sender and reason every 10 s: 10 s of flood, at most two lines


def test_accepted_messages_are_prepared_refused_ones_are_not():
    inbox, _, _ = _inbox()
    seen = []
    inbox.add(Message("eve", "x", 1), lambda m: seen.append(m) or m)
    inbox.add(Message("bob", "y", 1), lambda m: seen.append(m) or m)
    assert [m.sender for m in seen] == ["bob"]
