"""The crew as an A2A agent: a backend of our own daemon whose turns run crew jobs.

`python -m examples.crew serve PLAN --port P` serves it (one agent card, the daemon's server,
SSE, stores and protocol handling), and so does `a2a-wrapper serve CONFIG` with
`"backend": "examples.crew.agent:SPEC"` and a `crew` block (`plan`, `ledger`): a crew can then
be a step of another crew like any other agent.

Contract:
- A job belongs to the caller's context: the job id is the context's backend session
  (`SessionBound` first), so the daemon's store keeps context -> job across restarts, and the
  ledger keeps which crew task belongs to which job. A message on a crew task goes to that
  task's job (an answer; after an expiry, the job's end); on a new task it resumes the
  context's job while that is unfinished (running when the crew process died, or waiting for
  an answer), else it starts a new job with its text as the input. One invocation of a job
  runs at a time.
- Step progress streams as WORKING status updates, each naming its step.
- A specialist's question ends the turn INPUT_REQUIRED with the question and the step named
  (and a `question` data artifact: step, agent, taskId, text); the caller's answer, on the
  same taskId, goes to that step's remote task (the runner's `--answer` path).
- The job's end: the Markdown report as the `report` artifact and the combined patch of its
  steps' changes as the `patch` artifact (`changes.patch`, `job_artifacts`), then COMPLETED
  (done, or done with gaps) or FAILED.
- `answerDeadline`: a question left unanswered expires even if nobody writes again: at its
  deadline the job runs once more here, the runner cancels the remote task and `onFailure`
  decides; the crew task's next message gets the job's end.
- A CancelTask on the crew task stops the job here; remote tasks go on (as after Ctrl-C), so
  a later message in the context picks them up, never resending them.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream
from pydantic import Field

from examples.crew.daemon import (
    AgentBlock,
    ArtifactOut,
    BackendBase,
    BackendEvent,
    BackendSpec,
    DataContent,
    Diagnosis,
    Failed,
    FileContent,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextContent,
    Turn,
    safe_failure,
)
from examples.crew.ledger.ledger import Ledger
from examples.crew.ledger.states import ENDED_JOBS, INTERRUPTED, JobState, StepState
from examples.crew.plan.changes import PATCH_FILE, job_patch
from examples.crew.plan.plan import Plan, PlanError, load_plan
from examples.crew.run.job import JobError, JobResult, new_job_id, run_job
from examples.crew.run.runner import age
from examples.crew.show.events import NobodyAsker, NullObserver, PresetAnswers, StepStatus
from examples.crew.show.report import build_report


class CrewConfig(AgentBlock):
    """The `crew` block: which plan this agent runs and where its ledger is."""

    plan: Path = Field(description="The crew plan (JSON) every job of this agent runs")
    ledger: Path = Field(description="The crew's SQLite ledger (jobs, steps, remote tasks)")


async def job_artifacts(ledger: Ledger, job_id: str) -> list[ArtifactOut]:
    """Artifacts a job adds after its report: the combined patch of its steps' changes
    (`changes.patch`, what `python -m examples.crew apply` applies), when it has one."""
    patch = await job_patch(ledger, job_id)
    if not patch:
        return []
    part = FileContent(data=patch.encode(), name=PATCH_FILE, media_type="text/x-diff")
    return [ArtifactOut((part,), name="patch")]


@dataclass(frozen=True)
class Pending:
    """The question a job waits on: the step that asked and its remote task."""

    step: str
    agent: str
    task_id: str
    text: str


async def pending_question(plan: Plan, ledger: Ledger, job_id: str) -> Pending | None:
    """The first step (in plan order) whose remote task waits for input, from the ledger (so
    it survives a restart of the crew)."""
    steps = await ledger.steps(job_id)
    for step_id in plan.order:
        row = steps.get(step_id)
        if row is None or row.state is not StepState.NEEDS_INPUT:
            continue
        runs = await ledger.runs(job_id, step_id)
        asking = [r for r in runs if r.state in INTERRUPTED and r.task_id]
        if asking:
            run = asking[-1]
            text = (row.detail or "").partition(": ")[2] or (row.detail or "")
            return Pending(step_id, run.agent, run.task_id or "", text)
    return None


class ProgressObserver:
    """The runner's observer, as status updates of the crew task: one note per change of a
    step's state, task, round or attempt (and per new note while retrying or asking)."""

    def __init__(self, send: MemoryObjectSendStream[BackendEvent]) -> None:
        self._send = send
        self._last: dict[str, tuple[object, ...]] = {}

    def changed(self, status: StepStatus) -> None:
        key = (status.shown, status.task_id, status.round, status.attempt, status.note)
        if self._last.get(status.step) == key or status.state is StepState.PENDING:
            return
        self._last[status.step] = key
        text = f"step {status.step} ({status.agent}): {status.shown}"
        if status.attempt:
            text += f", round {status.round} attempt {status.attempt}"
        if status.task_id:
            text += f", task {status.task_id}"
        if status.note:
            text += f": {' '.join(status.note.split())[:200]}"
        self._put(Progress(text))

    def message(self, text: str) -> None:
        self._put(Progress(text))

    def _put(self, event: BackendEvent) -> None:
        # After the turn ended (canceled) nobody reads progress any more.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(event)


