"""The HTTP side of push notifications: one POST per attempt, behind an SSRF guard.

The guard allows only http and https, resolves the webhook's host itself and refuses loopback,
private, link-local, multicast, reserved, unspecified and cloud-metadata addresses (and
anything else that is not globally routable, and IPv6 forms embedding such an IPv4 address; the
rule is in `push_guard`), except what `push.allowedTargets` lists, or everything when
`push.allowPrivateTargets`. The request is
then made to the vetted addresses only: the connector's resolver answers with them and never
asks DNS again, so a name cannot change its answer between the check and the connection
(DNS rebinding). Redirects are never followed; a 3xx is a failed attempt.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Mapping

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from core.push.dispatcher import PushDeliveryError, PushTargetRefusedError
from core.push.guard import Address, TargetPolicy
from core.settings.server import PushSettings

Resolve = Callable[[str, int], Awaitable[list[str]]]


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host`, in its order, without repeats."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class _PinnedResolver(AbstractResolver):
    """Answers for one host with the addresses already vetted; never resolves anything."""

    def __init__(self, host: str, addresses: list[Address]) -> None:
        self._host = host
        self._addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host != self._host:
            raise OSError(f"{host} was not vetted")
        return [
            ResolveResult(
                hostname=host,
                host=str(a),
                port=port,
                family=socket.AF_INET6 if a.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for a in self._addresses
        ]

    async def close(self) -> None:
        return None


class HttpPushSender:
    """`PushSender` over aiohttp. `resolve` is the name lookup the guard uses (tests inject
    one); a fresh connection per attempt, so nothing outlives a request."""

    def __init__(self, settings: PushSettings, *, resolve: Resolve = system_resolve) -> None:
        self._allow_private = settings.allow_private_targets
        self._policy = TargetPolicy(settings.allowed_targets)
        self._resolve = resolve

    async def _vetted(self, url: str) -> tuple[URL, list[Address] | None]:
        """The parsed URL and the addresses to connect to (None: any, private allowed)."""
        try:
            parsed = URL(url)
        except (ValueError, TypeError) as exc:
            raise PushTargetRefusedError("not a valid URL") from exc
        if parsed.scheme not in ("http", "https"):
            raise PushTargetRefusedError("only http and https URLs are allowed")
        host = parsed.raw_host
        if not host or not parsed.is_absolute():
            raise PushTargetRefusedError("the URL has no host")
        if self._allow_private:
            return parsed, None
        try:
            literal: Address | None = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                found = await self._resolve(host, parsed.port or 0)
                addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
            except (OSError, ValueError) as exc:
                raise PushTargetRefusedError(f"cannot resolve {host}") from exc
            if not addresses:
                raise PushTargetRefusedError(f"cannot resolve {host}")
        name_allowed = literal is None and self._policy.allows_name(host)
        for address in addresses:
            reason = self._policy.refusal(address, name_allowed=name_allowed)
            if reason is not None:
                where = host if literal is not None else f"{host} resolves to {address}, which"
                raise PushTargetRefusedError(f"{where} is {reason}")
        return parsed, addresses

    async def vet(self, url: str) -> None:
        await self._vetted(url)

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> None:
        parsed, addresses = await self._vetted(url)
        resolver = (
            _PinnedResolver(parsed.raw_host or "", addresses) if addresses is not None else None
        )
        connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False, force_close=True)
        try:
            async with (
                aiohttp.ClientSession(connector=connector) as session,
                session.post(parsed, data=body, headers=dict(headers), allow_redirects=False) as r,
            ):
                if not 200 <= r.status < 300:
                    raise PushDeliveryError(f"HTTP {r.status}")
                await r.read()
        except (aiohttp.ClientError, OSError) as exc:
            raise PushDeliveryError(f"{type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        return None
