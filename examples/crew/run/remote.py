"""The calls a step makes to its agent: send or follow a remote task until it ends or needs
input, with the ledger following along; cancel it (on a deadline, an expiry or an abort).

Contract: a run's taskId is written the moment the agent reports it (a crash after that
resumes the task); a message whose taskId was never recorded is looked up by its messageId
before it is sent again; every error of the agent becomes the attempt's failure
(`AttemptFailedError`), naming what happened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import NoReturn, TypeVar

import anyio

from examples.crew.agents.client import (
    AgentBusyError,
    AgentError,
    AgentLink,
    AgentUnreachableError,
    RemoteTask,
    Update,
    closing,
)
from examples.crew.ledger.ledger import RunRow, now
from examples.crew.ledger.states import INTERRUPTED, TERMINAL, RunState
from examples.crew.plan.plan import StepSpec
from examples.crew.run.context import AttemptFailedError, JobContext

T = TypeVar("T")
Send = tuple[str, str, tuple[str, ...]]  # text, messageId, patches (applyChanges)
CANCEL_TIMEOUT = 10.0


class RemoteCalls:
    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx

    async def settled(
        self, link: AgentLink, run: RunRow, send: Send | None, spec: StepSpec
    ) -> tuple[RemoteTask, RunRow]:
        """Send (or follow) until the task ends or needs input; the ledger follows along."""
        ctx = self.ctx
        if send is not None and run.task_id is None and not ctx.take_fresh(run):
            found = await self._guard(link.find(run.context_id, run.message_id), run)
            if found is not None:
                run = await ctx.ledger.update_run(run, task_id=found.id, state=found.state)
                ctx.board.run(spec.id, run, "found again")
                send = None
        refs = self.refs(spec, run)
        rounds = 0
        while True:
            if rounds:
                await anyio.sleep(min(0.5 * rounds, 5.0))  # the stream ended early: back off
            rounds += 1
            if send is not None:
                text, message_id, patches = send
                events = link.send(
                    text,
                    message_id=message_id,
                    context_id=run.context_id,
                    task_id=run.task_id,
                    reference_task_ids=refs if run.task_id is None else (),
                    patches=patches,
                )
                send = None
            elif run.task_id is not None:
                events = link.follow(run.task_id)
            else:
                raise AttemptFailedError("nothing to send and no task to follow", retryable=True)
            run, reply = await self._consume(events, run, spec)
            if reply is not None:
                return reply, run
            if run.task_id is None:
                raise AttemptFailedError("the agent answered without a task", retryable=True)
            task = await self._guard(link.get(run.task_id), run)
            if task.state in TERMINAL or task.state in INTERRUPTED:
                return task, run

    async def _consume(
        self, events: AsyncIterator[Update], run: RunRow, spec: StepSpec
    ) -> tuple[RunRow, RemoteTask | None]:
        ctx = self.ctx
        async with closing(events):
            try:
                async for update in events:
                    if update.reply is not None:
                        return run, update.reply
                    if run.task_id is None and update.task_id:
                        # Written the moment it is known: a crash after this resumes the task.
                        state = update.state or RunState.SUBMITTED
                        run = await ctx.ledger.update_run(run, task_id=update.task_id, state=state)
                    elif update.state is not None and update.state != run.state:
                        run = await ctx.ledger.update_run(run, state=update.state)
                    ctx.board.run(spec.id, run, update.note[:200])
            except AgentError as exc:
                await self._failed_call(run, exc)
        return run, None

    async def _guard(self, call: Awaitable[T], run: RunRow) -> T:
        """Await one call to the agent; its errors become this attempt's failure."""
        try:
            return await call
        except AgentError as exc:
            await self._failed_call(run, exc)

    async def _failed_call(self, run: RunRow, exc: AgentError) -> NoReturn:
        if isinstance(exc, AgentBusyError):  # the agent's own HTTP 429: an alternate's turn
            raise AttemptFailedError(f"agent busy: {exc}", retryable=False) from exc
        if isinstance(exc, AgentUnreachableError):
            state = RunState.LOST if run.task_id else RunState.SENDING
            await self.ctx.ledger.update_run(run, state=state, detail=f"unreachable: {exc}")
            raise AttemptFailedError(f"agent unreachable: {exc}", retryable=True) from exc
        raise AttemptFailedError(f"agent error: {exc}", retryable=True) from exc

    def refs(self, spec: StepSpec, run: RunRow) -> list[str]:
        """referenceTaskIds: the work this message revises and, from round 2 on, the step's own
        previous round; only tasks of the same agent (ids mean nothing to another agent)."""
        wanted = [spec.revises] if spec.revises else []
        if run.round > 1:
            wanted.append(spec.id)
        refs = []
        for step_id in wanted:
            latest = self.ctx.latest.get(step_id)
            if latest is not None and latest[0] == run.agent and latest[1] not in refs:
                refs.append(latest[1])
        return refs

    async def past_deadline(
        self, link: AgentLink, run: RunRow, spec: StepSpec, budget: float
    ) -> AttemptFailedError:
        run = await self.ctx.ledger.run(run.job_id, run.step_id, run.attempt)
        whose = (
            "the job's deadline"
            if spec.deadline is None or budget < spec.deadline / 1000
            else f"its deadline ({spec.deadline / 1000:g} s)"
        )
        state = await self.cancel_remote(link, run, RunState.TIMEOUT, f"past {whose}")
        return AttemptFailedError(
            f"past {whose}; its task was canceled on the agent ({state})", retryable=True
        )

    async def cancel_remote(
        self, link: AgentLink, run: RunRow, state: RunState, detail: str
    ) -> str:
        """Cancel the run's remote task (found by messageId if its id never came back);
        returns what the agent says the task became. A run that ended meanwhile (it answered
        just as the deadline or the abort came) is left as it ended."""
        run = await self.ctx.ledger.run(run.job_id, run.step_id, run.attempt)
        if not run.open:
            return str(run.state)
        remote = "no task"
        with anyio.move_on_after(CANCEL_TIMEOUT):
            try:
                task_id = run.task_id
                if task_id is None and link.can_look_up:
                    found = await link.find(run.context_id, run.message_id)
                    task_id = found.id if found is not None else None
                if task_id is not None:
                    remote = (await link.cancel(task_id)).state
                    run = await self.ctx.ledger.update_run(run, task_id=task_id)
            except AgentError as exc:
                remote = f"cancel failed: {exc}"
        detail = f"{detail}; agent: {remote}"
        await self.ctx.ledger.update_run(run, state=state, detail=detail, ended_at=now())
        return remote
