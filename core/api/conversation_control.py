"""The card's conversation-control extension: what callers may choose per message and which
control operations the agent offers (docs/extensions/conversation-control.md).

The record is computed in one place (`allowed`: the backend's declaration narrowed by the
`turnOptions` allow-lists), published as the params of one extension in the card's
`capabilities.extensions`, and read back from any card (ours, or a remote agent's) by
`record_of`, so `check`, the console and the MCP faces show what the card says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from core.backend.control import Capabilities, capabilities_of
from core.settings import Settings

URI = "https://github.com/a2a-wrapper/a2a-wrapper/blob/main/docs/extensions/conversation-control.md"
SCHEMA_FILE = "conversation-control.schema.json"
DESCRIPTION = (
    "Conversation control: steer a running turn, fork a context, choose model, effort and "
    "mode per message (request metadata a2aWrapper); params say what this agent offers"
)


def allowed(settings: Settings, backend: object) -> Capabilities:
    """What callers of this daemon may use: what `backend` declares now, narrowed by the
    operator's `turnOptions.allow` lists."""
    return settings.turn_options.allowed(capabilities_of(backend))


def extension(capabilities: Capabilities) -> dict[str, Any]:
    """The card's `capabilities.extensions` entry. Not required: a client that does not know
    the extension talks to the agent as to any other."""
    return {
        "uri": URI,
        "description": DESCRIPTION,
        "required": False,
        "params": capabilities.record(),
    }


def record_of(card: Mapping[str, Any]) -> dict[str, Any] | None:
    """The extension's params in a card (v1.0 or v0.3 JSON), None when the card has none."""
    capabilities = card.get("capabilities")
    if not isinstance(capabilities, Mapping):
        return None
    for entry in capabilities.get("extensions") or ():
        if isinstance(entry, Mapping) and entry.get("uri") == URI:
            params = entry.get("params")
            return dict(params) if isinstance(params, Mapping) else None
    return None


def summary(record: Mapping[str, Any]) -> list[str]:
    """The record as lines for people (`check`, the MCP tool's text)."""
    models = record.get("models")
    shown = "any name" if models is None else _listed(models, "the configured model only")
    return [
        f"steer: {_yes(record.get('steer'))}",
        f"fork: {_yes(record.get('fork'))}",
        f"models: {shown}",
        f"efforts: {_listed(record.get('efforts'), 'none to choose')}",
        f"modes: {_listed(record.get('modes'), 'default')}",
        f"approvals: {_yes(record.get('approvals'))}",
        f"resume: {_yes(record.get('resume'))}",
        f"image input: {_yes(record.get('imageInput'))}",
    ]


def _yes(value: object) -> str:
    return "yes" if value is True else "no"


def _listed(values: object, none: str) -> str:
    if not isinstance(values, list | tuple) or not values:
        return none
    return ", ".join(str(v) for v in values)


@cache
def schema() -> dict[str, Any]:
    """The record's JSON Schema (package data, shipped in the wheel)."""
    text = resources.files("core.api").joinpath("schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
