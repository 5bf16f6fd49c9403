"""The loop guard: a daemon refuses a message sent by an agent it runs itself.

Every process the daemon starts carries its instance id in `A2A_WRAPPER_INSTANCE`
(core/instance/guard.py). Our A2A client (`a2a-wrapper send`, `a2a-wrapper mcp`), run by such
an agent, stamps that id into each message's metadata as `a2aWrapper.origin`; a daemon that
finds its own id there would hand its agent a task from itself (and that agent may well call
again): it refuses, in words the calling model can act on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from core.backend.procfs import MARKER_VARIABLE
from core.wire.errors import UnsupportedOperationError
from core.wire.models import SendMessageRequest

ORIGIN_KEY = "origin"
REFUSAL = (
    "Refused: this message comes from an agent this daemon runs itself (an agent cannot give "
    "itself a task through its own daemon; that would loop). Do the work yourself, or send it "
    "to another agent."
)


def refuse_own_agents(request: SendMessageRequest) -> None:
    """UnsupportedOperationError when `request` carries this daemon's own instance id."""
    own = os.environ.get(MARKER_VARIABLE)
    if not own:
        return
    for metadata in (request.message.metadata, request.metadata):
        if _origin(metadata) == own:
            raise UnsupportedOperationError(REFUSAL)


def _origin(metadata: Mapping[str, Any] | None) -> object:
    section = (metadata or {}).get("a2aWrapper")
    return section.get(ORIGIN_KEY) if isinstance(section, Mapping) else None
