"""The console's agent view says what the agent can do (the card's conversation-control
record), in a real headless Chromium against the real HTTP app: a backend declaring steer,
fork, models, efforts and modes (narrowed by turnOptions), and one declaring nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from selenium.webdriver.common.by import By

from core.daemon import create_app
from tests.conftest import make_settings
from tests.console.browser import chromium, screenshot, sign_in, text
from tests.support.declaring import DeclaringBackend
from tests.support.scripted import ScriptedBackend

ALICE = "alice-token-0123456789"
MakeServer = Callable[..., Awaitable[TestServer]]

pytestmark = pytest.mark.timeout(240)


async def _daemon(aiohttp_server: MakeServer, backend: ScriptedBackend) -> str:
    settings = make_settings(
        server={"auth": {"tokens": [{"token": ALICE, "principal": "alice"}]}},
        turnOptions={"allow": {"modes": ["readOnly"]}},
    )
    app: web.Application = create_app(settings, backend=backend)
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


def _shown(url: str, name: str) -> dict[str, str]:
    with chromium() as driver:
        sign_in(driver, url, ALICE)
        screenshot(driver, name)
        terms = driver.find_elements(By.CSS_SELECTOR, "#capabilities dt")
        values = driver.find_elements(By.CSS_SELECTOR, "#capabilities dd")
        assert "What it can do" in text(driver, ".agent")
        return {t.text: v.text for t, v in zip(terms, values, strict=True)}


async def test_the_agent_view_shows_what_the_agent_can_do(aiohttp_server: MakeServer) -> None:
    declaring = await _daemon(aiohttp_server, DeclaringBackend())
    plain = await _daemon(aiohttp_server, ScriptedBackend())

    shown = await asyncio.to_thread(_shown, declaring, "agent-capabilities")
    nothing = await asyncio.to_thread(_shown, plain, "agent-capabilities-none")

    assert shown == {
        "steer": "yes",
        "fork": "yes",
        "models": "m-large, m-small",  # what the started agent reported
        "efforts": "low, high",
        "modes": "default, readOnly",  # turnOptions.allow.modes narrows what it declares
        "approvals": "yes",
        "resume": "yes",
        "image input": "yes",
    }
    assert nothing == {
        "steer": "no",
        "fork": "no",
        "models": "the configured model only",
        "efforts": "none to choose",
        "modes": "default",
        "approvals": "no",
        "resume": "no",
        "image input": "no",
    }
