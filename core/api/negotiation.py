"""Extension negotiation (A2A-Extensions headers, gRPC metadata): every binding checks the
values it was given against the card's required extensions."""

from __future__ import annotations

from core.wire.errors import ExtensionSupportRequiredError


def check_extension_values(values: list[str], required: frozenset[str]) -> None:
    """ExtensionSupportRequired unless the header (or gRPC metadata) values, each a
    comma-separated list of URIs, name every required extension."""
    requested = {uri.strip() for value in values for uri in value.split(",") if uri.strip()}
    missing = sorted(required - requested)
    if missing:
        raise ExtensionSupportRequiredError(
            f"This agent requires extension(s): {', '.join(missing)}",
            metadata={"extensions": ",".join(missing)},
        )