class CrewAgent(BackendBase):
    """One plan, one ledger; every turn runs (or resumes) one job of it."""

    name = "crew"

    def __init__(self, config: CrewConfig, environ: dict[str, str] | None = None) -> None:
        self.config = config
        self._environ = environ
        self._plan: Plan | None = None
        self._ledger: Ledger | None = None
        self._tg: TaskGroup | None = None
        self._jobs: dict[str, anyio.CancelScope] = {}  # crew task id -> its job's scope
        self._ended: dict[str, anyio.Event] = {}
        self._locks: dict[str, anyio.Lock] = {}

    async def start(self) -> None:
        # Read on a worker thread: the daemon's event loop never waits on the disk.
        self._plan = await anyio.to_thread.run_sync(load_plan, self.config.plan, self._environ)
        ledger = Ledger(self.config.ledger)
        await ledger.open()
        self._ledger = ledger

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        if self._ledger is not None:
            await self._ledger.close()
            self._ledger = None

    async def diagnose(self) -> list[Diagnosis]:
        try:
            plan = await anyio.to_thread.run_sync(load_plan, self.config.plan, self._environ)
        except PlanError as exc:
            return [Diagnosis("plan", ok=False, detail=str(exc))]
        layers = " -> ".join("+".join(layer) for layer in plan.layers)
        return [Diagnosis("plan", ok=True, detail=f"{plan.name}: {layers}")]

    async def interrupt(self, turn: Turn) -> None:
        scope = self._jobs.get(turn.task_id)
        if scope is not None:
            scope.cancel()
            await self._ended[turn.task_id].wait()

    async def _job_for(self, plan: Plan, ledger: Ledger, turn: Turn) -> str:
        """The job a turn belongs to: its task's (an answer, or a message after an expiry),
        else the context's while unfinished (a restart), else a new one."""
        known = await ledger.job_of_task(turn.task_id)
        if known is not None:
            return known
        job = await ledger.job(turn.session_id) if turn.session_id else None
        if job is not None and job.state not in ENDED_JOBS:
            return job.job_id
        return new_job_id(plan)

    def _lock(self, job_id: str) -> anyio.Lock:
        """One invocation of a job at a time (a turn, or an expiry)."""
        return self._locks.setdefault(job_id, anyio.Lock())

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        plan, ledger, tg = self._plan, self._ledger, self._tg
        if plan is None or ledger is None or tg is None:
            raise RuntimeError("the crew agent is not started")
        job_id = await self._job_for(plan, ledger, turn)
        await ledger.bind_task(turn.task_id, job_id)
        yield SessionBound(job_id)
        send, receive = anyio.create_memory_object_stream[BackendEvent](math.inf)
        scope = anyio.CancelScope()
        self._jobs[turn.task_id] = scope
        self._ended[turn.task_id] = anyio.Event()
        finished = anyio.Event()

        async def job_task() -> None:
            async with send:
                with scope:
                    async with self._lock(job_id):
                        try:
                            ending = await self._invoke(plan, ledger, job_id, turn, send)
                        except Exception as exc:  # noqa: BLE001 - the turn fails, the agent lives
                            ending = [
                                safe_failure(
                                    "error",
                                    "The crew stopped on an unexpected error.",
                                    event="crew.job_crashed",
                                    exc=exc,
                                    job=job_id,
                                )
                            ]
                        finished.set()
                        with contextlib.suppress(anyio.BrokenResourceError):  # turn gone
                            for event in ending:
                                send.send_nowait(event)
            self._jobs.pop(turn.task_id, None)
            self._ended.pop(turn.task_id).set()

        tg.start_soon(job_task, name=f"crew job {job_id}")
        try:
            async with receive:
                async for event in receive:
                    yield event
        finally:
            if not finished.is_set():  # the turn was canceled or closed early: stop the job
                scope.cancel()

    async def _invoke(
        self,
        plan: Plan,
        ledger: Ledger,
        job_id: str,
        turn: Turn,
        send: MemoryObjectSendStream[BackendEvent],
    ) -> list[BackendEvent]:
        """Run the job once for this turn; the events that end the turn."""
        observer = ProgressObserver(send)
        job = await ledger.job(job_id)
        if job is not None and job.state in ENDED_JOBS:  # e.g. its question expired meanwhile
            observer.message(f"job {job_id}: already ended ({job.state})")
            report = await build_report(plan, job, ledger, {})
            return await self._end(plan, ledger, job_id, job.state, report, {})
        answers: dict[str, str] = {}
        pending = await pending_question(plan, ledger, job_id) if job is not None else None
        if pending is not None and turn.text.strip():
            answers[pending.step] = turn.text.strip()
            observer.message(f"step {pending.step}: your answer goes to {pending.agent}")
        elif job is not None:
            observer.message(f"job {job_id}: resumed")
        else:
            observer.message(f"job {job_id}: started (plan {plan.name})")
        try:
            result = await run_job(
                plan,
                ledger,
                job_id,
                None if job is not None else turn.text,
                asker=PresetAnswers(answers, NobodyAsker()),
                observer=observer,
                environ=self._environ,
            )
        except JobError as exc:
            # Our own words (which agent, its URL, why), safe to show the caller.
            observer.message(f"job {job_id}: cannot run: {exc}")
            return [Failed("error", f"The crew could not run job {job_id}: {exc}")]
        state = result.outcome.state
        if state is JobState.NEEDS_INPUT:
            await self._arm_expiry(plan, ledger, job_id)
        return await self._end(plan, ledger, job_id, state, result.report, failures(result))

    async def _arm_expiry(self, plan: Plan, ledger: Ledger, job_id: str) -> None:
        """The question the job now waits on expires at its step's answerDeadline even if
        nobody writes again: then the job runs once more, here, and the runner expires it
        (cancels the remote task, applies onFailure)."""
        pending = await pending_question(plan, ledger, job_id)
        if pending is None or self._tg is None:
            return
        deadline = plan.step(pending.step).answer_deadline
        if deadline is None:
            return
        runs = await ledger.runs(job_id, pending.step)
        asked = [r for r in runs if r.task_id == pending.task_id]
        stamp = asked[-1].asked_at if asked else None
        left = deadline / 1000 - age(stamp)
        self._tg.start_soon(self._expire, plan, ledger, job_id, pending, max(left, 0.0))

    async def _expire(
        self, plan: Plan, ledger: Ledger, job_id: str, pending: Pending, delay: float
    ) -> None:
        await anyio.sleep(delay)
        async with self._lock(job_id):
            if await pending_question(plan, ledger, job_id) != pending:
                return  # answered (or ended) meanwhile
            with contextlib.suppress(JobError):  # an agent unusable: the next message says so
                await run_job(
                    plan,
                    ledger,
                    job_id,
                    None,
                    asker=NobodyAsker(),
                    observer=NullObserver(),
                    environ=self._environ,
                )

    async def _end(  # noqa: PLR0917 - the job's end, from its invocation's results
        self,
        plan: Plan,
        ledger: Ledger,
        job_id: str,
        state: JobState,
        report: str,
        failed: dict[str, str],
    ) -> list[BackendEvent]:
        events: list[BackendEvent] = [
            ArtifactOut((TextContent(report),), name="report"),
            *(await job_artifacts(ledger, job_id)),
        ]
        if state is JobState.NEEDS_INPUT:
            pending = await pending_question(plan, ledger, job_id)
            if pending is not None:
                question: dict[str, Any] = {
                    "step": pending.step,
                    "agent": pending.agent,
                    "taskId": pending.task_id,
                    "question": pending.text,
                }
                events.append(ArtifactOut((DataContent(question),), name="question"))
                text = f"step {pending.step} ({pending.agent}) asks: {pending.text}"
            else:
                text = f"job {job_id} waits for an answer (see the report)"
            events.append(NeedsInput(text))
        elif state is JobState.FAILED:
            where = "; ".join(f"step {step}: {why}" for step, why in failed.items())
            events.append(Failed("error", f"job {job_id} failed: {where or 'see the report'}"))
        else:
            gaps = "" if state is JobState.DONE else " with gaps (see the report)"
            events.append(Text(f"job {job_id}: done{gaps}"))
        return events


