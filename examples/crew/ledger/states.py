"""The crew's states: a job's, a step's and a remote task's (a run's), each an enum with the
table of its legal transitions. The ledger (examples/crew/ledger/ledger.py) is the only writer of
job, step and run states and checks every change against these tables.

The values are what the ledger stores and the report shows; a run's remote states are the A2A
task states in their v0.3 spelling (`input-required`), which every crew table uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import TypeVar


class IllegalTransitionError(RuntimeError):
    """A state change the tables below do not allow: a bug in the crew, never the agent's."""


class JobState(StrEnum):
    RUNNING = "running"  # an invocation is running it (or died doing so)
    DONE = "done"  # every step done
    PARTIAL = "partial"  # done with gaps (steps skipped under onFailure: continue)
    FAILED = "failed"  # a step failed under onFailure: abort
    NEEDS_INPUT = "needs-input"  # a step waits for the person's answer


class StepState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELED = "canceled"
    NEEDS_INPUT = "needs-input"


class RunState(StrEnum):
    """A remote task as the crew knows it. `SENDING`: written before the message goes out.
    Then the task's own state, or what the crew concluded: `DONE` (completed and valid),
    `INVALID` (completed, the artifact failed the schema), `TIMEOUT` (past its deadline,
    canceled on the agent), `LOST` (the agent stopped answering; the task may live on),
    `EXPIRED` (its question went unanswered past answerDeadline; canceled on the agent)."""

    SENDING = "sending"
    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"
    UNKNOWN = "unknown"
    DONE = "done"
    INVALID = "invalid"
    TIMEOUT = "timeout"
    LOST = "lost"
    EXPIRED = "expired"


class Activity(StrEnum):
    """What a running step is doing between remote states (shown, never stored)."""

    RETRYING = "retrying"  # an attempt failed; the next one starts after retryDelay
    WAITING = "waiting"  # a loop step waits for its verdict step's next round


# Remote task states that end the task, and those that wait for an answer.
TERMINAL = frozenset({RunState.COMPLETED, RunState.FAILED, RunState.CANCELED, RunState.REJECTED})
INTERRUPTED = frozenset({RunState.INPUT_REQUIRED, RunState.AUTH_REQUIRED})
# A run in one of these may still become done: a re-run follows it rather than sending anew.
OPEN_RUNS = frozenset(
    {
        RunState.SENDING,
        RunState.SUBMITTED,
        RunState.WORKING,
        RunState.INPUT_REQUIRED,
        RunState.AUTH_REQUIRED,
        RunState.COMPLETED,
        RunState.UNKNOWN,
        RunState.LOST,
    }
)
# What counts against an agent's record: runs that ended in a state of its own making. Open
# runs, the crew's own cancels (an abort) and expired questions count for neither side.
AGENT_FAILURES = frozenset(
    {RunState.FAILED, RunState.REJECTED, RunState.TIMEOUT, RunState.INVALID, RunState.LOST}
)
# Step states that end a step without an output: steps that wait for it cannot run.
UNFINISHED_FOR_GOOD = frozenset(
    {StepState.FAILED, StepState.SKIPPED, StepState.CANCELED, StepState.NEEDS_INPUT}
)
# Job states after which a new message in a served crew's context starts a new job.
ENDED_JOBS = frozenset({JobState.DONE, JobState.PARTIAL, JobState.FAILED})

_REOPENED = frozenset({StepState.PENDING})
STEP_TRANSITIONS: Mapping[StepState, frozenset[StepState]] = {
    # A step waiting on a step that needs an answer waits too; one behind a failure is skipped.
    StepState.PENDING: frozenset({StepState.RUNNING, StepState.SKIPPED, StepState.NEEDS_INPUT}),
    # PENDING: the invocation running it died (a crash, Ctrl-C); a re-run takes it up again.
    StepState.RUNNING: frozenset(
        {
            StepState.DONE,
            StepState.FAILED,
            StepState.CANCELED,
            StepState.NEEDS_INPUT,
            StepState.PENDING,
        }
    ),
    # A done step stays done (a loop's verdict step is re-run without leaving DONE).
    StepState.DONE: frozenset(),
    # A re-run of the job (another invocation) takes every unfinished step up again.
    StepState.FAILED: _REOPENED,
    StepState.SKIPPED: _REOPENED,
    StepState.CANCELED: _REOPENED,
    StepState.NEEDS_INPUT: _REOPENED,
}

_ANY_RUN = frozenset(RunState)
RUN_TRANSITIONS: Mapping[RunState, frozenset[RunState]] = {
    **{state: _ANY_RUN for state in OPEN_RUNS},
    # A completed task becomes done or invalid once its artifact is checked.
    RunState.COMPLETED: frozenset({RunState.DONE, RunState.INVALID}),
    **{state: frozenset() for state in _ANY_RUN - OPEN_RUNS},
}

JOB_TRANSITIONS: Mapping[JobState, frozenset[JobState]] = {
    JobState.RUNNING: frozenset(JobState) - {JobState.RUNNING},
    # Any invocation of the job (a re-run, an answer, a served crew's next message) runs it.
    **{state: frozenset({JobState.RUNNING}) for state in JobState if state != JobState.RUNNING},
}


def check_step(old: StepState, new: StepState, where: str) -> None:
    _check(STEP_TRANSITIONS, old, new, where)


def check_run(old: RunState, new: RunState, where: str) -> None:
    _check(RUN_TRANSITIONS, old, new, where)


def check_job(old: JobState, new: JobState, where: str) -> None:
    _check(JOB_TRANSITIONS, old, new, where)


S = TypeVar("S", StepState, RunState, JobState)


def _check(table: Mapping[S, frozenset[S]], old: S, new: S, where: str) -> None:
    """Staying in a state is always allowed (a write that only changes other columns)."""
    if old != new and new not in table[old]:
        raise IllegalTransitionError(f"{where}: {old.value} -> {new.value} is not a legal change")


def remote_state(value: str) -> RunState:
    """A remote task state as the SDK layer spells it (unknown ones are UNKNOWN)."""
    try:
        return RunState(value)
    except ValueError:
        return RunState.UNKNOWN
