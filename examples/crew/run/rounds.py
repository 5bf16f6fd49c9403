"""One step of a job: its loop (`repeatUntil`), its rounds, each round's attempts, and the
alternates a round moves to when its agent fails it. The calls to the agents are remote.py's.

Contract:
- A round reuses a done run, follows an open one, or sends; a retryable failure is retried
  (`retries` more attempts, `retryDelay` apart) on the same agent.
- A failure that an alternate may fix (unreachable, rejected, failed its retries, past its
  deadline, or at once for a quota or rate limit the agent reports) hands the round to the
  next alternate, as a new attempt; a re-run goes on with the agent the round was last sent to.
- A step that fails names the agent, its card URL and the reason (`JobContext.where`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import anyio

from examples.crew.agents.client import RemoteTask
from examples.crew.ledger.ledger import RunRow, now
from examples.crew.ledger.states import INTERRUPTED, Activity, RunState
from examples.crew.plan.changes import summaries, to_send
from examples.crew.plan.output import schema_problem, to_output
from examples.crew.plan.plan import StepSpec
from examples.crew.plan.template import Output, TemplateError, render
from examples.crew.run.context import (
    AttemptFailedError,
    JobContext,
    StepFailedError,
    age,
    output_of,
)
from examples.crew.run.remote import RemoteCalls, Send
from examples.crew.show.events import Question

# What an agent says in `a2aWrapper.error.kind` when its provider refused the work for now:
# another attempt there would only fail again, an alternate may not.
BUSY_KINDS = frozenset({"quota", "rateLimit"})


class NeedsInputError(Exception):
    def __init__(self, question: Question) -> None:
        super().__init__(question.text)
        self.question = question


class StepRunner:
    def __init__(self, ctx: JobContext) -> None:
        self.ctx = ctx
        self.remote = RemoteCalls(ctx)

    async def run(self, spec: StepSpec) -> None:
        if spec.repeat_until is not None:
            await self._loop(spec)
        else:
            await self.round(spec, 1)

    async def _loop(self, spec: StepSpec) -> None:
        """`repeatUntil`: run this step, re-run the verdict step, stop when the verdict is met;
        at most `maxRounds` rounds (the step runs at least once: repeat ... until)."""
        loop = spec.repeat_until
        if loop is None:
            raise ValueError(f"step {spec.id!r} has no repeatUntil")
        judge = self.ctx.plan.step(loop.step)
        verdict: object = None
        for round_ in range(1, spec.max_rounds + 1):
            await self.round(spec, round_)
            try:
                review = await self.round(judge, round_ + 1, on_behalf=spec)
            except StepFailedError as exc:
                raise StepFailedError(f"round {round_}: step {judge.id!r}: {exc.reason}") from exc
            verdict = loop.verdict(review.data)
            if loop.met(review.data):
                self.ctx.board.note(spec.id, f"{judge.id}: {loop.field}={verdict!r}")
                return
        raise StepFailedError(
            f"{judge.id!r} still says {loop.field}={verdict!r} after {spec.max_rounds} rounds"
        )

    async def round(self, spec: StepSpec, round_: int, on_behalf: StepSpec | None = None) -> Output:
        """One round of a step, on its agent or, failing that, its alternates in order."""
        ctx = self.ctx
        owner = on_behalf or spec
        runs = [r for r in await ctx.ledger.runs(ctx.job_id, spec.id) if r.round == round_]
        done = [r for r in runs if r.state is RunState.DONE]
        if done:
            return output_of(done[-1])
        open_runs = [r for r in runs if r.open]
        run = open_runs[-1] if open_runs else None
        names = [name for name, _ in ctx.plan.candidates(spec.agent)]
        # A re-run goes on with the agent the round was last sent to.
        first = names.index(runs[-1].agent) if runs and runs[-1].agent in names else 0
        usable = [n for n in names[first:] if n in ctx.links]
        if run is not None and run.agent not in usable:  # its agent is unusable now
            await ctx.ledger.update_run(
                run, state=RunState.LOST, detail="agent unusable; not followed"
            )
            run = None
        if not usable:
            tried = ", ".join(ctx.where(n) for n in names[first:])
            raise StepFailedError(f"no usable agent for {spec.agent!r} (tried {tried})")
        for n, agent in enumerate(usable):
            try:
                return await self._attempts(spec, round_, owner, agent, run)
            except StepFailedError as exc:
                last = n == len(usable) - 1
                if not exc.switchable or last or ctx.left() <= 0:
                    raise StepFailedError(f"{ctx.where(agent)}: {exc.reason}") from exc
                ctx.board.note(spec.id, f"{agent} failed, next: {exc.reason}", agent=usable[n + 1])
                ctx.board.message(
                    f"step {spec.id}: {ctx.where(agent)} failed ({exc.reason}); "
                    f"{usable[n + 1]} takes over"
                )
                run = None
        raise AssertionError("unreachable: the last agent's failure is raised above")

    async def _attempts(
        self, spec: StepSpec, round_: int, owner: StepSpec, agent: str, run: RunRow | None
    ) -> Output:
        """A round on one agent: retry on a retryable failure (`retries` more attempts,
        `retryDelay` apart)."""
        ctx = self.ctx
        hint = ""
        attempts = 0
        while True:
            if run is None:
                run = await ctx.ledger.new_run(
                    ctx.job_id,
                    spec.id,
                    round_=round_,
                    agent=agent,
                    context_id=ctx.context_of(spec),
                    card=ctx.links[agent].spec.card_url,
                )
                ctx.fresh.add((spec.id, run.attempt))
            attempts += 1
            try:
                return await self._attempt(spec, run, hint, owner)
            except AttemptFailedError as exc:
                if not exc.retryable or attempts > spec.retries or ctx.left() <= 0:
                    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
                    raise StepFailedError(exc.reason + suffix, switchable=exc.switchable) from exc
                hint = exc.hint
                ctx.board.activity(spec.id, Activity.RETRYING, exc.reason)
                await anyio.sleep(spec.retry_delay / 1000)
            latest = await ctx.ledger.run(ctx.job_id, spec.id, run.attempt)
            run = latest if latest.open else None

    async def _prompt(self, spec: StepSpec, run: RunRow, hint: str) -> str:
        ctx = self.ctx
        runs = await ctx.ledger.runs(ctx.job_id)
        made = summaries(ctx.plan, runs, ctx.outputs)
        outputs = {k: replace(v, changes=made[k]) for k, v in ctx.outputs.items()}
        try:
            prompt = render(
                spec.prompt,
                job_input=ctx.job_input,
                job_id=ctx.job_id,
                round_=run.round,
                outputs=outputs,
            )
        except TemplateError as exc:
            raise AttemptFailedError(f"prompt: {exc}", retryable=False, switchable=False) from exc
        return f"{prompt}\n\n{hint}" if hint else prompt

    async def _attempt(self, spec: StepSpec, run: RunRow, hint: str, owner: StepSpec) -> Output:
        ctx = self.ctx
        link = ctx.links[run.agent]
        prompt = await self._prompt(spec, run, hint)
        if owner is not spec:  # a loop re-runs its verdict step: that step is busy again
            ctx.board.activity(owner.id, Activity.WAITING, f"{spec.id} round {run.round}")
            ctx.board.rerun(spec.id)
        ctx.board.run(spec.id, run)
        via = f"v{link.protocol} {link.binding}, {link.mode}"
        if run.via != via:
            run = await ctx.ledger.update_run(run, via=via)
        budget = min(spec.deadline / 1000 if spec.deadline is not None else math.inf, ctx.left())
        used = 0.0
        send: Send | None = None
        if not run.task_id:
            runs = await ctx.ledger.runs(ctx.job_id)
            patches = to_send(ctx.plan, spec, run, runs, await ctx.ledger.sent(ctx.job_id))
            await ctx.ledger.mark_sent(run, [c.source for c in patches])
            send = (prompt, run.message_id, tuple(c.patch for c in patches))
        try:
            while True:
                started = ctx.clock()
                with anyio.move_on_after(budget - used) as deadline:
                    task, run = await self.remote.settled(link, run, send, spec)
                used += ctx.clock() - started
                if deadline.cancelled_caught:
                    raise await self.remote.past_deadline(link, run, spec, budget)
                if task.state not in INTERRUPTED:
                    return await self._finish(spec, run, task, owner)
                answer, run = await self._ask(spec, link.name, task, run)
                run = await ctx.ledger.update_run(run, answers=run.answers + 1, asked_at=None)
                send = (answer, f"{run.message_id}:answer:{run.answers}", ())
        except anyio.get_cancelled_exc_class():
            if ctx.aborting is not None and ctx.scopes[owner.id].cancel_called:
                with anyio.CancelScope(shield=True):
                    await self.remote.cancel_remote(
                        link, run, RunState.CANCELED, f"canceled: {ctx.aborting}"
                    )
            raise

    async def _ask(
        self, spec: StepSpec, agent: str, task: RemoteTask, run: RunRow
    ) -> tuple[str, RunRow]:
        """The person's answer to the task's question. The question's age counts from when it
        was first seen (kept in the ledger across invocations); past the step's
        `answerDeadline` it expires: the remote task is canceled and the step fails."""
        ctx = self.ctx
        question = Question(
            spec.id, agent, task.id, task.note or "(the agent gave no question)", task.state
        )
        if run.asked_at is None:
            run = await ctx.ledger.update_run(run, asked_at=now())
        expires_in = math.inf
        if spec.answer_deadline is not None:
            expires_in = spec.answer_deadline / 1000 - age(run.asked_at)
        if expires_in <= 0:
            raise await self._expire(agent, run, spec)
        ctx.board.note(spec.id, question.text)
        with anyio.move_on_after(min(ctx.left(), expires_in)) as waiting:
            async with ctx.ask_lock:
                answer = await ctx.asker.ask(question)
                if answer is not None and answer.strip():
                    ctx.board.note(spec.id, "answered")
                    return answer, run
        if waiting.cancelled_caught and expires_in <= ctx.left():
            raise await self._expire(agent, run, spec)
        raise NeedsInputError(question)

    async def _expire(self, agent: str, run: RunRow, spec: StepSpec) -> AttemptFailedError:
        seconds = (spec.answer_deadline or 0) / 1000
        why = f"its question went unanswered for {seconds:g} s (answerDeadline)"
        link = self.ctx.links[agent]
        state = await self.remote.cancel_remote(link, run, RunState.EXPIRED, why)
        self.ctx.board.note(spec.id, why)
        return AttemptFailedError(
            f"{why}; its task was canceled on the agent ({state})",
            retryable=False,
            switchable=False,
        )

    async def _finish(
        self, spec: StepSpec, run: RunRow, task: RemoteTask, owner: StepSpec
    ) -> Output:
        ctx = self.ctx
        artifacts = list(task.artifacts)
        common = {
            "artifacts": [a.to_json() for a in artifacts],
            "usage": task.usage,
            "backend": task.backend,
            "ended_at": now(),
        }
        ctx.board.usage(spec.id, task.usage)
        if task.state is not RunState.COMPLETED:
            reason = task.note or f"the task ended {task.state}"
            await ctx.ledger.update_run(run, state=task.state, detail=reason, **common)
            if task.error_kind in BUSY_KINDS:  # no retry here: the alternate's turn
                raise AttemptFailedError(
                    f"{task.state} ({task.error_kind}): {reason}", retryable=False
                )
            raise AttemptFailedError(
                f"{task.state}: {reason}",
                retryable=task.state is RunState.FAILED,
                switchable=task.state is not RunState.CANCELED,  # someone else's cancel
            )
        output = to_output(artifacts)
        problem = schema_problem(output, spec.schema_)
        if problem is not None:
            await ctx.ledger.update_run(run, state=RunState.INVALID, detail=problem, **common)
            raise AttemptFailedError(
                problem,
                retryable=True,
                hint=f"Your previous answer was rejected: {problem}. Answer again with JSON "
                "that matches the required schema.",
            )
        run = await ctx.ledger.update_run(
            run,
            state=RunState.DONE,
            detail=None,
            output_text=output.text,
            output_data=output.data,
            **common,
        )
        ctx.publish(spec, run)
        await ctx.ledger.set_rounds(ctx.job_id, spec.id, run.round)
        ctx.board.run(spec.id, run, task.note[:200])
        if owner is not spec:  # a verdict step re-run by a loop: done again
            ctx.board.answered(spec.id)
        return output
