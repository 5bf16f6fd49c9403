"""The baseline servers of the protocol-overhead series, each run as its own process.

    python -m bench.servers bare --reply-bytes 910 --events 3 --event-bytes 420
    python -m bench.servers sdk
    python -m bench.servers otlp

Each binds 127.0.0.1 on port 0, prints `http://127.0.0.1:PORT` on one stdout line once it
accepts connections, and serves until SIGTERM/SIGINT. Both serve `POST /a2a/jsonrpc`:

- `bare`: the practical floor. A plain aiohttp handler that parses the JSON-RPC body and answers
  with a JSON object of the same size as the daemon's reply (`--reply-bytes`), or, for
  `SendStreamingMessage`, with the same number of SSE events of the same size.
- `sdk`: the official a2a-sdk server (its JSON-RPC routes, `DefaultRequestHandler`, in-memory
  task store) on uvicorn, with an executor that answers at once with the same events our
  instant backend produces (task, artifact, completed status carrying the answer).
- `otlp`: an OTLP/HTTP trace sink for the observability series: `POST /v1/traces` answers an
  empty ExportTraceServiceResponse at once (the bytes are read, never decoded).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import sys
import uuid
from typing import Any

from aiohttp import web

JSON_HEADERS = {"Content-Type": "application/json"}


def _padding(template: dict[str, Any], size: int) -> dict[str, Any]:
    """`template` with a `pad` string that brings its JSON encoding to `size` bytes."""
    base = len(json.dumps({**template, "pad": ""}).encode())
    return {**template, "pad": "x" * max(0, size - base)}


def bare_app(reply_bytes: int, events: int, event_bytes: int) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        result = {"id": str(uuid.uuid4()), "text": body["params"]["message"]["parts"][0]["text"]}
        if body.get("method") != "SendStreamingMessage":
            reply = _padding({"jsonrpc": "2.0", "id": body["id"], "result": result}, reply_bytes)
            return web.Response(body=json.dumps(reply).encode(), headers=JSON_HEADERS)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for _ in range(events):
            event = _padding({"jsonrpc": "2.0", "id": body["id"], "result": result}, event_bytes)
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/a2a/jsonrpc", handle)
    return app


def otlp_app() -> web.Application:
    async def export(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", export)
    return app


async def serve_bare(args: argparse.Namespace) -> None:
    app = otlp_app() if args.kind == "otlp" else None
    runner = web.AppRunner(app or bare_app(args.reply_bytes, args.events, args.event_bytes))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


async def serve_sdk(args: argparse.Namespace) -> None:
    import uvicorn  # noqa: PLC0415 - only this server needs it (pulled in by the SDK extras)
    from starlette.applications import Starlette  # noqa: PLC0415 - as above

    from bench.sdk_agent import sdk_routes  # noqa: PLC0415 - imports the SDK's server side

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        Starlette(routes=sdk_routes(f"http://127.0.0.1:{port}")),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # uvicorn offers no readiness event; poll its flag briefly
        if serving.done():
            await serving
        await asyncio.sleep(0.01)
    print(f"http://127.0.0.1:{port}", flush=True)
    await serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["bare", "sdk", "otlp"])
    parser.add_argument("--reply-bytes", type=int, default=910)
    parser.add_argument("--events", type=int, default=3)
    parser.add_argument("--event-bytes", type=int, default=420)
    args = parser.parse_args()
    try:
        asyncio.run(serve_sdk(args) if args.kind == "sdk" else serve_bare(args))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
