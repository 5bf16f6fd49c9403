"""A small client for the `opencode serve` HTTP API (the v1 routes of OpenCode 1.18).

No Python client on PyPI speaks the current API (docs/backends.md#opencode), so this is ours:
the handful of routes the backend needs, each scoped to one project directory with
`?directory=`, with HTTP basic auth when the server has a password.
"""

from __future__ import annotations

import copy
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

USERNAME = "opencode"
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_id_lock = threading.Lock()
_id_state = {"ms": 0, "counter": 0}


def new_message_id() -> str:
    """A message id in OpenCode's own ascending format (`msg_` + 12 hex of time*4096+counter +
    14 base62). OpenCode orders a session's messages by id, so ours must sort after every
    earlier one; knowing it up front lets the backend tell this turn's events from late ones
    of the previous turn."""
    with _id_lock:
        now = time.time_ns() // 1_000_000
        if now != _id_state["ms"]:
            _id_state["ms"], _id_state["counter"] = now, 0
        _id_state["counter"] += 1
        value = (now * 0x1000 + _id_state["counter"]) & 0xFFFF_FFFF_FFFF
    suffix = "".join(_BASE62[b % 62] for b in secrets.token_bytes(14))
    return f"msg_{value:012x}{suffix}"


class OpencodeHTTPError(Exception):
    """The server answered a request with an error status."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class OpencodeClient:
    """The HTTP API of one OpenCode server, for one project directory.

    Owns an aiohttp session; `aclose()` releases it. Safe to use from concurrent tasks.
    """

    def __init__(
        self, base_url: str, *, directory: str, password: str | None, username: str = USERNAME
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.directory = directory
        headers = {"Accept": "application/json"}
        if password:
            headers["Authorization"] = aiohttp.encode_basic_auth(username, password)
        self._http = aiohttp.ClientSession(
            headers=headers, timeout=aiohttp.ClientTimeout(total=30, sock_connect=5)
        )

    async def aclose(self) -> None:
        await self._http.close()

    def at(self, directory: str) -> OpencodeClient:
        """The same server, for another project directory (a context's workspace): it shares
        this client's HTTP session, so only this one is closed."""
        other = copy.copy(self)
        other.directory = directory
        return other

    async def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        async with self._http.request(
            method,
            self.base_url + path,
            params={"directory": self.directory},
            json=body,
        ) as response:
            text = await response.text()
            if response.status >= 400:
                raise OpencodeHTTPError(method, path, response.status, text)
            return json.loads(text) if text else None

    # ----- routes ------------------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        body = await self._request("GET", "/global/health")
        return body if isinstance(body, dict) else {}

    async def providers(self) -> dict[str, Any]:
        """GET /config/providers (also boots the directory's instance)."""
        body = await self._request("GET", "/config/providers")
        return body if isinstance(body, dict) else {}

    async def create_session(
        self, *, title: str, permission: list[dict[str, str]] | None = None
    ) -> dict[str, Any]:
        """POST /session. A title spares OpenCode a model call to invent one."""
        payload: dict[str, Any] = {"title": title}
        if permission:
            payload["permission"] = permission
        body = await self._request("POST", "/session", payload)
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            raise OpencodeHTTPError("POST", "/session", 200, f"unexpected body {body!r}")
        return body

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        """The session, or None when the server does not know it."""
        try:
            body = await self._request("GET", f"/session/{session_id}")
        except OpencodeHTTPError as exc:
            if exc.status in (400, 404):
                return None
            raise
        return body if isinstance(body, dict) else None

    async def fork_session(self, session_id: str) -> dict[str, Any]:
        """POST /session/{id}/fork: a new session with the source's whole history (the source
        is untouched); it keeps the source's directory."""
        body = await self._request("POST", f"/session/{session_id}/fork", {})
        if not isinstance(body, dict) or not isinstance(body.get("id"), str):
            raise OpencodeHTTPError("POST", "/session/fork", 200, f"unexpected body {body!r}")
        return body

    async def move_session(self, session_id: str) -> None:
        """Bind the session to this client's directory (a fork made for another workspace);
        the files stay where they are."""
        await self._request(
            "POST",
            "/experimental/control-plane/move-session",
            {
                "sessionID": session_id,
                "destination": {"directory": self.directory},
                "moveChanges": False,
            },
        )

    async def add_permission(self, session_id: str, rules: list[dict[str, str]]) -> None:
        """PATCH /session/{id} with permission rules (OpenCode appends them to the session's)."""
        await self._request("PATCH", f"/session/{session_id}", {"permission": rules})

    async def agents(self) -> list[dict[str, Any]]:
        body = await self._request("GET", "/agent")
        return [a for a in body if isinstance(a, dict)] if isinstance(body, list) else []

    async def config(self) -> dict[str, Any]:
        """GET /config: the directory's resolved OpenCode config."""
        body = await self._request("GET", "/config")
        return body if isinstance(body, dict) else {}

    async def delete_session(self, session_id: str) -> None:
        try:
            await self._request("DELETE", f"/session/{session_id}")
        except OpencodeHTTPError as exc:
            if exc.status not in (400, 404):
                raise

    async def prompt_async(
        self,
        session_id: str,
        *,
        message_id: str,
        parts: list[dict[str, Any]],
        agent: str | None = None,
        model: tuple[str, str] | None = None,
        variant: str | None = None,
        system: str | None = None,
    ) -> None:
        """POST /session/{id}/prompt_async: queue the prompt and return at once (204). A busy
        session's running loop takes it at its next step (what a steer is)."""
        payload: dict[str, Any] = {"messageID": message_id, "parts": parts}
        if agent:
            payload["agent"] = agent
        if model:
            payload["model"] = {"providerID": model[0], "modelID": model[1]}
        if variant:
            payload["variant"] = variant
        if system:
            payload["system"] = system
        await self._request("POST", f"/session/{session_id}/prompt_async", payload)

    async def abort(self, session_id: str) -> None:
        await self._request("POST", f"/session/{session_id}/abort")

    async def busy_sessions(self) -> dict[str, Any]:
        """GET /session/status: the sessions that are not idle, by id."""
        body = await self._request("GET", "/session/status")
        return body if isinstance(body, dict) else {}

    async def reply_permission(self, request_id: str, reply: str, message: str) -> None:
        await self._request(
            "POST", f"/permission/{request_id}/reply", {"reply": reply, "message": message}
        )

    async def reject_question(self, request_id: str) -> None:
        await self._request("POST", f"/question/{request_id}/reject")

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """GET /event: every event of the directory's instance, until the server closes it.

        The first one is `server.connected`; a caller that needs every event of a turn
        subscribes before it prompts.
        """
        async with self._http.get(
            self.base_url + "/event",
            params={"directory": self.directory},
            headers={"Accept": "text/event-stream"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
        ) as response:
            if response.status >= 400:
                raise OpencodeHTTPError("GET", "/event", response.status, await response.text())
            # Split lines ourselves: one event (a large diff, say) may exceed the line limit
            # of aiohttp's readline.
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    event = _parse_data_line(line)
                    if event is not None:
                        yield event


def _parse_data_line(raw: bytes) -> dict[str, Any] | None:
    line = raw.decode("utf-8", "replace").strip()
    if not line.startswith("data:"):
        return None
    try:
        event = json.loads(line[len("data:") :])
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
