"""The agent card, rendered for both client generations (a2a-protocol.md §5.4).

The v1.0 card comes first; the v0.3 fields (`url`, `preferredTransport`, `protocolVersion`,
`additionalInterfaces`, ...) are merged in without overwriting anything, so one document
serves both. Pure: the caller supplies the base URL and the configured card fields.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"


@dataclass(frozen=True)
class Interface:
    """`path` is appended to the base URL; an `address` (gRPC's `host:port`, no scheme) is
    used as it is."""

    path: str
    binding: str
    version: str
    address: str | None = None


def card_document(
    card: dict[str, Any],
    base_url: str,
    interfaces: list[Interface],
    *,
    streaming: bool,
    push_notifications: bool,
    extended_card: bool,
    extensions: list[dict[str, Any]],
    v03_fields: bool = True,
) -> dict[str, Any]:
    """`card` holds name, description, version, skills, modes, provider, urls (camelCase)."""
    base = base_url.rstrip("/")
    supported = [
        {
            "url": i.address or base + i.path,
            "protocolBinding": i.binding,
            "protocolVersion": i.version,
        }
        for i in interfaces
    ]
    doc: dict[str, Any] = {
        "name": card["name"],
        "description": card["description"],
        "version": card["version"],
        "supportedInterfaces": supported,
        "capabilities": {
            "streaming": streaming,
            "pushNotifications": push_notifications,
            "extendedAgentCard": extended_card,
            **({"extensions": extensions} if extensions else {}),
        },
        "defaultInputModes": card["defaultInputModes"],
        "defaultOutputModes": card["defaultOutputModes"],
        "skills": card["skills"],
    }
    for key in ("provider", "documentationUrl", "iconUrl"):
        if card.get(key) is not None:
            doc[key] = card[key]
    legacy = [s for s in supported if s["protocolVersion"].startswith("0.")]
    if legacy and v03_fields:
        first, rest = legacy[0], legacy[1:]
        doc["url"] = first["url"]
        doc["preferredTransport"] = first["protocolBinding"]
        doc["protocolVersion"] = "0.3.0"
        doc["additionalInterfaces"] = [
            {"url": _v03_url(s["url"]), "transport": s["protocolBinding"]} for s in rest
        ]
        doc["supportsAuthenticatedExtendedCard"] = extended_card
    return doc


def _v03_url(url: str) -> str:
    """v0.3 interface URLs are http(s) URLs, gRPC's too (its clients take host:port from it);
    v1.0 writes a gRPC interface as a bare `host:port`."""
    return url if "://" in url else f"http://{url}"


def etag(doc: dict[str, Any]) -> str:
    """Weak ETag over the canonical JSON of the card, as the reference SDK computes it."""
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return f'W/"{hashlib.sha256(canonical).hexdigest()}"'
