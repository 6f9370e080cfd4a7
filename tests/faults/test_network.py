"""The team on separate hosts (network namespaces of :mod:`coteam_testkit.netlab`) over a faulty LAN.

* the LAN itself: what a link profile does to UDP datagrams between two hosts (loss, duplication, delay, a partition
  and its healing), counted exactly;
* a lockstep team (the simulator on one host, each robot's nodes on its own) under every link profile is step for
  step the in-process run: the same steps, actions, messages and decisions, every message believed once.

Needs root (namespaces, TUN). CI runs as root, so there these tests run; elsewhere they skip saying why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ros_isolation import isolate_ros, node_complaints
from ros_team_run import RUN_TIMEOUT_S, comparable, write_config
from talking import first_talking_episode

rclpy = pytest.importorskip("rclpy")

from coteam_harness.trace import load_trace  # noqa: E402
from coteam_testkit.netlab import PROFILES, LinkProfile, VirtualLan, lab_unavailable, run_team_on_lan  # noqa: E402

pytestmark = [pytest.mark.team]  # starts a team of ROS 2 processes: `make test` runs these apart
if os.geteuid() != 0:  # as root a lab must work: a failure to make one fails the tests, it does not skip them
    pytestmark.append(pytest.mark.skip(reason=f"no network lab: {lab_unavailable()}"))

RECEIVER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7400))
s.settimeout(float(sys.argv[1]))
got = []
try:
    while True:
        data, _ = s.recvfrom(100)
        got.append((data.decode(), time.time()))
except socket.timeout:
    pass
print("\\n".join(f"{d} {t}" for d, t in got))
"""

SENDER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(f"{i} {time.time()}".encode(), (sys.argv[1], 7400))
    time.sleep(0.002)
"""


def _datagrams(lan: VirtualLan, count: int, quiet_s: float = 1.5) -> list[tuple[int, float]]:
    """``count`` datagrams from host a to host b; what b received: (index, seconds in flight)."""
    receiver = subprocess.Popen(
        lan.command("b", [sys.executable, "-c", RECEIVER, str(quiet_s)]), stdout=subprocess.PIPE, text=True
    )
    time.sleep(0.5)
    subprocess.run(lan.command("a", [sys.executable, "-c", SENDER, lan.address("b"), str(count)]), check=True)
    out, _ = receiver.communicate(timeout=60)
    received = []
    for line in out.split("\n"):
        if line:
            index, sent, arrived = line.split()
            received.append((int(index), float(arrived) - float(sent)))
    return received


def test_link_profiles_are_validated_and_say_their_netem_equivalent() -> None:
    assert PROFILES["delay 200 ± 50 ms"].netem() == "netem delay 200ms 50ms"
    assert PROFILES["loss 30 %"].netem() == "netem loss 30%"
    assert PROFILES["reordering"].netem() == "netem delay 20ms 10ms reorder 25%"
    with pytest.raises(ValueError, match="fraction"):
        LinkProfile("bad", loss=1.5)
    with pytest.raises(ValueError, match="jitter"):
        LinkProfile("bad", delay_s=0.01, jitter_s=0.02)


def test_the_lan_loses_duplicates_delays_and_cuts_as_its_profile_says() -> None:
    with VirtualLan(["a", "b"]) as lan:
        clean = _datagrams(lan, 200)
        assert sorted(i for i, _ in clean) == list(range(200))

        lan.set_profile(PROFILES["loss 30 %"])
        before = lan.counts()[("a", "b")]
        lossy = _datagrams(lan, 400)
        after = lan.counts()[("a", "b")]
        dropped = after.dropped - before.dropped
        assert len(lossy) == 400 - dropped and 80 <= dropped <= 160  # 30 % of 400 is 120

        lan.set_profile(PROFILES["duplication 10 %"])
        doubled = _datagrams(lan, 400)
        assert len(doubled) == 400 + lan.counts()[("a", "b")].duplicated
        assert 20 <= len(doubled) - 400 <= 60

        lan.set_profile(PROFILES["delay 200 ± 50 ms"])
        delays = sorted(flight for _, flight in _datagrams(lan, 50))
        # the link holds each datagram 150-250 ms; a loaded machine may add its scheduling on top, never take away
        assert delays[0] >= 0.14 and delays[-1] <= 0.50 and delays[-1] - delays[0] > 0.04

        lan.set_profile(PROFILES["clean"])
        lan.cut(["a"])
        assert _datagrams(lan, 50, quiet_s=1.0) == []
        assert lan.counts()[("a", "b")].cut >= 50
        lan.heal()
        assert len(_datagrams(lan, 50)) == 50
    assert not [
        ns
        for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        if ns.startswith(f"coteam{os.getpid()}x")
    ], "the lab removes its namespaces"


def test_a_lab_removes_the_namespaces_a_killed_lab_left() -> None:
    stale = "coteam999999999x0-alice"  # no such pid
    subprocess.run(["ip", "netns", "add", stale], check=True)
    with VirtualLan(["a"]):
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert stale not in listed


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_lockstep_team_on_separate_hosts_is_the_in_process_run_under_every_link_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str
) -> None:
    isolate_ros(tmp_path, monkeypatch)
    episode, expected = first_talking_episode("cwah-test", trace_path=tmp_path / "in_process.json")
    config = write_config(tmp_path / "team.yaml", f"suite: cwah-test, episode: {episode}, seed: 0, mode: lockstep")
    out = tmp_path / "out"
    out.mkdir()
    lan_run = run_team_on_lan(config, tmp_path, out / "results.json", PROFILES[profile], timeout=RUN_TIMEOUT_S)
    link = lan_run.link
    assert lan_run.code == 0
    assert link.sent > 1000, "the team's traffic crossed the LAN"
    assert (link.dropped > 0) == (PROFILES[profile].loss > 0)
    assert (link.duplicated > 0) == (PROFILES[profile].duplicate > 0)
    got = json.loads((out / "results.json").read_text())["episodes"][0]
    complaints = node_complaints(tmp_path)
    for key in ("success", "steps", "transport_rate", "messages", "message_chars", "decisions"):
        assert got[key] == getattr(expected, key), f"{key}; the nodes said:\n{complaints}"
    assert got["messages_dropped"] == 0, "no message refused: each believed once, none twice"
    ours, theirs = comparable(load_trace(out / "trace.json")), comparable(load_trace(tmp_path / "in_process.json"))
    assert ours == theirs, f"the nodes said:\n{complaints}"
    assert theirs["messages"], "the episode exercises team messages"
