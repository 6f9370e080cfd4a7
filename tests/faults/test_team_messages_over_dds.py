"""A signing planner's inbox over DDS. Of several messages in bob's name for one step -- unsigned, signed by a
teammate's key, signed by another team's "bob" -- it keeps only bob's own, whichever comes first, and refuses its
replay and any re-addressed copy. Oversized text is cut after its signature is checked; binary garbage (invalid
UTF-8, an embedded NUL, bytes that are no message at all) never crashes it and never passes for bob. Each refusal
is counted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, rclpy_session, task_scene

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from coteam.home.signing import Signer, init_keystore, load_private_key  # noqa: E402


@pytest.fixture
def alice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """alice's signing planner and a publisher on /team/messages, spun by one executor."""
    from coteam_interfaces.msg import TeamMessage

    from coteam_ros.nodes.planner import PlannerNode
    from coteam_ros.qos import TEAM_MESSAGES

    isolate_ros(tmp_path, monkeypatch)
    team_keys = init_keystore(tmp_path / "team", ["alice", "bob"])
    with rclpy_session() as nodes:
        planner = PlannerNode(
            namespace="/alice",
            parameter_overrides=[
                Parameter("robot", value="alice"),
                Parameter("scene_path", value=task_scene(tmp_path)),
                Parameter("signing_key", value=str(tmp_path / "team" / "alice.key")),
                Parameter("team_keys", value=str(team_keys)),
            ],
        )
        test = rclpy.create_node("forger")
        nodes += [planner, test]
        executor = SingleThreadedExecutor()
        executor.add_node(planner)
        executor.add_node(test)
        yield planner, test.create_publisher(TeamMessage, "/team/messages", TEAM_MESSAGES), executor


def spin_until(executor, done, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)


def signed(signer: Signer, text: str, step: int, receiver: str = "", payload: str = ""):
    from coteam_interfaces.msg import TeamMessage

    msg = TeamMessage(sender="bob", receiver=receiver, text=text, step=step, payload_json=payload)
    envelope = signer.sign(receiver, step, text, payload)
    msg.seq, msg.signature = envelope.seq, envelope.signature
    return msg


def test_a_signing_planner_keeps_only_the_genuine_message(alice, tmp_path: Path) -> None:
    from coteam_interfaces.msg import TeamMessage

    planner, publisher, executor = alice
    init_keystore(tmp_path / "other", ["bob"])
    bob = Signer("bob", load_private_key(tmp_path / "team" / "bob.key"))
    alice_as_bob = Signer("bob", load_private_key(tmp_path / "team" / "alice.key"))  # a teammate's key
    other_bob = Signer("bob", load_private_key(tmp_path / "other" / "bob.key"))  # another team's bob
    genuine = signed(bob, "the wine is in the kitchen", 7)
    readdressed = signed(bob, "the wine is in the kitchen", 7, receiver="alice")
    readdressed.signature = genuine.signature
    for msg in (
        TeamMessage(sender="bob", text="the wine is in the bathroom", step=7),
        signed(alice_as_bob, "the wine is in the bathroom", 7),
        signed(other_bob, "the wine is in the bathroom", 7),
        genuine,
        genuine,  # replayed
        readdressed,
    ):
        publisher.publish(msg)
    spin_until(executor, lambda: planner.inbox.dropped >= 5)
    assert planner.inbox[("bob", 7)].text == "the wine is in the kitchen"
    assert planner.inbox.dropped == 5 and len(planner.inbox) == 1


def test_oversized_and_binary_messages_are_cut_or_refused_and_the_planner_goes_on(alice, tmp_path: Path) -> None:
    from rclpy.serialization import serialize_message

    planner, publisher, executor = alice
    bob = Signer("bob", load_private_key(tmp_path / "team" / "bob.key"))
    publisher.publish(signed(bob, "x" * 2000, 7))  # bob does not keep the limit: cut here, after the check
    # Invalid UTF-8 in text and payload (rclpy reads it with replacement characters): not what bob signed.
    raw = serialize_message(signed(bob, "QQQQ", 8, payload="PPPP"))
    publisher.publish(raw.replace(b"QQQQ", b"\xff\xfe\xc3\x28").replace(b"PPPP", b"\x00\x9f\x92\x96"))
    publisher.publish(signed(bob, "before\x00after", 9))  # the NUL ends the string on the wire
    publisher.publish(b"\x00\x01\x00\x00 not a message at all")  # dropped by DDS itself
    publisher.publish(raw[:24])  # cut short: dropped by DDS itself
    publisher.publish(signed(bob, "the wine is in the kitchen", 10))
    spin_until(executor, lambda: ("bob", 10) in planner.inbox)
    assert len(planner.inbox[("bob", 7)].text) == 500
    assert ("bob", 8) not in planner.inbox and ("bob", 9) not in planner.inbox
    assert planner.inbox[("bob", 10)].text == "the wine is in the kitchen"
    assert planner.inbox.dropped == 2
