"""`FaultyBackend`: the scripted backend misbehaving the ways third-party code may, for the tests
that prove one bad turn ends only its own task (issue 17, items 2 and 7) and that `/ready` never
shows a health check's exception text (item 9).

Option `interrupt`: what `interrupt()` does: `raise` (a RuntimeError with secret-looking text),
`exit` (SystemExit), `hang` (never returns); unset, it works.
Option `healthError`: `health()` raises with this text (it must reach the log, never the
caller); unset, the health check passes.

Prompts, besides the scripted ones (`block`, `echo: X`, ...), after reporting the session:
  `exit`      raise SystemExit from run_turn          `keyboard`  raise KeyboardInterrupt
  `genexit`   raise GeneratorExit by hand             `leak`      raise RuntimeError(SECRET)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from core.backend import BackendEvent, Health, SessionBound, Turn
from tests.support.errors import SECRET
from tests.support.scripted import ScriptedBackend

_RAISED: dict[str, type[BaseException]] = {
    "exit": SystemExit,
    "keyboard": KeyboardInterrupt,
    "genexit": GeneratorExit,
}


class FaultyBackend(ScriptedBackend):
    name = "faulty"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self._interrupt = str(self.options.get("interrupt", ""))

    async def health(self) -> Health:
        if "healthError" in self.options:
            raise ConnectionResetError(str(self.options["healthError"]))
        return await super().health()

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        command = turn.text.strip()
        if command in _RAISED or command == "leak":
            yield SessionBound(turn.session_id or f"faulty-{turn.context_id}")
            if command == "leak":
                raise RuntimeError(f"upstream said: {SECRET}")
            raise _RAISED[command]
        async for event in super().run_turn(turn):
            yield event

    async def interrupt(self, turn: Turn) -> None:
        await super().interrupt(turn)
        match self._interrupt:
            case "raise":
                raise RuntimeError(f"upstream said: {SECRET}")
            case "exit":
                raise SystemExit(3)
            case "hang":
                await anyio.sleep_forever()
