"""Where a lockstep step's wall time goes, from the records of ``bench/steptrace/sitecustomize.py`` (every node process
of a traced run writes what its executor ran and what it published, on one machine-wide clock).

A step runs from the bridge's callback that steps the simulator (the one publishing ``/clock``) to the next one. That
next callback was started by a message (the last robot's ``step_tick``), published in some callback of some node,
started in turn by a message, ... back to the bridge's step: the step's *critical path*. :func:`breakdown` follows it
hop by hop and splits the step's time into

* ``bridge``: the bridge's step callback until it published what the path starts from (simulating, and what it sent
  before);
* ``nodes``: the robots' nodes (and a coordinator) working in their callbacks until they published the next hop;
* ``delivery``: from a publication to the receiving callback's start, the receiver being idle (DDS, waking the
  process, rclpy building its wait set);
* ``queued``: the part of a delivery the receiver spent finishing other callbacks first;
* ``other``: what the path cannot follow to a publication (an action's goal answer or result, a timer).

It also counts the hops and each kind of node's CPU per step: in its callbacks, and in rclpy's executor between them.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PARTS = ("bridge", "nodes", "delivery", "queued", "other")
BRIDGE = "sim_bridge"


@dataclass
class Breakdown:
    steps: int  # steps followed
    step_ms: float  # their mean wall time
    hops: float  # messages on the critical path, per step
    parts: dict[str, float]  # PARTS -> ms per step
    cpu: dict[str, tuple[float, float]] = field(default_factory=dict)  # node kind -> (callbacks, executor) ms/step


@dataclass
class _Process:
    name: str  # planner@alice
    callbacks: list[dict[str, Any]]  # sorted by start
    starts: list[float]


def _read(folder: Path) -> tuple[dict[str, _Process], dict[str, list[tuple[float, Any]]], dict[str, list[dict]]]:
    processes: dict[str, _Process] = {}
    published: dict[str, list[tuple[float, Any]]] = defaultdict(list)  # topic -> [(time, step)], by time
    raw: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        name = path.stem.rsplit("-", 1)[0]
        records = [json.loads(line) for line in path.read_text().splitlines() if line]
        raw[name] = records
        callbacks = sorted((r for r in records if r["k"] == "cb"), key=lambda r: r["t1"])
        processes[name] = _Process(name, callbacks, [c["t1"] for c in callbacks])
        for r in records:
            if r["k"] in ("pub", "fb"):
                published[r["topic"]].append((r["t"], r["step"], name))
    for entries in published.values():
        entries.sort(key=lambda e: e[0])
    return processes, published, raw


def _containing(process: _Process, t: float) -> dict | None:
    i = bisect.bisect_right(process.starts, t) - 1
    if i < 0 or process.callbacks[i]["t2"] < t:
        return None
    return process.callbacks[i]


def _latest(published: dict, topic: str, t: float, step: Any) -> tuple[float, Any, str] | None:
    entries = published.get(topic, [])
    i = bisect.bisect_right(entries, t, key=lambda e: e[0]) - 1
    while i >= 0:
        at, their_step, process = entries[i]
        if step is None or their_step is None or their_step == step:
            return at, their_step, process
        i -= 1
    return None


def _origin(processes: dict, published: dict, servers: dict, process: str, callback: dict) -> tuple | None:
    """Where the message that started ``callback`` was published: (time, step, process), or None."""
    what, t = callback["what"], callback["t1"]
    if what.startswith("sub:"):
        return _latest(published, what[4:], t, callback["step"])
    action = re.match(r"(ac|as):(\S+?)/([a-z+]+)$", what)
    if action:
        kind, name, parts = action.groups()
        parts = parts.split("+")
        if kind == "ac" and "feedback" in parts:
            return _latest(published, f"as:{name}", t, callback["step"])
        if "goal" in parts:
            return _latest(published, f"{kind}:{name}/goal", t, None)
        if kind == "ac" and "result" in parts and name in servers:  # the server's last callback before
            server = processes[servers[name]]
            i = bisect.bisect_right(server.starts, t) - 1
            while i >= 0 and server.callbacks[i]["t2"] > t:
                i -= 1
            return (server.callbacks[i]["t2"], None, server.name) if i >= 0 else None
    if what == "task":  # a task a callback of this process created: the one that ended last
        own = processes[process]
        i = bisect.bisect_right(own.starts, t) - 2
        return (own.callbacks[i]["t2"], None, process) if i >= 0 else None
    return None


def breakdown(folder: Path) -> Breakdown:
    processes, published, raw = _read(folder)
    bridge = next(name for name in processes if name.split("@")[0] == BRIDGE)
    servers = {}
    for name, process in processes.items():
        for c in process.callbacks:
            if (m := re.match(r"as:(\S+?)/(goal|result|cancel)", c["what"])) is not None:
                servers[m.group(1)] = name
    clock = [t for t, _, name in published.get("/clock", []) if name == bridge]
    steps = [_containing(processes[bridge], t) for t in clock]
    parts: Counter[str] = Counter()
    followed, total, hops = 0, 0.0, 0
    for start, end in itertools.pairwise(steps[1:]):
        if start is None or end is None:
            continue
        followed += 1
        total += end["t1"] - start["t1"]
        current, where = end, bridge
        for _ in range(100):
            origin = _origin(processes, published, servers, where, current)
            if origin is None or origin[0] < start["t1"]:
                parts["other"] += current["t1"] - start["t1"]
                break
            at, _, sender = origin
            sent_in = _containing(processes[sender], at)
            queued = max(0.0, current["t0"] - at)
            parts["queued"] += queued
            parts["delivery"] += current["t1"] - at - queued
            hops += 1
            if sent_in is start:
                parts["bridge"] += at - start["t1"]
                break
            if sent_in is None or sent_in["t1"] < start["t1"]:
                parts["other"] += at - start["t1"]
                break
            parts["nodes"] += at - sent_in["t1"]
            current, where = sent_in, sender
    per_step = 1000 / max(1, followed)
    cpu: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    first, last = (clock[0], clock[-1]) if clock else (0.0, 0.0)
    for name, records in raw.items():
        kind = name.split("@")[0]
        for r in records:
            if r["k"] == "cb" and first <= r["t1"] <= last:
                cpu[kind][0] += r["cpu"]
                cpu[kind][1] += r["wait_cpu"]
            elif r["k"] == "wait_cpu" and first <= r["t"] <= last:
                cpu[kind][1] += r["cpu"]
    per_clock = 1000 / max(1, len(clock) - 1)
    return Breakdown(
        steps=followed,
        step_ms=total * per_step,
        hops=hops / max(1, followed),
        parts={part: parts[part] * per_step for part in PARTS},
        cpu={kind: (c * per_clock, e * per_clock) for kind, (c, e) in cpu.items()},
    )
