"""Helpers for raw-wire tests: request builders and normalisation of generated values."""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

V1 = {"A2A-Version": "1.0"}
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
# What the scripted backend leaves in a first turn's task metadata (after normalising ids).
SCRIPTED_METADATA = {
    "a2aWrapper": {
        "backend": "scripted",
        "sessionId": "<id6>",
        "newSession": True,
        "expiredSession": False,
        "contextReset": False,
    }
}
_ID_KEYS = {"id", "taskId", "contextId", "artifactId", "messageId", "sessionId"}


def user_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "messageId": extra.pop("messageId", "m-1"),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **extra,
    }


def rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


async def call(
    client: TestClient[Any, Any],
    method: str,
    params: Any = None,
    *,
    headers: dict[str, str] | None = None,
    path: str = "/a2a/jsonrpc",
    request_id: Any = 1,
) -> dict[str, Any]:
    response = await client.post(
        path, json=rpc(method, params, request_id), headers=V1 if headers is None else headers
    )
    assert response.status == 200
    assert response.content_type == "application/json"
    body: dict[str, Any] = await response.json()
    return body


async def sse_events(response: ClientResponse) -> list[tuple[str | None, dict[str, Any]]]:
    """Parse an SSE body into (event name, JSON data) pairs; comments are skipped."""
    text = (await response.read()).decode()
    events = []
    for block in text.split("\r\n\r\n"):
        name, data = None, None
        for line in block.split("\r\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        if data is not None:
            events.append((name, data))
    return events


class Normalizer:
    """Replaces generated ids with `<idN>` (stable per value) and timestamps with `<ts>`."""

    def __init__(self, keep: set[str] | None = None) -> None:
        self._seen: dict[str, str] = {}
        self._keep = keep or set()

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, key) for v in value]
        if isinstance(value, str):
            if key == "timestamp" and TS.match(value):
                return "<ts>"
            if key in _ID_KEYS and value not in self._keep:
                return self._seen.setdefault(value, f"<id{len(self._seen) + 1}>")
        return value
