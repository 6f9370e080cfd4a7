"""Heartbeats between a team's planners on ``/team/heartbeat``: a teammate silent past its lease is lost, and back
once heard again (:class:`coteam.home.roster.TeamRoster`).

Each planner publishes a heartbeat (a ``TeamMessage`` with no text, addressed to the heartbeat channel, signed when
the team signs) every ``period_s`` from a thread of its own, so a long decision (a slow model) does not silence it.
A teammate's heartbeat counts only when its signature and sequence number check out (a forger cannot keep a dead
robot alive); an accepted team message or intent counts too (:meth:`TeamHeartbeat.heard`). Every change is handed
to ``on_change`` once. The QoS is best effort (``coteam_ros.qos.HEARTBEATS``): a lost heartbeat is replaced by the
next, and the lease spans ten of them, so a lossy link does not lose a robot.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from coteam_interfaces.msg import TeamMessage
from std_msgs.msg import Header

from coteam.home.roster import RosterChange, TeamRoster
from coteam.home.signing import Envelope, Signer, Verifier
from coteam_ros.qos import HEARTBEATS, own_publisher, own_subscription
from coteam_ros.runtime import wall_timer

HEARTBEAT = "/team/heartbeat"  # the channel, and the receiver a heartbeat is signed for
STARTUP_S = 60.0  # a teammate never heard is lost this long after my start (as the bridge's first-tick wait)


class TeamHeartbeat:
    def __init__(
        self,
        node: Any,
        robot: str,
        teammates: Iterable[str],
        on_change: Callable[[RosterChange], None],
        *,
        period_s: float,
        lease_s: float,
        keys: tuple[Signer, Verifier] | None = None,
        step: Callable[[], int] = lambda: 0,
    ):
        if not 0 < period_s < lease_s:
            raise ValueError(f"heartbeat_period_s must be > 0 and below teammate_lease_s, got {period_s}, {lease_s}")
        self.node, self.robot, self.on_change, self.step = node, robot, on_change, step
        self.period_s = period_s
        self.signer, self.verifier = keys if keys is not None else (None, None)
        self.roster = TeamRoster(teammates, lease_s, time.monotonic(), startup_s=max(STARTUP_S, lease_s))
        self.publisher = node.create_publisher(TeamMessage, HEARTBEAT, HEARTBEATS, event_callbacks=own_publisher())
        node.create_subscription(
            TeamMessage, HEARTBEAT, self._on_heartbeat, HEARTBEATS, event_callbacks=own_subscription()
        )
        wall_timer(node, min(0.1, period_s), self._expire)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"{robot}-heartbeat", daemon=True)
        self._thread.start()

    def heard(self, teammate: str) -> None:
        """A sign of life from ``teammate`` (an accepted message, a heartbeat); the first is logged (``hears bob``)."""
        if self.roster.last_heard.get(teammate, 0.0) is None:
            self.node.get_logger().info(f"hears {teammate}")
        change = self.roster.heard(teammate, time.monotonic())
        if change is not None:
            self.on_change(change)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2 * self.period_s)

    def _beat(self) -> None:
        while not self._stop.wait(self.period_s):
            message = TeamMessage(header=Header(), sender=self.robot, receiver=HEARTBEAT, step=self.step())
            if self.signer is not None:
                envelope = self.signer.sign(HEARTBEAT, message.step, "", "")
                message.seq, message.signature = envelope.seq, envelope.signature
            with contextlib.suppress(Exception):  # the node is shutting down
                self.publisher.publish(message)

    def _on_heartbeat(self, message: TeamMessage) -> None:
        if message.sender == self.robot or message.receiver != HEARTBEAT:
            return
        if self.verifier is not None:
            envelope = Envelope(message.seq, message.signature)
            if self.verifier.check(message.sender, HEARTBEAT, message.step, "", "", envelope) is not None:
                return  # not the teammate's, or a replay: no sign of life
        self.heard(message.sender)

    def _expire(self) -> None:
        for change in self.roster.expire(time.monotonic()):
            self.on_change(change)
