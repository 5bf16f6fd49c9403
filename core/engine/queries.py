"""The runs the engine holds in memory, and the read side of the task service (GetTask,
ListTasks): a task in flight is read from its run, any other one from the store."""

from __future__ import annotations

from collections.abc import Iterator

from core.engine.streams import apply_history_length
from core.engine.task_run import Notify, TaskRun
from core.storage.contracts import TaskQuery, TaskStore
from core.wire.errors import TaskNotFoundError
from core.wire.models import (
    DEFAULT_PAGE_SIZE,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    StreamResponse,
    Task,
)


class LiveRuns:
    """The runs of tasks with a turn in flight or a watcher, by task id."""

    def __init__(
        self,
        store: TaskStore,
        published: Notify | None = None,
        push: Notify | None = None,
    ) -> None:
        """Each event a run publishes goes, after its subscribers, to `published` (the other
        replicas: core/cluster/router.py), then to `push`."""
        self._store = store
        self._notify = _chained(published, push) if published is not None else push
        self._runs: dict[str, TaskRun] = {}

    def get(self, principal: str, task_id: str | None) -> TaskRun | None:
        """The run of the principal's task (None for another principal's)."""
        run = self._runs.get(task_id) if task_id else None
        return run if run is not None and run.principal == principal else None

    def new(self, principal: str, task: Task, *, new_context: bool = False) -> TaskRun:
        return TaskRun(principal, task, self._store, notify=self._notify, new_context=new_context)

    def of_stored(self, principal: str, task: Task) -> TaskRun:
        """The live run of a stored task, made (and held) if there is none."""
        run = self.get(principal, task.id)
        if run is None:
            run = TaskRun.stored(principal, task, self._store, self._notify)
        return run

    def hold(self, run: TaskRun) -> None:
        self._runs[run.task.id] = run

    def release(self, run: TaskRun) -> None:
        """Forget a run nobody needs: no turn in flight and no one watching."""
        if not run.in_flight and not run.has_subscribers and self._runs.get(run.task.id) is run:
            del self._runs[run.task.id]

    def forget(self, task_id: str) -> None:
        self._runs.pop(task_id, None)

    def __iter__(self) -> Iterator[TaskRun]:
        return iter(list(self._runs.values()))


def _chained(first: Notify, push: Notify | None) -> Notify:
    def notify(run: TaskRun, event: StreamResponse) -> None:
        first(run, event)
        if push is not None:
            push(run, event)

    return notify


class TaskQueries:
    def __init__(self, store: TaskStore, live: LiveRuns) -> None:
        self._store = store
        self._live = live

    async def load(self, principal: str, task_id: str) -> Task:
        run = self._live.get(principal, task_id)
        if run is not None:
            return run.task
        task = await self._store.get(principal, task_id)
        if task is None:
            raise TaskNotFoundError
        return task

    async def get(self, principal: str, request: GetTaskRequest) -> Task:
        return apply_history_length(await self.load(principal, request.id), request.history_length)

    async def list(self, principal: str, request: ListTasksRequest) -> ListTasksResponse:
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        page = await self._store.list(
            principal,
            TaskQuery(
                context_id=request.context_id,
                state=request.status,
                status_after=request.status_timestamp_after,
                page_size=page_size,
                page_token=request.page_token or None,
            ),
        )
        tasks = []
        for task in page.tasks:
            live = self._live.get(principal, task.id)
            current = live.task if live is not None else task
            if not request.include_artifacts and current.artifacts is not None:
                current = current.model_copy(update={"artifacts": None})
            tasks.append(apply_history_length(current, request.history_length))
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=page.next_page_token,
            page_size=page_size,
            total_size=page.total_size,
        )
