"""The demo's model side: the project's mock model servers (harness/mock_models), started
in the demo's own event loop so real agent CLIs can run without an API key.

Each mock is an aiohttp server on 127.0.0.1, port 0, with its own way to start and to script
answers; `MockModel` puts one face on the three. They are imported by name when the demo needs
them, so the crew itself never depends on test code.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any


class MockModelError(RuntimeError):
    """A mock model server could not be started or scripted."""


@dataclass(frozen=True)
class Script:
    """Answer `text` when the latest user text contains `match`."""

    match: str
    text: str


class MockModel:
    def __init__(self, kind: str, server: Any, module: Any) -> None:
        self.kind = kind
        self._server = server
        self._module = module

    @property
    def url(self) -> str:
        for attribute in ("base_url", "url"):
            value = getattr(self._server, attribute, None)
            if isinstance(value, str) and value:
                return value
        raise MockModelError(f"mock {self.kind}: no url on {type(self._server).__name__}")

    def play(self, turns: Sequence[Sequence[Mapping[str, str]]]) -> None:
        """Script whole agent turns, in order, as neutral steps (harness/mock_models/
        steps.py), each rendered in the mock's own wire format: `{"shell": CMD}` calls the
        agent's shell tool (the agent really runs CMD in its directory), `{"write": PATH,
        "content": TEXT}` its file tool, `{"say": TEXT}` answers. A turn ends with the mock's
        own answer (or the pytest verdict, see `judge_pytest`) once its steps are used up."""
        steps = importlib.import_module("harness.mock_models.steps")
        made = []
        for turn in turns:
            made.append([_step(steps, item) for item in turn])
        self._server.turns.add(*made)

    def judge_pytest(self) -> None:
        """After a shell tool result that is pytest's output, answer what a tester would:
        `{"result": "pass"|"fail", "failures": [...]}`, read from that output (so the verdict
        is the real test run's, not a scripted one). Chat mock only."""
        if self.kind != "openai-chat":
            raise MockModelError(f"mock {self.kind}: cannot judge pytest output")
        module = self._module

        def verdict(request: Any) -> Any:
            outputs = request.tool_outputs() if request.ends_with_tool_output else []
            found = pytest_verdict(outputs[-1]) if outputs else None
            return None if found is None else module.TextReply(json.dumps(found))

        self._server.reply(verdict)

    def answer(self, script: Script) -> None:
        """Script one answer, in the mock's own terms."""
        pattern = _literal(script.match)
        if self.kind == "anthropic":
            self._server.on(pattern, self._module.Reply(text=script.text))
        elif self.kind == "openai-chat":
            self._server.reply(self._module.TextReply(script.text), when=script.match)
        elif self.kind == "openai-responses":
            # This mock answers in order, not by pattern: one scripted answer per request.
            self._server.script(self._module.Reply.of_text(script.text))
        else:
            raise MockModelError(f"mock {self.kind}: cannot script answers")


_SUMMARY = re.compile(r"\b(\d+) (passed|failed|errors?)\b")


def pytest_verdict(output: str) -> dict[str, Any] | None:
    """A tester's verdict from pytest's output (None when it is not pytest's)."""
    counts = {kind: int(n) for n, kind in _SUMMARY.findall(output)}
    if not counts and "no tests ran" not in output:
        return None
    failures = [
        line.strip() for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))
    ]
    bad = counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
    passed = counts.get("passed", 0) > 0 and bad == 0
    return {"result": "pass" if passed else "fail", "failures": failures}


def _step(steps: Any, item: Mapping[str, str]) -> Any:
    if "shell" in item:
        return steps.Shell(item["shell"])
    if "write" in item:
        return steps.WriteFile(item["write"], item.get("content", ""))
    if "say" in item:
        return steps.Say(item["say"])
    raise MockModelError(f"unknown scripted step {dict(item)!r} (shell, write or say)")


def _literal(text: str) -> str:
    import re  # noqa: PLC0415 - only the anthropic mock takes a regex

    return re.escape(text)


# kind -> (module, how the server is started)
MOCKS = {
    "anthropic": ("harness.mock_models.anthropic", "AnthropicMock"),
    "openai-responses": ("harness.mock_models.openai_responses", "ResponsesMock"),
    "openai-chat": ("harness.mock_models.openai_chat", "OpenAIChatMock"),
}


@asynccontextmanager
async def running(kinds: list[str]) -> AsyncIterator[dict[str, MockModel]]:
    """Start one mock server per kind; stop them all on exit."""
    async with AsyncExitStack() as stack:
        models: dict[str, MockModel] = {}
        for kind in kinds:
            if kind not in MOCKS:
                raise MockModelError(f"unknown mock model {kind!r} (known: {sorted(MOCKS)})")
            module_name, class_name = MOCKS[kind]
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise MockModelError(
                    f"mock model {kind!r}: {module_name} is missing ({exc}); it lands on main "
                    "with its backend"
                ) from exc
            cls = getattr(module, class_name)
            starter = getattr(cls, "running", None)
            server = await stack.enter_async_context(starter() if starter else cls())
            models[kind] = MockModel(kind, server, module)
        yield models
