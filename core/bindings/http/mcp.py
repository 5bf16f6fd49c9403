"""`/mcp`: the daemon's own agent as MCP tools over Streamable HTTP (`mcp.enabled`).

The MCP tools are the stdio server's (core/client/mcp_server.py), over a `LocalAgents` (this
daemon's `Operations`) instead of A2A. The transport is the official SDK's: its
`StreamableHTTPSessionManager` speaks every revision the SDK does (the handshake ones and the
stateless 2026-07-28 one), and it is an ASGI app; rather than a second server on a second
port, each aiohttp request is handed to it through the small ASGI bridge below. So `/mcp` is
one more route of the one HTTP binding: same port, same middlewares (bearer token to
principal, Host and Origin guards, request ids, metrics), same body limit.

Stateless: the manager keeps nothing per MCP session (a contextId is a tool argument). One
MCP server per principal, made on its first call: the principal is fixed in its `LocalAgents`,
so a tool can only ever reach that principal's tasks (Operations scopes every call by it).
A caller that is one of the daemon's own agents (core/api/origin.py finds it by the
connection) gets a server whose messages carry the daemon's own origin, which Operations
refuses: the loop guard, in words the calling model reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import quote

from aiohttp import web
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from core.api.host import Host
from core.api.local_agents import LocalAgents
from core.api.origin import own_agent_at
from core.bindings.http.auth import principal
from core.client.mcp_server import add_card_resources, build_server

MCP_PATH = "/mcp"
# The Host and Origin guards are the binding's own (server.allowedHosts/allowedOrigins).
_GUARDED_ALREADY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpFace:
    def __init__(self, host: Host) -> None:
        self._host = host
        self._managers: dict[tuple[str, bool], StreamableHTTPSessionManager] = {}
        self._running: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()
        self._closing = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        # An HTTP MCP client stamps no origin: the face looks at who holds the connection.
        own = await asyncio.to_thread(own_agent_at, tuple(peer[:2]) if peer else None)
        manager = await self._manager(principal(request), own_agent=own)
        return await _bridged(manager, request)

    async def _manager(self, who: str, *, own_agent: bool) -> StreamableHTTPSessionManager:
        async with self._lock:
            found = self._managers.get((who, own_agent))
            if found is not None:
                return found
            agents = LocalAgents(self._host.ops, self._host.card, who, own_agent=own_agent)
            server = build_server(agents)
            [own] = await agents.agents()
            await add_card_resources(server, agents, [quote(own.name, safe="")])
            server.streamable_http_app(stateless_http=True, transport_security=_GUARDED_ALREADY)
            found = server.session_manager
            # The manager's task group must be entered and left in one task: its own.
            ready = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(self._run(found, ready), name=f"mcp-{who}")
            self._running.append(task)
            await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                task.result()
            self._managers[who, own_agent] = found
            return found

    async def _run(
        self, manager: StreamableHTTPSessionManager, ready: asyncio.Future[None]
    ) -> None:
        async with manager.run():
            ready.set_result(None)
            await self._closing.wait()

    async def close(self, app: web.Application) -> None:
        self._closing.set()
        running, self._running = self._running, []
        await asyncio.gather(*running, return_exceptions=True)


def add_mcp(app: web.Application, host: Host) -> None:
    face = McpFace(host)
    app.router.add_route("*", MCP_PATH, face.handle)
    app.on_cleanup.append(face.close)


async def _bridged(
    manager: StreamableHTTPSessionManager, request: web.Request
) -> web.StreamResponse:
    """Run the ASGI app on one aiohttp request: the body in one piece (aiohttp has already
    bounded it), the response streamed as the app writes it (progress notifications arrive
    while a tool runs)."""
    body = await request.read()
    finished = asyncio.Event()
    received = False
    response: web.StreamResponse | None = None

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", ()):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode(),
        "root_path": "",
        "query_string": request.query_string.encode(),
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0),
        "server": None,
    }
    try:
        await manager.handle_request(scope, receive, send)
    finally:
        finished.set()
    if response is None:
        raise web.HTTPInternalServerError(text="the MCP transport wrote no response")
    return response