def failures(result: JobResult) -> dict[str, str]:
    """The failed steps of a job and why (each names its agent, URL and reason)."""
    outcome = result.outcome
    return {
        step: outcome.details.get(step, "(no reason recorded)")
        for step, state in outcome.steps.items()
        if state is StepState.FAILED
    }


def create(config: CrewConfig) -> CrewAgent:
    return CrewAgent(config)


SPEC = BackendSpec("crew", CrewConfig, create)


def serve_overrides(
    plan_path: Path, plan: Plan, *, ledger: Path, state: Path, host: str, port: int
) -> dict[str, Any]:
    """The daemon config of `crew serve`: this backend, the plan's name on the card, the
    daemon's task store next to the ledger, no turn deadlines of the daemon's own (the plan's
    deadlines are the crew's; a job may wait on its specialists for long without a word)."""
    return {
        "backend": "examples.crew.agent:SPEC",
        "crew": {"plan": str(plan_path.resolve()), "ledger": str(ledger.resolve())},
        "agentCard": {
            "name": plan.name,
            "description": plan.description or f"A crew of agents running plan {plan.name}",
        },
        "server": {"host": host, "port": port},
        "storage": {"path": str((state / "crew-agent.sqlite3").resolve())},
        "timeouts": {"turn": 0, "idle": 0},
    }
