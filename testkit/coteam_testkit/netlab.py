"""A lab of separate hosts on one machine: each host a Linux network namespace, every host on one virtual LAN whose
links can lose, delay, reorder, duplicate or cut packets, so that a team's DDS discovery and traffic cross a real
IP link (another kernel network stack, a multicast route, fragmentation) rather than loopback.

Each host gets a TUN interface (``lan0``, ``10.77.0.<n>/24``, multicast on, the multicast range routed to it) and
the loopback. The LAN itself is a switch in this process: it reads every IP packet a host sends and writes it to
the host it is addressed to (multicast and broadcast: to every other host), after the link's :class:`LinkProfile`
(seeded, so a profile's drops are repeatable for the same traffic) and any partition (:meth:`VirtualLan.cut`).

Why not ``tc netem`` on veth pairs: netem needs the kernel's ``sch_netem``, which many VM and container kernels
leave out (the CI machine's among them: ``tc qdisc add ... netem`` answers "Specified qdisc kind is unknown"), and
netem cannot cut a link for a while and count what it did to each packet. :meth:`LinkProfile.netem` gives the
equivalent netem arguments, for a lab of real hosts.

Needs root (namespaces, TUN) and iproute2's ``ip``; :func:`lab_unavailable` says why a lab cannot be made here.
Processes run on a host with :meth:`VirtualLan.command` (``ip netns exec``) and :data:`HOST_ENV` (DDS over UDP,
discovery on the subnet; Fast DDS' shared-memory transport would carry traffic between hosts past the link).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import heapq
import ipaddress
import itertools
import os
import random
import re
import select
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from coteam_ros.launcher import Child, child_env, plan, run
from coteam_ros.team_config import load_config

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
SUBNET = ipaddress.IPv4Network("10.77.0.0/24")
LAN_DEVICE = "lan0"
MULTICAST = ipaddress.IPv4Network("224.0.0.0/4")
BROADCAST = (b"\xff\xff\xff\xff", SUBNET.broadcast_address.packed)
HOST_ENV = {
    "ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET",
    "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
}
_labs = itertools.count()
STALE_LAB = re.compile(r"coteam(\d+)x\d+-.+")  # a lab's namespace: coteam<pid>x<lab>-<host>


@dataclass(frozen=True)
class LinkProfile:
    """What a link does to each packet, as netem would: lose it (``loss``, a fraction), hold it ``delay_s`` ±
    ``jitter_s`` (uniform), send a fraction ``reorder`` of the delayed packets at once (so they overtake the
    others), and send a fraction ``duplicate`` twice."""

    name: str
    loss: float = 0.0
    delay_s: float = 0.0
    jitter_s: float = 0.0
    reorder: float = 0.0
    duplicate: float = 0.0

    def __post_init__(self) -> None:
        for key in ("loss", "reorder", "duplicate"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ValueError(f"link profile {self.name}: {key} is a fraction in [0, 1]")
        if self.delay_s < 0 or not 0 <= self.jitter_s <= self.delay_s:
            raise ValueError(f"link profile {self.name}: need 0 <= jitter_s <= delay_s")

    def netem(self) -> str:
        """The equivalent ``tc qdisc add dev DEV root netem ...`` arguments."""
        parts = []
        if self.delay_s:
            parts.append(f"delay {self.delay_s * 1000:g}ms" + (f" {self.jitter_s * 1000:g}ms" if self.jitter_s else ""))
        if self.reorder:
            parts.append(f"reorder {self.reorder * 100:g}%")
        if self.loss:
            parts.append(f"loss {self.loss * 100:g}%")
        if self.duplicate:
            parts.append(f"duplicate {self.duplicate * 100:g}%")
        return "netem " + " ".join(parts) if parts else "pfifo"


PROFILES: dict[str, LinkProfile] = {
    p.name: p
    for p in (
        LinkProfile("clean"),
        LinkProfile("loss 10 %", loss=0.10),
        LinkProfile("loss 30 %", loss=0.30),
        LinkProfile("delay 200 ± 50 ms", delay_s=0.200, jitter_s=0.050),
        LinkProfile("reordering", delay_s=0.020, jitter_s=0.010, reorder=0.25),
        LinkProfile("duplication 10 %", duplicate=0.10),
    )
}


@dataclass
class LinkCounts:
    """What the LAN did to the packets one host sent to another."""

    sent: int = 0
    dropped: int = 0
    duplicated: int = 0
    cut: int = 0  # dropped by a partition
    reordered: int = 0  # sent at once, ahead of delayed packets

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


class LabUnavailable(RuntimeError):
    """A lab cannot be made on this machine; the message says what is missing."""


def lab_unavailable() -> str | None:
    """Why no lab can be made here (None when one can): not root, no ``ip``, no TUN device."""
    if os.geteuid() != 0:
        return "network namespaces and TUN devices need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (Debian: apt install iproute2)"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun (the kernel's TUN driver)"
    return None


def _remove_stale_labs() -> None:
    """Delete the namespaces of labs whose process is gone (killed before it could clean up)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    for line in listed:
        name = line.split(" ")[0]
        if (match := STALE_LAB.fullmatch(name)) is not None and not os.path.exists(f"/proc/{match[1]}"):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise LabUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip() or done.returncode}")


