"""The executor node: one robot's skills (:mod:`coteam.agent.skills`) behind an ``execute_skill`` action server.

Topics and actions, relative to the robot's namespace:

* serves ``execute_skill`` (``coteam_interfaces/ExecuteSkill``): one high-level action at a time, e.g.
  ``[gocheck] <fridge> (31)``; feedback every step the robot acts for it (phase ``navigating`` / ``manipulating``,
  progress = the share of the current navigation goal's distance covered, and the step), result
  success / failure reason / steps taken; cancel stops the robot and answers ``canceled``. A goal for another
  action while one runs is rejected. The planner sends a goal again (same action, step and number, ``seq``) when our
  answer to it was lost (DDS can drop a goal response while it is still discovering the planner): that goal takes the
  running skill over, the older goal being aborted, or, when the skill has ended since, gets its result at once. The
  goal carries the planner's view of the target (``target_view``), which the executor's memory takes when it has not
  seen the object since: a target the planner knows only from a teammate's message is where the planner thinks;
* calls ``navigate_to_pose`` (``nav2_msgs/NavigateToPose``) -- the simulator's navigator (``navigation: sim``) or
  the robot's Nav2 (``navigation: nav2``): the same client code. The skill re-checks its stop condition at every
  status and moves or cancels the goal;
* calls ``manipulate`` (``coteam_interfaces/Manipulate``) for grasp / put / open / close / drop; on a real arm
  (``navigation: nav2``) it publishes ``arm_state`` (``coteam_interfaces/ArmState``, latched) after every manipulation
  that succeeded: what the grippers hold and the containers it opened or closed (the robot's status reads it);
* subscribes ``status`` (``coteam_interfaces/RobotStatus``): the robot's observation at every step, which keeps
  the executor's own memory of the world (the skills read it).

In simulation (lockstep) a skill step is *armed* when its goal for the current step is in place: the navigator
has planned the step's primitive (its feedback carries the status' stamp) or the manipulation goal is accepted.
Then the executor publishes ExecuteSkill feedback with that step, and the planner answers the step. With Nav2
(real robots) a navigation goal is armed once accepted and the skill is asked again at every status; a
manipulation goal's result (its failure reason) is what the skill goes on with.

A centralised team's robots share what they see (``teammate_status``: the teammates' status topics, in the team's
order, for a team that does not see the whole world): the executor's memory also takes in each teammate's
observation of the step, after its own, as the in-process runner's memories do, so a skill stops as soon as the
team has seen what it looks for. With ``teammate_wait_s`` > 0 (lockstep: the steps of all robots are the bridge's)
a step's skill waits that long at most for the teammates' statuses of that step (the bridge publishes them
together); a teammate that missed the wait is not waited for again until it is heard, and a late status is taken
in with the next one of mine. Without it (real robots, whose step counters are their own) each teammate's newest
observation is taken in with my next status, whatever its step.

With the home's safety policy (``safety_path``, :mod:`coteam.home.safety`) every action is checked before its skill
starts, and every navigation and manipulation goal before it is sent: what the policy refuses fails at once
(``refused by the safety policy: ...``) and nothing moves. An action the policy wants approved is asked of a person
first on ``/approve_action`` (``coteam_interfaces/srv/ApproveAction``, answered by ``coteam approve``): no service,
no answer within the policy's ``approval_timeout_s``, or a no, and the action fails as ``not approved: ...``.
With Nav2 (``navigation: nav2``) the policy's ``max_speed_mps`` goes to Nav2's controller on ``speed_limit``
(``nav2_msgs/SpeedLimit``, in m/s) before every navigation goal and whenever a new controller subscribes.

Real robots (``navigation: nav2``) have limits in seconds: a Nav2 goal without progress for ``no_progress_s``, an
arm goal without a result for ``arm_timeout_s``, and a whole action past ``skill_overhead_s`` plus
``skill_travel_factor`` times its drive at the robot's speed (:class:`coteam.agent.skills.TimeLimit`); in simulation a
skill's limit is in the benchmark's steps.

Parameters: ``robot``, ``navigation`` (sim | nav2), ``scene_path`` / ``seed`` (the task; see ``coteam_ros.episode``),
``robots`` (the team, in simulator order), ``teammate_status``, ``teammate_wait_s``, ``safety_path``,
``capabilities_json`` (the team's bodies, :func:`coteam.domain.capabilities.team_capabilities`: the skills keep to this
robot's), ``no_progress_s``, ``arm_timeout_s``, ``skill_overhead_s``, ``skill_travel_factor``, ``wiring_timeout_s``
(real robots: no Nav2 or arm server this long after start stops the node, and the launch, with one line naming the
resolved action name; 0: no check).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from coteam_interfaces.action import ExecuteSkill, Manipulate
from coteam_interfaces.msg import ArmState, RobotStatus
from coteam_interfaces.srv import ApproveAction
from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.node import Node
from std_msgs.msg import Header

from coteam.agent.memory import AgentMemory
from coteam.agent.skills import (
    Approval,
    AskApproval,
    Manipulation,
    ManipulationKind,
    NavGoal,
    NavResult,
    SkillOutcome,
    SkillRunner,
    TimeLimit,
)
from coteam.domain.actions import ActionError, HighLevelAction, Verb, format_action, parse_action
from coteam.domain.capabilities import team_capabilities
from coteam.domain.navigation import NavGrid
from coteam.domain.observation import ObjectView, Observation, observation_from_dict
from coteam.domain.world import HANDS, Vec2
from coteam.home.passage import PassageRule, refuge, way_clear
from coteam_ros.approval import SERVICE as APPROVAL_SERVICE
from coteam_ros.convert import nav_goal_to_pose, target_view_from_json
from coteam_ros.episode import load_episode
from coteam_ros.goals import DeferredGoals, goal_key
from coteam_ros.qos import LATCHED, STREAM, own_subscription
from coteam_ros.runtime import (
    RETRY_S,
    Wire,
    call_later,
    navigate_to_pose_action,
    require_wiring,
    speed_limit_message,
    spin_node,
    wall_timer,
)

NODE_NAME = "executor"
WATCHDOG_S = 0.5  # how often a real robot's goals are checked for progress
PROGRESS_M = 0.1  # a Nav2 goal makes progress when its remaining distance shrinks by this much
NAV2_REFUSED = "not reachable (Nav2 refused the goal)"
STOP_WAIT_S = 5.0  # a real robot: the longest wait for a canceled Nav2 goal to end before the skill goes on
APPROVAL_RESEND_S = 1.0  # a question not answered this long is sent again (until the policy's approval_timeout_s)
# Nav2's error codes (nav2_msgs, Kilted): NavigateToPose's own, and those of its planner (ComputePathToPose) and
# controller (FollowPath), which its behaviour tree passes on
NAV2_ERRORS = {
    9000: "unknown",
    9001: "failed to load the behavior tree",
    9002: "TF error",
    9003: "timeout",
    100: "controller: unknown",
    101: "invalid controller",
    102: "controller: TF error",
    103: "invalid path",
    104: "patience exceeded",
    105: "failed to make progress",
    106: "no valid control",
    107: "controller timed out",
    200: "planner: unknown",
    201: "invalid planner",
    202: "planner: TF error",
    203: "start outside the map",
    204: "goal outside the map",
    205: "start occupied",
    206: "goal occupied",
    207: "planner timed out",
    208: "no valid path",
}


def nav2_failure(code: int, message: str) -> str:
    """A failed Nav2 goal as the skill's failure reason: "not reachable", with Nav2's error (the method then decides
    again, and does not offer the same action for a while: never a loop of identical goals)."""
    name = NAV2_ERRORS.get(code, "error")
    return f"not reachable (Nav2 {code}: {name}{': ' + message if message else ''})"


HAND_NAMES = {-1: "", 0: "left", 1: "right"}
MAP_FRAME = "map"  # the frame of Nav2's goals and of the places the arm is told


@dataclass
class ArmLedger:
    """What the robot's arm holds and which containers it left open, from the results of its own manipulations (a
    real arm says whether it succeeded, and may say which object it handled; not what it holds): the robot's
    ``arm_state``."""

    holding: list[int] = field(default_factory=lambda: [-1] * HANDS)
    container_open: dict[int, bool] = field(default_factory=dict)
    placed: dict[int, tuple[int, bool]] = field(default_factory=dict)  # object -> (fixture or -1, into a container)

    def succeeded(self, request: Manipulation, handled: int = -1) -> None:
        """``request`` succeeded; ``handled``: the object the arm says it handled, by the detector's id (-1: it
        does not say, and it took the object asked for). A grasp of another object than asked holds that one."""
        kind, obj = request.kind, request.object_id
        if kind == ManipulationKind.GRASP and handled >= 0:
            obj = handled
        if kind == ManipulationKind.GRASP:  # in the hand asked for (the arm said it succeeded), else the first free
            hand = request.hand if 0 <= request.hand < len(self.holding) else self._free_hand()
            if hand is not None:
                self.holding[hand] = obj
            self.placed.pop(obj, None)
        elif kind in (ManipulationKind.PUT, ManipulationKind.PUT_IN, ManipulationKind.DROP):
            self.holding = [-1 if held == obj else held for held in self.holding]
            target = request.target_id if kind != ManipulationKind.DROP else -1
            self.placed[obj] = (target, kind == ManipulationKind.PUT_IN)
        elif kind in (ManipulationKind.OPEN, ManipulationKind.CLOSE):
            self.container_open[obj] = kind == ManipulationKind.OPEN

    def _free_hand(self) -> int | None:
        return next((i for i, held in enumerate(self.holding) if held < 0), None)

    def to_msg(self, robot: str, header: Header) -> ArmState:
        containers, placed = sorted(self.container_open), sorted(self.placed)
        return ArmState(
            header=header,
            robot=robot,
            holding=list(self.holding),
            containers=containers,
            container_open=[self.container_open[c] for c in containers],
            placed=placed,
            placed_on=[self.placed[p][0] for p in placed],
            placed_in=[self.placed[p][1] for p in placed],
        )


@dataclass
class NavigationState:
    goal: NavGoal
    handle: Any = None  # ClientGoalHandle once accepted
    planned_stamp: tuple[int, int] | None = None  # stamp of the status the navigator last planned for
    first_distance: float | None = None  # distance_remaining of the first feedback
    distance: float | None = None  # of the latest feedback
    result: NavResult | None = None
    canceling: bool = False
    closest: float | None = None  # real robots: the least distance_remaining so far, and when it was reached
    progress_at: float = field(default_factory=time.monotonic)
    moved_from: tuple[float, float] | None = None  # where the robot was at the last progress


@dataclass
class Meeting:
    """A navigation goal failed with a teammate close: a meeting in a passage (:mod:`coteam.home.passage`), being
    resolved before the skill's goal is sent again."""

    other: str
    other_from: Vec2  # where the teammate was when the goal failed
    gives_way: bool
    refuge: NavGoal | None  # where this robot backs off to (giving way), until it has got there
    until: float  # the wait's end at the latest (once backed off)


