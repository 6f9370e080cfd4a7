"""Motion and manipulation constants of the benchmarks' robots, shared by the simulator and the planners."""

from __future__ import annotations

from dataclasses import dataclass, field

from coteam.domain.world import Benchmark


@dataclass(frozen=True)
class Physics:
    """What a robot's primitives do and cost. The simulator enforces these rules; planners read the same
    object (``EpisodeInfo.physics``) to estimate costs, so the two never disagree. Defaults are calibrated
    against the published baselines (docs/benchmarks.md)."""

    cwah_walk_step_m: float = 0.27  # distance covered by one [walktowards] or [walkto] step
    cwah_reach_m: float = 1.0  # "close to" threshold for open / grab / put
    tdw_forward_m: float = 0.5
    tdw_turn_deg: int = 15
    tdw_reach_m: float = 1.5
    tdw_near_visible_m: float = 0.6  # objects this close are seen whatever the heading
    tdw_frames: dict[str, int] = field(
        default_factory=lambda: {
            "move_forward": 9,
            "turn_left": 5,
            "turn_right": 5,
            "grasp": 30,
            "put_in": 25,
            "drop": 10,
            "send_message": 1,
            "wait": 1,
            "failed": 2,
        }
    )
    message_chars_per_frame: int = 500

    def stride_m(self, benchmark: Benchmark) -> float:
        """How far one move primitive takes a robot: a C-WAH walk step, a TDW-MAT step forward."""
        return self.cwah_walk_step_m if benchmark is Benchmark.CWAH else self.tdw_forward_m
