"""The in-process skill executor: runs a robot's skills (:mod:`coteam.agent.skills`) and turns each request into the
primitive the simulator executes -- navigation goals through the simulator's navigator, manipulation and messages
directly. The ROS executor node runs the same skills with action goals instead.
"""

from __future__ import annotations

from collections.abc import Callable

from coteam.agent.memory import AgentMemory
from coteam.agent.skills import Approval, AskApproval, Manipulation, NavGoal, NavResult, SkillOutcome, SkillRunner
from coteam.domain.actions import HighLevelAction
from coteam.domain.navigation import NavGrid
from coteam.domain.physics import Physics
from coteam.domain.world import Benchmark
from coteam.home.safety import SafetyGate
from coteam_sim.navigator import GoalNavigator, manipulation_primitive, message_primitive
from coteam_sim.primitives import Primitive


class SkillExecutor:
    """Runs one high-level action at a time for one agent."""

    def __init__(
        self,
        benchmark: Benchmark,
        nav: NavGrid,
        config: Physics | None = None,
        *,
        safety: SafetyGate | None = None,
        approve: Callable[[str], bool] | None = None,
    ):
        self.benchmark = benchmark
        self.nav = nav
        self.config = config or Physics()
        self.skills = SkillRunner(benchmark, self.config, safety=safety)
        self.approve = approve  # answers the questions the safety policy asks a person (None: every answer is no)
        self._navigation: GoalNavigator | None = None

    @property
    def busy(self) -> bool:
        return self.skills.busy

    @property
    def action(self) -> HighLevelAction | None:
        return self.skills.action

    def start(self, action: HighLevelAction, memory: AgentMemory) -> None:
        self._navigation = None
        self.skills.start(action, memory)

    def cancel(self) -> SkillOutcome | None:
        self._navigation = None
        return self.skills.cancel()

    def next_primitive(self) -> tuple[Primitive | None, SkillOutcome | None]:
        """The next primitive of the running skill, or ``(None, outcome)`` when the skill has ended."""
        memory = self.skills.memory
        assert memory is not None, "no skill running"
        reply: NavResult | Approval | None = None
        while True:
            request = self.skills.advance(reply)
            if isinstance(request, SkillOutcome):
                self._navigation = None
                return None, request
            if isinstance(request, AskApproval):
                reply = Approval(self.approve is not None and self.approve(request.question))
                continue
            if isinstance(request, NavGoal):
                if self._navigation is None or self._navigation.goal != request:
                    self._navigation = GoalNavigator(self.benchmark, self.nav, self.config, request, memory.position)
                planned = self._navigation.plan(memory.position, memory.heading, memory.last_failure)
                if isinstance(planned, NavResult):
                    self._navigation, reply = None, planned
                    continue
                prim = planned
            else:
                self._navigation = None
                prim = (
                    manipulation_primitive(self.benchmark, request)
                    if isinstance(request, Manipulation)
                    else message_primitive(request)
                )
            self.skills.stepped()
            return prim, None
