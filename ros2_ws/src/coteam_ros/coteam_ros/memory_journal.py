"""A planner's memory on disk: every observation it took in (with the message texts handed over with it), one JSON
line each after a header naming the episode, so that a planner started again in the same episode (a restarted robot,
a crashed node) rebuilds what it had seen and heard by taking them in again before its first new status.

The memory is the fold of the observations (``AgentBrain.observe``): replaying them gives the same objects, rooms,
teammates and messages. What it decided and said itself is not kept: a restarted robot decides afresh.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from coteam.domain.observation import Observation, observation_from_dict, observation_to_dict

FORMAT = "coteam-memory/1"


class MemoryJournal:
    """The journal at ``path`` of ``robot``'s memory in the episode ``episode`` (its name and seed)."""

    def __init__(self, path: str | Path, robot: str, episode: str, seed: int) -> None:
        self.path = Path(path)
        self.header = {"format": FORMAT, "robot": robot, "episode": episode, "seed": seed}
        self._out: TextIO | None = None

    def recall(self, warn: Callable[[str], Any]) -> list[Observation]:
        """The observations kept for this robot and episode, in order. A journal of another episode (or robot),
        or none, gives nothing; a line that cannot be read (a write cut short by a kill) ends the recall there, said
        in one line through ``warn``. The journal then goes on from what was recalled."""
        kept: list[Observation] = []
        lines = self.path.read_text().splitlines() if self.path.is_file() else []
        if lines and _json(lines[0]) == self.header:
            for number, line in enumerate(lines[1:], start=2):
                try:
                    kept.append(observation_from_dict(json.loads(line)))
                except (ValueError, TypeError, KeyError) as exc:
                    warn(f"{self.path}: line {number} cannot be read ({exc}): recalled the {len(kept)} before it")
                    break
        elif lines:
            warn(f"{self.path}: a memory of another episode or robot: starting afresh")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._out = self.path.open("w")
        self._write(self.header)
        for obs in kept:
            self._write(observation_to_dict(obs))
        return kept

    def keep(self, obs: Observation) -> None:
        """Add an observation taken in (flushed at once: a kill loses at most the line being written)."""
        assert self._out is not None, "recall() first"
        self._write(observation_to_dict(obs))

    def _write(self, record: dict[str, Any]) -> None:
        assert self._out is not None
        self._out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None


def _json(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None
