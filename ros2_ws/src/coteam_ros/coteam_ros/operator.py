"""A person's word to the team: ``coteam tell TEAM.yaml "the cups are in the kitchen cabinet"``.

The sentence is read against the home's world file (:func:`coteam.tasks.words.read_report`: item classes and the
fixtures they are said to be in or on) and sent on ``/team/messages`` as a message of the team's ``operator``,
signed with the operator's key (``coteam keys init`` makes it beside the robots'; the team's public keys name it).
Every robot's planner checks it like a teammate's message and takes it into its memory as a hint
(:attr:`coteam.agent.memory.AgentMemory.hints`): its belief then looks for the things there first, as it would after a
teammate's report. A report that names what the home does not have is refused at the robot (logged, counted as a
dropped message). ROS-free but for :func:`tell`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from coteam.domain.world import Scene

OPERATOR = "operator"  # the sender name of a person's messages, and the key it signs with
REPORT = "operator_report"  # the payload key: [[item class, fixture name], ...]
WAIT_S = 10.0  # how long `coteam tell` waits for the robots' planners to listen


def report_payload(pairs: list[tuple[str, str]]) -> str:
    return json.dumps({REPORT: [[item, fixture] for item, fixture in pairs]})


def parse_report(payload_json: str, home: Scene) -> list[tuple[str, int]]:
    """(item class, fixture id) pairs of an operator's payload in ``home``; a one-line ValueError when it is not one,
    or names an item class or a fixture the home does not have."""
    try:
        pairs = json.loads(payload_json)[REPORT]
        if not isinstance(pairs, list) or not pairs or len(pairs) > 20:
            raise ValueError
        named = [(str(item), str(fixture)) for item, fixture in pairs]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ValueError("not an operator's report (1 to 20 [item, place] pairs)") from None
    items = {i.name for i in home.items}
    fixtures = {f.name: f.id for f in (*home.containers, *home.surfaces)}
    out = []
    for item, fixture in named:
        if item not in items or fixture not in fixtures:
            raise ValueError(f"the report names {item!r} on or in {fixture!r}, which this home does not have")
        out.append((item, fixtures[fixture]))
    return out


def tell(config_path: str, sentence: str, console: Any) -> int:
    """Read ``sentence`` against the team's home and send it to the robots (module docstring); 0 when sent."""
    import rclpy
    from coteam_interfaces.msg import TeamMessage

    from coteam.home.signing import robot_keys
    from coteam.tasks.words import RequestRefused, read_report
    from coteam_ros.qos import TEAM_MESSAGES
    from coteam_ros.team_config import load_config

    cfg = load_config(config_path)
    ref = cfg.episode_ref
    if ref.world is None:
        raise ValueError(f"{config_path}: coteam tell needs a team file whose task is a world file (your home)")
    try:
        pairs = read_report(sentence, ref.world.scene)
    except RequestRefused as exc:
        console.print(f"not sent: {exc}")
        return 5
    payload = report_payload(pairs)
    rclpy.init()
    node = rclpy.create_node("coteam_tell")
    try:
        message = TeamMessage(sender=OPERATOR, receiver="", text=sentence.strip()[:500], step=int(time.time()))
        message.payload_json = payload
        if cfg.security.sign:
            keys = cfg.security
            signer, _ = robot_keys(OPERATOR, keys.private_key(OPERATOR), keys.public_keys, keys.max_age_s)
            envelope = signer.sign(message.receiver, message.step, message.text, message.payload_json)
            message.seq, message.signature = envelope.seq, envelope.signature
        publisher = node.create_publisher(TeamMessage, "/team/messages", TEAM_MESSAGES)
        deadline = time.monotonic() + WAIT_S
        while publisher.get_subscription_count() < len(cfg.robots) and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.2)
        if publisher.get_subscription_count() == 0:
            console.print(f"no robot listens on /team/messages (waited {WAIT_S:g} s): is the team up?")
            return 7
        publisher.publish(message)
        end = time.monotonic() + 1.0  # time for the message to go out before the node goes
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.1)
        console.print("told the team: " + "; ".join(f"{item} in or on {fixture}" for item, fixture in pairs))
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
