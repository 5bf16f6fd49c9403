"""`/mcp` on the daemon (`mcp.enabled`), driven by the official `mcp` client over Streamable
HTTP as an IDE would: the tools over the daemon's own agent, progress notifications, the
bearer token to principal (401 without one; one principal never reaches another's tasks), and
the loop guard (an agent of a daemon cannot give that daemon a task through the facade)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import TextResourceContents

from core.backend.procfs import MARKER_VARIABLE
from core.client.remote import ORIGIN_VARIABLE
from tests.client.conftest import Cli, Serve
from tests.client.test_mcp import TOOLS, call, connected, text
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend

ALICE = "alice-token-long-enough-1234"
BOB = "bob-token-long-enough-5678"
TOKENS = [{"token": ALICE, "principal": "alice"}, {"token": BOB, "principal": "bob"}]


@pytest.fixture
async def daemon(serve: Serve) -> str:
    return await serve(
        approvals={"mode": "ask"}, mcp={"enabled": True}, server={"auth": {"tokens": TOKENS}}
    )


@asynccontextmanager
async def over_http(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-"), ("auto", "2026-07-28")])
async def test_the_daemons_agent_is_listed_and_answers_with_progress(
    daemon: str, mode: str, version: str
) -> None:
    async with over_http(daemon, ALICE, mode) as client:
        negotiated = client.protocol_version
        tools = await client.list_tools()
        agents, _ = await call(client, "list_agents")
        done, progress = await call(client, "send_message", text="tool: pytest")
        listed = await client.list_resources()
        card = await client.read_resource("a2a://agents/Test%20agent/card")
        assert done.structured_content is not None
        task_id = done.structured_content["id"]
        transcript = await client.read_resource(
            f"a2a://agents/Test%20agent/tasks/{task_id}/transcript"
        )

    assert [str(r.uri) for r in listed.resources] == ["a2a://agents/Test%20agent/card"]
    [card_text] = card.contents
    assert isinstance(card_text, TextResourceContents)
    assert json.loads(card_text.text)["name"] == "Test agent"
    [lines] = transcript.contents
    assert isinstance(lines, TextResourceContents)
    assert "answer: ran pytest" in lines.text
    assert negotiated.startswith(version)
    assert {t.name for t in tools.tools} == TOOLS
    assert agents.structured_content is not None
    [agent] = agents.structured_content["agents"]
    assert agent["name"] == "Test agent" and agent["skills"][0]["name"] == "Echo"
    assert not done.is_error
    assert done.structured_content is not None
    assert done.structured_content["answer"] == "ran pytest"
    assert "Running `ls`" in progress


async def test_non_blocking_send_get_task_and_cancel(daemon: str, backend: ScriptedBackend) -> None:
    async with over_http(daemon, ALICE) as client:
        started, _ = await call(client, "send_message", text="block", wait=False)
        assert started.structured_content is not None
        task_id = started.structured_content["id"]
        await backend.entered(task_id).wait()
        running, _ = await call(client, "get_task", task_id=task_id)
        canceled, _ = await call(client, "cancel_task", task_id=task_id)
        later = await until(
            lambda: client.call_tool("get_task", {"task_id": task_id}),
            lambda r: "is canceled" in text(r),
        )

    assert started.structured_content["state"] in ("submitted", "working")
    assert running.structured_content is not None
    assert running.structured_content["state"] == "working"
    assert canceled.structured_content is not None
    assert canceled.structured_content["state"] == "canceled"
    assert later.structured_content is not None
    assert backend.interrupted == [task_id]


async def test_an_approval_is_a_question_and_answer_continues_it_with_context(
    daemon: str, backend: ScriptedBackend
) -> None:
    async with over_http(daemon, ALICE) as client:
        asked, _ = await call(client, "send_message", text="approve: make deploy")
        assert asked.structured_content is not None
        task_id = asked.structured_content["id"]
        answered, progress = await call(client, "answer", task_id=task_id, reply="approve")
        context_id = asked.structured_content["contextId"]
        again, _ = await call(client, "send_message", text="history", context_id=context_id)
        changes, _ = await call(client, "get_changes", task_id=task_id)

    assert asked.structured_content["state"] == "input-required"
    assert f"Answer it with the `answer` tool, task_id {task_id!r}" in text(asked)
    assert answered.structured_content is not None
    assert answered.structured_content["state"] == "completed"
    assert "Running `make deploy`" in progress
    assert [a.decision for a in backend.answers] == ["approve"]
    assert again.structured_content is not None
    assert "approve: make deploy" in again.structured_content["answer"]
    assert not changes.is_error and f"Task {task_id} changed no files." in text(changes)


async def test_without_a_token_401_and_one_principal_never_reaches_anothers_task(
    daemon: str,
) -> None:
    async with aiohttp.ClientSession() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        async with http.post(f"{daemon}/mcp", json=body) as response:
            refused = response.status, response.headers.get("WWW-Authenticate", "")
    async with over_http(daemon, ALICE) as alice:
        done, _ = await call(alice, "send_message", text="echo: alice's secret")
        assert done.structured_content is not None
        task_id = done.structured_content["id"]
    async with over_http(daemon, BOB) as bob:
        read, _ = await call(bob, "get_task", task_id=task_id)
        canceled, _ = await call(bob, "cancel_task", task_id=task_id)
        changes, _ = await call(bob, "get_changes", task_id=task_id)
        with pytest.raises(MCPError, match="Error creating resource"):
            await bob.read_resource(f"a2a://agents/Test%20agent/tasks/{task_id}/transcript")

    assert refused == (401, 'Bearer realm="a2a-wrapper"')
    for result in (read, canceled, changes):
        assert result.is_error and task_id in text(result)
        assert "alice's secret" not in text(result)


async def test_mcp_is_off_unless_enabled(serve: Serve) -> None:
    url = await serve()
    async with aiohttp.ClientSession() as http, http.post(f"{url}/mcp", json={}) as response:
        assert response.status == 404


async def test_an_agent_of_the_daemon_is_refused_through_the_facade(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's instance id is in its own environment (core/instance/guard.py puts it
    there, and its agents inherit it); `a2a-wrapper mcp` started by such an agent stamps it."""
    own = "this-daemons-instance-id"
    monkeypatch.setenv(MARKER_VARIABLE, own)
    url = await serve()
    path = {"PATH": "/usr/bin:/bin"}
    async with connected("--agent", url, env={**path, ORIGIN_VARIABLE: own}) as client:
        refused, _ = await call(client, "send_message", text="echo: call myself")
    async with connected("--agent", url, env={**path, ORIGIN_VARIABLE: "another"}) as client:
        other, _ = await call(client, "send_message", text="echo: from elsewhere")

    assert ORIGIN_VARIABLE == MARKER_VARIABLE
    assert refused.is_error
    assert "comes from an agent this daemon runs itself" in text(refused)
    assert not other.is_error and "from elsewhere" in text(other)


