"""`FaultyBackend`: the scripted backend with a health check that raises, for `/ready` on the
real daemon (`"backend": "tests.support.faulty_backend:FaultyBackend"`). `options.healthError`
is the exception's text: it must reach the log, never the caller."""

from __future__ import annotations

from core.backend import Health
from tests.support.scripted import ScriptedBackend


class FaultyBackend(ScriptedBackend):
    name = "faulty"

    async def health(self) -> Health:
        raise ConnectionResetError(str(self.options.get("healthError", "connection reset")))
