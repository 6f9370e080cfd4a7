"""The simulator's navigator and manipulation mapping: what a robot's skill requests become as primitives.

One :class:`GoalNavigator` runs one navigation goal, one primitive per step, from the robot's pose and the outcome
of its previous primitive -- the same way in the in-process runner (:class:`coteam_harness.executor.SkillExecutor`)
and behind the ROS bridge's ``navigate_to_pose`` action servers, so both produce the same primitives.

* C-WAH: ``[walkto]`` steps along the shortest path to the goal point; the goal ends when the point is reached,
  fails with the step's failure, or with ``not reachable`` after three steps without progress.
* TDW-MAT: turn-penalised 4-connected lane path, axis-aligned ``[move_forward]`` moves after turning to the lane
  direction, replanning after a blocked move (gives up ``blocked`` after the fourth); ends at the goal's cell. Like
  a Nav2 goal checker with a free yaw tolerance, a travel goal ignores its final orientation; a goal at the robot's
  own position with a heading is a turn in place (ends within half a turn step of that heading).
"""

from __future__ import annotations

import math

from coteam.agent.skills import Manipulation, ManipulationKind, NavGoal, NavResult, SendMessage
from coteam.domain.geometry import angle_between
from coteam.domain.navigation import NavGrid, NoPathError
from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark, Vec2
from coteam_sim.primitives import Primitive, PrimitiveKind

_SAME_POINT_M = 1e-6


class GoalNavigator:
    """One navigation goal of one robot."""

    def __init__(self, benchmark: Benchmark, nav: NavGrid, config: Physics, goal: NavGoal, start: Vec2):
        self.benchmark = benchmark
        self.nav = nav
        self.config = config
        self.goal = goal
        self.turn_in_place = goal.heading is not None and math.dist(start, goal.position) <= _SAME_POINT_M
        self._last: Primitive | None = None
        self._stalled = 0
        self._blocked = 0
        self._lane: list[tuple[int, int]] = []
        self._before: Vec2 | None = None

    def plan(self, position: Vec2, heading: float, last_failure: str) -> Primitive | NavResult:
        """This step's primitive, or how the goal ended (then the robot has not acted for it this step)."""
        if self.benchmark == Benchmark.CWAH:
            result = self._walk(position, last_failure)
        elif self.turn_in_place:
            result = self._turn(heading, self.goal.heading)  # type: ignore[arg-type]
        else:
            result = self._drive(position, heading, last_failure)
        self._last = result if isinstance(result, Primitive) else None
        return result

    # C-WAH: walk towards a point ---------------------------------------------------------------------------------
    def _walk(self, position: Vec2, last_failure: str) -> Primitive | NavResult:
        if self._last is not None:
            if last_failure:
                return NavResult(False, last_failure)
            assert self._before is not None
            self._stalled = self._stalled + 1 if math.dist(self._before, position) < 1e-3 else 0
            if self._stalled >= 3:
                return NavResult(False, "not reachable")
        if math.dist(position, self.goal.position) <= _SAME_POINT_M:
            return NavResult(True)
        self._before = position
        x, y = self.goal.position
        return Primitive(PrimitiveKind.WALK_TO, (round(x * 1000), round(y * 1000)))

    # TDW-MAT: turn and move along lanes --------------------------------------------------------------------------
    def _turn(self, heading: float, desired: float) -> Primitive | NavResult:
        if angle_between(desired, heading) <= self.config.tdw_turn_deg / 2:
            return NavResult(True)
        left = (desired - heading) % 360 < 180
        return Primitive(PrimitiveKind.TURN_LEFT if left else PrimitiveKind.TURN_RIGHT)

    def _drive(self, position: Vec2, heading: float, last_failure: str) -> Primitive | NavResult:
        if self._last is not None and self._last.kind == PrimitiveKind.MOVE_FORWARD:
            if last_failure == "blocked":
                self._blocked += 1
                self._lane = []
                if self._blocked > 3:
                    return NavResult(False, "blocked")
            elif last_failure:
                return NavResult(False, last_failure)
        fp = self.nav.floorplan
        here = fp.cell_of(position)
        if not self._lane or here not in self._lane:
            try:
                self._lane = self.nav.lane_path(position, self.goal.position)
            except NoPathError:
                return NavResult(False, "not reachable")
            if here not in self._lane:  # off the free space (should not happen): head to the lane start
                self._lane.insert(0, here)
        self._lane = self._lane[self._lane.index(here) :]
        if len(self._lane) == 1:
            return NavResult(True)
        nxt = self._lane[1]
        desired = math.degrees(math.atan2(nxt[1] - here[1], nxt[0] - here[0])) % 360
        if heading % 360 != round(desired):
            turn = self._turn(heading, desired)
            return turn if isinstance(turn, Primitive) else Primitive(PrimitiveKind.TURN_LEFT)
        return Primitive(PrimitiveKind.MOVE_FORWARD)


def manipulation_primitive(benchmark: Benchmark, request: Manipulation) -> Primitive:
    """The primitive that carries out one manipulation request."""
    k = request.kind
    if benchmark == Benchmark.CWAH:
        simple = {
            ManipulationKind.GRASP: PrimitiveKind.GRAB,
            ManipulationKind.OPEN: PrimitiveKind.OPEN,
            ManipulationKind.CLOSE: PrimitiveKind.CLOSE,
        }
        if k in simple:
            return Primitive(simple[k], (request.object_id,))
        if k in (ManipulationKind.PUT, ManipulationKind.PUT_IN):
            kind = PrimitiveKind.PUT_ON if k == ManipulationKind.PUT else PrimitiveKind.PUT_IN
            return Primitive(kind, (request.object_id, request.target_id))
    else:
        if k == ManipulationKind.GRASP:
            return Primitive(PrimitiveKind.GRASP, (request.object_id, request.hand))
        if k == ManipulationKind.PUT_IN and request.target_id == -1:
            return Primitive(PrimitiveKind.PUT_INTO_CARRIER, (request.hand,))
        if k == ManipulationKind.DROP:
            return Primitive(PrimitiveKind.DROP, (request.hand,))
    raise ValueError(f"{benchmark.value} robots cannot {k.name.lower()} with {request}")


def message_primitive(request: SendMessage) -> Primitive:
    return Primitive(PrimitiveKind.SEND_MESSAGE, text=request.text, payload=request.payload, receiver=request.receiver)
