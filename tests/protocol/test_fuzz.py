"""Property-based fuzzing of every method of both versions on both bindings (issue 17).

Each example sends one generated request to the real app: near-valid params with a few fields
replaced by wrong types, nulls, odd or huge strings and arbitrary JSON; arbitrary JSON as the
params; or raw bytes as the body. Whatever it is, the answer is never a 5xx (nor a JSON-RPC
internal error), always the protocol's own shape (a JSON-RPC response, a google.rpc Status,
or a success), strict JSON throughout, and the app keeps serving.

CI runs a bounded, derandomized profile (the same cases every run);
`A2A_WRAPPER_FUZZ_EXAMPLES=20000` runs that many random ones instead.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from core.api.methods import JSONRPC
from core.storage.sqlite.tasks import SqliteTaskStore
from tests.conftest import Client, MakeClient, make_settings
from tests.support.wire import V1, call, user_message

# Hypothesis caches what it learns about the code under its home directory: not in the repo.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "a2a-wrapper-hypothesis")

EXAMPLES = os.environ.get("A2A_WRAPPER_FUZZ_EXAMPLES")
settings.register_profile(
    "a2a-wrapper-fuzz",
    max_examples=int(EXAMPLES or "400"),
    deadline=None,
    database=None,
    derandomize=EXAMPLES is None,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
FUZZ = settings.get_profile("a2a-wrapper-fuzz")

JSONRPC_CODES = {-32700, -32600, -32601, -32602, *range(-32009, -32000)}
# The scripted backend's commands that wait for something a fuzzer never sends.
WAITING = ("block", "stall", "ask", "approve")

# ----- generated values -----------------------------------------------------------------------

ODD_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\u202e",
        "\U0001f600",
        "tasks/",
        "tasks/x/pushNotificationConfigs/y",
        "../../etc/passwd",
        "%00",
        "ROLE_USER",
        "TASK_STATE_COMPLETED",
        "2026-13-45T99:99:99Z",
        "1e309",
        "NaN",
        "null",
        "{}",
        "\r\n",
    ]
)
# json.dumps writes a lone surrogate as an escape and a NaN as a bare `NaN`, as hostile
# clients send them.
SURROGATES = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=2)
TEXT = st.text(max_size=24) | ODD_STRINGS | SURROGATES
LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.sampled_from([math.nan, math.inf, -math.inf])
    | TEXT
)
JSON = st.recursive(
    LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
# Values that replace a field of a valid request.
REPLACEMENT = (
    JSON
    | st.sampled_from(["a" * 70_000, "\u00e9" * 20_000])
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.sampled_from([0, -1, 1, 2**31, 2**63, 10**400])
    | st.lists(LEAF, min_size=100, max_size=100)
)
RAW_BODIES = st.binary(max_size=64) | st.sampled_from(
    [
        b"",
        b"null",
        b"[]",
        b"[" * 5000,
        b'{"a":' * 150 + b"1" + b"}" * 150,
        b'"\\ud800"',
        b"NaN",
        b"1e309",
        b"\xef\xbb\xbf{}",
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":"\\udfff"}}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"GetTask","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":{},"method":"GetTask"}',
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"},"params":[]}',
    ]
)
URLS = st.sampled_from(
    [
        "http://192.0.2.1/hook",
        "http://127.0.0.1:9/hook",
        "https://[::1]/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest",
        "ftp://192.0.2.1/",
        "not a url",
        "",
        "http://",
        "http://[::ffff:127.0.0.1]/",
    ]
)
SAFE_TEXT = (st.text(max_size=40) | ODD_STRINGS).filter(
    lambda t: t.partition(":")[0].strip() not in WAITING
)


@st.composite
def v1_part(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "raw", "url", "data"]))
    value: Any = {
        "text": draw(SAFE_TEXT.map(lambda t: "echo: " + t)),
        "raw": draw(st.sampled_from(["aGk=", "", "!!", "a" * 13])),
        "url": draw(URLS),
        "data": draw(JSON),
    }[kind]
    part: dict[str, Any] = {kind: value}
    if draw(st.booleans()):
        part["mediaType"] = draw(TEXT)
    return part


@st.composite
def v03_part(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "file", "data"]))
    if kind == "text":
        return {"kind": "text", "text": draw(SAFE_TEXT.map(lambda t: "echo: " + t))}
    if kind == "file":
        file = draw(
            st.sampled_from([{"bytes": "aGk="}, {"uri": "http://192.0.2.1/f"}, {"name": "x"}])
        )
        return {"kind": "file", "file": file}
    return {"kind": "data", "data": draw(JSON)}


def _ids(draw: st.DrawFn, known: list[str]) -> str:
    """A task id the app made (as many draws whatever the app made so far), or any text."""
    pick = draw(st.integers(0, 63))
    return known[pick % len(known)] if draw(st.booleans()) else draw(TEXT)


def _v1_params(draw: st.DrawFn, method: str, known: list[str]) -> dict[str, Any]:
    task_id = _ids(draw, known)
    message = {
        "messageId": draw(TEXT),
        "role": draw(st.sampled_from(["ROLE_USER", "ROLE_AGENT", 1, "user"])),
        "parts": draw(st.lists(v1_part(), min_size=1, max_size=3)),
        "metadata": {"echoed": draw(LEAF)},
    }
    if draw(st.booleans()):
        message["taskId" if draw(st.booleans()) else "contextId"] = task_id
    config = {
        "returnImmediately": draw(st.booleans()),
        "historyLength": draw(st.integers(min_value=0, max_value=5)),
        "acceptedOutputModes": ["text/plain"],
    }
    push = {"taskId": task_id, "url": draw(URLS), "token": draw(TEXT)}
    table: dict[str, dict[str, Any]] = {
        "SendMessage": {"message": message, "configuration": config},
        "SendStreamingMessage": {"message": message, "metadata": {"k": draw(JSON)}},
        "GetTask": {"id": task_id, "historyLength": draw(st.integers(0, 3))},
        "ListTasks": {
            "contextId": draw(TEXT),
            "status": draw(st.sampled_from(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"])),
            "pageSize": draw(st.integers(1, 100)),
            "pageToken": draw(TEXT),
            "statusTimestampAfter": "2026-01-01T00:00:00Z",
            "includeArtifacts": draw(st.booleans()),
        },
        "CancelTask": {"id": task_id},
        "SubscribeToTask": {"id": task_id},
        "CreateTaskPushNotificationConfig": {
            **push,
            "authentication": {"scheme": "Bearer", "credentials": draw(TEXT)},
        },
        "GetTaskPushNotificationConfig": {"taskId": task_id, "id": draw(TEXT)},
        "ListTaskPushNotificationConfigs": {"taskId": task_id, "pageSize": draw(st.integers())},
        "DeleteTaskPushNotificationConfig": {"taskId": task_id, "id": draw(TEXT)},
        "GetExtendedAgentCard": {},
    }
    return table[method]


def _v03_params(draw: st.DrawFn, method: str, known: list[str]) -> dict[str, Any]:
    task_id = _ids(draw, known)
    message = {
        "kind": "message",
        "messageId": draw(TEXT),
        "role": draw(st.sampled_from(["user", "agent", "ROLE_USER"])),
        "parts": draw(st.lists(v03_part(), min_size=1, max_size=3)),
        "metadata": {"echoed": draw(LEAF)},
    }
    config = {
        "blocking": draw(st.booleans()),
        "historyLength": draw(st.integers(0, 5)),
        "pushNotificationConfig": {"url": draw(URLS), "token": draw(TEXT)},
    }
    push = {
        "url": draw(URLS),
        "id": draw(TEXT),
        "authentication": {"schemes": [draw(TEXT)], "credentials": draw(TEXT)},
    }
    table: dict[str, dict[str, Any]] = {
        "message/send": {"message": message, "configuration": config},
        "message/stream": {"message": message},
        "tasks/get": {"id": task_id, "historyLength": draw(st.integers(0, 3))},
        "tasks/cancel": {"id": task_id},
        "tasks/resubscribe": {"id": task_id},
        "tasks/pushNotificationConfig/set": {"taskId": task_id, "pushNotificationConfig": push},
        "tasks/pushNotificationConfig/get": {"id": task_id, "pushNotificationConfigId": "x"},
        "tasks/pushNotificationConfig/list": {"id": task_id},
        "tasks/pushNotificationConfig/delete": {"id": task_id, "pushNotificationConfigId": "x"},
        "agent/getAuthenticatedExtendedCard": {},
    }
    return table[method]


# Every method the app serves, so a new one is fuzzed too.
V1_METHODS = sorted(n for n, m in JSONRPC.items() if m.codec.dialect == "1.0")
V03_METHODS = sorted(n for n, m in JSONRPC.items() if m.codec.dialect == "0.3")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a member of a nested dict/list (the value itself is `()`)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _mutate(draw: st.DrawFn, params: dict[str, Any]) -> Any:
    """Replace, drop or add a few members anywhere in `params`."""
    value: Any = json.loads(json.dumps(params))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(value))))
        if not path:
            value = draw(REPLACEMENT)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "null", "drop", "add"]))
        if action == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(TEXT)] = draw(REPLACEMENT)
        else:
            parent[path[-1]] = None if action == "null" else draw(REPLACEMENT)
    return value


# ----- requests ---------------------------------------------------------------------------------


@dataclass
class Request:
    verb: str
    path: str
    headers: dict[str, str]
    body: bytes | None = None
    query: dict[str, str] | None = None
    jsonrpc: bool = False


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def _jsonrpc(draw: st.DrawFn, v03: bool, known: list[str]) -> Request:
    method = draw(st.sampled_from(V03_METHODS if v03 else V1_METHODS))
    shape = draw(st.sampled_from(["near-valid", "near-valid", "arbitrary", "raw"]))
    headers = {} if v03 else dict(V1)
    headers["Content-Type"] = "application/json"
    if shape == "raw":
        return Request("POST", "/a2a/jsonrpc", headers, draw(RAW_BODIES), jsonrpc=True)
    if shape == "arbitrary":
        params: Any = draw(JSON)
    else:
        build = _v03_params if v03 else _v1_params
        params = _mutate(draw, build(draw, method, known))
    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(st.integers(0, 9)), "method": method}
    if params is not None or draw(st.booleans()):
        envelope["params"] = params
    return Request("POST", "/a2a/jsonrpc", headers, _encode(envelope), jsonrpc=True)


def _rest_route(v03: bool, method: str, params: Any, draw: st.DrawFn) -> tuple[str, str]:
    """Verb and path of a method's REST route, with ids taken from the params."""
    source = params if isinstance(params, dict) else {}

    def segment(*names: str) -> str:
        # aiohttp refuses request lines over 8 KiB itself (a plain 400), before any route.
        for name in names:
            if isinstance(source.get(name), str) and source[name]:
                return quote(source[name][:500], safe="", errors="surrogatepass")
        return quote(draw(TEXT)[:500], safe="", errors="surrogatepass") or "x"

    task = segment("taskId", "id") if "Push" in method or "push" in method else segment("id")
    config = segment("pushNotificationConfigId", "id")
    configs = f"/tasks/{task}/pushNotificationConfigs"
    table = {
        ("SendMessage", "message/send"): ("POST", "/message:send"),
        ("SendStreamingMessage", "message/stream"): ("POST", "/message:stream"),
        ("GetTask", "tasks/get"): ("GET", f"/tasks/{task}"),
        ("ListTasks",): ("GET", "/tasks"),
        ("CancelTask", "tasks/cancel"): ("POST", f"/tasks/{task}:cancel"),
        ("SubscribeToTask", "tasks/resubscribe"): (
            draw(st.sampled_from(["GET", "POST"])),
            f"/tasks/{task}:subscribe",
        ),
        ("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"): (
            "POST",
            configs,
        ),
        ("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get"): (
            "GET",
            f"{configs}/{config}",
        ),
        ("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list"): (
            "GET",
            configs,
        ),
        ("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete"): (
            "DELETE",
            f"{configs}/{config}",
        ),
        ("GetExtendedAgentCard",): ("GET", "/extendedAgentCard"),
        ("agent/getAuthenticatedExtendedCard",): ("GET", "/card"),
    }
    for names, route in table.items():
        if method in names:
            return route
    raise AssertionError(method)


