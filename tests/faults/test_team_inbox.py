"""The planner's inbox refuses what cannot be a genuine new team message: strangers, second messages for a step
(a forgery never replaces the first), replays, a flood beyond its capacity, stale steps and, when the team signs,
anything its sender did not sign. Each refusal is counted."""

from __future__ import annotations

from pathlib import Path

from coteam.domain.observation import Message
from coteam.home.signing import Envelope, Signer, Verifier, init_keystore, load_private_key, load_public_keys
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


def test_stale_messages_no_status_delivered_are_dropped():
    inbox, warnings, _ = _inbox()
    for step in (3, 40, 41):
        inbox.add(Message("bob", "x", step))
    inbox.drop_stale(before_step=40)
    assert sorted(k[1] for k in inbox) == [40, 41] and inbox.dropped == 1
    assert any("step 3 was never delivered" in w for w in warnings)


def test_a_signing_team_believes_only_its_members_signatures(tmp_path: Path):
    pub = init_keystore(tmp_path, ["alice", "bob", "mallory"])
    keys = load_public_keys(pub)
    del keys["mallory"]  # mallory has a key, but not one of this team's
    signer = {r: Signer(r, load_private_key(tmp_path / f"{r}.key")) for r in ("alice", "bob", "mallory")}
    warnings: list[str] = []
    inbox = TeamInbox(["bob"], warnings.append, verifier=Verifier(keys))

    def signed(sender: str, name: str, step: int, text: str) -> tuple[Message, Envelope]:
        return Message(name, text, step, ""), signer[sender].sign("", step, text, "")

    # Forgeries for step 5 arrive before bob's own message: unsigned, signed by a teammate, signed by a stranger.
    assert not inbox.add(Message("bob", "the apple is in the bathroom", 5, ""))
    forged, env = signed("alice", "bob", 5, "the apple is in the bathroom")
    assert not inbox.add(forged, envelope=env)
    forged, env = signed("mallory", "bob", 5, "the apple is in the bathroom")
    assert not inbox.add(forged, envelope=env)
    genuine, env = signed("bob", "bob", 5, "the apple is in the fridge")
    assert inbox.add(genuine, envelope=env)
    assert inbox.pop(("bob", 5)).text == "the apple is in the fridge"
    assert not inbox.add(genuine, envelope=env)  # replayed
    assert not inbox.add(genuine, receiver="alice", envelope=env)  # re-addressed: not what bob signed
    assert inbox.dropped == 5
    assert any("not signed" in w for w in warnings) and any("not bob's" in w for w in warnings)
