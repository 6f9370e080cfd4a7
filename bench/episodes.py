"""The bench scripts' episodes that measure outcomes (not time): played on the local worker pool, ``--workers`` of
the script (default: the machine's cores), with the results of one process playing them in order
(:func:`coteam_harness.pool.play_all`). Scripts that time decisions, learn across episodes or serve a model from
their own process play theirs in order in one process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coteam_harness.pool import default_workers, play_all
from coteam_harness.results import EpisodeResult
from coteam_sim.suites import EpisodeSpec

workers = default_workers()  # the script's --workers (ros_team.section_main sets it)


def play(
    specs: Sequence[EpisodeSpec], method: str, params: dict[str, Any] | None = None, *, agents: int = 2, seed: int = 0
) -> list[EpisodeResult]:
    """``method``'s results on ``specs``, in their order."""
    return play_all(specs, method, params, agents=agents, seed=seed, workers=workers)
