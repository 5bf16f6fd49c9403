"""One SendMessage / GetTask / CancelTask over each way in (JSON-RPC v1.0 and v0.3, HTTP+JSON
v1.0 and v0.3, gRPC), answered in neutral terms: the task in its v1.0 JSON form, or the
error's A2A reason and message. For tests that check a behaviour holds on every binding."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc
from aiohttp.test_utils import TestClient
from google.protobuf import json_format, struct_pb2

from tests.support.grpc_status import error_reason

Task = dict[str, Any]
BINDINGS = ("jsonrpc-1.0", "jsonrpc-0.3", "rest-1.0", "rest-0.3", "grpc")
_REASONS = {-32602: "INVALID_PARAMS", -32004: "UNSUPPORTED_OPERATION", -32001: "TASK_NOT_FOUND"}
_V03_STATES = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
}


@dataclass(frozen=True)
class Refused:
    reason: str
    message: str


@dataclass
class Caller:
    """`binding` (one of BINDINGS) of the app behind `client` (gRPC: at `grpc_address`), as
    the principal whose bearer token is `token`."""

    binding: str
    client: TestClient[Any, Any]
    token: str
    grpc_address: str = ""
    agent: Any = None
    """The backend behind the app (for what a test checks of it)."""

    async def send(
        self,
        text: str,
        *,
        metadata: dict[str, Any] | None = None,
        message_metadata: dict[str, Any] | None = None,
        now: bool = False,
        **ids: str,
    ) -> Task | Refused:
        """SendMessage (`now`: returnImmediately) with `ids` (taskId, contextId, messageId)."""
        if self.binding == "grpc":
            return await self._grpc_send(text, metadata, message_metadata, now, ids)
        v03 = self.binding.endswith("0.3")
        message: dict[str, Any] = {"messageId": ids.pop("messageId", _new_id()), **ids}
        if self.binding == "jsonrpc-0.3":
            message |= {
                "kind": "message",
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
            }
        elif self.binding == "rest-0.3":
            message |= {"role": "ROLE_USER", "content": [{"text": text}]}
        else:
            message |= {"role": "ROLE_USER", "parts": [{"text": text}]}
        if message_metadata is not None:
            message["metadata"] = message_metadata
        params: dict[str, Any] = {"message": message}
        if metadata is not None:
            params["metadata"] = metadata
        if now:
            params["configuration"] = {"blocking": False} if v03 else {"returnImmediately": True}
        if self.binding.startswith("jsonrpc"):
            body = await self._rpc("message/send" if v03 else "SendMessage", params)
            if "error" in body:
                return Refused(_REASONS.get(body["error"]["code"], "?"), body["error"]["message"])
            return _v1_task(body["result"] if v03 else body["result"]["task"])
        path = "/a2a/rest/v1/message:send" if v03 else "/a2a/rest/message:send"
        response = await self.client.post(path, json=params, headers=self._headers())
        answer = await response.json()
        if response.status >= 400:
            error = answer["error"]
            return Refused(error["details"][0]["reason"], error["message"])
        return _v1_task(answer["task"])

    async def get(self, task_id: str) -> Task:
        body = await self._rpc_v1("GetTask", {"id": task_id})
        task: Task = body["result"]
        return task

    async def cancel(self, task_id: str) -> Task:
        body = await self._rpc_v1("CancelTask", {"id": task_id})
        task: Task = body["result"]
        return task

    def _headers(self, version: str | None = None) -> dict[str, str]:
        version = version or ("0.3" if self.binding.endswith("0.3") else "1.0")
        headers = {"Authorization": f"Bearer {self.token}"}
        return headers | ({"A2A-Version": "1.0"} if version == "1.0" else {})

    async def _rpc(self, method: str, params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = await self.client.post("/a2a/jsonrpc", json=body, headers=self._headers())
        answer: dict[str, Any] = await response.json()
        return answer

    async def _rpc_v1(self, method: str, params: Any) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = await self.client.post("/a2a/jsonrpc", json=body, headers=self._headers("1.0"))
        answer: dict[str, Any] = await response.json()
        assert "result" in answer, answer
        return answer

    async def _grpc_send(
        self,
        text: str,
        metadata: dict[str, Any] | None,
        message_metadata: dict[str, Any] | None,
        now: bool,
        ids: dict[str, str],
    ) -> Task | Refused:
        message = a2a_pb2.Message(
            message_id=ids.get("messageId", _new_id()),
            role=a2a_pb2.ROLE_USER,
            parts=[a2a_pb2.Part(text=text)],
            task_id=ids.get("taskId", ""),
            context_id=ids.get("contextId", ""),
        )
        if message_metadata is not None:
            message.metadata.CopyFrom(json_format.ParseDict(message_metadata, struct_pb2.Struct()))
        request = a2a_pb2.SendMessageRequest(
            message=message,
            configuration=a2a_pb2.SendMessageConfiguration(return_immediately=now),
        )
        if metadata is not None:
            request.metadata.CopyFrom(json_format.ParseDict(metadata, struct_pb2.Struct()))
        async with grpc.aio.insecure_channel(self.grpc_address) as channel:
            stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
            auth = (("authorization", f"Bearer {self.token}"), ("a2a-version", "1.0"))
            try:
                answer = await stub.SendMessage(request, metadata=auth)
            except grpc.aio.AioRpcError as error:
                return Refused(error_reason(error), str(error.details()))
        task: Task = json_format.MessageToDict(answer)["task"]
        return task


def _v1_task(task: Task) -> Task:
    """A task of either version in v1.0 terms (the state's spelling; the rest is alike)."""
    state = task["status"]["state"]
    status = {**task["status"], "state": _V03_STATES.get(state, state)}
    return {**task, "status": status}


def _new_id() -> str:
    return uuid.uuid4().hex