async def test_the_guard_holds_on_every_way_in_for_every_client_command(
    serve: Serve, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`a2a-wrapper send` run by the daemon's agent (the marker inherited) is refused over
    plain A2A too: the guard is in Operations, not in the MCP face."""
    monkeypatch.setenv(MARKER_VARIABLE, "this-daemons-instance-id")
    url = await serve()

    refused = await cli("send", url, "echo: call myself")

    assert refused.code != 0
    assert "comes from an agent this daemon runs itself" in refused.out + refused.err


# An HTTP MCP client as an agent would run it: its own process, the environment it inherited.
HTTP_CALLER = """
import asyncio, sys
from mcp import Client

async def main():
    async with Client(sys.argv[1] + "/mcp") as client:
        result = await client.call_tool("send_message", {"text": sys.argv[2]})
    said = "".join(getattr(c, "text", "") for c in result.content)
    print("ERROR" if result.is_error else "OK", said)

asyncio.run(main())
"""


async def test_an_agent_of_the_daemon_calling_its_mcp_over_http_is_refused(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No client stamps a message over HTTP: the face finds the caller's process by its
    connection, and that process carries this daemon's marker (as its agents do)."""
    own = "this-daemons-instance-id"
    monkeypatch.setenv(MARKER_VARIABLE, own)
    url = await serve(mcp={"enabled": True})

    async def caller(environment: dict[str, str], said: str) -> str:
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [sys.executable, "-c", HTTP_CALLER, url, said], env=environment, check=True
            )
        return done.stdout.decode()

    path = {"PATH": "/usr/bin:/bin"}
    refused = await caller({**path, MARKER_VARIABLE: own}, "echo: call myself")
    other = await caller(path, "echo: from outside")

    assert refused.startswith("ERROR")
    assert "comes from an agent this daemon runs itself" in refused
    assert other.startswith("OK") and "from outside" in other
