"""The web console (`/console`) in a real headless Chromium, against the real HTTP app on a
real port with the scripted backend: a task sent by JSON-RPC appears live, the diff of a
worktree turn is shown and downloads, a second principal sees none of the first one's tasks,
and a cross-site POST without the CSRF token is refused. The browser runs in a thread while
the daemon serves on the test's event loop."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from selenium.webdriver.common.by import By

from core.daemon import create_app
from tests.conftest import make_settings
from tests.console.browser import chromium, screenshot, sign_in, text, until
from tests.support.git_repo import make_repository
from tests.support.scripted import ScriptedBackend

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
V1 = {"A2A-Version": "1.0"}
MakeServer = Callable[..., Awaitable[TestServer]]

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
async def daemon(aiohttp_server: MakeServer, backend: ScriptedBackend, tmp_path: Path) -> str:
    """The daemon's URL: tokens for alice and bob, a worktree per context of a small
    repository, approvals asked of the caller."""
    repo = make_repository(tmp_path / "repo", {"src/app.py": "print('one')\n"})
    settings = make_settings(
        backend="claude",
        claude={"workingDirectory": str(repo)},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": "worktree"},
        approvals={"mode": "ask"},
        server={
            "auth": {
                "tokens": [
                    {"token": ALICE, "principal": "alice"},
                    {"token": BOB, "principal": "bob"},
                ]
            }
        },
    )
    app: web.Application = create_app(settings, backend=backend)
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


def send(url: str, token: str, text_: str, context: str | None = None) -> dict[str, Any]:
    """SendMessage over JSON-RPC, returning at once: the task."""
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text_}],
        "contextId": context or f"ctx-{uuid.uuid4().hex[:6]}",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": True}},
    }
    headers = {**V1, "Authorization": f"Bearer {token}"}
    answer = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=30).json()
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def get(url: str, token: str, task_id: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    headers = {**V1, "Authorization": f"Bearer {token}"}
    task: dict[str, Any] = httpx.post(
        f"{url}/a2a/jsonrpc", json=body, headers=headers, timeout=30
    ).json()["result"]
    return task


def state_of(url: str, token: str, task_id: str) -> str:
    return str(get(url, token, task_id)["status"]["state"])


def reaches(url: str, task_id: str, state: str) -> Callable[[], bool]:
    """Whether alice's task is in `state` now (for `until`)."""
    return lambda: state_of(url, ALICE, task_id) == f"TASK_STATE_{state}"


async def test_a_task_sent_by_json_rpc_appears_live_and_its_answer_streams_in(
    daemon: str, backend: ScriptedBackend
) -> None:
    loop = asyncio.get_running_loop()

    def scenario() -> None:
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            screenshot(driver, "index-empty")
            task = send(daemon, ALICE, "block")
            row = f'tr[data-task="{task["id"]}"]'
            # The open page shows the new task without a reload.
            until(lambda: driver.find_elements(By.CSS_SELECTOR, row), "listed")
            screenshot(driver, "index-live-task")
            driver.find_element(By.CSS_SELECTOR, f"{row} a").click()
            until(lambda: "working" in text(driver, "#state"), "working")
            screenshot(driver, "task-working")
            driver.execute_script("window.stillThisPage = true")
            loop.call_soon_threadsafe(backend.release, task["id"])
            until(lambda: "completed" in text(driver, "#state"), "completed")
            until(lambda: "released" in text(driver, "#answer"), "answered")
            # It came by the page's event stream, not by a reload.
            assert driver.execute_script("return window.stillThisPage") is True
            screenshot(driver, "task-completed")

    await asyncio.to_thread(scenario)


async def test_the_diff_of_a_worktree_turn_is_shown_and_downloads(daemon: str) -> None:
    def scenario() -> None:
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            task = send(daemon, ALICE, "write: src/app.py=def main():  # the new one")
            until(lambda: state_of(daemon, ALICE, task["id"]).endswith("COMPLETED"), "done")
            driver.get(f"{daemon}/console/tasks/{task['id']}")
            changes = until(lambda: text(driver, ".changes"), "changes shown")
            assert "src/app.py" in changes
            assert "+1" in changes and "\u22121" in changes
            added = driver.find_element(By.CSS_SELECTOR, ".diff .add")
            assert "def main():" in added.text
            # Syntax colours: the keyword and the comment are marked up.
            assert added.find_element(By.CSS_SELECTOR, ".kw").text == "def"
            assert "the new one" in added.find_element(By.CSS_SELECTOR, ".comment").text
            removed = driver.find_element(By.CSS_SELECTOR, ".diff .del")
            assert "print('one')" in removed.text
            screenshot(driver, "task-diff")
            link = driver.find_element(By.CSS_SELECTOR, "a.download")
            cookies = {c["name"]: c["value"] for c in driver.get_cookies()}
            patch = httpx.get(str(link.get_attribute("href")), cookies=cookies, timeout=30)
            assert patch.status_code == 200
            assert "+def main():  # the new one" in patch.text
            assert patch.headers["Content-Disposition"].startswith("attachment;")

            # A second turn in the context: the context's page shows both turns' changes.
            later = send(daemon, ALICE, "write: notes.md=# Notes", context=task["contextId"])
            until(reaches(daemon, later["id"], "COMPLETED"), "the second turn done")
            driver.get(f"{daemon}/console/contexts/{task['contextId']}")
            every = until(lambda: text(driver, ".cumulative"), "the cumulative diff")
            assert "src/app.py" in every and "notes.md" in every
            screenshot(driver, "context-cumulative-diff")
            link = driver.find_element(By.CSS_SELECTOR, ".cumulative a.download")
            whole = httpx.get(str(link.get_attribute("href")), cookies=cookies, timeout=30)
            assert "+def main():" in whole.text and "+# Notes" in whole.text
            driver.get(f"{daemon}/console/workspaces")
            listed = text(driver, "main")
            assert task["contextId"] in listed and "worktree" in listed
            assert re.search(r"\b\d+(\.\d)? (B|KiB|MiB)\b", listed), listed
            screenshot(driver, "workspaces")

    await asyncio.to_thread(scenario)


