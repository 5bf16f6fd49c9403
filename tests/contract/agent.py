"""A real daemon serving one target's real agent against the module's mock model, and the raw
A2A v1.0 JSON-RPC calls the contract cases make on it."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from core.backend import procfs
from harness.mock_models.model import MockModel
from tests.contract.targets import BackendTarget, Places
from tests.support.daemon import Daemon, Daemons
from tests.support.orphans import logged, of_instance

Task = dict[str, Any]
V1 = {"A2A-Version": "1.0"}
TERMINAL = ("COMPLETED", "FAILED", "CANCELED", "REJECTED")
CALL_LIMIT = 60.0
_EVENT_BREAK = re.compile(r"\r?\n\r?\n")


class Agent:
    """`sections`: top-level config blocks (`approvals`, `timeouts`, ...); `block`: keys merged
    into the backend's own block."""

    def __init__(
        self,
        target: BackendTarget,
        model: MockModel,
        places: Places,
        daemons: Daemons,
        *,
        block: dict[str, Any] | None = None,
        **sections: Any,
    ) -> None:
        self.target = target
        self.model = model
        self.places = places
        places.work.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "backend": target.name,
            target.name: _merged(target.block(model.url, places), block or {}),
            "storage": {"path": str(places.root / "tasks.sqlite3")},
            "server": {"shutdownTimeout": 2000},
            **sections,
        }
        self.daemon: Daemon = daemons(config)
        self.http = httpx.Client(timeout=CALL_LIMIT, headers=V1)

    # ----- the daemon ----------------------------------------------------------------------

    def start(self) -> None:
        self.daemon.start()

    def restart(self) -> None:
        """SIGTERM, then a new start on the same config and storage."""
        assert self.daemon.stop() == 0
        self.daemon.start()

    def close(self) -> None:
        self.http.close()
        if self.daemon.proc is not None and self.daemon.proc.poll() is None:
            self.daemon.stop()

    def processes(self) -> list[procfs.ProcessInfo]:
        """The processes of the running daemon instance (its agent and what that started)."""
        started = logged(self.daemon, "daemon.instance")
        instance = str(started[-1]["instance"]) if started else "unknown"
        return of_instance(self.daemon.pid, instance)

    def agent_pids(self) -> set[int]:
        """The daemon's own agent processes (its children); a turn's tools come and go below."""
        return {p.pid for p in self.processes() if p.ppid == self.daemon.pid}

    # ----- A2A calls -----------------------------------------------------------------------

    def call(self, method: str, params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = self.http.post(f"{self.daemon.url}/a2a/jsonrpc", json=body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def send(
        self,
        text: str,
        context: str,
        *,
        control: dict[str, Any] | None = None,
        **configuration: Any,
    ) -> Task:
        """SendMessage on `context` (blocking unless `returnImmediately=True`): the task.
        `control`: the request's `a2aWrapper` metadata (delivery, forkFrom, model, ...)."""
        return self._send(self.params(text, contextId=context, control=control, **configuration))

    def params(
        self, text: str, *, control: dict[str, Any] | None = None, **fields: Any
    ) -> dict[str, Any]:
        """SendMessage params: a text message with `fields` (contextId, taskId) but the
        configuration keys (`returnImmediately`, ...), and `control` as `a2aWrapper`."""
        configuration = {k: fields.pop(k) for k in list(fields) if k not in _MESSAGE_FIELDS}
        params: dict[str, Any] = {"message": self.message(text, **fields), **_config(configuration)}
        if control is not None:
            params["metadata"] = {"a2aWrapper": control}
        return params

    def refusal(self, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC error SendMessage answers `params` with (it must be one)."""
        body = self.call("SendMessage", params)
        assert "error" in body, body
        error: dict[str, Any] = body["error"]
        return error

    def card(self) -> dict[str, Any]:
        response = self.http.get(f"{self.daemon.url}/.well-known/agent-card.json")
        assert response.status_code == 200, response.text
        card: dict[str, Any] = response.json()
        return card

    def reply(self, task: Task, part: dict[str, Any]) -> Task:
        """The caller's answer on `task` (blocking): a text or a data part."""
        message = self.message("", taskId=task["id"], contextId=task["contextId"])
        message["parts"] = [part]
        return self._send({"message": message})

    def cancel(self, task_id: str) -> Task:
        body = self.call("CancelTask", {"id": task_id})
        assert "result" in body, body
        task: Task = body["result"]
        return task

    def get(self, task_id: str) -> Task:
        task: Task = self.call("GetTask", {"id": task_id})["result"]
        return task

    def until_done(self, task_id: str, timeout: float = 30) -> Task:
        """Follow the task (SubscribeToTask) until it is terminal; the task then."""
        deadline = time.monotonic() + timeout
        while not state(task := self.get(task_id)).endswith(TERMINAL):
            assert time.monotonic() < deadline, f"task {task_id} still {state(task)}"
            self.events("SubscribeToTask", {"id": task_id})
        return task

    def stream(self, text: str, context: str) -> list[dict[str, Any]]:
        """SendStreamingMessage: every event result, in order, until the stream ends."""
        message = self.message(text, contextId=context)
        return self.events("SendStreamingMessage", {"message": message})

    def events(self, method: str, params: Any) -> list[dict[str, Any]]:
        """The results of a streaming method's events; [] when it answers in JSON (e.g. a
        subscription to a task that is no longer running)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = self.http.post(f"{self.daemon.url}/a2a/jsonrpc", json=body)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return []
        found = []
        for block in _EVENT_BREAK.split(response.text):
            for line in block.splitlines():
                if line.startswith("data: "):
                    found.append(json.loads(line[len("data: ") :])["result"])
        return found

    @staticmethod
    def message(text: str, **extra: Any) -> dict[str, Any]:
        parts = [{"text": text}]
        return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts, **extra}

    def send_params(self, params: dict[str, Any]) -> Task:
        """SendMessage with `params` (from `params()`): the task."""
        return self._send(params)

    def _send(self, params: dict[str, Any]) -> Task:
        body = self.call("SendMessage", params)
        assert "result" in body, body
        task: Task = body["result"]["task"]
        return task


def _merged(base: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """`base` with `more`'s keys; a mapping in both gains keys and keeps its own."""
    merged = dict(base)
    for key, value in more.items():
        old = merged.get(key)
        deep = isinstance(old, dict) and isinstance(value, dict)
        merged[key] = _merged(old, value) if isinstance(old, dict) and deep else value
    return merged


_MESSAGE_FIELDS = ("contextId", "taskId", "metadata", "referenceTaskIds")


def _config(configuration: dict[str, Any]) -> dict[str, Any]:
    return {"configuration": configuration} if configuration else {}


def context() -> str:
    return "ctx-" + uuid.uuid4().hex[:8]


def state(task: Task) -> str:
    value: str = task["status"]["state"]
    return value


def status_text(task: Task) -> str:
    message = task["status"].get("message") or {}
    return "".join(p.get("text", "") for p in message.get("parts") or [])


def answer(task: Task) -> str:
    """The text of the task's response artifacts."""
    return "".join(p.get("text", "") for a in task.get("artifacts") or [] for p in a["parts"])


def wrapper(task: Task) -> dict[str, Any]:
    section: dict[str, Any] = (task.get("metadata") or {}).get("a2aWrapper") or {}
    return section


def write_marker(places: Places, outside: bool) -> Path:
    """A fresh file name for a command to write: inside the working directory or outside it."""
    folder = places.root / "outside" if outside else places.work
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"ran-{uuid.uuid4().hex[:6]}.txt"
