"""What the crew tells the outside: typed step events (for the live view and a served crew's
progress) and questions (for the person running the crew). Interfaces only, so the runner does
not know about terminals.

Each event is an immutable `StepStatus` snapshot made by the job's `Board` from a typed change:
a step state the ledger wrote, a remote task's state, an activity (retrying, waiting), a note,
usage. The board holds no state of its own making: a step's state is the ledger's (it listens
to it), a run's the ledger row's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from examples.crew.ledger.schema import RunRow
from examples.crew.ledger.states import OPEN_RUNS, Activity, RunState, StepState


@dataclass(frozen=True)
class StepStatus:
    """One step as the live view shows it. `started`/`ended` are `anyio.current_time()`."""

    step: str
    agent: str
    state: StepState = StepState.PENDING
    run: RunState | None = None  # the state of its current remote task, while it runs
    activity: Activity | None = None
    round: int = 0
    attempt: int = 0
    task_id: str | None = None
    started: float | None = None
    ended: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    note: str = ""

    @property
    def shown(self) -> StepState | RunState | Activity:
        """What the step is doing, most specific first: a running step (or a done verdict
        step a loop runs again) shows its activity, else its remote task's state."""
        if self.activity is not None and self.state is StepState.RUNNING:
            return self.activity
        busy = self.run is not None and (self.state is StepState.RUNNING or self.run in OPEN_RUNS)
        if busy and self.state in (StepState.RUNNING, StepState.DONE) and self.run is not None:
            return self.run
        return self.state


class Observer(Protocol):
    def changed(self, status: StepStatus) -> None:
        """A step changed (state, task, tokens, note). Called on the event loop; must not
        block."""

    def message(self, text: str) -> None:
        """A line for the person running the crew."""


@dataclass(frozen=True)
class Question:
    step: str
    agent: str
    task_id: str
    text: str
    kind: RunState  # INPUT_REQUIRED or AUTH_REQUIRED


class Asker(Protocol):
    async def ask(self, question: Question) -> str | None:
        """The person's answer, or None when nobody can answer (not interactive). Never
        answered by the orchestrator itself."""


class NullObserver:
    def changed(self, status: StepStatus) -> None:
        pass

    def message(self, text: str) -> None:
        pass


class NobodyAsker:
    """Not interactive: every question fails its step, with the question in the report."""

    async def ask(self, question: Question) -> str | None:
        return None


class PresetAnswers:
    """Answers given up front (`--answer STEP=TEXT`), each used once; then `fallback`."""

    def __init__(self, answers: dict[str, str], fallback: Asker) -> None:
        self._answers = dict(answers)
        self._fallback = fallback

    async def ask(self, question: Question) -> str | None:
        answer = self._answers.pop(question.step, None)
        return answer if answer is not None else await self._fallback.ask(question)


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


class Board:
    """The steps of one job as the observer sees them; every change is one typed call, and
    every call sends the step's new snapshot."""

    def __init__(
        self, steps: Mapping[str, str], observer: Observer, clock: Callable[[], float]
    ) -> None:
        self._status = {step: StepStatus(step, agent) for step, agent in steps.items()}
        self._observer = observer
        self._clock = clock

    def __getitem__(self, step: str) -> StepStatus:
        return self._status[step]

    def message(self, text: str) -> None:
        self._observer.message(text)

    def _set(self, status: StepStatus) -> None:
        self._status[status.step] = status
        self._observer.changed(status)

    def step_state(self, _job: str, step: str, state: StepState, detail: str | None) -> None:
        """The ledger wrote a step's state (the board listens to the ledger)."""
        status = replace(self._status[step], state=state, activity=None)
        if state is StepState.RUNNING:
            status = replace(status, run=None, started=self._clock(), ended=None, note="")
        elif state is not StepState.PENDING:
            status = replace(status, ended=self._clock())
        if detail:
            status = replace(status, note=detail)
        self._set(status)

    def restored(self, step: str, state: StepState, runs: list[RunRow]) -> None:
        """What earlier invocations left: the step's state, attempts and usage."""
        status = replace(self._status[step], state=state)
        for run in runs:
            status = replace(
                status,
                round=max(status.round, run.round),
                attempt=max(status.attempt, run.attempt),
                task_id=run.task_id or status.task_id,
                tokens_in=status.tokens_in + _int(run.usage.get("inputTokens")),
                tokens_out=status.tokens_out + _int(run.usage.get("outputTokens")),
            )
        self._set(status)

    def run(self, step: str, run: RunRow, note: str = "") -> None:
        """The step's current remote task (sent, followed, or changed state)."""
        self._set(
            replace(
                self._status[step],
                agent=run.agent,
                run=run.state,
                activity=None,
                round=run.round,
                attempt=run.attempt,
                task_id=run.task_id,
                note=note,
            )
        )

    def activity(self, step: str, activity: Activity, note: str) -> None:
        self._set(replace(self._status[step], activity=activity, note=note))

    def rerun(self, step: str) -> None:
        """A loop runs its (done) verdict step again: it is busy again until it answers."""
        self._set(replace(self._status[step], started=self._clock(), ended=None))

    def answered(self, step: str) -> None:
        """A done step's remote task answered again (a loop's verdict step)."""
        self._set(replace(self._status[step], run=RunState.DONE, ended=self._clock()))

    def note(self, step: str, note: str, agent: str | None = None) -> None:
        status = self._status[step]
        self._set(replace(status, note=note, agent=agent or status.agent))

    def usage(self, step: str, usage: Mapping[str, object]) -> None:
        status = self._status[step]
        self._set(
            replace(
                status,
                tokens_in=status.tokens_in + _int(usage.get("inputTokens")),
                tokens_out=status.tokens_out + _int(usage.get("outputTokens")),
            )
        )
