"""Conversation control on the three real ACP agents, each against its mock model, through
the backend itself (the engine's checks are the contract suite's): what each declares from
what it reports, a model for one turn, `plan`/`readOnly` that leave the workspace unchanged,
and a native fork (OpenCode, the one that advertises `session/fork`)."""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.backend import (
    NO_OPTIONS,
    BackendEvent,
    Content,
    Failed,
    FileContent,
    Mode,
    SessionBound,
    TextContent,
    Turn,
    TurnOptions,
)
from core.backend.control import Capabilities
from harness.mock_models.model import MockKind, MockModel
from harness.mock_models.steps import ModelRequest, Say, Shell, WriteFile
from tests.backends.acp import support
from wrappers.acp.backend import AcpBackend
from wrappers.acp.config import AcpConfig, CopilotAcpConfig, GeminiConfig, OpencodeAcpConfig
from wrappers.acp.presets import COPILOT, GEMINI, OPENCODE, Preset

# Every tool the agents ask about is approved by the daemon's policy: what stops an edit in
# `plan`/`readOnly` is the agent's mode, nothing else.
APPROVE_ALL = ["read", "search", "think", "edit", "delete", "move", "execute", "other"]


@dataclass(frozen=True)
class Agent:
    preset: Preset
    config: type[AcpConfig]
    mock: MockKind
    api_key: str | None
    block: Callable[[str, Path], dict[str, Any]]

    def __str__(self) -> str:
        return self.preset.name


def _gemini(url: str, root: Path) -> dict[str, Any]:
    return support.gemini_block(url, root, root / "work", root / "home")


def _opencode(url: str, root: Path) -> dict[str, Any]:
    return support.opencode_block(url, root, root / "work", root / "home")


def _copilot(url: str, root: Path) -> dict[str, Any]:
    return support.copilot_block(url, root, root / "work", root / "home", root / "cache")


GEMINI_AGENT = Agent(GEMINI, GeminiConfig, "gemini", support.GEMINI_KEY, _gemini)
OPENCODE_AGENT = Agent(OPENCODE, OpencodeAcpConfig, "openai_chat", None, _opencode)
COPILOT_AGENT = Agent(COPILOT, CopilotAcpConfig, "openai_chat", support.COPILOT_KEY, _copilot)
AGENTS = [GEMINI_AGENT, OPENCODE_AGENT, COPILOT_AGENT]


@pytest.fixture(scope="module")
def models() -> Iterator[dict[MockKind, MockModel]]:
    gemini = MockModel("gemini", api_key=support.GEMINI_KEY)
    with gemini, MockModel("openai_chat") as chat:
        yield {"gemini": gemini, "openai_chat": chat}


@dataclass
class Served:
    backend: AcpBackend
    model: MockModel
    work: Path

    async def turn(
        self,
        text: str,
        session_id: str | None = None,
        *,
        options: TurnOptions = NO_OPTIONS,
        fork_of: str | None = None,
        parts: tuple[Content, ...] = (),
    ) -> tuple[str, list[BackendEvent]]:
        turn = Turn(
            principal="p",
            context_id="ctx",
            task_id=str(uuid.uuid4()),
            message_id=str(uuid.uuid4()),
            session_id=session_id,
            parts=(TextContent(text), *parts),
            options=options,
            fork_of=fork_of,
        )
        events = [event async for event in self.backend.run_turn(turn)]
        failures = [e for e in events if isinstance(e, Failed)]
        assert not failures, failures
        bound = [e.session_id for e in events if isinstance(e, SessionBound)]
        return bound[0], events


@asynccontextmanager
async def served(
    agent: Agent, models: dict[MockKind, MockModel], root: Path, **block: Any
) -> AsyncIterator[Served]:
    model = models[agent.mock]
    model.reset()
    (root / "work").mkdir(parents=True)
    (root / "home").mkdir()
    config = agent.config.model_validate(
        {**agent.block(model.url, root), "approveKinds": APPROVE_ALL, **block}
    )
    backend = AcpBackend(config, name=agent.preset.name, preset=agent.preset)
    await backend.start()
    async with anyio.create_task_group() as tg:
        await tg.start(backend.serve)
        try:
            yield Served(backend, model, root / "work")
        finally:
            tg.cancel_scope.cancel()


def requested_model(request: ModelRequest) -> str | None:
    """The model a request names: in its body (chat completions) or its path (Gemini)."""
    body = getattr(request, "body", {})
    if isinstance(body.get("model"), str):
        return str(body["model"])
    found = re.search(r"/models/([^:/]+):", getattr(request, "path", ""))
    return found.group(1) if found else None


def saying(model: MockModel, word: str) -> ModelRequest:
    return model.wait_for_request(lambda r: r.offers_tools and word in r.last_user_text)


# ----- what each agent declares ---------------------------------------------------------------

