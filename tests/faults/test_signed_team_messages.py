"""A signing planner over DDS: of several messages in bob's name for one step -- unsigned, signed by a teammate's
key, signed by another team's "bob" -- it keeps only bob's own, whichever comes first, and refuses its replay and
any re-addressed copy. Each refusal is counted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros

rclpy = pytest.importorskip("rclpy")

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from coteam.signing import Signer, init_keystore, load_private_key  # noqa: E402


def test_a_signing_planner_keeps_only_the_genuine_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coteam_interfaces.msg import TeamMessage

    from coteam_ros.nodes.planner import TEAM_QOS, PlannerNode

    isolate_ros(tmp_path, monkeypatch)
    team_keys = init_keystore(tmp_path / "team", ["alice", "bob"])
    init_keystore(tmp_path / "other", ["bob"])
    signer = {
        "bob": Signer("bob", load_private_key(tmp_path / "team" / "bob.key")),
        "alice": Signer("bob", load_private_key(tmp_path / "team" / "alice.key")),  # a teammate's key, bob's name
        "other": Signer("bob", load_private_key(tmp_path / "other" / "bob.key")),  # another team's bob
    }

    def message(text: str, by: str | None, receiver: str = "") -> TeamMessage:
        msg = TeamMessage(sender="bob", receiver=receiver, text=text, step=7, payload_json="")
        if by is not None:
            envelope = signer[by].sign(receiver, 7, text, "")
            msg.seq, msg.signature = envelope.seq, envelope.signature
        return msg

    rclpy.init()
    try:
        planner = PlannerNode(
            namespace="/alice",
            parameter_overrides=[
                Parameter("robot", value="alice"),
                Parameter("signing_key", value=str(tmp_path / "team" / "alice.key")),
                Parameter("team_keys", value=str(team_keys)),
            ],
        )
        test = rclpy.create_node("forger")
        publisher = test.create_publisher(TeamMessage, "/team/messages", TEAM_QOS)
        executor = SingleThreadedExecutor()
        executor.add_node(planner)
        executor.add_node(test)
        genuine = message("the wine is in the kitchen", "bob")
        readdressed = message("the wine is in the kitchen", "bob", receiver="alice")
        readdressed.signature = genuine.signature
        for msg in (
            message("the wine is in the bathroom", None),
            message("the wine is in the bathroom", "alice"),
            message("the wine is in the bathroom", "other"),
            genuine,
            genuine,  # replayed
            readdressed,
        ):
            publisher.publish(msg)
        deadline = time.monotonic() + 20
        while planner.inbox.dropped < 5 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert planner.inbox[("bob", 7)].text == "the wine is in the kitchen"
        assert planner.inbox.dropped == 5 and len(planner.inbox) == 1
    finally:
        rclpy.try_shutdown()
