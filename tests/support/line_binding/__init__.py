"""A throwaway binding, to prove that a new way in is one folder (core/api/host.py): one JSON
SendMessageRequest per line on a TCP socket, answered with one line, the resulting task or
message as v1.0 JSON (or `{"error": ...}`). No auth: every call is the anonymous principal."""

from __future__ import annotations

import json

import anyio
from anyio.abc import SocketStream, TaskStatus

from core.api.host import Host
from core.api.principals import ANONYMOUS
from core.wire.models import SendMessageRequest


async def serve(host: Host, *, task_status: TaskStatus[list[str]]) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)  # noqa: S610 - anyio, not Django

    async def answer(stream: SocketStream) -> None:
        async with stream:
            line = b""
            while not line.endswith(b"\n"):
                line += await stream.receive()
            request = SendMessageRequest.model_validate_json(line)
            try:
                outcome = await host.ops.send_message(ANONYMOUS, request)
                reply = outcome.dump_json()
            except Exception as exc:  # noqa: BLE001 - the caller reads the error's name
                reply = json.dumps({"error": type(exc).__name__}).encode()
            await stream.send(reply + b"\n")

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        task_status.started([f"line://127.0.0.1:{port}"])
        await host.wait_stopping()
        tg.cancel_scope.cancel()
