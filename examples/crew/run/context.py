"""What one invocation of a job shares between its roles: the graph (runner.py), a step's
rounds and attempts (rounds.py) and the remote calls (remote.py). Plain data and small
helpers; no step or run state lives here (the ledger owns it)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio

from examples.crew.agents.client import AgentLink
from examples.crew.ledger.ledger import Ledger
from examples.crew.ledger.schema import RunRow
from examples.crew.plan.plan import Plan, StepSpec
from examples.crew.plan.template import Output
from examples.crew.show.events import Asker, Board


class AttemptFailedError(Exception):
    """One attempt of a round failed. `retryable`: another attempt on the same agent may help;
    `switchable`: an alternate agent may do better."""

    def __init__(
        self, reason: str, *, retryable: bool, hint: str = "", switchable: bool = True
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.hint = hint
        self.switchable = switchable


class StepFailedError(Exception):
    def __init__(self, reason: str, *, switchable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.switchable = switchable


@dataclass
class JobContext:
    """One invocation of one job."""

    plan: Plan
    ledger: Ledger
    links: Mapping[str, AgentLink]
    job_id: str
    job_input: str
    context_id: str
    asker: Asker
    board: Board
    clock: Callable[[], float]
    deadline: float = math.inf
    aborting: str | None = None  # why the job is being aborted, once it is
    outputs: dict[str, Output] = field(default_factory=dict)
    latest: dict[str, tuple[str, str]] = field(default_factory=dict)  # step -> (agent, task)
    scopes: dict[str, anyio.CancelScope] = field(default_factory=dict)
    fresh: set[tuple[str, int]] = field(default_factory=set)  # runs created by this invocation
    ask_lock: anyio.Lock = field(default_factory=anyio.Lock)

    def left(self) -> float:
        """Seconds left of the job's deadline (for this invocation)."""
        return self.deadline - self.clock()

    def context_of(self, spec: StepSpec) -> str:
        if self.plan.context_scope == "step":
            return f"{self.context_id}-{spec.id}"
        return self.context_id

    def where(self, agent: str) -> str:
        """An agent as a failure names it: its name and card URL."""
        link = self.links.get(agent)
        url = link.spec.card_url if link is not None else self.plan.agent_spec(agent).card_url
        return f"{agent} at {url}"

    def publish(self, spec: StepSpec, run: RunRow) -> None:
        """A done run's output is the step's (and, for a reviser, the revised step's)."""
        output = output_of(run)
        targets = [spec.id] if spec.revises is None else [spec.id, spec.revises]
        for step_id in targets:
            self.outputs[step_id] = output
            if run.task_id:
                self.latest[step_id] = (run.agent, run.task_id)

    def take_fresh(self, run: RunRow) -> bool:
        """Whether the run was created by this invocation (once): then its message cannot
        have reached the agent yet, and no lookup by messageId is needed."""
        key = (run.step_id, run.attempt)
        fresh = key in self.fresh
        self.fresh.discard(key)
        return fresh


def output_of(run: RunRow) -> Output:
    return Output(text=run.output_text or "", data=run.output_data)


def age(stamp: str | None) -> float:
    """Seconds since a ledger timestamp (wall clock: it spans invocations)."""
    if stamp is None:
        return 0.0
    return (datetime.now(UTC) - datetime.fromisoformat(stamp)).total_seconds()
