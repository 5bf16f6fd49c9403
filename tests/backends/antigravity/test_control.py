"""Antigravity's conversation control, the backend driven directly (the shared cases through
the daemon are in tests/contract/test_control.py): what it declares, a readOnly turn refused
every edit by the pre-tool hook, and a turn's own model served by a harness on that model,
the conversation going on across models. Real SDK runtime, the chat completions mock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from core.backend import (
    BackendEvent,
    Failed,
    SessionBound,
    TextContent,
    TextDelta,
    Turn,
    TurnOptions,
)
from core.backend.control import Capabilities
from harness.mock_models.openai_chat import MODEL, OpenAIChatMock
from harness.mock_models.steps import CallTool, Say, Shell, WriteFile
from wrappers.antigravity.backend import AntigravityBackend
from wrappers.antigravity.config import AntigravityConfig


def block(url: str, root: Path, **more: Any) -> dict[str, Any]:
    (root / "work").mkdir(exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    return {
        "workingDirectory": str(root / "work"),
        "home": str(root / "antigravity-home"),
        "model": MODEL,
        "endpoint": {"kind": "openai", "baseUrl": url},
        "env": {"HOME": str(root / "home")},
        **more,
    }


@asynccontextmanager
async def served(config: dict[str, Any]) -> AsyncIterator[AntigravityBackend]:
    backend = AntigravityBackend(AntigravityConfig.model_validate(config))
    await backend.start()
    async with anyio.create_task_group() as tg:
        await tg.start(backend.serve)
        try:
            yield backend
        finally:
            with anyio.fail_after(30):
                await backend.aclose()
            tg.cancel_scope.cancel()


def turn(
    text: str, *, session: str | None = None, task: str = "t1", options: TurnOptions | None = None
) -> Turn:
    return Turn(
        principal="tester",
        context_id="ctx",
        task_id=task,
        message_id="m-" + task,
        session_id=session,
        parts=(TextContent(text),),
        options=options or TurnOptions(),
    )


async def run(backend: AntigravityBackend, request: Turn) -> list[BackendEvent]:
    with anyio.fail_after(120):
        events = [event async for event in backend.run_turn(request)]
    assert not any(isinstance(e, Failed) for e in events), events
    return events


def session_of(events: list[BackendEvent]) -> str:
    return [e.session_id for e in events if isinstance(e, SessionBound)][-1]


def answer(events: list[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_it_declares_any_model_and_read_only_and_neither_steer_nor_fork(tmp_path: Path) -> None:
    backend = AntigravityBackend(
        AntigravityConfig.model_validate(block("http://127.0.0.1:9/v1", tmp_path))
    )

    assert backend.capabilities() == Capabilities(
        steer=False,
        fork=False,
        models=None,
        modes=("default", "readOnly"),
        approvals=True,
        resume=True,
    )


async def test_a_read_only_turn_reads_but_every_edit_is_refused(tmp_path: Path) -> None:
    async with OpenAIChatMock() as mock:
        # Writes and commands allowed by the switches: only the mode refuses them.
        config = block(mock.base_url, tmp_path, commands="allow", fileWrites="allow")
        work = tmp_path / "work"
        readme = work / "README.md"
        readme.write_text("the project readme\n")
        before = _files(work)
        mock.turns.add(
            [
                CallTool("view_file", {"AbsolutePath": str(readme)}),
                WriteFile(str(work / "notes.txt"), "edited\n"),
                Shell(f"echo gone > {readme}"),
                Say("Tried."),
            ]
        )
        async with served(config) as backend:
            events = await run(backend, turn("Read it.", options=TurnOptions(mode="readOnly")))
            outputs = mock.requests[-1].tool_outputs()

            assert _files(work) == before
            assert "the project readme" in outputs[0]
            refused = [o for o in outputs[1:] if "is not allowed in readOnly mode" in o]
            assert len(refused) == 2, outputs

            # The next turn, in the configured mode, writes.
            mock.turns.add([WriteFile(str(work / "notes.txt"), "edited\n"), Say("Written.")])
            await run(backend, turn("Write it.", session=session_of(events), task="t2"))
            assert (work / "notes.txt").read_text() == "edited\n"


async def test_a_turns_model_is_its_own_and_the_conversation_goes_on(tmp_path: Path) -> None:
    async with OpenAIChatMock() as mock, served(block(mock.base_url, tmp_path)) as backend:
        mock.turns.add([Say("Noted: KIWI.")], [Say("On the other model.")], [Say("Back.")])
        first = await run(backend, turn("Remember the word KIWI."))
        session = session_of(first)
        chosen = TurnOptions(model="mock-model-b")
        other = await run(backend, turn("Which word?", session=session, task="t2", options=chosen))
        back = await run(backend, turn("And now?", session=session, task="t3"))

        assert session_of(other) == session_of(back) == session
        assert answer(other) == "On the other model."
        seen = [r for r in mock.requests if r.last_user_text.endswith("Which word?")]
        assert seen and all(r.model == "mock-model-b" for r in seen)
        assert "Noted: KIWI." in seen[0].texts("assistant")
        later = [r for r in mock.requests if r.last_user_text.endswith("And now?")]
        assert later and all(r.model == MODEL for r in later)
        assert "On the other model." in later[0].texts("assistant")


def _files(work: Path) -> dict[str, str]:
    return {str(p.relative_to(work)): p.read_text() for p in work.rglob("*") if p.is_file()}
