"""A part whose content is only null is refused (issue 17, item 1), in every form.

Such a part would be stored as `{}` and could never be read back. It is InvalidParams, naming
the field, on both bindings and both versions; nothing is stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Client
from tests.protocol.test_rest_v1 import json_of
from tests.support.wire import V1, call, user_message

V1_NULL_PARTS = {
    "text": ({"text": None}, "text is null"),
    "data": ({"data": None}, "data is null"),
    "raw": ({"raw": None}, "raw is null"),
    "url": ({"url": None}, "url is null"),
    "raw-and-url": ({"raw": None, "url": None, "filename": "a"}, "raw and url are null"),
}
V03_NULL_PARTS = {
    "text": ({"kind": "text", "text": None}, "parts.1.text"),
    "text-missing": ({"kind": "text"}, "parts.1.text"),
    "data": ({"kind": "data", "data": None}, "parts.1.data"),
    "data-compat": (
        {"kind": "data", "data": {"value": None}, "metadata": {"data_part_compat": True}},
        "parts.1.data",
    ),
    "file-bytes": ({"kind": "file", "file": {"bytes": None}}, "parts.1.file"),
    "file-uri": ({"kind": "file", "file": {"uri": None, "name": "a"}}, "parts.1.file"),
    "no-kind-text": ({"text": None}, "parts.1.text"),
}
# v0.3 REST also takes the proto's shape (`content`, `file.fileWithBytes`, `data.data`).
V03_REST_NULL_PARTS = {
    **V03_NULL_PARTS,
    "proto-data": ({"data": {"data": None}}, "parts.1.data"),
    "proto-file": ({"file": {"fileWithBytes": None}}, "parts.1.file"),
}


def _v1_message(part: dict[str, Any]) -> dict[str, Any]:
    return {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "echo: a"}, part]}


def _v03_message(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "messageId": "m",
        "role": "user",
        "kind": "message",
        "parts": [{"kind": "text", "text": "echo: a"}, part],
    }


async def _nothing_stored(client: Client) -> None:
    body = await call(client, "ListTasks", {})
    assert body["result"]["tasks"] == []
    done = await call(client, "SendMessage", {"message": user_message("echo: alive")})
    assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
@pytest.mark.parametrize(("part", "says"), V1_NULL_PARTS.values(), ids=list(V1_NULL_PARTS))
async def test_v1_jsonrpc(client: Client, method: str, part: dict[str, Any], says: str) -> None:
    error = (await call(client, method, {"message": _v1_message(part)}))["error"]
    assert error["code"] == -32602
    assert error["message"] == (
        f"Invalid params: message.parts.1: Value error, {says}; a part must hold exactly one "
        "of text, raw, url, data"
    )
    violations = error["data"][1]["fieldViolations"]
    assert violations[0]["field"] == "message.parts.1"
    await _nothing_stored(client)


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
@pytest.mark.parametrize(("part", "field"), V03_NULL_PARTS.values(), ids=list(V03_NULL_PARTS))
async def test_v03_jsonrpc(client: Client, method: str, part: dict[str, Any], field: str) -> None:
    params = {"message": _v03_message(part)}
    response = await client.post(
        "/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    )
    if method == "message/stream":
        # v0.3 streaming methods report every error inside the stream.
        body = json.loads((await response.text()).removeprefix("data: "))
    else:
        body = await response.json()
    error = body["error"]
    assert error["code"] == -32602, error
    assert error["data"][0]["field"] == f"message.{field}"
    assert f"message.{field}" in error["message"]
    await _nothing_stored(client)


@pytest.mark.parametrize("path", ["message:send", "message:stream"])
@pytest.mark.parametrize(("part", "says"), V1_NULL_PARTS.values(), ids=list(V1_NULL_PARTS))
async def test_v1_rest(client: Client, path: str, part: dict[str, Any], says: str) -> None:
    response = await client.post(
        f"/a2a/rest/{path}", json={"message": _v1_message(part)}, headers=V1
    )
    error = (await json_of(response, 400))["error"]
    assert error["details"][0]["reason"] == "INVALID_PARAMS"
    assert says in error["message"]
    assert error["details"][1]["fieldViolations"][0]["field"] == "message.parts.1"
    await _nothing_stored(client)


@pytest.mark.parametrize("path", ["message:send", "message:stream"])
@pytest.mark.parametrize(
    ("part", "field"), V03_REST_NULL_PARTS.values(), ids=list(V03_REST_NULL_PARTS)
)
async def test_v03_rest(client: Client, path: str, part: dict[str, Any], field: str) -> None:
    message = _v03_message(part)
    message["content"] = message.pop("parts")
    response = await client.post(f"/a2a/rest/v1/{path}", json={"message": message})
    error = (await json_of(response, 400))["error"]
    assert error["details"][0]["reason"] == "INVALID_PARAMS"
    assert error["details"][1]["fieldViolations"][0]["field"] == f"message.{field}"
    await _nothing_stored(client)


async def test_null_beside_content_is_unset(client: Client) -> None:
    """ProtoJSON reads null as unset: a null member beside the real content is ignored."""
    part = {"text": "echo: kept", "url": None, "raw": None, "data": None}
    body = await call(client, "SendMessage", {"message": _v1_message(part)})
    task = body["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["history"][0]["parts"][1] == {"text": "echo: kept"}