def _printable(text: str) -> str:
    """What a URL query can carry: lone surrogates become U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _rest(draw: st.DrawFn, v03: bool, known: list[str]) -> Request:
    method = draw(st.sampled_from([*(V03_METHODS if v03 else V1_METHODS)]))
    if v03 and method == "message/send" and draw(st.booleans()):
        method = "ListTasks"  # v0.3 REST lists tasks too
    shape = draw(st.sampled_from(["near-valid", "near-valid", "arbitrary", "raw"]))
    build = _v03_params if v03 else _v1_params
    base = build(draw, method, known) if method in (V03_METHODS if v03 else V1_METHODS) else {}
    params: Any = draw(JSON) if shape == "arbitrary" else _mutate(draw, base)
    verb, path = _rest_route(v03, method, params, draw)
    if v03:
        prefix = "/a2a/rest/v1"
    else:
        tenant = draw(st.sampled_from(["", "", "/acme", "/%20"]))
        prefix = "/a2a/rest" + tenant
    headers = {} if v03 else dict(V1)
    if verb in {"GET", "DELETE"}:
        query = {
            _printable(str(k)[:200]): _printable(str(v)[:500])
            for k, v in (params.items() if isinstance(params, dict) else [])
            if k not in ("id", "taskId") and not isinstance(v, dict | list)
        }
        return Request(verb, prefix + path, headers, query=query)
    headers["Content-Type"] = draw(st.sampled_from(["application/json", "application/a2a+json"]))
    body = draw(RAW_BODIES) if shape == "raw" else _encode(params)
    return Request(verb, prefix + path, headers, body)


HEADERS = st.dictionaries(
    st.sampled_from(["A2A-Version", "A2A-Extensions", "Content-Type"]),
    st.sampled_from(["1.0", "0.3", "", "2.0", "1", "x", "text/plain", "application/json; x=1"]),
    max_size=2,
)


@st.composite
def requests(draw: st.DrawFn, known: list[str]) -> Request:
    v03 = draw(st.booleans())
    request = _jsonrpc(draw, v03, known) if draw(st.booleans()) else _rest(draw, v03, known)
    if draw(st.integers(0, 9)) == 0:
        request.headers.update(draw(HEADERS))
    return request


# ----- the oracle -------------------------------------------------------------------------------


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"the daemon sent {name}, which is not JSON")

    return json.loads(text, parse_constant=refuse)


def _check_jsonrpc(message: Any) -> None:
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        error = message["error"]
        assert isinstance(error["code"], int), error
        assert isinstance(error["message"], str), error
        # v0.3 has no code for an unsupported version: it gets -32603, but never an
        # internal error's opaque id.
        assert error["code"] in JSONRPC_CODES or (
            error["code"] == -32603 and not error["message"].startswith("Internal error")
        ), f"not a protocol error: {error}"


def _check_status(body: Any, status: int) -> None:
    assert isinstance(body, dict), body
    assert set(body) - {"type", "message"} == {"error"}, body
    error = body["error"]
    assert error["code"] == status, error
    assert isinstance(error["status"], str), error
    assert isinstance(error["message"], str), error
    assert isinstance(error["details"], list), error


def _events(text: str) -> list[tuple[str | None, Any]]:
    events = []
    for block in text.split("\r\n\r\n"):
        name, data = None, None
        for line in block.split("\r\n"):
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = _strict(line.removeprefix("data: "))
        if data is not None:
            events.append((name, data))
    return events


async def _send(client: Client, request: Request) -> tuple[int, str, str]:
    with anyio.fail_after(20):
        response = await client.request(
            request.verb,
            request.path,
            data=None if request.body is None else io.BytesIO(request.body),
            headers=request.headers,
            params=request.query,
        )
        return response.status, response.content_type, await response.text()


def _check(request: Request, status: int, content_type: str, text: str) -> list[str]:
    """Assert the answer is the protocol's; return the task ids it names."""
    assert status < 500, f"{status}: {text[:500]}"
    if content_type == "text/event-stream":
        assert status == 200
        events = _events(text)
        for name, data in events:
            if request.jsonrpc:
                _check_jsonrpc(data)
            elif name == "error":
                _check_status(data, data["error"]["code"])
        return []
    assert content_type == "application/json", f"{status} {content_type}: {text[:300]}"
    body = _strict(text)
    if request.jsonrpc:
        assert status == 200
        _check_jsonrpc(body)
        result = body.get("result")
    elif status >= 400:
        _check_status(body, status)
        result = None
    else:
        result = body
    if isinstance(result, dict):
        task = result.get("task", result)
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            return [task["id"]]
    return []