def _open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    except OSError as exc:
        os.close(fd)
        raise LabUnavailable(f"cannot make TUN device {name}: {exc}") from None
    return fd


@dataclass
class _Host:
    name: str
    netns: str
    address: ipaddress.IPv4Address
    fd: int
    device: str


@dataclass(order=True)
class _Due:
    at: float
    order: int
    fd: int = field(compare=False)
    packet: bytes = field(compare=False)


class VirtualLan:
    """Hosts ``hosts`` (names) on one LAN; a context manager that removes every namespace it made.

    ``profile`` applies to every link until :meth:`set_profile`; :meth:`cut` partitions the LAN between two groups
    of hosts until :meth:`heal`. :meth:`counts` says what happened to the packets between each pair of hosts."""

    def __init__(self, hosts: Sequence[str], profile: LinkProfile = PROFILES["clean"], seed: int = 0) -> None:
        if reason := lab_unavailable():
            raise LabUnavailable(reason)
        if len(set(hosts)) != len(hosts) or not hosts:
            raise ValueError(f"host names must be distinct and at least one: {list(hosts)}")
        if len(hosts) > SUBNET.num_addresses - 2:
            raise ValueError(f"at most {SUBNET.num_addresses - 2} hosts on {SUBNET}")
        _remove_stale_labs()
        self.profile = profile
        self._random = random.Random(seed)
        self._lab = f"coteam{os.getpid()}x{next(_labs)}"
        self._hosts: list[_Host] = []
        self._by_address: dict[bytes, _Host] = {}
        self._counts: dict[tuple[str, str], LinkCounts] = {}
        self._cut: set[frozenset[str]] = set()
        self._lock = threading.Lock()
        self._due: list[_Due] = []
        self._order = itertools.count()
        self._stop = threading.Event()
        try:
            for index, name in enumerate(hosts, start=1):
                self._add_host(name, SUBNET.network_address + index, index)
        except BaseException:
            self.close()
            raise
        self._thread = threading.Thread(target=self._switch, name=f"{self._lab}-switch", daemon=True)
        self._thread.start()

    def _add_host(self, name: str, address: ipaddress.IPv4Address, index: int) -> None:
        netns, device = f"{self._lab}-{name}", f"{self._lab[-9:]}t{index}"[-15:]
        fd = _open_tun(device)
        host = _Host(name, netns, address, fd, device)
        self._hosts.append(host)  # closed by close() from here on, whatever fails next
        _ip("netns", "add", netns)
        _ip("link", "set", device, "netns", netns)
        _ip("-n", netns, "link", "set", device, "name", LAN_DEVICE)
        _ip("-n", netns, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", LAN_DEVICE)
        _ip("-n", netns, "link", "set", LAN_DEVICE, "multicast", "on", "up")
        _ip("-n", netns, "link", "set", "lo", "up")
        _ip("-n", netns, "route", "add", str(MULTICAST), "dev", LAN_DEVICE)
        self._by_address[address.packed] = host

    # -- what users call --------------------------------------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return [h.name for h in self._hosts]

    def address(self, host: str) -> str:
        return str(self._host(host).address)

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run on ``host`` (in its namespace; the process keeps its pid, environment and files)."""
        return ["ip", "netns", "exec", self._host(host).netns, *argv]

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with :data:`HOST_ENV`."""
        return {**(os.environ if base is None else base), **HOST_ENV}

    def set_profile(self, profile: LinkProfile) -> None:
        with self._lock:
            self.profile = profile

    def cut(self, side: Sequence[str], other: Sequence[str] | None = None) -> None:
        """Partition: nothing passes between a host of ``side`` and one of ``other`` (default: every other host)."""
        rest = [h for h in self.hosts if h not in side] if other is None else list(other)
        with self._lock:
            self._cut |= {frozenset((a, b)) for a in side for b in rest if a != b}

    def heal(self) -> None:
        with self._lock:
            self._cut.clear()

    def counts(self) -> dict[tuple[str, str], LinkCounts]:
        """Per (sender, receiver): what the LAN did to their packets so far."""
        with self._lock:
            return {k: LinkCounts(**v.as_dict()) for k, v in self._counts.items()}

    def total(self) -> LinkCounts:
        total = LinkCounts()
        for c in self.counts().values():
            for key, value in c.as_dict().items():
                setattr(total, key, getattr(total, key) + value)
        return total

    def close(self) -> None:
        self._stop.set()
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(timeout=2.0)
        for host in self._hosts:
            with contextlib.suppress(OSError):
                os.close(host.fd)
            subprocess.run(["ip", "netns", "delete", host.netns], capture_output=True)
        self._hosts.clear()

    def __enter__(self) -> VirtualLan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _host(self, name: str) -> _Host:
        for host in self._hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host {name!r} in this lab (hosts: {', '.join(self.hosts)})")

    # -- the switch -------------------------------------------------------------------------------------------------

    def _switch(self) -> None:
        by_fd = {h.fd: h for h in self._hosts}
        poller = select.poll()
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        while not self._stop.is_set():
            now = time.monotonic()
            while self._due and self._due[0].at <= now:
                due = heapq.heappop(self._due)
                with contextlib.suppress(OSError):  # a host's device gone while closing
                    os.write(due.fd, due.packet)
            wait_ms = 100 if not self._due else max(0, int((self._due[0].at - now) * 1000) + 1)
            for fd, _events in poller.poll(min(wait_ms, 100)):
                while True:
                    try:
                        packet = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    except OSError:
                        return
                    self._forward(by_fd[fd], packet)

    def _forward(self, sender: _Host, packet: bytes) -> None:
        if len(packet) < 20 or packet[0] >> 4 != 4:
            return  # IPv4 only (the hosts have no IPv6 address on the LAN)
        destination = packet[16:20]
        if destination[0] >> 4 == 0xE or destination in BROADCAST:
            receivers = [h for h in self._hosts if h is not sender]
        elif (host := self._by_address.get(destination)) is not None and host is not sender:
            receivers = [host]
        else:
            return
        now = time.monotonic()
        with self._lock:
            profile, draw = self.profile, self._random.random
            for receiver in receivers:
                counts = self._counts.setdefault((sender.name, receiver.name), LinkCounts())
                counts.sent += 1
                if frozenset((sender.name, receiver.name)) in self._cut:
                    counts.cut += 1
                    continue
                if profile.loss and draw() < profile.loss:
                    counts.dropped += 1
                    continue
                copies = 2 if profile.duplicate and draw() < profile.duplicate else 1
                counts.duplicated += copies - 1
                for _ in range(copies):
                    delay = profile.delay_s + (draw() * 2 - 1) * profile.jitter_s if profile.delay_s else 0.0
                    if profile.reorder and delay and draw() < profile.reorder:
                        delay = 0.0
                        counts.reordered += 1
                    heapq.heappush(self._due, _Due(now + delay, next(self._order), receiver.fd, packet))


SIM_HOST = "sim"
PLANNER_UP = "planner for "  # how a planner's first line starts (coteam_ros.nodes.planner): it beats from then on


def team_hosts(robots: Sequence[str]) -> list[str]:
    """The hosts of a team's lab: the simulator's (bridge, twin, coordinator) and one per robot."""
    return [SIM_HOST, *robots]


def place_team(children: Sequence[Child], lan: VirtualLan) -> list[Child]:
    """``children`` of :func:`coteam_ros.launcher.plan` each on its host: a robot's nodes (namespace ``/<robot>``)
    on the robot's, the rest on :data:`SIM_HOST`."""
    placed = []
    for child in children:
        robot = child.spec.namespace.strip("/") if child.spec is not None else ""
        host = robot if robot in lan.hosts else SIM_HOST
        placed.append(dataclasses.replace(child, argv=lan.command(host, child.argv)))
    return placed


@dataclass(frozen=True)
class Partition:
    """Cut the LAN between hosts ``side`` and ``other`` for ``for_s`` seconds, ``after_s`` seconds after every
    robot's planner of both sides is up (has said so: :data:`PLANNER_UP`)."""

    side: tuple[str, ...]
    other: tuple[str, ...]
    after_s: float
    for_s: float

    def play(self, lan: VirtualLan, lines: Sequence[str], stop: threading.Event) -> None:
        """Wait for the planners in the nodes' output ``lines`` (a list that grows), then cut and heal (unless
        ``stop`` is set first)."""
        up = {f"[planner@/{robot}]" for robot in (*self.side, *self.other)}
        while not stop.is_set() and not all(any(u in x and PLANNER_UP in x for x in lines) for u in up):
            stop.wait(0.1)
        if stop.wait(self.after_s):
            return
        lan.cut(self.side, self.other)
        stop.wait(self.for_s)
        lan.heal()


@dataclass
class LanRun:
    """A team run on a lab: the launcher's exit code, its wall time and what the LAN did to the packets."""

    code: int
    wall_s: float
    link: LinkCounts


def run_team_on_lan(
    config: str | os.PathLike[str],
    workdir: str | os.PathLike[str],
    results_path: str | os.PathLike[str],
    profile: LinkProfile = PROFILES["clean"],
    *,
    partition: Partition | None = None,
    timeout: float | None = None,
    seed: int = 0,
    write: Callable[[str], None] = lambda _line: None,
) -> LanRun:
    """The team of ``config`` (a world run: the bridge writes ``results_path`` and the trace next to it) on a lab
    of :func:`team_hosts`, every link under ``profile``, cut once by ``partition``; the nodes' output lines go to
    ``write`` (default: nowhere)."""
    cfg = load_config(config)
    children = plan(cfg, workdir, results_path=results_path)
    with VirtualLan(team_hosts(cfg.robot_names), profile, seed) as lan:
        over = threading.Event()
        lines: list[str] = []
        cutter = None
        if partition is not None:
            cutter = threading.Thread(target=partition.play, args=(lan, lines, over), daemon=True)
            cutter.start()

        def output(line: str) -> None:
            lines.append(line)
            write(line)

        start = time.monotonic()
        try:
            code = run(place_team(children, lan), timeout=timeout, env=lan.env(child_env()), write=output)
        finally:
            over.set()
            if cutter is not None:
                cutter.join()
        return LanRun(code, time.monotonic() - start, lan.total())
