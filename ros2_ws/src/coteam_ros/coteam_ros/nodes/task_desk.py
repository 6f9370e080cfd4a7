"""The task node of a serving team: people's tasks in, one at a time to the robots, every outcome to the results.

* serves the ``/team/task`` action (``coteam_interfaces/TeamTask``): a goal is a request -- goal lines in the world
  file's syntax or a sentence -- read, checked and queued by a :class:`coteam.tasks.desk.TaskDesk` (refused at once,
  with one line, when it cannot be done); feedback while it waits (its place) and while it runs (each goal line as
  the robots' maps show it, and what each robot does); the result says done, failed, refused or canceled, and why;
  a canceled goal is dropped from the queue, or, running, its robots are stopped;
* serves ``/team/cancel_task`` (``coteam_interfaces/CancelTask``): cancel a task by its id (``coteam task --cancel``);
* tells the robots the task to work on, or to stop, on ``/team/task_assignment`` (``TaskAssignment``, latched);
* hears the robots' planners on ``/team/task_progress`` (``TaskProgress``): a task is done when a robot's map shows
  its goal met, failed when its time runs out (``time_limit_s``);
* publishes the desk's state on ``/team/tasks`` (``std_msgs/String``, JSON, latched) for ``coteam task --status``;
* appends each ended task to ``results_path`` (JSON Lines, one record per task: request, goal, outcome, reason,
  times, and the actions each robot started for it, in order with the seconds into the task, as its progress
  reports named them).

Parameters: ``scene_path`` / ``seed`` / ``robots`` / ``safety_path`` (the home, as every robot node reads it),
``first_task`` (queue the world file's own task at start), ``time_limit_s`` (per task; 0: none), ``results_path``,
``reader`` (``grammar``, or ``llm``: a chat model reads sentences, held to the home's names; ``llm_base_url`` /
``llm_model``, else the OpenAI environment variables).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from coteam_interfaces.action import TeamTask
from coteam_interfaces.msg import TaskAssignment, TaskProgress
from coteam_interfaces.srv import CancelTask
from rclpy.action import ActionServer, CancelResponse
from rclpy.node import Node
from rclpy.task import Future
from std_msgs.msg import String

from coteam.llm import LLMConfig, RoleBackend, SymbolicBackend, make_backend
from coteam.tasks.desk import TaskDesk, TaskState
from coteam.tasks.desk import TeamTask as DeskTask
from coteam.tasks.reading import prompt_library
from coteam.tasks.words import GoalLine
from coteam_ros.episode import load_episode
from coteam_ros.qos import LATCHED, TEAM_MESSAGES
from coteam_ros.runtime import spin_node, wall_timer

NODE_NAME = "task_desk"


class TaskDeskNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        robots = list(self.declare_parameter("robots", ["robot1", "robot2"]).value)
        scene_path = self.declare_parameter("scene_path", "").value
        seed = self.declare_parameter("seed", 0).value
        episode = load_episode(scene_path, seed, robots, self.declare_parameter("safety_path", "").value)
        self.time_limit_s: float = self.declare_parameter("time_limit_s", 0.0).value
        self.results_path: str = self.declare_parameter("results_path", "").value
        reader = self._reader(self.declare_parameter("reader", "grammar").value)
        self.desk = TaskDesk(episode.scene, time.monotonic, reader=reader, safety=episode.info.safety)
        self.names = episode.scene.names()
        self.progress: dict[str, TaskProgress] = {}  # robot -> its last report on the running task
        self.doing: dict[str, dict[str, list]] = {}  # task -> robot -> [seconds into the task, action] it started
        self.waiting: dict[str, tuple[Any, Future]] = {}  # task id -> (its action goal, resolved when it ends)
        self.assign = self.create_publisher(TaskAssignment, "/team/task_assignment", LATCHED)
        self.state = self.create_publisher(String, "/team/tasks", LATCHED)
        self.create_subscription(TaskProgress, "/team/task_progress", self._on_progress, TEAM_MESSAGES)
        self.create_service(CancelTask, "/team/cancel_task", self._on_cancel_task)
        self.server = ActionServer(
            self,
            TeamTask,
            "/team/task",
            execute_callback=self._execute,
            cancel_callback=lambda handle: CancelResponse.ACCEPT,
        )
        if self.declare_parameter("first_task", True).value:
            task = self.desk.give("\n".join(self._goal_lines(episode.scene.task)))
            self.get_logger().info(f"{task.id}: the world file's task, {'; '.join(task.goal)}")
        wall_timer(self, 0.5, self._on_timer)
        self._next()
        self.get_logger().info(f"task desk for {', '.join(robots)}: /team/task (reader: {reader.name})")

    def _reader(self, name: str) -> RoleBackend:
        if name == "grammar":
            return SymbolicBackend()
        if name != "llm":
            raise ValueError(f"reader must be grammar or llm, not {name!r}")
        base_url = self.declare_parameter("llm_base_url", "").value or None
        model = self.declare_parameter("llm_model", "").value or None
        return make_backend("llm", config=LLMConfig.from_env(base_url=base_url, model=model), prompts=prompt_library())

    def _goal_lines(self, task: Any) -> list[str]:
        return [GoalLine.of(p, self.names).text() for p in task.predicates]

    # --- requests --------------------------------------------------------------------------------------------
    async def _execute(self, handle: Any) -> Any:
        request: str = handle.request.request
        task = self.desk.give(request, first=handle.request.first)
        self.get_logger().info(f"{task.id}: {request!r} -> {task.state.value} {task.reason or '; '.join(task.goal)}")
        if task.state != TaskState.REFUSED:
            done = Future()
            self.waiting[task.id] = (handle, done)
            self._next()
            self._feedback()
            await done
        else:
            self._record(task)
        self._publish_state()
        result = TeamTask.Result(
            outcome=task.state.value, reason=task.reason, goal=list(task.goal), task_id=task.id, seconds=task.seconds
        )
        if task.state == TaskState.DONE:
            handle.succeed()
        elif task.state == TaskState.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        return result

    def _on_cancel_task(self, request: Any, response: Any) -> Any:
        task_id = request.task_id or (self.desk.running.id if self.desk.running is not None else "")
        task = self.desk.find(task_id) if task_id else None
        if task is None or task.state.ended:
            response.canceled, response.reason = False, f"no waiting or running task {task_id or '(none runs)'}"
            return response
        self._cancel(task)
        response.canceled, response.reason = True, f"{task.id} canceled"
        return response

    def _cancel(self, task: DeskTask) -> None:
        running = task is self.desk.running
        self.desk.cancel(task.id)
        if running:
            self._stop(task)
        self._ended(task)

    # --- the running task ------------------------------------------------------------------------------------
    def _next(self) -> None:
        """Start the next queued task when none runs."""
        task = self.desk.start_next()
        if task is None:
            self._publish_state()
            return
        self.progress.clear()
        self.assign.publish(
            TaskAssignment(
                command=TaskAssignment.START,
                task_id=task.id,
                name=task.request[:200],
                goal=list(task.goal),
                time_limit_s=self.time_limit_s,
            )
        )
        self.get_logger().info(f"{task.id} starts: {'; '.join(task.goal)}")
        self._publish_state()

    def _stop(self, task: DeskTask) -> None:
        self.assign.publish(TaskAssignment(command=TaskAssignment.STOP, task_id=task.id, goal=list(task.goal)))

    def _on_progress(self, report: TaskProgress) -> None:
        running = self.desk.running
        if running is None or report.task_id != running.id:
            return
        self.progress[report.robot] = report
        started = self.doing.setdefault(running.id, {}).setdefault(report.robot, [])
        if report.doing and (not started or started[-1][1] != report.doing):
            started.append([round(time.monotonic() - (running.started_s or 0.0), 1), report.doing])
        if report.goal_met:
            self._end(TaskState.DONE, f"{report.robot}'s map shows the goal met")
        else:
            self._feedback()

    def _on_timer(self) -> None:
        for handle, _ in list(self.waiting.values()):  # canceled by the person who gave it (coteam task's Ctrl-C)
            task = self.desk.find(self._task_of(handle))
            if handle.is_cancel_requested and task is not None and not task.state.ended:
                self._cancel(task)
        running = self.desk.running
        started = running.started_s if running is not None else None
        if started is not None and 0 < self.time_limit_s < time.monotonic() - started:
            self._end(TaskState.FAILED, f"time limit ({self.time_limit_s:g} s)")

    def _task_of(self, handle: Any) -> str:
        return next((task_id for task_id, (h, _) in self.waiting.items() if h is handle), "")

    def _end(self, state: TaskState, reason: str) -> None:
        running = self.desk.running
        assert running is not None
        self._stop(running)
        work = {robot: {"actions": actions} for robot, actions in self.doing.pop(running.id, {}).items()}
        self._ended(self.desk.end(state, reason, work))
        self._next()
        self._feedback()

    def _ended(self, task: DeskTask) -> None:
        self.get_logger().info(f"{task.id} {task.state.value}: {task.reason} ({task.seconds:.1f} s)")
        self._record(task)
        waiting = self.waiting.pop(task.id, None)
        if waiting is not None and not waiting[1].done():
            waiting[1].set_result(task)

    def _record(self, task: DeskTask) -> None:
        if self.results_path:
            with Path(self.results_path).open("a") as out:
                out.write(json.dumps(task.record()) + "\n")

    # --- what people see -------------------------------------------------------------------------------------
    def _feedback(self) -> None:
        for task_id, (handle, _) in self.waiting.items():
            task = self.desk.find(task_id)
            if task is None or task.state.ended:
                continue
            feedback = TeamTask.Feedback(
                state=task.state.value, position=self.desk.position(task), goal=list(task.goal), task_id=task.id
            )
            if task is self.desk.running:
                feedback.progress = self._team_progress(task)
                feedback.robots = [f"{r}: {p.doing or 'waiting'}" for r, p in sorted(self.progress.items())]
            handle.publish_feedback(feedback)

    def _team_progress(self, task: DeskTask) -> list[str]:
        """Per goal line, the most any robot's map shows in place."""
        best = list(task.goal)
        for report in self.progress.values():
            for k, line in enumerate(report.progress[: len(best)]):
                if best[k] == task.goal[k] or _done(line) > _done(best[k]):
                    best[k] = line
        return best

    def _publish_state(self) -> None:
        tasks = [*([self.desk.running] if self.desk.running else []), *self.desk.queue]
        listed = [
            dict(
                task_id=t.id, state=t.state.value, position=self.desk.position(t), goal=list(t.goal), request=t.request
            )
            for t in tasks
        ]
        ended = [t.record() for t in self.desk.ended[-10:]]
        self.state.publish(String(data=json.dumps({"tasks": listed, "ended": ended})))

    def destroy_node(self) -> None:
        """Stopped: the running and waiting tasks end as failed (the team stopped), each with its record."""
        if getattr(self, "desk", None) is not None:
            if self.desk.running is not None:
                self._ended(self.desk.end(TaskState.FAILED, "the team was stopped"))
            for task in list(self.desk.queue):
                self.desk.cancel(task.id)
                self._record(task)
        super().destroy_node()


def _done(line: str) -> int:
    """The count in place of a progress line ("in(cup, cabinet): 1 of 2" -> 1; a bare goal line -> -1)."""
    try:
        return int(line.rsplit(":", 1)[1].split(" of ")[0])
    except (IndexError, ValueError):
        return -1


def main(argv: list[str] | None = None) -> None:
    spin_node(TaskDeskNode, argv)


if __name__ == "__main__":
    main()
