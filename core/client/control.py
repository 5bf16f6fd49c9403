"""The conversation-control extension as any client reads it from an agent card (ours, or
another agent's): its URI, its params, and the params as lines for people
(docs/extensions/conversation-control.md). The daemon publishes it under the same URI
(core/api/conversation_control.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

URI = "https://github.com/a2a-wrapper/a2a-wrapper/blob/main/docs/extensions/conversation-control.md"


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


def summary(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The record as (what, value) pairs for people: `check`, the console, the MCP tool."""
    models = record.get("models")
    return [
        ("steer", _yes(record.get("steer"))),
        ("fork", _yes(record.get("fork"))),
        ("models", "any name" if models is None else _listed(models, "the configured model only")),
        ("efforts", _listed(record.get("efforts"), "none to choose")),
        ("modes", _listed(record.get("modes"), "default")),
        ("approvals", _yes(record.get("approvals"))),
        ("resume", _yes(record.get("resume"))),
        ("image input", _yes(record.get("imageInput"))),
    ]


def _yes(value: object) -> str:
    return "yes" if value is True else "no"


def _listed(values: object, none: str) -> str:
    if not isinstance(values, list | tuple) or not values:
        return none
    return ", ".join(str(v) for v in values)
