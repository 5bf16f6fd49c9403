"""The agent card as served at a base URL: public or extended, strict v1.0 or merged with the
v0.3 fields, signed when `agentCard.signing` is set (every binding serves it; the HTTP route
is core/bindings/http/card.py).

URLs in the card follow the base URL the caller reached (or `server.publicUrl`), so a daemon
reached through any address advertises an address that works.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from core.api import conversation_control
from core.backend.control import Capabilities
from core.settings import Settings
from core.wire import signing
from core.wire.card import JSONRPC_PATH, REST_PATH, Interface, card_document
from core.wire.errors import ExtendedAgentCardNotConfiguredError

# First entry preferred. v0.3 shares the URLs: JSON-RPC tells dialects apart by method name,
# and v0.3 REST clients add `/v1/...` to the base themselves.
INTERFACES = [
    Interface(JSONRPC_PATH, "JSONRPC", "1.0"),
    Interface(REST_PATH, "HTTP+JSON", "1.0"),
    Interface(JSONRPC_PATH, "JSONRPC", "0.3"),
    Interface(REST_PATH, "HTTP+JSON", "0.3"),
]


BEARER = "bearer"
SIGNED_CACHE = 64


def _security(settings: Settings) -> dict[str, Any]:
    """The card's security fields when tokens are configured: the v1.0 scheme wrapper and
    requirement; the v0.3 `type`-style keys are merged in for the non-strict card."""
    if not settings.server.auth.tokens:
        return {}
    return {
        "securitySchemes": {BEARER: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {BEARER: {}}}],
    }


def _v03_security(doc: dict[str, Any]) -> None:
    if "securitySchemes" not in doc:
        return
    for scheme in doc["securitySchemes"].values():
        http = scheme.get("httpAuthSecurityScheme")
        if http is not None:
            scheme.update({"type": "http", "scheme": http["scheme"]})
    doc["security"] = [{name: []} for name in doc["securitySchemes"]]


@dataclass(frozen=True)
class CardView:
    """The cards as seen from one request (its base URL)."""

    provider: CardProvider
    base_url: str

    def extended(self, *, strict: bool) -> dict[str, Any]:
        return self.provider.extended_for(self.base_url, strict=strict)

    def public(self, *, merged: bool = False) -> dict[str, Any]:
        """The public card as `/.well-known/agent-card.json` serves it to a v0.3 caller;
        `merged`: with the v0.3 fields whatever `agentCard.v03Fields` says."""
        strict = not merged and not self.provider.settings.agent_card.v03_fields
        return self.provider.document_for(self.base_url, strict=strict)


def grpc_interfaces(base_url: str, port: int) -> list[Interface]:
    """The gRPC interfaces at `host:port` (no scheme, A2A §5.2), the host taken from the base
    URL the card is served under."""
    host = urlsplit(base_url).hostname or "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    address = f"{shown}:{port}"
    return [Interface("", "GRPC", "1.0", address), Interface("", "GRPC", "0.3", address)]


class CardProvider:
    """`capabilities` says what callers may use of the backend now (read at each rendering:
    a started agent may report more than its backend knew before, e.g. its models); the card
    publishes it as the conversation-control extension. None (`a2a-wrapper card`, which
    builds no backend): the card without it."""

    def __init__(self, settings: Settings, capabilities: Callable[[], Capabilities] | None) -> None:
        self.settings = settings
        self._capabilities = capabilities
        # Known once the servers are bound (port 0 means "a free one"): serve() and the gRPC
        # binding set them.
        self.http_port: int | None = settings.server.port or None
        self.grpc_port: int | None = settings.server.grpc_port or None
        self.loaded = datetime.now(UTC).replace(microsecond=0)
        self._card = settings.agent_card.model_dump(
            mode="json",
            by_alias=True,
            exclude_none=True,
            exclude={"max_age", "extensions", "v03_fields"},
        )
        config = settings.agent_card.signing
        self._keys = config.signing_keys() if config is not None else []
        # Signed cards by (base URL, strict, extended, gRPC port, control record): one signing
        # per rendering, so the card (and its ETag) stays the same between requests. Bounded:
        # the base URL comes from the Host header.
        self._signed: dict[tuple[str, bool, bool, int | None, str], dict[str, Any]] = {}
        self._extensions = [
            e.model_dump(mode="json", by_alias=True, exclude_none=True)
            for e in settings.agent_card.extensions
            # The conversation-control extension is the daemon's to publish.
            if e.uri != conversation_control.URI
        ]

    @property
    def required_extensions(self) -> frozenset[str]:
        return frozenset(e.uri for e in self.settings.agent_card.extensions if e.required)

    @property
    def has_extended(self) -> bool:
        return self.settings.agent_card.extended is not None

    def configured_base_url(self) -> str:
        """The base URL without a request to take it from (gRPC calls, `a2a-wrapper card`):
        `server.publicUrl`, else the HTTP address the daemon is bound to."""
        server = self.settings.server
        if server.public_url:
            return server.public_url.rstrip("/")
        host = f"[{server.host}]" if ":" in server.host else server.host
        return f"http://{host}:{self.http_port or server.port}"

    def document_for(
        self, base_url: str, *, strict: bool, card: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The card as served at `base_url` (also what `a2a-wrapper card` shows), signed when
        `agentCard.signing` is set."""
        control = (
            None
            if self._capabilities is None
            else conversation_control.extension(self._capabilities())
        )
        if not self._keys:
            return self._unsigned(base_url, strict=strict, card=card, control=control)
        record = "" if control is None else json.dumps(control["params"], sort_keys=True)
        key = (base_url, strict, card is not None, self.grpc_port, record)
        found = self._signed.get(key)
        if found is None:
            if len(self._signed) >= SIGNED_CACHE:
                self._signed.clear()
            doc = self._unsigned(base_url, strict=strict, card=card, control=control)
            found = self._signed[key] = signing.signed(doc, self._keys)
        return found

    def _unsigned(
        self,
        base_url: str,
        *,
        strict: bool,
        card: dict[str, Any] | None,
        control: dict[str, Any] | None,
    ) -> dict[str, Any]:
        doc = card_document(
            card or self._card,
            base_url,
            INTERFACES + (grpc_interfaces(base_url, self.grpc_port) if self.grpc_port else []),
            v03_fields=not strict,
            streaming=True,
            push_notifications=self.settings.push.enabled,
            extended_card=self.settings.agent_card.extended is not None,
            extensions=[*self._extensions, *([control] if control else [])],
        )
        doc.update(_security(self.settings))
        if not strict:
            _v03_security(doc)
        return doc

    def extended_for(self, base_url: str, *, strict: bool) -> dict[str, Any]:
        """The extended card (public card plus the extended skills); callers reach it only
        authenticated, since the auth middleware guards every protocol route."""
        extended = self.settings.agent_card.extended
        if extended is None:
            raise ExtendedAgentCardNotConfiguredError
        card = dict(self._card)
        if extended.description:
            card["description"] = extended.description
        card["skills"] = [
            *card["skills"],
            *(s.model_dump(mode="json", by_alias=True) for s in extended.skills),
        ]
        return self.document_for(base_url, strict=strict, card=card)
