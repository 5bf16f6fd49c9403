"""`AskingRoleBackend`: the demo's scripted role agent, plus a question and a gate.

Options (beside `RoleBackend`'s `name` and `role`): `ask`, a question put on the first turn of
every task (the task's next turn is the answer, echoed in the reply); `gate`, a file the turn
waits for before answering (so a test can hold a remote task running while it kills the crew,
and let it finish when it wants, coordinated by a file rather than by time).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from core.backend import BackendEvent, NeedsInput, Progress, Text, Turn
from tests.crew.agents import RoleBackend


class AskingRoleBackend(RoleBackend):
    async def _answer(
        self, turn: Turn, command: str, arg: str, earlier: list[str]
    ) -> AsyncIterator[BackendEvent]:
        question = self.options.get("ask")
        if question and turn.task_id not in self.seen:
            self.seen.add(turn.task_id)
            yield NeedsInput(str(question))
            return
        answer = turn.text if question else ""
        gate = self.options.get("gate")
        if gate:
            yield Progress("waiting for the gate")
            while not await anyio.Path(Path(str(gate))).exists():  # noqa: ASYNC110 - a file
                await anyio.sleep(0.05)
        role = self.options.get("role", "tester")
        yield Text(f"{role} ({self.name}): done; told {answer!r}")
