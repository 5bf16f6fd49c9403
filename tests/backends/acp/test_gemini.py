"""Gemini CLI through the `gemini` preset, in the real app against the Gemini API mock: what
the contract suite does not show (a new file written with the agent's own files, since the
preset does not offer it fs/*, and the diff it reports)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.daemon import create_app
from core.settings import load
from harness.mock_models.model import MockModel
from harness.mock_models.steps import WriteFile
from tests.backends.acp.support import GEMINI_KEY, gemini_block
from tests.backends.copilot.a2a import stream

Client = TestClient[Any, Any]


@pytest.fixture(scope="module")
def model() -> Iterator[MockModel]:
    with MockModel("gemini", api_key=GEMINI_KEY) as mock:
        yield mock


async def test_a_new_file_is_written_and_reported_as_a_file_change(
    aiohttp_client: Callable[..., Awaitable[Client]], model: MockModel, tmp_path: Path
) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    block = {**gemini_block(model.url, tmp_path, work, home), "approveKinds": ["edit"]}
    settings = load(None, overrides={"backend": "gemini", "gemini": block}, environ={})
    client = await aiohttp_client(create_app(settings))
    target = work / "new.txt"
    model.script([WriteFile(str(target), "hello\n")])

    events = await stream(client, "Write the file.", "ctx-write")

    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED", final
    assert target.read_text() == "hello\n"
    notes = [
        "".join(
            p.get("text", "")
            for p in (e["statusUpdate"]["status"].get("message") or {}).get("parts", [])
        )
        for e in events
        if "statusUpdate" in e
    ]
    assert f"Edited {target}" in notes, notes