EXPECTED = {
    # Gemini CLI 0.61.0: `plan` ("Read-only mode"), its unstable model list (session/set_model),
    # no session/fork, no effort option.
    "gemini": Capabilities(
        fork=False,
        models=("auto", "gemini-2.5-pro", "gemini-3.8-flash", "gemini-3.5-flash-lite"),
        modes=("default", "plan", "readOnly"),
        approvals=True,
        resume=True,
        image_input=True,
    ),
    # OpenCode 1.18.33: session/fork, its `model` option (the configured provider's models);
    # no edit-free mode: its `plan` agent still runs shell commands that write (presets.py).
    "opencode-acp": Capabilities(
        fork=True,
        models=(support.OPENCODE_MODEL, support.OPENCODE_OTHER_MODEL),
        modes=("default",),
        approvals=True,
        resume=True,
        image_input=True,
    ),
    # Copilot CLI 1.0.102: no model list or model option (its model is COPILOT_MODEL), no fork.
    "copilot-acp": Capabilities(
        fork=False,
        models=(),
        modes=("default", "plan", "readOnly"),
        approvals=True,
        resume=True,
        image_input=True,
    ),
}


@pytest.mark.parametrize("agent", AGENTS, ids=str)
async def test_each_agent_declares_what_it_reports_once_started(
    agent: Agent, models: dict[MockKind, MockModel], tmp_path: Path
) -> None:
    config = agent.config.model_validate(
        agent.block(models[agent.mock].url, tmp_path) | {"workingDirectory": str(tmp_path)}
    )
    before = AcpBackend(config, name=agent.preset.name, preset=agent.preset).capabilities()
    assert before == Capabilities(approvals=True)
    async with served(agent, models, tmp_path / "served") as daemon:
        assert daemon.backend.capabilities() == EXPECTED[agent.preset.name]


# ----- a model for one turn ------------------------------------------------------------------

MODEL_CASES = [
    (GEMINI_AGENT, "gemini-3.5-flash-lite"),
    (OPENCODE_AGENT, support.OPENCODE_OTHER_MODEL.split("/")[1]),
]


@pytest.mark.parametrize(("agent", "asked"), MODEL_CASES, ids=str)
async def test_a_model_chosen_for_a_turn_is_used_for_that_turn_only(
    agent: Agent, asked: str, models: dict[MockKind, MockModel], tmp_path: Path
) -> None:
    async with served(agent, models, tmp_path) as daemon:
        declared = daemon.backend.capabilities().models
        assert declared
        choice = next(m for m in declared if m.endswith(asked))
        session, _ = await daemon.turn("first MANGO")
        configured = requested_model(saying(daemon.model, "MANGO"))
        assert configured is not None
        assert not configured.endswith(asked)

        await daemon.turn("second KIWI", session, options=TurnOptions(model=choice))
        assert requested_model(saying(daemon.model, "KIWI")) == asked

        await daemon.turn("third LIME", session)
        assert requested_model(saying(daemon.model, "LIME")) == configured


# ----- plan and readOnly ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["plan", "readOnly"])
@pytest.mark.parametrize("agent", [GEMINI_AGENT, COPILOT_AGENT], ids=str)
async def test_an_edit_free_mode_leaves_the_workspace_unchanged_for_that_turn_only(
    agent: Agent, mode: Mode, models: dict[MockKind, MockModel], tmp_path: Path
) -> None:
    async with served(agent, models, tmp_path) as daemon:
        assert mode in daemon.backend.capabilities().modes
        written, shelled = daemon.work / "written.txt", daemon.work / "shelled.txt"
        daemon.model.script(
            [WriteFile(str(written), "edited\n"), Say("done")],
            [Shell(f"echo edited > {shelled}"), Say("done")],
        )
        session, _ = await daemon.turn("write the file", options=TurnOptions(mode=mode))
        await daemon.turn("now run the command", session, options=TurnOptions(mode=mode))
        assert sorted(p.name for p in daemon.work.iterdir()) == []

        # The same turns without a mode: the configured one, which edits.
        daemon.model.script(
            [WriteFile(str(written), "edited\n"), Say("done")],
            [Shell(f"echo edited > {shelled}"), Say("done")],
        )
        await daemon.turn("write the file", session)
        await daemon.turn("now run the command", session)
        assert written.read_text() == "edited\n"
        assert shelled.read_text() == "edited\n"


# ----- fork ----------------------------------------------------------------------------------


async def test_a_fork_carries_the_source_history_and_the_source_does_not_see_the_fork(
    models: dict[MockKind, MockModel], tmp_path: Path
) -> None:
    async with served(OPENCODE_AGENT, models, tmp_path) as daemon:
        source, _ = await daemon.turn("remember PAPAYA")
        fork, _ = await daemon.turn("the fork says MANGO", fork_of=source)
        assert fork != source
        assert "PAPAYA" in saying(daemon.model, "MANGO").dump()

        await daemon.turn("the source says KIWI", source)
        assert "MANGO" not in saying(daemon.model, "KIWI").dump()
        assert "PAPAYA" in saying(daemon.model, "KIWI").dump()

        await daemon.turn("the fork goes on with LIME", fork)
        assert "KIWI" not in saying(daemon.model, "LIME").dump()


# ----- image input ---------------------------------------------------------------------------

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize("agent", AGENTS, ids=str)
async def test_an_inline_image_reaches_the_model(
    agent: Agent, models: dict[MockKind, MockModel], tmp_path: Path
) -> None:
    async with served(agent, models, tmp_path) as daemon:
        assert daemon.backend.capabilities().image_input
        image = FileContent(data=PIXEL, name="pixel.png", media_type="image/png")
        await daemon.turn("describe the picture PEACH", parts=(image,))
        seen = saying(daemon.model, "PEACH")
        assert base64.b64encode(PIXEL).decode() in json.dumps(getattr(seen, "body", {}))
