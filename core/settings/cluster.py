"""The `cluster` block: replicas of one agent on one PostgreSQL (`storage.kind: "postgres"`),
docs/operations.md#replicas."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, model_validator

from core.backend.config import Block


class ClusterSettings(Block):
    lease_ttl: int = Field(
        default=15_000,
        ge=1000,
        description="ms a replica stays the owner of its contexts and tasks without a "
        'heartbeat (storage.kind "postgres"); past it a survivor fails its running tasks',
    )
    heartbeat: int = Field(
        default=5_000, ge=100, description="ms between a replica's lease renewals"
    )

    @model_validator(mode="after")
    def _heartbeat_within_ttl(self) -> ClusterSettings:
        if self.heartbeat >= self.lease_ttl:
            raise ValueError("cluster.heartbeat must be shorter than cluster.leaseTtl")
        return self


def redacted_dsn(url: str) -> str:
    """The DSN without its password (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
