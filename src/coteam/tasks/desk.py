"""The task desk of a serving team: the requests people give while the robots run, read, checked and queued.

One task runs at a time, in the order the requests came (a request given ``first`` goes before every queued one,
never before the running one). A request is goal lines in the world file's syntax (``in(cup, cabinet): 2``, one
per line) or a sentence, read by a role (:mod:`coteam.tasks.reading`: the grammar, or a model held to the home's
names). It is refused at once, with one line, when it cannot be read, when the home cannot hold what it asks, or
when it needs what the home's safety policy forbids (:meth:`coteam.home.safety.SafetyGate.task_refused`); nothing moves
then. Every task that ends -- done, failed, refused or canceled -- becomes a record, for the run's results.

The desk knows nothing of ROS: the team's task node (``coteam_ros``) offers it as the ``/team/task`` action and
tells the robots which task runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from coteam.domain.world import Scene, Task
from coteam.home.safety import SafetyGate
from coteam.home.world_file import GOAL_PATTERN, goal_task
from coteam.llm import RoleBackend, SymbolicBackend
from coteam.tasks.reading import read

MAX_QUEUE = 20  # tasks waiting at once: a longer queue is refused (a person can cancel, then ask again)
MAX_REQUEST_CHARS = 2000  # a longer request is refused at once (a sentence is read up to 500 characters)


class TaskState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    REFUSED = "refused"
    CANCELED = "canceled"

    @property
    def ended(self) -> bool:
        return self not in (TaskState.QUEUED, TaskState.RUNNING)


@dataclass
class TeamTask:
    """One request and what became of it. ``goal``: the lines it was read as; ``task``: the task the robots work on
    (None when refused)."""

    id: str
    request: str
    given_s: float
    goal: tuple[str, ...] = ()
    task: Task | None = None
    state: TaskState = TaskState.QUEUED
    reason: str = ""
    read_by: str = ""  # who read a sentence: symbolic (the grammar), llm, or fallback (the grammar after the model)
    started_s: float | None = None
    ended_s: float | None = None
    work: dict[str, Any] = field(default_factory=dict)  # what the robots did for it (filled by the runtime)

    @property
    def seconds(self) -> float:
        """From its start to its end (0 when it never started)."""
        if self.started_s is None:
            return 0.0
        return (self.ended_s if self.ended_s is not None else self.started_s) - self.started_s

    def record(self) -> dict[str, Any]:
        """The task as one line of the run's results."""
        return {
            "id": self.id,
            "request": self.request,
            "goal": list(self.goal),
            "outcome": self.state.value,
            "reason": self.reason,
            "read_by": self.read_by,
            "given_s": round(self.given_s, 3),
            "started_s": None if self.started_s is None else round(self.started_s, 3),
            "seconds": round(self.seconds, 3),
            "work": self.work,
        }


def is_goal_spec(request: str) -> bool:
    """Whether a request is goal lines in the world file's syntax (every non-empty line one goal)."""
    lines = [line for line in request.splitlines() if line.strip()]
    return bool(lines) and all(GOAL_PATTERN.match(line) for line in lines)


class TaskDesk:
    """The queue of a serving team's tasks in one home (module docstring). ``clock``: seconds, the runtime's."""

    def __init__(
        self,
        home: Scene,
        clock: Callable[[], float],
        *,
        reader: RoleBackend | None = None,
        safety: SafetyGate | None = None,
    ):
        self.home = home
        self.clock = clock
        self.reader = reader if reader is not None else SymbolicBackend()
        self.safety = safety
        self.queue: list[TeamTask] = []
        self.running: TeamTask | None = None
        self.ended: list[TeamTask] = []
        self._ids = itertools.count(1)

    def give(self, request: str, *, first: bool = False) -> TeamTask:
        """A person's request: queued (``first``: before the others), or refused at once (then also ended)."""
        task = TeamTask(f"task-{next(self._ids)}", request.strip(), self.clock())
        why = self._read(task)
        if not why and len(self.queue) >= MAX_QUEUE:
            why = f"{MAX_QUEUE} tasks are waiting already: cancel one, or ask again later"
        if why:
            return self._end(task, TaskState.REFUSED, why)
        self.queue.insert(0 if first else len(self.queue), task)
        return task

    def _read(self, task: TeamTask) -> str:
        """Reads ``task``'s request into its goal and task; why it is refused ('' when it is not)."""
        if not task.request:
            return "the request is empty: say what to put where, or give goal lines such as in(cup, cabinet): 2"
        if len(task.request) > MAX_REQUEST_CHARS:
            return f"the request is {len(task.request)} characters long: at most {MAX_REQUEST_CHARS}"
        if is_goal_spec(task.request):
            goal = tuple(line.strip() for line in task.request.splitlines() if line.strip())
            task.read_by = "goal"
        else:
            reading = read(task.request, self.home, self.reader)
            task.read_by = reading.source
            if not reading.ok:
                return reading.refused
            goal = reading.goal
        task.goal = goal
        try:
            task.task = goal_task(self.home, task.request[:200], list(goal), horizon=self.home.task.horizon)
        except ValueError as exc:
            return str(exc)
        if self.safety is not None:
            return self.safety.task_refused(task.task, self.home)
        return ""

    def start_next(self) -> TeamTask | None:
        """The next queued task, now running (None when one runs already or none waits)."""
        if self.running is not None or not self.queue:
            return None
        task = self.queue.pop(0)
        task.state, task.started_s = TaskState.RUNNING, self.clock()
        self.running = task
        return task

    def cancel(self, task_id: str) -> TeamTask | None:
        """Cancel a queued or the running task (the runtime stops the robots' goals of a running one); None for an
        unknown or ended id."""
        if self.running is not None and self.running.id == task_id:
            return self.end(TaskState.CANCELED, "canceled by a person")
        for task in self.queue:
            if task.id == task_id:
                self.queue.remove(task)
                return self._end(task, TaskState.CANCELED, "canceled by a person before it started")
        return None

    def end(self, state: TaskState, reason: str = "", work: dict[str, Any] | None = None) -> TeamTask:
        """The running task ended (done, failed or canceled)."""
        if self.running is None:
            raise ValueError("no task is running")
        task, self.running = self.running, None
        if work:
            task.work.update(work)
        return self._end(task, state, reason)

    def _end(self, task: TeamTask, state: TaskState, reason: str) -> TeamTask:
        task.state, task.reason, task.ended_s = state, reason, self.clock()
        self.ended.append(task)
        return task

    def find(self, task_id: str) -> TeamTask | None:
        if self.running is not None and self.running.id == task_id:
            return self.running
        return next((t for t in (*self.queue, *self.ended) if t.id == task_id), None)

    def position(self, task: TeamTask) -> int:
        """0 for the running task, 1.. for the queued ones in order, -1 for an ended one."""
        if task is self.running:
            return 0
        return self.queue.index(task) + 1 if task in self.queue else -1
