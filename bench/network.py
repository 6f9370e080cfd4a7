"""Team messages between robots on separate hosts: the "Team messages across hosts" section of docs/benchmarks.md.

    python bench/network.py --out docs/benchmarks.md   # ~4 min; needs root (network namespaces, TUN)

Two hosts of a :class:`coteam_testkit.netlab.VirtualLan` (network namespaces on one LAN, DDS over UDP, discovery on the
subnet): the publisher of ``bench/ros_team.py``'s latency test on ``alice``, its subscriber on ``bob``, signed
``TeamMessage`` of 200 characters at 100 Hz with the planners' QoS, under each link profile of
:data:`coteam_testkit.netlab.PROFILES`. With coteam's Fast DDS profile (``coteam_ros/dds/fastdds_team.xml``, what
``coteam launch`` gives its nodes) and, for the clean and lossy links, with Fast DDS' stock settings.
Latency = receive time - ``header.stamp`` (one machine, one clock), over the messages that arrived.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

TITLE = "## Team messages across hosts"
SIZE = 200
STOCK_ALSO = ("clean", "loss 10 %", "loss 30 %")  # profiles also measured with Fast DDS' stock settings


def section(command: str) -> str:
    from coteam.home.signing import init_keystore
    from coteam_ros.launcher import child_env
    from coteam_testkit.netlab import PROFILES, VirtualLan
    from ros_team import message_latency, ros_isolation
    from sections import machine  # bench/ is on sys.path when run as a script

    rows = []
    with tempfile.TemporaryDirectory(prefix="network-bench-") as tmp_name, ros_isolation(78, Path(tmp_name)):
        keys = Path(tmp_name) / "keys"
        init_keystore(keys, ["alice"])
        for name, profile in PROFILES.items():
            for stock in (False, True) if name in STOCK_ALSO else (False,):
                with VirtualLan(["alice", "bob"], profile) as lan:
                    env = lan.env(child_env())
                    if stock:
                        env.pop("FASTDDS_DEFAULT_PROFILES_FILE")
                    x = message_latency(SIZE, keys, lan=lan, env=env)
                    link = lan.total()
                print(name, "stock" if stock else "coteam", x, link, flush=True)
                rows.append(
                    f"| {name} | `{profile.netem()}` | {'stock' if stock else 'coteam'} | {x['count']} | "
                    f"{x['p50']:.1f} | {x['p99']:.1f} | {x['max']:.1f} | {link.sent} | {link.dropped} | "
                    f"{link.duplicated} |"
                )
    lines = [
        TITLE,
        "",
        f"Produced by `{command}` on {machine()}. Two hosts (network namespaces) on a virtual LAN "
        "(`coteam_testkit.netlab`): alice publishes 1,000 signed `TeamMessage`s of 200 characters at 100 Hz (after 50 "
        "unmeasured ones) with the planners' QoS, bob's subscriber verifies each and takes its receive time; "
        "latency = receive time - `header.stamp`, one clock. Each link profile is what netem would do (its `tc` "
        "arguments are shown; this machine's kernel has no netem, the lab's switch applies the same). *DDS "
        "settings*: coteam's Fast DDS profile (`coteam_ros/dds/fastdds_team.xml`, what `coteam launch` uses: "
        "heartbeats every 100 ms) or Fast DDS' stock ones (every 3 s). *packets*: every IP packet between the two "
        "hosts, both ways, discovery included.",
        "",
        "| link | netem equivalent | DDS settings | messages arrived (of 1000) | p50 ms | p99 ms | max ms | packets "
        "| dropped | duplicated |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "How to read it: the clean row is the cost of crossing a link at all (against loopback in the ROS 2 team "
        "stack section). Under loss a reliable team message arrives late, not never; *max* is the message that "
        "waited longest for its repair. A newer sample reveals a gap to the reader at once, so at 100 Hz most "
        "repairs are quick with either setting (p50, p99); a lost sample that nothing follows waits for the "
        "writer's next periodic heartbeat: up to 3 s with stock settings, 100 ms with coteam's. A team's messages "
        "are such a sparse stream, which is why the lockstep team of docs/reliability.md needs the profile. "
        "Duplicated packets are discarded by DDS (sequence numbers) before the planner sees them.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from sections import section_main

    return section_main(argv, "bench/network.py", __doc__ or "", section, TITLE)


if __name__ == "__main__":
    sys.exit(main())
