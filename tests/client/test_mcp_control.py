"""`list_agents` tells what each agent lets a message choose (the card's conversation-control
record), on both MCP faces, driven by the official `mcp` client: the stdio server reads it
from a remote agent's card (our daemon; the SDK's reference agent declares none), the
daemon's own `/mcp` from its own card."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.client.conftest import Serve
from tests.client.test_mcp import call, connected, text
from tests.client.test_mcp_http import over_http
from tests.support.declaring import DeclaringBackend
from tests.support.scripted import ScriptedBackend

TOKEN = "alice-token-long-enough-1234"  # noqa: S105 - a test token
RECORD = {
    "steer": True,
    "fork": True,
    "models": ["m-large", "m-small"],
    "efforts": ["low", "high"],
    "modes": ["default", "plan", "readOnly"],
    "approvals": True,
    "resume": True,
    "imageInput": True,
}


@pytest.fixture
def backend() -> ScriptedBackend:
    return DeclaringBackend()


def _agents(result: Any) -> dict[str, dict[str, Any]]:
    assert result.structured_content is not None
    return {a["name"]: a for a in result.structured_content["agents"]}


async def test_the_stdio_server_reads_each_remote_cards_record(
    serve: Serve, reference: str
) -> None:
    ours = await serve(turnOptions={"allow": {"efforts": ["high"]}})
    names = ("--agent", f"coder={ours}", "--agent", f"other={reference}")
    # The test's environment: its PYTHONPATH names the checkout under test.
    async with connected(*names, env=dict(os.environ)) as client:
        result, _ = await call(client, "list_agents")

    agents = _agents(result)
    assert agents["coder"]["capabilities"] == {**RECORD, "efforts": ["high"]}
    assert agents["other"]["capabilities"] is None  # not ours: its card declares nothing
    shown = text(result)
    assert "conversation control: steer: yes; fork: yes; models: m-large, m-small" in shown
    assert "efforts: high; modes: default, plan, readOnly" in shown
    assert shown.count("conversation control:") == 1


async def test_the_daemons_own_mcp_lists_its_record(serve: Serve) -> None:
    url = await serve(
        mcp={"enabled": True}, server={"auth": {"tokens": [{"token": TOKEN, "principal": "alice"}]}}
    )
    async with over_http(url, TOKEN) as client:
        result, _ = await call(client, "list_agents")

    assert _agents(result)["Test agent"]["capabilities"] == RECORD
    assert "image input: yes" in text(result)
