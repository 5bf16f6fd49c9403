"""A scripted backend that declares conversation-control capabilities (the card's extension,
`check`, the console and the MCP faces show them)."""

from __future__ import annotations

from core.backend.control import Capabilities
from tests.support.scripted import ScriptedBackend


class DeclaringBackend(ScriptedBackend):
    """Knows its efforts and modes before start; its agent reports its models once started
    (before: any model name)."""

    def capabilities(self) -> Capabilities:
        return Capabilities(
            steer=True,
            fork=True,
            models=("m-large", "m-small") if self.started else None,
            efforts=("low", "high"),
            modes=("default", "plan", "readOnly"),
            approvals=True,
            resume=True,
            image_input=True,
        )
