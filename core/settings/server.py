"""The server's and push's blocks of the one Settings model (`core.settings`): who may call,
connection limits, webhook targets. Split out by subject to keep modules small; Settings is
still the only reader of the config file and the environment."""

from __future__ import annotations

import ipaddress

from pydantic import Field, SecretStr, field_validator

from core.backend.config import Block
from core.push.guard import parse_push_target


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


MIN_TOKEN_LENGTH = 16


class TokenSettings(Block):
    token: SecretStr = Field(
        description="A bearer token (use ${VAR}; never commit one); must not be empty, "
        f"fewer than {MIN_TOKEN_LENGTH} characters gets a warning"
    )
    principal: str = Field(min_length=1, description="Who presents this token")


class AuthSettings(Block):
    tokens: list[TokenSettings] = Field(
        default_factory=list,
        description="Bearer tokens; when set, every call but the public card and health needs "
        "one; one token names one principal",
    )

    def refuse_unusable_tokens(self) -> None:
        """Raise ValueError naming the first token no caller could use, or one given to two
        principals. An empty token (often an unset ${VAR:-}) would otherwise count as "auth
        configured" for a public bind while nobody can present it."""
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.tokens):
            key = f"server.auth.tokens[{index}].token"
            value = entry.token.get_secret_value()
            if not value.strip():
                raise ValueError(f"{key}: the token is empty (is its ${{VAR}} set?)")
            if value != value.strip():
                # The Authorization header is trimmed, so such a token would never match.
                raise ValueError(
                    f"{key}: the token starts or ends with whitespace, which no caller can send"
                )
            first = seen.setdefault(value, index)
            if self.tokens[first].principal != entry.principal:
                raise ValueError(
                    f"{key}: the same token as server.auth.tokens[{first}].token but another "
                    "principal; one token must say who is calling"
                )

    def short_tokens(self) -> list[str]:
        """Key paths of the tokens shorter than MIN_TOKEN_LENGTH (warned about, not refused)."""
        return [
            f"server.auth.tokens[{i}].token"
            for i, entry in enumerate(self.tokens)
            if len(entry.token.get_secret_value()) < MIN_TOKEN_LENGTH
        ]


class ServerSettings(Block):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    grpc_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Port of the gRPC binding (v1.0 and v0.3 services) on the same host; "
        "unset = no gRPC, 0 = a free port (printed at start)",
    )
    public_url: str | None = Field(
        default=None, description="Base URL advertised in the card; default: from each request"
    )
    trust_forwarded_headers: bool = Field(
        default=False, description="Honour X-Forwarded-Proto/Host when building card URLs"
    )
    auth: AuthSettings = Field(default_factory=AuthSettings)
    allow_unauthenticated: bool = Field(
        default=False,
        description="Allow a non-loopback bind without auth tokens (anyone who reaches the port "
        "can drive the agent)",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Origins allowed to call from a browser; a request with any other Origin "
        "header is refused (403)",
    )
    allowed_hosts: list[str] | None = Field(
        default=None,
        description="Host header values accepted (DNS-rebinding guard); default: loopback names "
        "when bound to loopback, anything otherwise",
    )
    max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    max_parts: int = Field(default=64, ge=1, description="Parts in one message at most")
    max_file_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1, description="Bytes of one inline file part at most"
    )
    max_concurrent_turns: int = Field(
        default=8, ge=1, description="Turns running at once in this daemon; others wait in order"
    )
    max_concurrent_turns_per_principal: int = Field(
        default=0, ge=0, description="Turns running at once per principal; 0 = no own limit"
    )
    max_queued_turns: int = Field(
        default=256, ge=0, description="Turns waiting for a slot in this daemon at most"
    )
    max_connections: int = Field(
        default=1024,
        ge=1,
        description="Open client connections at most; more are answered 503 and closed at "
        "once (lowered to fit the open-file limit)",
    )
    max_connections_per_client: int = Field(
        default=256, ge=0, description="Open connections from one client address; 0 = no own limit"
    )
    header_timeout: int = Field(
        default=10_000,
        ge=0,
        description="ms a new connection has to send a complete request head; 0 = no limit",
    )
    keep_alive_timeout: int = Field(
        default=15_000,
        ge=1,
        description="ms an idle connection is kept open between requests",
    )
    sse_ping_interval: int = Field(default=15000, ge=100, description="ms")
    debug_errors: bool = False
    shutdown_timeout: int = Field(default=10000, ge=0, description="ms")


class ConsoleSettings(Block):
    enabled: bool | None = Field(
        default=None,
        description="Serve the web console at /console; unset: on for a loopback bind, off "
        "otherwise (when on, it signs in with the same tokens as server.auth.tokens)",
    )
    session_ttl: int = Field(
        default=12 * 3600 * 1000, ge=60_000, description="ms a console sign-in lasts"
    )


class McpSettings(Block):
    enabled: bool = Field(
        default=False,
        description="Serve MCP over Streamable HTTP at /mcp: this daemon's agent as MCP tools "
        "(docs/mcp.md), with the same bearer tokens as the rest",
    )


class PushSettings(Block):
    enabled: bool = Field(
        default=False,
        description="Offer push notifications (card capabilities.pushNotifications); when false "
        "every push operation answers PushNotificationNotSupported",
    )
    max_attempts: int = Field(
        default=6, ge=1, description="Delivery attempts per notification before giving up"
    )
    timeout: int = Field(default=10_000, ge=1, description="ms one delivery attempt may take")
    backoff: int = Field(
        default=1000, ge=0, description="ms before the first retry; doubles per retry, jittered"
    )
    max_backoff: int = Field(default=60_000, ge=0, description="ms between retries at most")
    allow_private_targets: bool = Field(
        default=False,
        description="Allow webhooks on loopback, private, link-local and other non-public "
        "addresses, cloud metadata included (tests only); prefer push.allowedTargets",
    )
    allowed_targets: list[str] = Field(
        default_factory=list,
        description="Webhook hosts allowed although not public: CIDRs (a bare address is one "
        "host) and host names; a cloud metadata address only when listed as that address",
    )

    @field_validator("allowed_targets")
    @classmethod
    def _targets_parse(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            parse_push_target(entry)
        return entries