async def test_a_second_principal_sees_none_of_the_first_ones_tasks(daemon: str) -> None:
    def scenario() -> None:
        mine = send(daemon, ALICE, "echo: for alice only", context="ctx-alice-secret")
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            until(lambda: mine["id"] in driver.page_source, "alice's task listed")
        with chromium() as driver:
            sign_in(driver, daemon, BOB)
            screenshot(driver, "index-second-principal")
            page = driver.page_source
            assert mine["id"] not in page
            assert "ctx-alice-secret" not in page
            assert "signed in as bob" in text(driver, "header")
            driver.get(f"{daemon}/console/tasks/{mine['id']}")
            assert "No such task." in text(driver)
            assert "for alice only" not in driver.page_source
            driver.get(f"{daemon}/console/tasks/{mine['id']}/changes/0.patch")
            assert "No such task." in text(driver)
            driver.get(f"{daemon}/console/contexts/ctx-alice-secret")
            assert "No such context." in text(driver)
            driver.get(f"{daemon}/console/workspaces")
            assert "ctx-alice-secret" not in driver.page_source

    await asyncio.to_thread(scenario)


ATTACK = """<!doctype html><html><body>
<form id="f" method="post" action="{target}">
<input name="decision" value="approve"><input name="task" value="{task}"></form>
<script>document.getElementById("f").submit();</script></body></html>"""


async def test_a_cross_site_post_without_the_csrf_token_is_refused(
    daemon: str, aiohttp_server: MakeServer
) -> None:
    # Another site (localhost is not 127.0.0.1's site) whose page posts an approval.
    asked: dict[str, Any] = {}
    attacker = web.Application()

    async def attack(request: web.Request) -> web.Response:
        page = ATTACK.format(target=f"{daemon}/console/answer", task=asked["id"])
        return web.Response(text=page, content_type="text/html")

    attacker.router.add_get("/", attack)
    evil = await aiohttp_server(attacker)
    evil_url = f"http://localhost:{evil.port}/"

    def scenario() -> None:
        asked.update(send(daemon, ALICE, "approve: rm -rf /tmp/x"))
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            until(lambda: "Pending approvals" in text(driver, "#pending"), "index")
            until(lambda: state_of(daemon, ALICE, asked["id"]).endswith("INPUT_REQUIRED"), "ask")
            driver.get(evil_url)
            until(lambda: "refused" in text(driver).lower(), "the post refused")
            screenshot(driver, "cross-site-post-refused")
            cookies = {c["name"]: c["value"] for c in driver.get_cookies()}
        assert state_of(daemon, ALICE, asked["id"]).endswith("INPUT_REQUIRED")
        form = {"decision": "approve", "task": asked["id"]}
        # The session cookie without the token: refused, whatever the origin says.
        for headers in ({}, {"Origin": daemon}, {"Origin": "http://evil.example"}):
            refused = httpx.post(
                f"{daemon}/console/answer", data=form, cookies=cookies, headers=headers
            )
            assert refused.status_code == 403, refused.text
        assert state_of(daemon, ALICE, asked["id"]).endswith("INPUT_REQUIRED")

    await asyncio.to_thread(scenario)


async def test_several_questions_are_approved_at_once_and_the_page_shows_it(
    daemon: str,
) -> None:
    def scenario() -> None:
        first = send(daemon, ALICE, "approve: make build")
        second = send(daemon, ALICE, "approve: make test")
        for task in (first, second):
            until(reaches(daemon, task["id"], "INPUT_REQUIRED"), "asks")
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            pending = text(driver, "#pending")
            assert "make build" in pending and "make test" in pending
            screenshot(driver, "index-pending-several")
            driver.find_element(By.CSS_SELECTOR, "#pending button.approve").click()
            # Reflected at once: the page after the click asks nothing any more.
            until(lambda: "None." in text(driver, "#pending"), "no longer pending")
            for task, tool in ((first, "make build"), (second, "make test")):
                until(reaches(daemon, task["id"], "COMPLETED"), "ran")
                driver.get(f"{daemon}/console/tasks/{task['id']}")
                assert f"ran {tool}" in text(driver, "#answer")

    await asyncio.to_thread(scenario)


async def test_a_question_is_answered_in_words_from_the_task_page(daemon: str) -> None:
    def scenario() -> None:
        asked = send(daemon, ALICE, "ask: Which branch?", context="ctx-words")
        until(reaches(daemon, asked["id"], "INPUT_REQUIRED"), "asks")
        with chromium() as driver:
            sign_in(driver, daemon, ALICE)
            driver.get(f"{daemon}/console/tasks/{asked['id']}")
            assert "Which branch?" in text(driver, "#status")
            driver.find_element(By.CSS_SELECTOR, "form.reply textarea").send_keys("echo: main")
            driver.find_element(By.CSS_SELECTOR, "form.reply button").click()
            until(lambda: "completed" in text(driver, "#state"), "completed")
            until(lambda: "main" in text(driver, "#answer"), "answered")

    await asyncio.to_thread(scenario)
