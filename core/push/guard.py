"""Which addresses a webhook may live at: the address rule of the push SSRF guard.

A plain address is refused when it is loopback, private, link-local, multicast, reserved,
unspecified, a cloud metadata address, or anything else that is not globally routable. An IPv6
address that carries an IPv4 address inside it (IPv4-mapped and -compatible, IPv4-translated,
6to4, Teredo, NAT64 64:ff9b::/96) reaches that IPv4 host, so it is judged by the embedded
address(es) under the same rule: `[2002:a00:1::]` is 10.0.0.1 and is refused like it. The
local-use NAT64 prefix 64:ff9b:1::/48 is refused whole (where it embeds is not knowable).

`TargetPolicy` adds the operator's allow-list (`push.allowedTargets`): a host name entry allows
that name, a CIDR entry allows the addresses in it. The metadata addresses stay refused unless
an entry names exactly that address, so allowing a range never opens them by accident.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable


def parse_push_target(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | str:
    """One `push.allowedTargets` entry: a network (a bare address is a /32 or /128), or a
    lower-case host name. Raises ValueError for anything else."""
    text = entry.strip()
    try:
        return ipaddress.ip_network(text.strip("[]"), strict=False)
    except ValueError:
        pass
    name = text.lower().rstrip(".")
    if not name or len(name) > 253 or not all(_HOST_LABEL.fullmatch(x) for x in name.split(".")):
        raise ValueError(f"{entry!r} is neither a CIDR nor a host name")
    return name


_HOST_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# 169.254.169.254: AWS, GCP, Azure, OCI and most others; fd00:ec2::254: AWS over IPv6;
# 100.100.100.200: Alibaba Cloud (inside 100.64.0.0/10, which a wide entry may allow).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(address)
    for address in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)

_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_CHECKS = (
    ("is_unspecified", "an unspecified address"),
    ("is_loopback", "a loopback address"),
    ("is_link_local", "a link-local address"),
    ("is_multicast", "a multicast address"),
    ("is_reserved", "a reserved address"),
    ("is_private", "a private address"),
)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 address(es) an IPv6 address reaches through an IPv4 embedding, or [] when it
    is not such a form. Teredo gives its server and its (de-obfuscated) client."""
    if address.is_loopback or address.is_unspecified:
        return []
    low32 = ipaddress.IPv4Address(address.packed[12:])
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address in _IPV4_TRANSLATED or address in _IPV4_COMPATIBLE or address in _NAT64_WELL_KNOWN:
        return [low32]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    return []


def _plain_refusal(address: Address) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for attribute, reason in _CHECKS:
        if getattr(address, attribute):
            return reason
    if not address.is_global:
        return "not a public address"
    return None


def refusal(address: Address) -> str | None:
    """Why a webhook may not live at `address`, or None when it is a public address."""
    if address in _NAT64_LOCAL:
        # RFC 8215 local use: where the IPv4 address sits depends on a prefix length only the
        # local network knows (RFC 6052 allows six), so it could reach any IPv4 host.
        return "a local-use NAT64 address"
    if isinstance(address, ipaddress.IPv6Address) and address not in METADATA_ADDRESSES:
        embedded = embedded_ipv4(address)
        for inner in embedded:
            reason = _plain_refusal(inner)
            if reason is not None:
                return f"{reason} (the IPv6 form of {inner})"
        if embedded:
            return None
    return _plain_refusal(address)


def unmapped(address: Address) -> Address:
    """`::ffff:a.b.c.d` is the IPv4 host a.b.c.d to the socket layer: treat it as one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class TargetPolicy:
    """The address rule plus the allow-list. Safe to share; holds no state but the list."""

    def __init__(self, allowed: Iterable[str]) -> None:
        parsed = [parse_push_target(entry) for entry in allowed]
        self._names = frozenset(p for p in parsed if isinstance(p, str))
        self._networks = [p for p in parsed if not isinstance(p, str)]

    def allows_name(self, host: str) -> bool:
        return host.lower().rstrip(".") in self._names

    def refusal(self, address: Address, *, name_allowed: bool = False) -> str | None:
        """Why `address` is refused, or None. `name_allowed`: it is what an allowed host name
        resolved to (everything but the metadata addresses passes)."""
        address = unmapped(address)
        inner: list[Address] = []
        if isinstance(address, ipaddress.IPv6Address):
            inner = list(embedded_ipv4(address))
        for candidate in (address, *inner):
            if candidate in METADATA_ADDRESSES and not self._names_exactly(candidate):
                form = f" (the IPv6 form of {candidate})" if candidate != address else ""
                return f"a cloud metadata address{form}"
        if name_allowed or any(address in network for network in self._networks):
            return None
        return refusal(address)

    def _names_exactly(self, address: Address) -> bool:
        return any(network.num_addresses == 1 and address in network for network in self._networks)
