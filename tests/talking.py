"""Test helper: an episode in which a symbolic method talks. pce announces its next action only when that changes a
teammate's choice, cobel talks only on heavy miscoordination, so which episodes have messages depends on the
planner; tests of the message path find one."""

from __future__ import annotations

from pathlib import Path

from coteam_harness.results import EpisodeResult
from coteam_harness.runner import run_episode
from coteam_harness.trace import load_trace
from coteam_sim.suites import get_suite


def first_talking_episode(
    suite: str,
    trace_path: Path | None = None,
    method: str = "pce",
    *,
    agents: int = 2,
    addressed: bool = False,
) -> tuple[int, EpisodeResult]:
    """The first episode of ``suite`` in which ``method`` (``agents`` agents, seed 0) sends a message -- with
    ``addressed``, a message to one teammate -- and its result (its trace written to ``trace_path``)."""
    for index, spec in enumerate(get_suite(suite).episodes()):
        result = run_episode(spec.build(), method, n_agents=agents, seed=0, trace_path=trace_path)
        if result.messages and not addressed:
            return index, result
        if addressed and trace_path is not None and any(m.get("to") for m in load_trace(trace_path)["messages"]):
            return index, result
    raise AssertionError(f"{method} sends no {'addressed ' if addressed else ''}message in any episode of {suite}")