@dataclass
class Job:
    handle: ServerGoalHandle
    action: HighLevelAction
    step: int
    seq: int  # the planner's number of the action (ExecuteSkill.seq)
    target: tuple[ObjectView, int] | None = None  # the planner's view of the target, and when it was seen
    started: bool = False
    request: Any = None  # the skill's current request (None: advance the skill)
    reply: NavResult | None = None
    armed_step: int = -1
    feedback: ExecuteSkill.Feedback | None = None  # the one of the armed step
    outcome: SkillOutcome | None = None  # the skill ended; the job ends once navigation has stopped
    asked: bool = False  # its question is out to a person (the safety policy's approval)
    meeting: Meeting | None = None  # a meeting in a passage being resolved (real robots)
    meetings: int = 0  # meetings in passages during the action (each one the robot gave way or held)


@dataclass(frozen=True)
class EndedJob:
    """A job that ended, and how: a goal for it sent again gets its result."""

    action: HighLevelAction
    step: int
    seq: int
    result: ExecuteSkill.Result
    state: str


class ExecutorNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self.robot: str = self.declare_parameter("robot", "alice").value
        self.navigation: str = self.declare_parameter("navigation", "sim").value
        if self.navigation not in ("sim", "nav2"):
            raise ValueError(f"navigation must be sim or nav2, not {self.navigation!r}")
        scene_path = self.declare_parameter("scene_path", "").value
        seed = self.declare_parameter("seed", 0).value
        robots = list(self.declare_parameter("robots", ["alice", "bob"]).value)
        info = load_episode(scene_path, seed, robots, self.declare_parameter("safety_path", "").value).info
        self.benchmark = info.benchmark
        self.memory = AgentMemory(self.robot, info.benchmark, info.floorplan, info.task, safety=info.safety)
        self.memory.objects.update({v.id: v for v in info.landmarks})
        bodies = team_capabilities(self.declare_parameter("capabilities_json", "{}").value)
        if self.robot in bodies:
            self.memory.capabilities = bodies[self.robot]
        self.stepwise = self.navigation == "sim"  # the simulator's navigator plans one step at a time
        self.grid = NavGrid(info.floorplan)
        time_limit = None
        if not self.stepwise:  # a real robot: an action's limit is in seconds, from its speed and way
            time_limit = TimeLimit(
                time.monotonic,
                self.grid,
                self.declare_parameter("skill_overhead_s", 60.0).value,
                self.declare_parameter("skill_travel_factor", 3.0).value,
            )
        self.skills = SkillRunner(info.benchmark, info.physics, safety=info.safety, time_limit=time_limit)
        self.approval_timeout_s = info.safety.policy.approval_timeout_s if info.safety is not None else 0.0
        self.approval_client = self.create_client(ApproveAction, APPROVAL_SERVICE)
        self.approval_requests = 0  # numbers the questions put to a person
        self.step = -1
        self.ready = False
        self.stamp: tuple[int, int] = (0, 0)
        self.job: Job | None = None
        # The last job that ended: a goal for it sent again gets its result.
        self.ended: EndedJob | None = None
        self.nav: NavigationState | None = None
        self.manipulating = False
        self.manipulation: Any = None  # a real arm's running goal (ClientGoalHandle)
        self.manipulation_seq = 0  # numbers the manipulation goals sent: an answer to an older one is stale
        self.manipulation_sent = 0.0  # when the running manipulation goal was sent
        self.no_progress_s: float = self.declare_parameter("no_progress_s", 20.0).value
        # real robots: teammates met in a passage (their poses from their status topics, coteam.home.passage)
        self.passage = PassageRule(
            near_m=self.declare_parameter("passage_near_m", PassageRule.near_m).value,
            wait_s=self.declare_parameter("passage_wait_s", PassageRule.wait_s).value,
            tries=self.declare_parameter("passage_tries", PassageRule.tries).value,
        )
        self.teammate_poses: dict[str, Vec2] = {}
        for topic in self.declare_parameter("teammate_poses", [""]).value:
            if topic:
                self.create_subscription(
                    RobotStatus, topic, self._on_teammate_pose, LATCHED, event_callbacks=own_subscription()
                )
        self.arm_timeout_s: float = self.declare_parameter("arm_timeout_s", 60.0).value
        self.arm = ArmLedger()
        self.arm_publisher = self.create_publisher(ArmState, "arm_state", LATCHED)
        self.goals = DeferredGoals()
        self.nav_type = navigate_to_pose_action()
        self.nav_client = ActionClient(self, self.nav_type, "navigate_to_pose")
        self.manipulate_client = ActionClient(self, Manipulate, "manipulate")
        self.server = ActionServer(
            self,
            ExecuteSkill,
            "execute_skill",
            execute_callback=self.goals.execute_callback,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel,
        )
        self.create_subscription(RobotStatus, "status", self._on_status, LATCHED, event_callbacks=own_subscription())
        self.teammate_wait_s: float = self.declare_parameter("teammate_wait_s", 0.0).value
        self.pending: tuple[RobotStatus, Observation, float] | None = None  # my status, waiting for the teammates'
        self.shared: dict[str, Observation | None] = {}  # teammate -> its newest observation not taken in yet
        self.late: set[str] = set()  # teammates that missed the wait: not waited for until heard again
        for topic in self.declare_parameter("teammate_status", [""]).value:
            if topic:
                self.shared[topic] = None
                self.create_subscription(
                    RobotStatus,
                    topic,
                    lambda m, t=topic: self._on_teammate_status(t, m),
                    LATCHED,
                    event_callbacks=own_subscription(),
                )
        if self.shared:
            wall_timer(self, 0.05, self._take_status)
        # the policy's top speed, for Nav2's controller (the simulator's navigator moves a cell a step: no speeds)
        self.max_speed = info.safety.policy.max_speed_mps if info.safety is not None and not self.stepwise else None
        if self.max_speed is not None:
            self.speed_limit_type = speed_limit_message()
            self.speed_limit_publisher = self.create_publisher(self.speed_limit_type, "speed_limit", STREAM)
            self.speed_limit_heard_by = 0  # subscribers the limit was last sent to
        if not self.stepwise:  # a real robot's Nav2 and arm may stall: give up on their goals in time
            wall_timer(self, WATCHDOG_S, self._watch_goals)
            require_wiring(
                self,
                self.declare_parameter("wiring_timeout_s", 0.0).value,
                [
                    Wire("navigate_to_pose", "Nav2 action server", self.nav_client.server_is_ready),
                    Wire("manipulate", "arm action server", self.manipulate_client.server_is_ready),
                ],
            )
        limit = f", top speed {self.max_speed:g} m/s on speed_limit" if self.max_speed is not None else ""
        self.get_logger().info(
            f"executor for {self.robot}: navigation {self.navigation}, {self.benchmark.value}{limit}"
        )

    # --- inputs ---------------------------------------------------------------------------------------------------
    def _on_status(self, status: RobotStatus) -> None:
        if status.robot != self.robot or status.step <= self.step:
            return
        try:
            obs = observation_from_dict(json.loads(status.observation_json))
        except ValueError as exc:
            self.get_logger().error(f"status for step {status.step} ignored: {exc}")
            return
        if self.pending is not None:  # a newer status: the older one is taken in now
            self.pending = (*self.pending[:2], -math.inf)
            self._take_status()
        self.pending = (status, obs, time.monotonic())
        self._take_status()

    def _on_teammate_pose(self, status: RobotStatus) -> None:
        try:
            x, y = json.loads(status.observation_json)["position"]
            self.teammate_poses[status.robot] = (float(x), float(y))
        except (ValueError, KeyError, TypeError) as exc:
            self.get_logger().warning(f"{status.robot}'s pose ignored: {exc!r}", throttle_duration_sec=10.0)

    def _on_teammate_status(self, topic: str, status: RobotStatus) -> None:
        try:
            obs = observation_from_dict(json.loads(status.observation_json))
        except ValueError as exc:
            self.get_logger().error(f"{status.robot}'s status for step {status.step} ignored: {exc}")
            return
        newest = self.shared[topic]
        if obs.agent == self.robot or (newest is not None and newest.step >= obs.step):
            return
        self.shared[topic] = obs
        self.late.discard(topic)
        self._take_status()

    def _take_status(self) -> None:
        """Take my pending status in, with the teammates' observations of its step (see the module docstring)."""
        if self.pending is None:
            return
        status, obs, since = self.pending
        if self.teammate_wait_s > 0:
            missing = {t for t, o in self.shared.items() if t not in self.late and (o is None or o.step < obs.step)}
            if missing and time.monotonic() - since < self.teammate_wait_s:
                return
            self.late |= missing
        self.pending = None
        self.memory.update(obs)
        for topic, mate in self.shared.items():
            if mate is not None and (self.teammate_wait_s == 0 or mate.step <= obs.step):
                self.memory.absorb(mate)
                self.shared[topic] = None
        self.step, self.ready = status.step, status.ready
        self.stamp = (status.header.stamp.sec, status.header.stamp.nanosec)
        if status.episode_done and self.job is not None:
            self.skills.cancel()
            self.job.outcome = SkillOutcome(self.job.action, False, "episode over", 0)
        self._drive()

    def _on_goal(self, goal: ExecuteSkill.Goal) -> GoalResponse:
        try:
            action = parse_action(goal.action, self.benchmark)
        except ActionError as exc:
            self.get_logger().warning(f"rejected {goal.action!r}: {exc}")
            return GoalResponse.REJECT
        if action.verb == Verb.SEND_MESSAGE:
            self.get_logger().warning("rejected a message: the planner sends messages on /team/messages")
            return GoalResponse.REJECT
        if self.job is not None and not self._sent_again(goal, action, self.job):
            self.get_logger().warning(f"rejected {goal.action!r}: still running {self.job.action}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    @staticmethod
    def _sent_again(goal: ExecuteSkill.Goal, action: HighLevelAction, earlier: Job | EndedJob) -> bool:
        """Whether a goal repeats an earlier one: the planner sends a goal again (same action, step and number) when
        our answer to it was lost."""
        return (action, goal.step, goal.seq) == (earlier.action, earlier.step, earlier.seq)

    def _on_accepted(self, handle: ServerGoalHandle) -> None:
        goal = handle.request
        action = parse_action(goal.action, self.benchmark)
        job = self.job
        if job is not None and self._sent_again(goal, action, job):  # it takes the skill over
            old, job.handle = job.handle, handle
            result = ExecuteSkill.Result(success=False, failure_reason="superseded by the same action sent again")
            self.goals.finish(old, result, "abort")
            if job.feedback is not None and job.armed_step == self.step:
                handle.publish_feedback(job.feedback)
            return
        ended = self.ended
        if ended is not None and self._sent_again(goal, action, ended):  # already done: its result
            self.goals.finish(handle, ended.result, ended.state)
            return
        try:
            target = target_view_from_json(goal.target_view)
        except ValueError as exc:
            self.get_logger().warning(f"{goal.action}: {exc}; the skill goes by my own memory")
            target = None
        self.job = Job(handle, action, goal.step, goal.seq, target)
        self._drive()

    def _on_cancel(self, handle: ServerGoalHandle) -> CancelResponse:
        job = self.job
        if job is None or goal_key(job.handle) != goal_key(handle):
            return CancelResponse.REJECT
        job.outcome = (self.skills.cancel() if job.started else None) or SkillOutcome(job.action, False, "canceled")
        self.executor.create_task(self._drive)
        return CancelResponse.ACCEPT

    # --- the skill loop ----------------------------------------------------------------------------------------
    def _drive(self) -> None:
        """Advance the running skill as far as the information at hand allows; every callback that brings news
        (status, goal response, navigation feedback or result, cancel response) calls it again."""
        job = self.job
        while job is not None:
            if job.outcome is not None:
                self._end_job(job)
                return
            if job.step > self.step or (job.started and (self.step <= job.armed_step or not self.ready)):
                return  # wait for the status the action (or its next step) belongs to
            if not job.started:
                if job.target is not None:
                    self.memory.adopt(*job.target)
                self.skills.start(job.action, self.memory)
                job.started = True
            if job.request is None:
                request = self.skills.advance(job.reply)
                job.reply = None
                if isinstance(request, SkillOutcome):
                    job.outcome = request
                    continue
                job.request = request
            if not self._serve(job):
                return

    def _serve(self, job: Job) -> bool:
        """Put the request's goal in place for this step. True when the skill can go on at once (its navigation
        goal ended), False when waiting for news or the step is armed."""
        request = job.request
        if isinstance(request, AskApproval):
            if not job.asked:
                self._ask(job, request.question)
            return False
        if isinstance(request, NavGoal):
            if job.meeting is not None and not self._meeting_over(job):
                return False
            nav = self.nav
            if nav is None or nav.goal != request:
                self._send_navigation(request)  # preempts the older goal, if any
                return False
            if nav.canceling:
                return False
            if nav.result is not None:
                if not nav.result.success and self._met_in_a_passage(job):
                    return self._meeting_over(job) and self._serve(job)
                job.reply, job.request, self.nav = nav.result, None, None
                return True
            if nav.handle is None:
                return False  # not accepted yet
            if not self.stepwise or nav.planned_stamp == self.stamp:
                self._arm(job, "navigating")
            return False
        if self.nav is not None:  # the skill stopped navigating: stop the robot first
            self._cancel_navigation()
            return False
        assert isinstance(request, Manipulation), "message actions are rejected: the planner sends messages"
        if not self.manipulating:
            self._send_manipulation(request)
        return False

    def _met_in_a_passage(self, job: Job) -> bool:
        """A real robot's navigation goal failed: with a teammate close (and meetings left for the action), it is a
        meeting in a passage, resolved by the convention both robots keep (:class:`coteam.home.passage.PassageRule`):
        the robot later in name order backs off out of the other's way and waits for it to go by, the other holds
        until its way is clear; then the skill's goal is sent again."""
        here = self.memory.position
        other = (
            None
            if self.stepwise or job.meetings >= self.passage.tries
            else self.passage.in_the_way(here, self.teammate_poses)
        )
        if other is None:
            return False
        job.meetings += 1
        self.nav = None
        at = self.teammate_poses[other]
        gives_way = self.passage.gives_way(self.robot, other)
        spot = refuge(self.grid, here, at, self.passage.clear_m) if gives_way else None
        goal = None if spot is None else NavGoal(spot)  # (giving way, the wait starts once backed off, if it can)
        job.meeting = Meeting(other, at, gives_way, goal, time.monotonic() + self.passage.wait_s)
        self.get_logger().info(
            f"{other} is in my way ({math.dist(here, at):.1f} m): "
            + (f"I give way at {spot[0]:.2f}, {spot[1]:.2f}" if spot else "I give way here" if gives_way else "I hold")
        )
        return True

    def _meeting_over(self, job: Job) -> bool:
        """Whether the meeting in a passage is resolved (the skill's goal may be sent again); meanwhile the robot
        backs off, or waits, telling the planner it works on the action."""
        meeting = job.meeting
        assert meeting is not None
        now = time.monotonic()
        if meeting.refuge is not None:
            nav = self.nav
            if nav is None or nav.goal != meeting.refuge:
                self._send_navigation(meeting.refuge)
            if self.nav is None or self.nav.result is None:
                self._report(job, "giving way")
                return False
            self.nav, meeting.refuge = None, None  # there, or as far as it got: wait for the other to go by
            meeting.until = now + self.passage.wait_s
        here, other_now = self.memory.position, self.teammate_poses.get(meeting.other, meeting.other_from)
        if meeting.gives_way:
            over = self.passage.gone_by(here, meeting.other_from, other_now)
        else:
            assert isinstance(job.request, NavGoal)
            over = way_clear(self.grid, here, job.request.position, other_now, self.passage.pass_m)
        over = over or now >= meeting.until
        if not over:  # the robot's next status asks again
            self._report(job, "giving way" if meeting.gives_way else "holding")
            return False
        job.meeting = None
        return True

    def _report(self, job: Job, phase: str) -> None:
        """Feedback on the action while it waits on something of its own (the planner hears the executor works)."""
        job.handle.publish_feedback(ExecuteSkill.Feedback(phase=phase, progress=0.0, step=self.step))

    def _ask(self, job: Job, question: str) -> None:
        """Ask a person on ``/approve_action``; the answer (no service, or none in time: no) goes to the skill. The
        request is sent again every :data:`APPROVAL_RESEND_S` until answered: DDS drops a service's answer to a
        client it has not discovered yet (the server gives the same answer again, asking nobody twice)."""
        job.asked = True
        if not self.approval_client.service_is_ready():
            self._answer(job, False, f"nobody answers {APPROVAL_SERVICE}")
            return
        self.get_logger().info(f"asking a person: {question}")
        self.approval_requests += 1
        request = ApproveAction.Request(
            robot=self.robot,
            request_id=self.approval_requests,
            question=question,
            action=format_action(job.action, self.benchmark),
        )
        deadline = time.monotonic() + self.approval_timeout_s

        def send() -> None:
            if self.job is not job or not isinstance(job.request, AskApproval):
                return  # answered
            if time.monotonic() >= deadline:
                self._answer(job, False, "no answer in time")
                return
            future = self.approval_client.call_async(request)
            future.add_done_callback(lambda f: self._answer(job, f.result().approved, f.result().answered_by))
            call_later(self, min(APPROVAL_RESEND_S, max(0.01, deadline - time.monotonic())), send)

        send()

    def _answer(self, job: Job, approved: bool, by: str) -> None:
        if self.job is not job or not isinstance(job.request, AskApproval):
            return  # answered already, or the action is over
        self.get_logger().info(f"{job.request.question} {'yes' if approved else 'no'} ({by})")
        job.reply, job.request = Approval(approved), None
        self._drive()

    def _arm(self, job: Job, phase: str) -> None:
        job.armed_step = self.step
        job.request = None  # at the next step the skill is asked again (it may keep, move or drop the goal)
        self.skills.stepped()
        job.feedback = ExecuteSkill.Feedback(phase=phase, progress=self._progress(phase), step=self.step)
        job.handle.publish_feedback(job.feedback)

    def _progress(self, phase: str) -> float:
        """Navigating: the share of the current goal's distance covered; manipulating: 1 (the skills' last
        phase is a manipulation or a turn)."""
        nav = self.nav
        if phase != "navigating" or nav is None or not nav.first_distance or nav.distance is None:
            return 1.0 if phase == "manipulating" else 0.0
        return max(0.0, min(1.0, 1.0 - nav.distance / nav.first_distance))

    def _end_job(self, job: Job) -> None:
        if self.nav is not None:
            self._cancel_navigation()
            return
        if self.manipulation is not None:  # cancelled while a real arm works: stop it too
            self.manipulation.cancel_goal_async()
        if self.manipulating and not self.stepwise:  # a real arm's goal (answered or not) is given up on
            self.manipulation, self.manipulating = None, False
            self.manipulation_seq += 1
        outcome = job.outcome
        assert outcome is not None
        self.job = None
        result = ExecuteSkill.Result(
            success=outcome.success,
            failure_reason=outcome.reason,
            steps_taken=outcome.primitives,
            meetings=job.meetings,
            holding=[] if self.stepwise else list(self.arm.holding),
        )
        state = "succeed" if outcome.success else ("canceled" if outcome.reason == "canceled" else "abort")
        self.ended = EndedJob(job.action, job.step, job.seq, result, state)
        self.goals.finish(job.handle, result, state)

    def cancel_goals(self) -> list[Any]:
        """The node is being stopped (the team stops: Ctrl-C, a time-out): cancel its running Nav2 and arm goals, so
        that no robot drives or grasps on without its team (``coteam_ros.runtime.spin_node`` waits for the answers)."""
        pending = []
        if self.nav is not None and self.nav.handle is not None and self.nav.result is None:
            pending.append(self.nav.handle.cancel_goal_async())
        if self.manipulation is not None:
            pending.append(self.manipulation.cancel_goal_async())
        if pending:
            self.get_logger().info(f"stopping: {len(pending)} running goal(s) canceled")
        return pending

    # --- navigation goals ---------------------------------------------------------------------------------------
    def _send_navigation(self, goal: NavGoal) -> None:
        if not self.nav_client.server_is_ready():
            self.get_logger().info("waiting for navigate_to_pose", throttle_duration_sec=5.0)
            call_later(self, RETRY_S, self._drive)
            return
        self._limit_speed(always=True)
        state = NavigationState(goal)
        self.nav = state  # a newer goal preempts the older one on the server
        pose = PoseStamped(header=Header(frame_id=MAP_FRAME), pose=nav_goal_to_pose(goal, self.memory.position))
        future = self.nav_client.send_goal_async(
            self.nav_type.Goal(pose=pose), feedback_callback=lambda f, s=state: self._on_nav_feedback(s, f)
        )
        future.add_done_callback(lambda f, s=state: self._on_nav_response(s, f))

    def _limit_speed(self, always: bool) -> None:
        """Send the policy's top speed to Nav2's controller, which keeps the last limit it heard (its subscription
        keeps no history): before every navigation goal, and to a controller that has just come up."""
        if self.max_speed is None:
            return
        listeners = self.speed_limit_publisher.get_subscription_count()
        if always or listeners > self.speed_limit_heard_by:
            self.speed_limit_publisher.publish(
                self.speed_limit_type(
                    header=Header(stamp=self.get_clock().now().to_msg()), percentage=False, speed_limit=self.max_speed
                )
            )
        self.speed_limit_heard_by = listeners

    def _on_nav_response(self, state: NavigationState, future: Any) -> None:
        handle = future.result()
        if not handle.accepted:
            state.result = NavResult(False, "navigation goal rejected" if self.stepwise else NAV2_REFUSED)
        else:
            state.handle = handle
            handle.get_result_async().add_done_callback(lambda f, s=state: self._on_nav_result(s, f))
        if state is self.nav:
            self._drive()

    def _on_nav_feedback(self, state: NavigationState, message: Any) -> None:
        feedback = message.feedback
        stamp = feedback.current_pose.header.stamp
        state.planned_stamp = (stamp.sec, stamp.nanosec)
        state.distance = float(feedback.distance_remaining)
        if state.first_distance is None:
            state.first_distance = state.distance
        # progress: the remaining distance shrinks (Nav2 reports 0 before it has a path: not a distance), or the robot
        # moves (a detour lengthens the path while the robot drives on)
        here = (feedback.current_pose.pose.position.x, feedback.current_pose.pose.position.y)
        closer = state.distance > 0 and (state.closest is None or state.distance < state.closest - PROGRESS_M)
        moved = state.moved_from is not None and math.dist(here, state.moved_from) >= PROGRESS_M
        if closer or moved or state.moved_from is None:
            if closer:
                state.closest = state.distance
            state.progress_at, state.moved_from = time.monotonic(), here
        if state is self.nav:
            self._drive()

    def _on_nav_result(self, state: NavigationState, future: Any) -> None:
        wrapped = future.result()
        result = wrapped.result
        if state.canceling and not self.stepwise:  # the canceled goal has ended: the base stands
            self._stopped(state)
            return
        if state.result is not None:  # given up on already (no progress): its cancel's answer changes nothing
            return
        if result.error_code == 0 and wrapped.status == 4:  # GoalStatus.STATUS_SUCCEEDED
            state.result = NavResult(True)
        elif self.stepwise:
            state.result = NavResult(False, result.error_msg or f"navigation failed (error {result.error_code})")
        else:
            state.result = NavResult(False, nav2_failure(result.error_code, result.error_msg))
        if state is self.nav and not state.canceling:
            self._drive()

    def _cancel_navigation(self) -> None:
        nav = self.nav
        assert nav is not None
        if nav.canceling or (nav.handle is None and nav.result is None):
            return  # under way, or the goal response is still due (then _drive calls again)
        if nav.result is not None:  # the goal has ended already
            self.nav = None
            self.executor.create_task(self._drive)
            return
        nav.canceling = True
        if not self.stepwise:  # a real robot: its base has stopped when Nav2 ends the goal (its result), not before
            nav.handle.cancel_goal_async()
            call_later(self, STOP_WAIT_S, lambda: self._stopped(nav))  # a Nav2 that never ends the goal
            return

        def done(_: Any) -> None:
            self._stopped(nav)

        nav.handle.cancel_goal_async().add_done_callback(done)

    def _stopped(self, nav: NavigationState) -> None:
        """A canceled navigation goal is over: the skill goes on (an arm goal is sent only now)."""
        if self.nav is nav:
            self.nav = None
        self._drive()

    def _watch_goals(self) -> None:
        """Real robots: a Nav2 goal whose remaining distance has not shrunk for ``no_progress_s`` is canceled and
        fails as not reachable (the method decides again, and does not offer that action for a while); an arm goal
        without a result for ``arm_timeout_s`` is canceled and fails as timed out."""
        self._limit_speed(always=False)
        now = time.monotonic()
        nav = self.nav
        stalled = nav is not None and nav.handle is not None and nav.result is None and not nav.canceling
        if stalled and now - nav.progress_at > self.no_progress_s:
            self.get_logger().warning(f"no progress towards {nav.goal.position} for {self.no_progress_s:g} s: canceled")
            nav.result = NavResult(False, f"not reachable (no progress for {self.no_progress_s:g} s)")
            nav.handle.cancel_goal_async()
            self._drive()
        job = self.job
        if self.manipulating and job is not None and now - self.manipulation_sent > self.arm_timeout_s:
            self.get_logger().warning(f"no answer from the arm for {self.arm_timeout_s:g} s: its goal is canceled")
            if self.manipulation is not None:
                self.manipulation.cancel_goal_async()
            self.manipulation, self.manipulating = None, False
            self.manipulation_seq += 1  # its answer, if it comes, is stale
            job.outcome = SkillOutcome(job.action, False, "manipulation timed out", 0)
            self._drive()

    # --- manipulation goals -------------------------------------------------------------------------------------
    def _send_manipulation(self, request: Manipulation) -> None:
        if not self.manipulate_client.server_is_ready():
            self.get_logger().info("waiting for manipulate", throttle_duration_sec=5.0)
            call_later(self, RETRY_S, self._drive)
            return
        self.manipulating = True
        self.manipulation_sent = time.monotonic()
        goal = Manipulate.Goal(
            operation=int(request.kind),
            object_id=request.object_id,
            target_id=request.target_id,
            hand=HAND_NAMES[request.hand],
        )
        known = self.memory.objects.get(request.object_id)
        if known is not None:  # the class and place the map has: what an arm without ids takes (Manipulate.action)
            goal.object_class = known.name
            goal.object_position.header.frame_id = MAP_FRAME
            goal.object_position.point.x, goal.object_position.point.y = map(float, known.position)
        self.manipulation_seq += 1
        sent = (self.manipulation_seq, request)
        self.manipulate_client.send_goal_async(goal).add_done_callback(
            lambda f: self._on_manipulation_response(sent, f)
        )

    def _on_manipulation_response(self, sent: tuple[int, Manipulation], future: Any) -> None:
        job = self.job
        handle = future.result()
        if sent[0] != self.manipulation_seq:  # given up on before its answer came (timed out, or its job ended)
            if handle.accepted:
                handle.cancel_goal_async()
            return
        if job is None:
            self.manipulating = False
            return
        if not handle.accepted:
            self.manipulating = False
            job.outcome = SkillOutcome(job.action, False, "manipulation rejected", 0)
        elif self.stepwise:  # the simulator runs it in the next step; its outcome comes with the next status
            self.manipulating = False
            self._arm(job, "manipulating")
        else:  # a real arm takes its time: the skill goes on with the result
            self.manipulation = handle
            handle.get_result_async().add_done_callback(
                lambda f, j=job, h=handle: self._on_manipulation_result(j, h, sent[1], f)
            )
            return
        self._drive()

    def _on_manipulation_result(self, job: Job, handle: Any, request: Manipulation, future: Any) -> None:
        result = future.result().result
        if result.success:  # what the arm did, even for a goal given up on: the grippers hold what they hold
            if request.kind == ManipulationKind.GRASP and result.object_id not in (-1, request.object_id):
                said = f"{result.object_class} ({result.object_id})"
                self.get_logger().info(f"the arm took {said}, not ({request.object_id})")
            self.arm.succeeded(request, result.object_id)
            self.memory.arm_holds(self.arm.holding)  # the skill goes on with what the hands hold now
            self.arm_publisher.publish(self.arm.to_msg(self.robot, Header(stamp=self.get_clock().now().to_msg())))
        if handle is not self.manipulation:
            return  # a goal given up on (timed out, or its job canceled): its job's outcome is decided already
        self.manipulating = False
        self.manipulation = None
        if job is not self.job:
            return
        self.memory.last_failure = "" if result.success else (result.failure_reason or "manipulation failed")
        self._arm(job, "manipulating")
        job.armed_step = self.step - 1  # the skill reads the result now, not at the next status
        self._drive()


def main(argv: list[str] | None = None) -> None:
    spin_node(ExecutorNode, argv)


if __name__ == "__main__":
    main()
