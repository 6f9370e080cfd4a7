"""Fault injection for the ROS team, shared by ``tests/faults/`` and ``bench/faults.py``: a node on the team's
domain that speaks for the robots, and the faults the twin plays as a real robot's Nav2 or arm would
(:class:`TwinFault`, the ``twin.faults`` of a team file).

:class:`MessageAttacker` attaches to any rclpy node. Whenever the watched robot's status reaches a step it publishes,
for that step and the next two, a message in each robot's name that no teammate wrote -- unsigned, signed by
another robot of the team, signed by a key of another team -- and it publishes every genuine message it hears a
second time (a replay). Each forged message says its sender explored every room: believed, it would change the
teammate's search. A planner that signs and verifies believes none of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coteam.home.signing import Envelope, Signer, Verifier

FORGED_MARK = "here: I explored every room"

TWIN_FAULTS = ("nav_reject", "nav_abort", "nav_stall", "arm_silent", "odom_stop", "detections_stop")


@dataclass(frozen=True)
class TwinFault:
    """A fault the twin plays, as a real robot's Nav2 or arm would: on ``robot``'s ``goal``-th navigation goal
    (``nav_reject``: refused; ``nav_abort``: aborted with Nav2's error ``code``; ``nav_stall``: accepted, the robot
    never moves) or ``goal``-th manipulation goal (``arm_silent``: accepted, never answered); or from ``after_s``
    seconds of the run on, its odometry and TF (``odom_stop``) or its detector (``detections_stop``) fall silent."""

    robot: str
    kind: str
    goal: int = 1
    code: int = 9000
    after_s: float = 0.0

    @staticmethod
    def parse(entries: Any) -> list[TwinFault]:
        if not isinstance(entries, list):
            raise ValueError("faults_json must be a JSON list of {robot, kind, goal, code}")
        faults = []
        for entry in entries:
            try:
                fault = TwinFault(**entry)
            except TypeError as exc:
                raise ValueError(f"twin fault {entry!r}: {exc}") from None
            if fault.kind not in TWIN_FAULTS or fault.goal < 1:
                raise ValueError(f"twin fault {entry!r}: kind one of {', '.join(TWIN_FAULTS)}, goal from 1")
            faults.append(fault)
        return faults


class MessageAttacker:
    def __init__(
        self,
        node: Any,
        robots: Sequence[str],
        insiders: Mapping[str, Signer],
        outsider: Signer,
        rooms: Sequence[str],
        team: Verifier | None = None,
        watch: str | None = None,
    ):
        """``insiders``: a signer with each robot's real key (a forgery signed by another robot's key); ``outsider``:
        a key the team does not know; ``team``: when given, every genuine message heard is verified with it and the
        reasons it fails are kept in :attr:`unverified` (none, when the planners sign)."""
        from coteam_interfaces.msg import RobotStatus, TeamMessage

        from coteam_ros.qos import LATCHED, TEAM_MESSAGES

        self._message_type = TeamMessage
        self.robots, self.insiders, self.outsider, self.rooms, self.team = list(robots), insiders, outsider, rooms, team
        self.forged: set[tuple[str, int]] = set()  # (name, step) spoken for
        self.genuine: set[tuple[str, int]] = set()  # (sender, step) heard from the robots and replayed
        self.published = 0
        self.unverified: list[str] = []
        self._publisher = node.create_publisher(TeamMessage, "/team/messages", TEAM_MESSAGES)
        node.create_subscription(TeamMessage, "/team/messages", self._on_message, TEAM_MESSAGES)
        node.create_subscription(RobotStatus, f"/{watch or self.robots[0]}/status", self._on_status, LATCHED)

    def _on_status(self, status: Any) -> None:
        for step in range(status.clock, status.clock + 3):
            for name in self.robots:
                if (name, step) not in self.forged:
                    self.forged.add((name, step))
                    self._forge(name, step)

    def _forge(self, name: str, step: int) -> None:
        text = f"{name} {FORGED_MARK}, nothing is left to find"
        payload = json.dumps({"kind": "status", "agent": name, "room": self.rooms[0], "explored": list(self.rooms)})
        other = next((s for r, s in self.insiders.items() if r != name), None)
        for signer in (None, other, self.outsider):
            message = self._message_type(sender=name, text=text, step=step, payload_json=payload)
            if signer is not None:
                envelope = signer.sign("", step, text, payload)
                message.seq, message.signature = envelope.seq, envelope.signature
            self._send(message)

    def _on_message(self, message: Any) -> None:
        if FORGED_MARK in message.text or (message.sender, message.step) in self.genuine:
            return  # its own, or a genuine message it replayed already
        self.genuine.add((message.sender, message.step))
        if self.team is not None:
            envelope = Envelope(message.seq, message.signature)
            why = self.team.check(
                message.sender, message.receiver, message.step, message.text, message.payload_json, envelope
            )
            if why is not None:
                self.unverified.append(why)
        self._send(message)  # the genuine message, a second time

    def _send(self, message: Any) -> None:
        self._publisher.publish(message)
        self.published += 1