# ----- the tests ----------------------------------------------------------------------------------


@dataclass
class Fuzzed:
    client: Client
    known: list[str]
    stats: Counter[str]


@pytest.fixture
async def fuzzed(make_client: MakeClient, tmp_path: Path) -> Fuzzed:
    """The app as the daemon runs it: every store in one SQLite file."""
    db = tmp_path / "fuzz.sqlite3"
    config = make_settings(push={"enabled": True}, storage={"kind": "sqlite", "path": str(db)})
    client = await make_client(config, store=SqliteTaskStore(db))
    first = await call(client, "SendMessage", {"message": user_message("echo: seed")})
    return Fuzzed(client, [first["result"]["task"]["id"]], Counter())


STATS: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    # Shown with `pytest -s`: how much the fuzzer did.
    print(f"\nfuzz: {dict(sorted(STATS.items()))}")


@FUZZ
@given(data=st.data())
async def test_any_request_gets_a_protocol_answer(fuzzed: Fuzzed, data: st.DataObject) -> None:
    request = data.draw(requests(fuzzed.known), label="request")
    status, content_type, text = await _send(fuzzed.client, request)
    STATS["cases"] += 1
    STATS[f"{'jsonrpc' if request.jsonrpc else 'rest'} {status // 100}xx"] += 1
    ids = _check(request, status, content_type, text)
    fuzzed.known.extend(i for i in ids if i not in fuzzed.known)
    # Alive and serving after every request, and nothing stored breaks a listing.
    alive = await call(fuzzed.client, "SendMessage", {"message": user_message("echo: alive")})
    assert alive["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    listed = await call(fuzzed.client, "ListTasks", {"pageSize": 100})
    assert "result" in listed, listed
