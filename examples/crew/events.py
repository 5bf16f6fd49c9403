"""What the runner tells the outside: step progress (for the live view) and questions (for the
person running the crew). Interfaces only, so the runner does not know about terminals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class StepStatus:
    """One step as the live view shows it. `started`/`ended` are `anyio.current_time()`."""

    step: str
    agent: str
    state: str = "pending"
    round: int = 0
    attempt: int = 0
    task_id: str | None = None
    started: float | None = None
    ended: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    note: str = ""


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
    kind: str  # "input-required" or "auth-required"


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
