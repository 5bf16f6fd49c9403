"""Replicas with real agent CLIs (Claude Code and Codex) against their mock models: three
daemons on one PostgreSQL whose agent home and working directory are on storage all three
reach (here: one folder), each turn of a context sent to another replica than the last. Every
turn continues the context's one session: the model sees the earlier turns."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import ModelRequest, Say
from tests.contract.agent import answer, state, wrapper
from tests.contract.targets import TARGETS, BackendTarget, Places
from tests.support.daemon import Daemons
from tests.test_replicas import CLUSTER, V1

REPLICATED = [t for t in TARGETS if t.name in ("claude", "codex")]
_AMBIENT = ("ANTHROPIC_", "CLAUDE_", "CODEX_")


@pytest.fixture
def hermetic(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_AMBIENT) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Daemons]:
    made = Daemons(tmp_path)
    yield made
    made.close()


def asks(word: str, request: ModelRequest) -> bool:
    return f"Remember the word {word}." in request.last_user_text


def send_word(client: httpx.Client, base: str, ctx: str, turn: int, word: str) -> dict[str, Any]:
    message = {
        "messageId": f"{ctx}-{turn}",
        "role": "ROLE_USER",
        "contextId": ctx,
        "parts": [{"text": f"Remember the word {word}."}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    reply = client.post(f"{base}/a2a/jsonrpc", json=body).json()
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    return task


@pytest.mark.parametrize("target", REPLICATED, ids=str)
def test_a_real_agent_keeps_each_context_across_replicas(
    target: BackendTarget,
    postgres_url: str,
    replicas: Daemons,
    tmp_path: Path,
    hermetic: None,
) -> None:
    places = Places(tmp_path / "shared", tmp_path / "cache")
    places.work.mkdir(parents=True)
    with MockModel(target.mock, api_key=target.api_key) as model:
        config: dict[str, Any] = {
            "backend": target.name,
            target.name: target.block(model.url, places),
            "storage": {"kind": "postgres", "url": postgres_url},
            "cluster": CLUSTER,
            "server": {"shutdownTimeout": 2000},
        }
        daemons = [replicas(config) for _ in range(3)]
        for daemon in daemons:
            daemon.start()
        words = {"ctx-a": ["APPLE", "BANANA", "CHERRY"], "ctx-b": ["DATE", "ELDER", "FIG"]}
        with httpx.Client(timeout=60, headers=V1) as client:
            for n, (ctx, said) in enumerate(words.items()):
                others = [w for c, ws in words.items() if c != ctx for w in ws]
                tasks = []
                for turn, word in enumerate(said):
                    model.script([Say(f"Noted: {word}.")])
                    base = daemons[(n + turn) % 3].url
                    tasks.append(send_word(client, base, ctx, turn, word))
                    user = model.wait_for_request(partial(asks, word)).texts("user")
                    for earlier in said[:turn]:
                        assert any(t.endswith(f"Remember the word {earlier}.") for t in user), user
                    assert not any(w in t for t in user for w in others), user

                assert [state(t) for t in tasks] == ["TASK_STATE_COMPLETED"] * 3, tasks
                assert [answer(t) for t in tasks] == [f"Noted: {w}." for w in said]
                assert len({wrapper(t)["sessionId"] for t in tasks}) == 1
                assert [wrapper(t)["newSession"] for t in tasks] == [True, False, False]
        for daemon in daemons:
            assert daemon.stop() == 0
