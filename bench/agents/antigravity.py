"""Latency of Antigravity turns through the daemon vs straight through google-antigravity.

Both paths run the real SDK and its bundled `localharness` runtime against the in-process chat
completions mock, each with a state directory of its own. Per conversation: a first turn (a new
agent: its harness starts, a new conversation) and a follow-up turn (the warm agent); the two
paths take turns conversation by conversation. The daemon path is the real app on 127.0.0.1
(port 0) driven over HTTP with blocking SendMessage; the SDK path is `async with Agent(...)` +
`chat()`. A benchmark, not a test: nothing asserts timings.

    .venv/bin/python -m bench.agents.antigravity [--conversations 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.antigravity import Agent, LocalOpenAIAgentConfig, types
from google.antigravity.hooks import policy

from bench.agents.common import DaemonApp, row, serve_chat_mock
from core import logs
from core.settings import load
from harness.mock_models.openai_chat import MODEL, OpenAIChatMock

Timings = dict[str, list[float]]


def _sdk_config(base_url: str, work: Path, conversation: str | None = None) -> Any:
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    return LocalOpenAIAgentConfig(
        model=MODEL,
        base_url=base_url,
        save_dir=str(work / "conversations"),
        app_data_dir=str(work / "app"),
        workspaces=[str(project)],
        policies=[policy.allow_all()],
        conversation_id=conversation,
    )


class SdkPath:
    """The same turns straight through the SDK: one Agent (one harness) per conversation."""

    def __init__(self, work: Path, mock: OpenAIChatMock) -> None:
        self.work, self.mock = work, mock

    async def start(self) -> None:
        return None

    async def conversation(self, i: int, times: Timings) -> None:
        started = time.perf_counter()
        async with Agent(_sdk_config(self.mock.base_url, self.work)) as agent:
            await (await agent.chat(f"Hello, conversation {i}.")).text()
            times["first turn"].append(time.perf_counter() - started)
            started = time.perf_counter()
            await (await agent.chat("And once more.")).text()
            times["follow-up turn"].append(time.perf_counter() - started)

    async def stop(self) -> None:
        return None


def _block(base_url: str, root: Path) -> dict[str, Any]:
    (root / "project").mkdir(parents=True, exist_ok=True)
    return {
        "workingDirectory": str(root / "project"),
        "home": str(root / "antigravity-home"),
        "model": MODEL,
        "endpoint": {"kind": "openai", "baseUrl": base_url},
        "env": {"HOME": str(root / "home")},
    }


class DaemonPath(DaemonApp):
    """The same turns through the real app."""

    def __init__(self, work: Path, mock: OpenAIChatMock) -> None:
        overrides = {
            "backend": "antigravity",
            "storage": {"kind": "memory"},
            "antigravity": _block(mock.base_url, work),
        }
        super().__init__(load(None, overrides=overrides, environ={}))

    async def conversation(self, i: int, times: Timings) -> None:
        started = time.perf_counter()
        await self.send(f"Hello, conversation {i}.", f"bench-{i}")
        times["first turn"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await self.send("And once more.", f"bench-{i}")
        times["follow-up turn"].append(time.perf_counter() - started)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-antigravity-") as scratch:
        root = Path(scratch)
        async with OpenAIChatMock() as mock:
            paths: dict[str, SdkPath | DaemonPath] = {
                "google-antigravity directly": SdkPath(root / "sdk", mock),
                "through the daemon": DaemonPath(root / "daemon", mock),
            }
            times: dict[str, Timings] = {
                name: {"first turn": [], "follow-up turn": []} for name in paths
            }
            try:
                for path in paths.values():
                    await path.start()
                # Interleaved, so a busy machine slows both paths alike.
                for i in range(args.conversations):
                    for name, path in paths.items():
                        await path.conversation(i, times[name])
            finally:
                for path in paths.values():
                    await path.stop()
    for name, timings in times.items():
        print(name)
        for label, values in timings.items():
            print(row(label, values))
    sdk, daemon = times.values()
    overhead = [
        statistics.median(daemon[label]) - statistics.median(sdk[label])
        for label in ("first turn", "follow-up turn")
    ]
    print(
        f"daemon overhead (median): first turn {overhead[0] * 1000:+.0f} ms, "
        f"follow-up {overhead[1] * 1000:+.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=10)
    logs.configure("warning")
    asyncio.run(main(parser.parse_args()))


# ----- bench.turns: the same measurement in the shared agent-turn harness ---------------------


def _serve_mock(workdir: Path) -> tuple[str, Callable[[], None]]:
    return serve_chat_mock()


def _daemon_config(base_url: str, workdir: Path) -> dict[str, Any]:
    root = workdir / "daemon"
    return {
        "backend": "antigravity",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "antigravity": _block(base_url, root),
    }


def _direct(base_url: str, workdir: Path, session: str | None) -> str:
    """One turn through the SDK with an agent (a harness) of its own: a new conversation, or
    the stored one resumed."""
    work = workdir / "direct"
    conversation = session or uuid.uuid4().hex

    async def turn() -> str:
        config = _sdk_config(base_url, work, conversation)
        config.session_continuation_mode = types.SessionContinuationMode.CREATE_OR_RESUME
        async with Agent(config) as agent:
            await (await agent.chat("Say hello." if session is None else "Say it again.")).text()
            return str(agent.conversation_id or conversation)

    return asyncio.run(turn())


def target() -> Any:
    """Antigravity's `bench.turns.Target` (picked up by `bench.turns.load_targets`)."""
    from bench.turns import Target  # noqa: PLC0415

    return Target(mock=_serve_mock, config=_daemon_config, direct=_direct)
