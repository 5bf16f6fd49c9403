"""`BusyAgent`: a stand-in A2A agent (v1.0, JSON-RPC) that takes no work: every SendMessage
either ends its task FAILED with `a2aWrapper.error.kind` (`rateLimit` or `quota`, as an
a2a-wrapper daemon reports a provider's 429 or exhausted quota), or, with `kind="http"`, is
refused with HTTP 429 by the server itself. Its card is a real daemon's (`card_of`), with its
own URL."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from aiohttp import web


class BusyAgent:
    def __init__(self, card_of: str, kind: str) -> None:
        self.card_of = card_of.rstrip("/")
        self.kind = kind
        self.requests: list[str] = []  # JSON-RPC methods called
        self.tasks: dict[str, dict[str, Any]] = {}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/agent-card.json", self.card)
        app.router.add_post("/a2a/jsonrpc", self.rpc)
        return app

    async def card(self, request: web.Request) -> web.Response:
        async with httpx.AsyncClient() as http:
            doc = (await http.get(f"{self.card_of}/.well-known/agent-card.json")).json()
        base = f"{request.scheme}://{request.host}"
        doc["name"] = f"busy ({self.kind})"
        doc["capabilities"] = {"streaming": False, "pushNotifications": False}
        doc["supportedInterfaces"] = [
            {"url": f"{base}/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
        return web.json_response(doc)

    async def rpc(self, request: web.Request) -> web.Response:
        body = await request.json()
        method = str(body.get("method"))
        self.requests.append(method)
        if self.kind == "http":
            return web.json_response({"error": "too many requests"}, status=429)
        params = body.get("params") or {}
        if method == "SendMessage":
            message = params["message"]
            task = self._failed(str(uuid.uuid4()), message.get("contextId") or "ctx")
            self.tasks[task["id"]] = task
            result: dict[str, Any] = {"task": task}
        elif method in ("GetTask", "CancelTask"):
            result = self.tasks[params["id"]]
        else:
            error = {"code": -32601, "message": "Method not found"}
            return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "error": error})
        return web.json_response({"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    def _failed(self, task_id: str, context_id: str) -> dict[str, Any]:
        words = {"rateLimit": "The model's rate limit was hit (HTTP 429); retry in 30 s."}
        text = words.get(self.kind, "The account's usage quota is used up.")
        error: dict[str, Any] = {"kind": self.kind}
        if self.kind == "rateLimit":
            error["retryAfter"] = 30
        return {
            "id": task_id,
            "contextId": context_id,
            "status": {
                "state": "TASK_STATE_FAILED",
                "message": {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_AGENT",
                    "parts": [{"text": text}],
                },
            },
            "metadata": {"a2aWrapper": {"error": error}},
        }
