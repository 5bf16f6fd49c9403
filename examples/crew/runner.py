"""The scheduler: runs a plan's steps on their agents, in parallel where the graph allows, and
records everything in the ledger as it happens.

Contract:
- A step starts as soon as everything it waits for is done (`Plan.waits_for`); independent
  steps run at the same time, so a layer takes as long as its slowest step.
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

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import NoReturn, TypeVar

import anyio
from anyio.abc import TaskGroup

from examples.crew.changes import summaries, to_send
from examples.crew.client import (
    INTERRUPTED,
    TERMINAL,
    AgentError,
    AgentLink,
    AgentUnreachableError,
    RemoteTask,
    Update,
    closing,
)
from examples.crew.events import Asker, NobodyAsker, NullObserver, Observer, Question, StepStatus
from examples.crew.ledger import Ledger, RunRow, now
from examples.crew.output import schema_problem, to_output
from examples.crew.plan import Plan, StepSpec
from examples.crew.template import Output, TemplateError, render

T = TypeVar("T")
Send = tuple[str, str, tuple[str, ...]]  # text, messageId, patches (applyChanges)
CANCEL_TIMEOUT = 10.0
# Step states that end a step without an output: steps that wait for it cannot run.
UNFINISHED_FOR_GOOD = frozenset({"failed", "skipped", "canceled", "needs-input"})


class AttemptFailedError(Exception):
    """One attempt of a round failed; `retryable` says whether another attempt may help."""

    def __init__(
        self, reason: str, *, retryable: bool, hint: str = "", switchable: bool = True
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.hint = hint
        self.switchable = switchable  # whether an alternate agent may do better


class StepFailedError(Exception):
    def __init__(self, reason: str, *, switchable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.switchable = switchable


class NeedsInputError(Exception):
    def __init__(self, question: Question) -> None:
        super().__init__(question.text)
        self.question = question


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    state: str  # done | partial | failed | needs-input
    steps: Mapping[str, str]
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
        self.plan = plan
        self.ledger = ledger
        self.links = links
        self.job_id = job_id
        self.job_input = job_input
        self.context_id = context_id
        self.asker = asker or NobodyAsker()
        self.observer = observer or NullObserver()
        self.clock = clock
        self.state: dict[str, str] = {}
        self.details: dict[str, str] = {}
        self.status = {s.id: StepStatus(s.id, s.agent) for s in plan.steps}
        self._outputs: dict[str, Output] = {}
        self._latest: dict[str, tuple[str, str]] = {}  # step -> (agent, task id) of its output
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._fresh: set[tuple[str, int]] = set()
        self._aborting: str | None = None
        self._deadline = math.inf
        self._tg: TaskGroup | None = None
        self._ask_lock = anyio.Lock()

    # ----- the job -----------------------------------------------------------------------

    async def run(self) -> JobOutcome:
        if self.plan.deadline is not None:
            self._deadline = self.clock() + self.plan.deadline / 1000
        self._restore()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._schedule()
        self._tg = None
        outcome = self._outcome()
        self.ledger.set_job_state(self.job_id, outcome.state)
        return outcome

    def _restore(self) -> None:
        """Take over what earlier invocations finished: done steps stay done (their outputs
        feed later prompts); everything else is pending again."""
        rows = self.ledger.steps(self.job_id)
        for step in self.plan.steps:
            row = rows.get(step.id)
            self.state[step.id] = "done" if row is not None and row.state == "done" else "pending"
            status = self.status[step.id]
            if row is not None:
                status.state = self.state[step.id]
                status.round = row.rounds
        done_runs = [r for r in self.ledger.runs(self.job_id) if r.state == "done"]
        for run in sorted(done_runs, key=lambda r: r.ended_at or ""):
            self._publish(self.plan.step(run.step_id), run)
        for run in self.ledger.runs(self.job_id):
            known = self.status.get(run.step_id)
            if known is not None:
                known.tokens_in += int(run.usage.get("inputTokens", 0) or 0)
                known.tokens_out += int(run.usage.get("outputTokens", 0) or 0)
                known.attempt = max(known.attempt, run.attempt)
                known.task_id = run.task_id or known.task_id
        for status in self.status.values():
            self.observer.changed(status)

    def _schedule(self) -> None:
        """Start every step whose prerequisites are done; settle those that can never run."""
        if self._tg is None:
            raise RuntimeError("the crew is not running")
        changed = True
        while changed:
            changed = False
            for step_id in self.plan.order:
                if self.state[step_id] != "pending":
                    continue
                waits = self.plan.waits_for[step_id]
                blocked = sorted(w for w in waits if self.state[w] in UNFINISHED_FOR_GOOD)
                if self._aborting is not None:
                    self._settle(step_id, "skipped", f"not run: {self._aborting}")
                    changed = True
                elif blocked:
                    waiting = [w for w in blocked if self.state[w] == "needs-input"]
                    if waiting:
                        self._settle(step_id, "needs-input", f"waits for step {waiting[0]!r}")
                    else:
                        why = f"{blocked[0]} {self.state[blocked[0]]}"
                        self._settle(step_id, "skipped", f"not run: {why}")
                    changed = True
                elif all(self.state[w] == "done" for w in waits):
                    self.state[step_id] = "running"
                    self._tg.start_soon(self._step, self.plan.step(step_id), name=step_id)

    def _settle(self, step_id: str, state: str, detail: str | None = None) -> None:
        self.state[step_id] = state
        if detail:
            self.details[step_id] = detail
        spec = self.plan.step(step_id)
        self.ledger.set_step(self.job_id, step_id, agent=spec.agent, state=state, detail=detail)
        changes: dict[str, object] = {"state": state, "ended": self.clock()}
        if detail:
            changes["note"] = detail
        self._observe(step_id, **changes)

    def _outcome(self) -> JobOutcome:
        states = dict(self.state)
        if all(s == "done" for s in states.values()):
            job_state = "done"
        elif any(s == "needs-input" for s in states.values()):
            job_state = "needs-input"
        elif self._aborting is not None:
            job_state = "failed"
        else:
            job_state = "partial"
        return JobOutcome(self.job_id, job_state, states, dict(self.details))

    def _abort(self, reason: str) -> None:
        self._aborting = reason
        for step_id, scope in self._scopes.items():
            if self.state[step_id] == "running":
                scope.cancel()

    # ----- one step ----------------------------------------------------------------------

    async def _step(self, spec: StepSpec) -> None:
        self._observe(spec.id, state="running", started=self.clock(), ended=None, note="")
        self.ledger.set_step(
            self.job_id, spec.id, agent=spec.agent, state="running", context_id=self._context(spec)
        )
        outcome: tuple[str, str | None] = ("done", None)
        with anyio.CancelScope() as scope:
            self._scopes[spec.id] = scope
            try:
                if spec.repeat_until is not None:
                    await self._loop(spec)
                else:
                    await self._round(spec, 1)
            except StepFailedError as exc:
                outcome = ("failed", exc.reason)
            except NeedsInputError as exc:
                q = exc.question
                outcome = ("needs-input", f"{q.agent} asks ({q.kind}): {q.text}")
        if scope.cancelled_caught:
            outcome = ("canceled", f"canceled: {self._aborting}")
        state, detail = outcome
        self._settle(spec.id, state, detail)
        if state == "failed" and spec.on_failure == "abort" and self._aborting is None:
            self._abort(f"step {spec.id!r} failed (onFailure: abort)")
        self._schedule()

    async def _loop(self, spec: StepSpec) -> None:
        """`repeatUntil`: run this step, re-run the verdict step, stop when the verdict is met;
        at most `maxRounds` rounds (the step runs at least once: repeat ... until)."""
        loop = spec.repeat_until
        if loop is None:
            raise ValueError(f"step {spec.id!r} has no repeatUntil")
        judge = self.plan.step(loop.step)
        verdict: object = None
        for round_ in range(1, spec.max_rounds + 1):
            await self._round(spec, round_)
            try:
                review = await self._round(judge, round_ + 1, on_behalf=spec)
            except StepFailedError as exc:
                raise StepFailedError(f"round {round_}: step {judge.id!r}: {exc.reason}") from exc
            verdict = _field(review.data, loop.field)
            if loop.met(review.data):
                self._observe(spec.id, note=f"{judge.id}: {loop.field}={verdict!r}")
                return
        raise StepFailedError(
            f"{judge.id!r} still says {loop.field}={verdict!r} after {spec.max_rounds} rounds"
        )

    async def _round(
        self, spec: StepSpec, round_: int, on_behalf: StepSpec | None = None
    ) -> Output:
        """One round of a step: reuse a done run, follow an open one, or send; retry on a
        retryable failure (`retries` more attempts, `retryDelay` apart)."""
        owner = on_behalf or spec
        runs = [r for r in self.ledger.runs(self.job_id, spec.id) if r.round == round_]
        done = [r for r in runs if r.state == "done"]
        if done:
            return _output(done[-1])
        open_runs = [r for r in runs if r.open]
        run = open_runs[-1] if open_runs else None
        names = [name for name, _ in self.plan.candidates(spec.agent)]
        # A re-run goes on with the agent the round was last sent to.
        first = names.index(runs[-1].agent) if runs and runs[-1].agent in names else 0
        usable = [n for n in names[first:] if n in self.links]
        if run is not None and run.agent not in usable:  # its agent is unusable now
            self.ledger.update_run(run, state="lost", detail="agent unusable; not followed")
            run = None
        for n, agent in enumerate(usable):
            try:
                return await self._attempts(spec, round_, owner, agent, run)
            except StepFailedError as exc:
                if not exc.switchable or n == len(usable) - 1 or self._left() <= 0:
                    raise
                self._observe(
                    spec.id, agent=usable[n + 1], note=f"{agent} failed, next: {exc.reason}"
                )
                run = None
        raise StepFailedError(f"no usable agent for {spec.agent!r}")

    async def _attempts(
        self, spec: StepSpec, round_: int, owner: StepSpec, agent: str, run: RunRow | None
    ) -> Output:
        """A round on one agent: retry on a retryable failure (`retries` more attempts,
        `retryDelay` apart)."""
        hint = ""
        attempts = 0
        while True:
            if run is None:
                run = self.ledger.new_run(
                    self.job_id,
                    spec.id,
                    round_=round_,
                    agent=agent,
                    context_id=self._context(spec),
                    card=self.links[agent].spec.card_url,
                )
                self._fresh.add((spec.id, run.attempt))
            attempts += 1
            try:
                return await self._attempt(spec, run, hint, owner)
            except AttemptFailedError as exc:
                if not exc.retryable or attempts > spec.retries or self._left() <= 0:
                    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
                    raise StepFailedError(exc.reason + suffix, switchable=exc.switchable) from exc
                hint = exc.hint
                self._observe(spec.id, state="retrying", note=exc.reason)
                await anyio.sleep(spec.retry_delay / 1000)
            latest = self.ledger.run(self.job_id, spec.id, run.attempt)
            run = latest if latest.open else None

    async def _attempt(self, spec: StepSpec, run: RunRow, hint: str, owner: StepSpec) -> Output:
        link = self.links[run.agent]
        runs = self.ledger.runs(self.job_id)
        made = summaries(self.plan, runs, self._outputs)
        outputs = {k: replace(v, changes=made[k]) for k, v in self._outputs.items()}
        try:
            prompt = render(
                spec.prompt,
                job_input=self.job_input,
                job_id=self.job_id,
                round_=run.round,
                outputs=outputs,
            )
        except TemplateError as exc:
            raise AttemptFailedError(f"prompt: {exc}", retryable=False, switchable=False) from exc
        if hint:
            prompt += f"\n\n{hint}"
        if owner is not spec:  # a loop re-runs its verdict step: that step is busy again
            self._observe(owner.id, state="waiting", note=f"{spec.id} round {run.round}")
            self._observe(spec.id, started=self.clock(), ended=None)
        self._observe(
            spec.id,
            state=run.state,
            round=run.round,
            attempt=run.attempt,
            task_id=run.task_id,
            note="",
        )
        via = f"v{link.protocol} {link.binding}, {link.mode}"
        if run.via != via:
            run = self.ledger.update_run(run, via=via)
        budget = min(spec.deadline / 1000 if spec.deadline is not None else math.inf, self._left())
        used = 0.0
        send: Send | None = None
        if not run.task_id:
            patches = to_send(self.plan, spec, run, runs, self.ledger.sent(self.job_id))
            self.ledger.mark_sent(run, [c.source for c in patches])
            send = (prompt, run.message_id, tuple(c.patch for c in patches))
        try:
            while True:
                started = self.clock()
                with anyio.move_on_after(budget - used) as deadline:
                    task, run = await self._settled(link, run, send, spec, self._refs(spec, run))
                used += self.clock() - started
                if deadline.cancelled_caught:
                    raise await self._past_deadline(link, run, spec, budget)
                if task.state not in INTERRUPTED:
                    return self._finish(spec, run, task)
                answer, run = await self._ask(spec, link, task, run)
                run = self.ledger.update_run(run, answers=run.answers + 1, asked_at=None)
                send = (answer, f"{run.message_id}:answer:{run.answers}", ())
        except anyio.get_cancelled_exc_class():
            if self._aborting is not None and self._scopes[owner.id].cancel_called:
                with anyio.CancelScope(shield=True):
                    await self._cancel_remote(link, run, "canceled", f"canceled: {self._aborting}")
            raise

    async def _settled(
        self,
        link: AgentLink,
        run: RunRow,
        send: Send | None,
        spec: StepSpec,
        refs: list[str],
    ) -> tuple[RemoteTask, RunRow]:
        """Send (or follow) until the task ends or needs input; the ledger follows along."""
        if send is not None and run.task_id is None and not self._take_fresh(run):
            found = await self._guard(link.find(run.context_id, run.message_id), run)
            if found is not None:
                run = self.ledger.update_run(run, task_id=found.id, state=found.state)
                self._observe(spec.id, state=found.state, task_id=found.id, note="found again")
                send = None
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
        async with closing(events):
            try:
                async for update in events:
                    if update.reply is not None:
                        return run, update.reply
                    if run.task_id is None and update.task_id:
                        # Written the moment it is known: a crash after this resumes the task.
                        run = self.ledger.update_run(
                            run, task_id=update.task_id, state=update.state or "submitted"
                        )
                    elif update.state is not None and update.state != run.state:
                        run = self.ledger.update_run(run, state=update.state)
                    self._observe(
                        spec.id, state=run.state, task_id=run.task_id, note=update.note[:200]
                    )
            except AgentUnreachableError as exc:
                self._unreachable(run, exc)
            except AgentError as exc:
                raise AttemptFailedError(f"agent error: {exc}", retryable=True) from exc
        return run, None

    async def _guard(self, call: Awaitable[T], run: RunRow) -> T:
        """Await one call to the agent; its errors become this attempt's failure."""
        try:
            return await call
        except AgentUnreachableError as exc:
            self._unreachable(run, exc)
        except AgentError as exc:
            raise AttemptFailedError(f"agent error: {exc}", retryable=True) from exc

    def _unreachable(self, run: RunRow, exc: Exception) -> NoReturn:
        state = "lost" if run.task_id else "sending"
        self.ledger.update_run(run, state=state, detail=f"unreachable: {exc}")
        raise AttemptFailedError(f"agent unreachable: {exc}", retryable=True) from exc

    def _take_fresh(self, run: RunRow) -> bool:
        key = (run.step_id, run.attempt)
        fresh = key in self._fresh
        self._fresh.discard(key)
        return fresh

    async def _past_deadline(
        self, link: AgentLink, run: RunRow, spec: StepSpec, budget: float
    ) -> AttemptFailedError:
        run = self.ledger.run(run.job_id, run.step_id, run.attempt)
        whose = (
            "the job's deadline"
            if spec.deadline is None or budget < spec.deadline / 1000
            else f"its deadline ({spec.deadline / 1000:g} s)"
        )
        state = await self._cancel_remote(link, run, "timeout", f"past {whose}")
        return AttemptFailedError(
            f"past {whose}; its task was canceled on the agent ({state})", retryable=True
        )

    async def _cancel_remote(self, link: AgentLink, run: RunRow, state: str, detail: str) -> str:
        """Cancel the run's remote task (found by messageId if its id never came back);
        returns what the agent says the task became."""
        remote = "no task"
        with anyio.move_on_after(CANCEL_TIMEOUT):
            try:
                task_id = run.task_id
                if task_id is None and link.can_look_up:
                    found = await link.find(run.context_id, run.message_id)
                    task_id = found.id if found is not None else None
                if task_id is not None:
                    remote = (await link.cancel(task_id)).state
                    run = self.ledger.update_run(run, task_id=task_id)
            except AgentError as exc:
                remote = f"cancel failed: {exc}"
        detail = f"{detail}; agent: {remote}"
        self.ledger.update_run(run, state=state, detail=detail, ended_at=now())
        return remote

    async def _ask(
        self, spec: StepSpec, link: AgentLink, task: RemoteTask, run: RunRow
    ) -> tuple[str, RunRow]:
        """The person's answer to the task's question. The question's age counts from when it
        was first seen (kept in the ledger across invocations); past the step's
        `answerDeadline` it expires: the remote task is canceled and the step fails."""
        question = Question(
            spec.id, link.name, task.id, task.note or "(the agent gave no question)", task.state
        )
        if run.asked_at is None:
            run = self.ledger.update_run(run, asked_at=now())
        expires_in = math.inf
        if spec.answer_deadline is not None:
            expires_in = spec.answer_deadline / 1000 - age(run.asked_at)
        if expires_in <= 0:
            raise await self._expire(link, run, spec)
        self._observe(spec.id, state=task.state, note=question.text)
        with anyio.move_on_after(min(self._left(), expires_in)) as waiting:
            async with self._ask_lock:
                answer = await self.asker.ask(question)
                if answer is not None and answer.strip():
                    self._observe(spec.id, state="working", note="answered")
                    return answer, run
        if waiting.cancelled_caught and expires_in <= self._left():
            raise await self._expire(link, run, spec)
        raise NeedsInputError(question)

    async def _expire(self, link: AgentLink, run: RunRow, spec: StepSpec) -> AttemptFailedError:
        seconds = (spec.answer_deadline or 0) / 1000
        why = f"its question went unanswered for {seconds:g} s (answerDeadline)"
        state = await self._cancel_remote(link, run, "expired", why)
        self._observe(spec.id, note=why)
        return AttemptFailedError(
            f"{why}; its task was canceled on the agent ({state})",
            retryable=False,
            switchable=False,
        )

    def _finish(self, spec: StepSpec, run: RunRow, task: RemoteTask) -> Output:
        artifacts = list(task.artifacts)
        usage = task.usage
        common = {
            "artifacts": [a.to_json() for a in artifacts],
            "usage": usage,
            "backend": task.backend,
            "ended_at": now(),
        }
        self._add_usage(spec.id, usage)
        if task.state != "completed":
            reason = task.note or f"the task ended {task.state}"
            self.ledger.update_run(run, state=task.state, detail=reason, **common)
            raise AttemptFailedError(
                f"{task.state}: {reason}",
                retryable=task.state == "failed",
                switchable=task.state != "canceled",  # someone else's cancel: not the agent's
            )
        output = to_output(artifacts)
        problem = schema_problem(output, spec.schema_)
        if problem is not None:
            self.ledger.update_run(run, state="invalid", detail=problem, **common)
            raise AttemptFailedError(
                problem,
                retryable=True,
                hint=f"Your previous answer was rejected: {problem}. Answer again with JSON "
                "that matches the required schema.",
            )
        run = self.ledger.update_run(
            run,
            state="done",
            detail=None,
            output_text=output.text,
            output_data=output.data,
            **common,
        )
        self._publish(spec, run)
        self.ledger.set_step(
            self.job_id, spec.id, agent=spec.agent, state=self.state[spec.id], rounds=run.round
        )
        if self.state[spec.id] == "done":  # a verdict step re-run by a loop
            self._observe(spec.id, state="done", ended=self.clock())
        return output

    # ----- helpers -----------------------------------------------------------------------

    def _publish(self, spec: StepSpec, run: RunRow) -> None:
        output = _output(run)
        self._outputs[spec.id] = output
        if run.task_id:
            self._latest[spec.id] = (run.agent, run.task_id)
        if spec.revises is not None:
            self._outputs[spec.revises] = output
            if run.task_id:
                self._latest[spec.revises] = (run.agent, run.task_id)

    def _refs(self, spec: StepSpec, run: RunRow) -> list[str]:
        """referenceTaskIds: the work this message revises and, from round 2 on, the step's own
        previous round; only tasks of the same agent (ids mean nothing to another agent)."""
        wanted = [spec.revises] if spec.revises else []
        if run.round > 1:
            wanted.append(spec.id)
        refs = []
        for step_id in wanted:
            latest = self._latest.get(step_id)
            if latest is not None and latest[0] == run.agent and latest[1] not in refs:
                refs.append(latest[1])
        return refs

    def _context(self, spec: StepSpec) -> str:
        if self.plan.context_scope == "step":
            return f"{self.context_id}-{spec.id}"
        return self.context_id

    def _left(self) -> float:
        return self._deadline - self.clock()

    def _add_usage(self, step_id: str, usage: Mapping[str, object]) -> None:
        status = self.status[step_id]
        status.tokens_in += _int(usage.get("inputTokens"))
        status.tokens_out += _int(usage.get("outputTokens"))

    def _observe(self, step_id: str, **changes: object) -> None:
        status = self.status[step_id]
        for key, value in changes.items():
            setattr(status, key, value)
        self.observer.changed(status)


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _field(data: object, path: str) -> object:
    for key in path.split("."):
        if not isinstance(data, Mapping) or key not in data:
            return None
        data = data[key]
    return data


def age(stamp: str | None) -> float:
    """Seconds since a ledger timestamp (wall clock: it spans invocations)."""
    if stamp is None:
        return 0.0
    return (datetime.now(UTC) - datetime.fromisoformat(stamp)).total_seconds()


def _output(run: RunRow) -> Output:
    return Output(text=run.output_text or "", data=run.output_data)
