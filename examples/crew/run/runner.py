"""The scheduler: runs a plan's steps on their agents, in parallel where the graph allows, and
records everything in the ledger as it happens. This module is the graph; a step's rounds,
attempts and alternates are rounds.py's, the calls to agents remote.py's.

Contract:
- A step starts as soon as everything it waits for is done (`Plan.waits_for`); independent
  steps run at the same time, so a layer takes as long as its slowest step.
- Step states are the ledger's alone: the graph reads them from it and moves them through it
  (legal changes only, examples/crew/ledger/states.py); observers hear of each change from it.
- Every remote task is a run in the ledger, written before its message is sent and given its
  taskId the moment the agent reports it. On a re-run of the job, done rounds are reused, open
  tasks are followed (never resent), and a message whose task id was lost is looked up by its
  messageId first (v1.0 agents).
- Each remote task runs under the step's deadline, capped by what is left of the job's; past
  it the task is canceled on the agent, and the step's retries and `onFailure` apply.
- `input-required` goes to the `Asker` (the person running the crew); without an answer the
  step stops with the question, and its task stays open for a later re-run to answer. With
  `answerDeadline`, a question unanswered that long (counted from when it was first seen,
  across re-runs) expires: its remote task is canceled and the step fails (`onFailure`).
- A failure with `onFailure: abort` cancels the other running steps' remote tasks and skips
  the rest; with `continue`, steps that depend on it are skipped (a gap) and the others go on.
- Cancelling the runner itself (Ctrl-C) leaves remote tasks running, for a re-run to pick up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup

from examples.crew.agents.client import AgentLink
from examples.crew.ledger.ledger import Ledger
from examples.crew.ledger.states import UNFINISHED_FOR_GOOD, JobState, RunState, StepState
from examples.crew.plan.plan import Plan, StepSpec
from examples.crew.run.context import JobContext, StepFailedError, age
from examples.crew.run.rounds import NeedsInputError, StepRunner
from examples.crew.show.events import Asker, Board, NobodyAsker, NullObserver, Observer

__all__ = ["Crew", "JobOutcome", "age"]


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    state: JobState
    steps: Mapping[str, StepState]
    details: Mapping[str, str] = field(default_factory=dict)


class Crew:
    """One invocation of one job. Build it, `await run()` once."""

    def __init__(
        self,
        plan: Plan,
        ledger: Ledger,
        links: Mapping[str, AgentLink],
        *,
        job_id: str,
        job_input: str,
        context_id: str,
        asker: Asker | None = None,
        observer: Observer | None = None,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        board = Board({s.id: s.agent for s in plan.steps}, observer or NullObserver(), clock)
        self.ctx = JobContext(
            plan=plan,
            ledger=ledger,
            links=links,
            job_id=job_id,
            job_input=job_input,
            context_id=context_id,
            asker=asker or NobodyAsker(),
            board=board,
            clock=clock,
        )
        self._steps = StepRunner(self.ctx)
        self._tg: TaskGroup | None = None
        self._schedule_lock = anyio.Lock()

    async def run(self) -> JobOutcome:
        ctx = self.ctx
        if ctx.plan.deadline is not None:
            ctx.deadline = ctx.clock() + ctx.plan.deadline / 1000
        stop_listening = ctx.ledger.listen(ctx.job_id, ctx.board.step_state)
        try:
            await self._restore()
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await self._schedule()
            self._tg = None
            outcome = await self._outcome()
            await ctx.ledger.set_job_state(ctx.job_id, outcome.state)
        finally:
            stop_listening()
        return outcome

    async def _restore(self) -> None:
        """Take over what earlier invocations finished: done steps stay done (their outputs
        feed later prompts); everything else is pending again."""
        ctx = self.ctx
        rows = await ctx.ledger.steps(ctx.job_id)
        runs = await ctx.ledger.runs(ctx.job_id)
        for step in ctx.plan.steps:
            row = rows.get(step.id)
            state = row.state if row is not None else StepState.PENDING
            if state not in (StepState.DONE, StepState.PENDING):
                await ctx.ledger.set_step(
                    ctx.job_id, step.id, agent=step.agent, state=StepState.PENDING
                )
                state = StepState.PENDING
            ctx.board.restored(step.id, state, [r for r in runs if r.step_id == step.id])
        done = sorted((r for r in runs if r.state is RunState.DONE), key=lambda r: r.ended_at or "")
        for run in done:
            ctx.publish(ctx.plan.step(run.step_id), run)

    async def _states(self) -> dict[str, StepState]:
        rows = await self.ctx.ledger.steps(self.ctx.job_id)
        return {
            s.id: rows[s.id].state if s.id in rows else StepState.PENDING
            for s in self.ctx.plan.steps
        }

    async def _schedule(self) -> None:
        """Start every step whose prerequisites are done; settle those that can never run.
        One pass at a time: a step is moved to RUNNING before its task starts."""
        tg, ctx = self._tg, self.ctx
        if tg is None:
            raise RuntimeError("the crew is not running")
        async with self._schedule_lock:
            states = await self._states()
            changed = True
            while changed:
                changed = False
                for step_id in ctx.plan.order:
                    if states[step_id] is not StepState.PENDING:
                        continue
                    waits = ctx.plan.waits_for[step_id]
                    blocked = sorted(w for w in waits if states[w] in UNFINISHED_FOR_GOOD)
                    spec = ctx.plan.step(step_id)
                    if ctx.aborting is not None:
                        await self._settle(spec, StepState.SKIPPED, f"not run: {ctx.aborting}")
                    elif blocked:
                        waiting = [w for w in blocked if states[w] is StepState.NEEDS_INPUT]
                        if waiting:
                            why = f"waits for step {waiting[0]!r}"
                            await self._settle(spec, StepState.NEEDS_INPUT, why)
                        else:
                            why = f"not run: {blocked[0]} {states[blocked[0]]}"
                            await self._settle(spec, StepState.SKIPPED, why)
                    elif all(states[w] is StepState.DONE for w in waits):
                        await ctx.ledger.set_step(
                            ctx.job_id,
                            step_id,
                            agent=spec.agent,
                            state=StepState.RUNNING,
                            context_id=ctx.context_of(spec),
                        )
                        tg.start_soon(self._step, spec, name=step_id)
                    else:
                        continue
                    states = await self._states()
                    changed = True

    async def _settle(self, spec: StepSpec, state: StepState, detail: str | None) -> None:
        ctx = self.ctx
        await ctx.ledger.set_step(ctx.job_id, spec.id, agent=spec.agent, state=state, detail=detail)

    async def _outcome(self) -> JobOutcome:
        rows = await self.ctx.ledger.steps(self.ctx.job_id)
        states = await self._states()
        details = {s: r.detail for s, r in rows.items() if r.detail}
        if all(s is StepState.DONE for s in states.values()):
            job_state = JobState.DONE
        elif any(s is StepState.NEEDS_INPUT for s in states.values()):
            job_state = JobState.NEEDS_INPUT
        elif self.ctx.aborting is not None:
            job_state = JobState.FAILED
        else:
            job_state = JobState.PARTIAL
        return JobOutcome(self.ctx.job_id, job_state, states, details)

    def _abort(self, reason: str) -> None:
        self.ctx.aborting = reason
        for scope in self.ctx.scopes.values():
            scope.cancel()

    async def _step(self, spec: StepSpec) -> None:
        ctx = self.ctx
        state, detail = StepState.DONE, None
        with anyio.CancelScope() as scope:
            ctx.scopes[spec.id] = scope
            try:
                await self._steps.run(spec)
            except StepFailedError as exc:
                state, detail = StepState.FAILED, exc.reason
            except NeedsInputError as exc:
                q = exc.question
                state, detail = StepState.NEEDS_INPUT, f"{q.agent} asks ({q.kind}): {q.text}"
        ctx.scopes.pop(spec.id, None)
        if scope.cancelled_caught:
            state, detail = StepState.CANCELED, f"canceled: {ctx.aborting}"
        await self._settle(spec, state, detail)
        if state is StepState.FAILED and spec.on_failure == "abort" and ctx.aborting is None:
            self._abort(f"step {spec.id!r} failed (onFailure: abort)")
        await self._schedule()
