"""One turn, from its start in the context's lane to its end state: the policy hook, the
session lease, the deadlines, and making sure the agent stopped when the turn was cut short
(cancel, deadline, shutdown). Any failure of the turn fails its task only."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import anyio
import structlog

from core.backend import Backend, Turn, new_error_id, with_error_id
from core.engine.policy import NO_HOOKS, Hooks
from core.engine.task_run import TaskRun
from core.engine.turn.content import agent_message
from core.engine.turn.guard import backend_call
from core.engine.turn.plugins import NO_TURN_HOOKS, StopTurnError, TurnHooks
from core.engine.turn.runner import ApprovalTimeoutError, IdleTimeoutError, TurnRunner
from core.sessions.manager import Lease, SessionManager
from core.wire.base import utcnow
from core.wire.errors import StorageUnavailableError
from core.wire.models import Part

log = structlog.get_logger(__name__)

APPROVAL_TIMEOUT_REASON = (
    "Nobody answered the agent's approval request within approvals.timeout; the turn was "
    "stopped (approvals.onTimeout is fail)."
)


def turn_timeout_reason(seconds: float) -> str:
    return (
        f"The turn took longer than timeouts.turn ({seconds:g} s); the agent was stopped. "
        "Send a narrower request, or raise timeouts.turn."
    )


def idle_timeout_reason(seconds: float) -> str:
    return (
        f"The agent sent nothing for timeouts.idle ({seconds:g} s); it was stopped. "
        "Its model endpoint may be unreachable or stalled."
    )


async def fail_crashed(run: TaskRun) -> None:
    """A turn that crashed outside the backend's fence (a store, a hook) still ends its task,
    so no waiter or subscriber waits for a state that will not come. Call it from the
    `except` block: the traceback is logged under the error id the message carries."""
    error_id = new_error_id()
    log.exception(
        "turn.crashed", error_id=error_id, task_id=run.task.id, context_id=run.task.context_id
    )
    if run.task.status.state.terminal or run.reply is not None:
        return
    text = with_error_id("The daemon failed while running this task", error_id)
    with anyio.CancelScope(shield=True):
        try:
            await run.fail(agent_message(run.task, [Part(text=text)]))
        except Exception:
            log.exception("turn.crash_not_recorded", error_id=error_id, task_id=run.task.id)


def _stop_reason(run: TaskRun, exc: StopTurnError | StorageUnavailableError) -> str:
    if isinstance(exc, StopTurnError):
        return exc.reason
    # The store refused the task's write (StaleWriteError: this replica lost its lease, or
    # the task ended elsewhere) or cannot be reached: the turn stops (its agent interrupted).
    log.warning("turn.not_stored", task_id=run.task.id, error=type(exc).__name__)
    return exc.message


class TurnDriver:
    def __init__(
        self,
        backend: Backend,
        runner: TurnRunner,
        sessions: SessionManager,
        *,
        hooks: Hooks = NO_HOOKS,
        turn_hooks: TurnHooks = NO_TURN_HOOKS,
        turn_timeout: float | None = None,
        idle_timeout: float | None = None,
        cancel_timeout: float = 10.0,
        debug_errors: bool = False,
    ) -> None:
        self._backend = backend
        self._runner = runner
        self._sessions = sessions
        self._hooks = hooks
        self._turn_hooks = turn_hooks
        self._turn_timeout = turn_timeout
        self._idle_timeout = idle_timeout
        self._cancel_timeout = cancel_timeout
        self._debug_errors = debug_errors

    async def run(self, run: TaskRun, turn: Turn) -> None:
        """Resolve the context's session, run the turn under its deadlines, and make sure the
        agent stopped when the turn was cut short (cancel, deadline, shutdown).

        The run begins (its scope set) before the first await, so a cancel or shutdown that
        arrives while the session is being resolved stops this turn instead of racing it."""
        timed_out: str | None = None
        started: Turn | None = None
        with anyio.CancelScope() as scope:
            run.begin(scope, self._hooks, turn)
            refusal = await self._hooks.refusal(turn)
            if refusal is not None:
                log.info("turn.refused", task_id=run.task.id)
                await run.reject(agent_message(run.task, [Part(text=refusal)]))
                return
            lease = await self._sessions.begin(
                run.principal,
                run.task.context_id,
                task_session=run.session_id,
                new_context=run.new_context,
            )
            owed: Turn | None = None  # what the turn hooks prepared, released at the end
            try:
                deadline = (
                    utcnow() + timedelta(seconds=self._turn_timeout) if self._turn_timeout else None
                )
                started = replace(turn, session_id=lease.session_id, deadline=deadline)
                run.lease(
                    started,
                    backend=self._backend.name,
                    new_session=lease.new_session,
                    expired_session=lease.expired_session,
                    resume_command=self._runner.resume_command(lease.session_id),
                    on_end=lambda: self._sessions.count_turn(lease),
                )
                try:
                    prepared = await self._turn_hooks.prepare(started)
                except StopTurnError as exc:
                    # Nothing of the turn ran (its workspace could not be made ready, say).
                    log.info("turn.not_prepared", task_id=run.task.id, reason=exc.reason)
                    await run.fail(agent_message(run.task, [Part(text=exc.reason)]))
                    return
                if prepared.cwd is not None and prepared.session_id is not None:
                    # The resume command goes through the context's workspace.
                    run.bind_session(
                        prepared.session_id,
                        self._runner.resume_command(prepared.session_id, prepared.cwd),
                    )
                run.prepared(prepared)
                started = owed = prepared
                timed_out = await self._run_bounded(run, started, lease)
            finally:
                # One shielded scope for both (a scope costs as much as either call here): the
                # hooks release what they prepared, then the session is counted and freed,
                # even if the release raised.
                with anyio.CancelScope(shield=True):
                    try:
                        if owed is not None:
                            await self._turn_hooks.release(owed)
                    finally:
                        await self._sessions.end(lease)
        if timed_out is not None:
            log.warning("turn.timed_out", task_id=run.task.id, reason=timed_out)
            await run.stop(timed_out)
        if scope.cancelled_caught or timed_out is not None:
            # The consumer is gone; now make sure the agent itself stops. Whatever interrupt()
            # does, the task ends and the lane is freed for the context's next turn.
            error_id = await self._interrupt(run, started) if started is not None else None
            if not run.task.status.state.terminal:
                with anyio.CancelScope(shield=True):
                    await self._finish_stopped(run, error_id)

    async def _run_bounded(self, run: TaskRun, turn: Turn, lease: Lease) -> str | None:
        """Run the turn; returns the reason when a deadline cut it short. Any other failure
        of the turn fails the task with an opaque error id."""

        async def on_session(session_id: str) -> None:
            await self._sessions.bound(lease, session_id)

        try:
            with anyio.move_on_after(self._turn_timeout or math.inf) as deadline:
                await self._runner.run(run, turn, on_session)
        except IdleTimeoutError:
            return idle_timeout_reason(self._idle_timeout or 0)
        except ApprovalTimeoutError:
            return APPROVAL_TIMEOUT_REASON
        except (StopTurnError, StorageUnavailableError) as exc:
            return _stop_reason(run, exc)
        except Exception as exc:
            error_id = new_error_id()
            log.exception(
                "turn.failed", error_id=error_id, task_id=run.task.id, backend=self._backend.name
            )
            text = with_error_id("The agent failed", error_id)
            if self._debug_errors:
                text += f" {type(exc).__name__}: {exc}"
            await run.fail(agent_message(run.task, [Part(text=text)]))
            return None
        if deadline.cancelled_caught:
            return turn_timeout_reason(self._turn_timeout or 0)
        return None

    async def _interrupt(self, run: TaskRun, turn: Turn) -> str | None:
        """Stop the agent, bounded by the cancel timeout. An interrupt that raises or does not
        return in time is logged under an error id, which is returned (the agent may still be
        running); None when it stopped."""
        error_id = new_error_id()
        where = {"error_id": error_id, "task_id": run.task.id, "backend": self._backend.name}
        with anyio.move_on_after(self._cancel_timeout, shield=True) as bound:
            try:
                with backend_call("interrupt"):
                    await self._backend.interrupt(turn)
            except Exception:
                log.exception("turn.interrupt_failed", **where)
                return error_id
        if bound.cancelled_caught:
            log.error("turn.interrupt_timed_out", seconds=self._cancel_timeout, **where)
            return error_id
        return None

    async def _finish_stopped(self, run: TaskRun, error_id: str | None) -> None:
        """CANCELED (a cancel) or FAILED with the stop reason (deadline, shutdown); with
        `error_id`, the message says the agent did not confirm it stopped."""
        unconfirmed = (
            with_error_id("The agent did not confirm that it stopped", error_id)
            if error_id is not None
            else None
        )
        if run.stop_reason is None:
            message = agent_message(run.task, [Part(text=unconfirmed)]) if unconfirmed else None
            await run.cancel(message)
        else:
            text = f"{run.stop_reason} {unconfirmed}" if unconfirmed else run.stop_reason
            await run.fail(agent_message(run.task, [Part(text=text)]))
