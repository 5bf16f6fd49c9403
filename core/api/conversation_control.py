"""The card's conversation-control extension: what callers may choose per message and which
control operations the agent offers (docs/extensions/conversation-control.md).

The record is what `Operations.capabilities()` says (the backend's declaration narrowed by
the `turnOptions` allow-lists, by the engine's rule), published as the params of one
extension in the card's `capabilities.extensions`, and read back from any card (ours, or a
remote agent's) by core/client/control.py, so `check`, the console and the MCP faces show
what a card says.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from core.backend.control import Capabilities, capabilities_of
from core.client.control import URI
from core.settings import Settings
from core.settings.sections import engine_config

__all__ = ["URI", "allowed", "extension", "schema"]

SCHEMA_FILE = "conversation-control.schema.json"
DESCRIPTION = (
    "Conversation control: steer a running turn, fork a context, choose model, effort and "
    "mode per message (request metadata a2aWrapper); params say what this agent offers"
)


def allowed(settings: Settings, backend: object) -> Capabilities:
    """What callers may use of `backend` (not started), for the commands that run no daemon
    (`check`, `card`): the engine's rule (`engine_config(settings).turn_options`, what
    `Operations.capabilities` applies on a running daemon) on what it declares."""
    return engine_config(settings).turn_options.allowed(capabilities_of(backend))


def extension(capabilities: Capabilities) -> dict[str, Any]:
    """The card's `capabilities.extensions` entry. Not required: a client that does not know
    the extension talks to the agent as to any other."""
    return {
        "uri": URI,
        "description": DESCRIPTION,
        "required": False,
        "params": capabilities.record(),
    }


@cache
def schema() -> dict[str, Any]:
    """The record's JSON Schema (package data, shipped in the wheel)."""
    text = resources.files("core.api").joinpath("schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
