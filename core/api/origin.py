"""The loop guard: a daemon refuses a message sent by an agent it runs itself.

Every process the daemon starts carries its instance id in `A2A_WRAPPER_INSTANCE`
(core/instance/guard.py). Our A2A client (`a2a-wrapper send`, `a2a-wrapper mcp`), run by such
an agent, stamps that id into each message's metadata as `a2aWrapper.origin`; a daemon that
finds its own id there would hand its agent a task from itself (and that agent may well call
again): it refuses, in words the calling model can act on.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from core.backend.procfs import MARKER_VARIABLE, PROC, marked
from core.wire.errors import UnsupportedOperationError
from core.wire.models import SendMessageRequest

ORIGIN_KEY = "origin"
INODE_FIELD = 9  # of a /proc/net/tcp line
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
REFUSAL = (
    "Refused: this message comes from an agent this daemon runs itself (an agent cannot give "
    "itself a task through its own daemon; that would loop). Do the work yourself, or send it "
    "to another agent."
)


def stamped(metadata: dict[str, Any]) -> dict[str, Any]:
    """`metadata` with this daemon's own instance id as the message's origin (the MCP face,
    for a caller it found to be one of its own agents: Operations then refuses it)."""
    own = os.environ.get(MARKER_VARIABLE, "")
    return {**metadata, "a2aWrapper": {**metadata.get("a2aWrapper", {}), ORIGIN_KEY: own}}


def refuse_own_agents(request: SendMessageRequest) -> None:
    """UnsupportedOperationError when `request` carries this daemon's own instance id."""
    own = os.environ.get(MARKER_VARIABLE)
    if not own:
        return
    for metadata in (request.message.metadata, request.metadata):
        if _origin(metadata) == own:
            raise UnsupportedOperationError(REFUSAL)


def _origin(metadata: Mapping[str, Any] | None) -> object:
    section = (metadata or {}).get("a2aWrapper")
    return section.get(ORIGIN_KEY) if isinstance(section, Mapping) else None


def own_agent_at(peer: tuple[str, int] | None) -> bool:
    """Whether the TCP connection from `peer` (the caller's address and port) is held by a
    process of this daemon's (one whose environment carries the instance marker): how the HTTP
    MCP face knows an agent of its own calling, when no client stamps the message. Only a
    connection from this machine (its end is in this network namespace's /proc/net/tcp) can
    be; False whenever it cannot tell (no marker, no /proc)."""
    own = os.environ.get(MARKER_VARIABLE)
    address = _address(peer[0]) if peer else None
    if not own or peer is None or address is None:
        return False
    inode = _socket_inode(address, peer[1])
    if inode is None:
        return False
    held = f"socket:[{inode}]"
    for process in marked(own):
        with suppress(OSError):
            fds = PROC / str(process.pid) / "fd"
            if any(os.readlink(fd) == held for fd in fds.iterdir()):
                return True
    return False


def _socket_inode(address: IPAddress, port: int) -> str | None:
    """The inode of the TCP socket whose local end is `address:port` (/proc/net/tcp{,6})."""
    for table in ("tcp", "tcp6"):
        with suppress(OSError):
            for line in (PROC / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > INODE_FIELD and _local_end(fields[1]) == (address, port):
                    return fields[INODE_FIELD]
    return None


def _local_end(field: str) -> tuple[IPAddress, int] | None:
    """`0100007F:1F90` -> (127.0.0.1, 8080): the kernel writes each 32-bit word of the address
    in host (little-endian) order."""
    raw, _, port = field.partition(":")
    try:
        data = bytes.fromhex(raw)
        swapped = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
        found = _plain(ipaddress.ip_address(swapped))
        return found, int(port, 16)
    except ValueError:
        return None


def _address(text: str) -> IPAddress | None:
    try:
        return _plain(ipaddress.ip_address(text))
    except ValueError:
        return None


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4 peer) as IPv4."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address
