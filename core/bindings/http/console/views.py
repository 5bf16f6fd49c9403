"""The console's routes: pages, the live feed of a task (SSE), answers to approvals and the
patch download. Every read and write goes through the daemon's Operations for the signed-in
principal, exactly as an A2A call of that principal would."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import structlog
from aiohttp import web

from core.api.host import Host
from core.bindings.http.console import render
from core.bindings.http.console.signin import PREFIX, Session, SignIns, csrf_ok, set_cookie
from core.bindings.http.sse import stream_events
from core.wire.enums import TaskState
from core.wire.errors import DaemonError, TaskNotFoundError
from core.wire.models import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from core.workspaces.making import WorkspaceError

log = structlog.get_logger(__name__)
STATIC = Path(__file__).parent / "static"
HOST = web.AppKey("console_host", Host)
SIGNINS = web.AppKey("console_signins", SignIns)
PAGE = 100
PROGRESS = "a2a-wrapper/progress"
DECISIONS = frozenset({"approve", "approve_always", "deny"})
HTML = "text/html"
NO_STORE = {"Cache-Control": "no-store"}

Handler = Callable[[web.Request, Session], Awaitable[web.StreamResponse]]


def add_routes(app: web.Application, host: Host) -> None:
    app[HOST] = host
    app[SIGNINS] = SignIns(host.settings)
    routes = app.router
    routes.add_get(PREFIX, _signed(index))
    routes.add_get(f"{PREFIX}/part", _signed(index_part))
    routes.add_get(f"{PREFIX}/login", login_page)
    routes.add_post(f"{PREFIX}/login", login)
    routes.add_post(f"{PREFIX}/logout", _signed(logout, changes=True))
    routes.add_get(f"{PREFIX}/workspaces", _signed(workspaces))
    routes.add_get(PREFIX + "/contexts/{id}", _signed(context_page))
    routes.add_get(PREFIX + "/contexts/{id}/changes.patch", _signed(cumulative_patch))
    routes.add_get(PREFIX + "/tasks/{id}", _signed(task_page))
    routes.add_get(PREFIX + "/tasks/{id}/events", _signed(task_events))
    routes.add_get(PREFIX + "/tasks/{id}/changes/{index:\\d+}.patch", _signed(download))
    routes.add_post(PREFIX + "/tasks/{id}/answer", _signed(answer_one, changes=True))
    routes.add_post(PREFIX + "/tasks/{id}/reply", _signed(reply, changes=True))
    routes.add_post(f"{PREFIX}/answer", _signed(answer_many, changes=True))
    routes.add_static(f"{PREFIX}/static", STATIC, append_version=False)


def _signed(
    handler: Handler, *, changes: bool = False
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The handler for a signed-in session; a state-changing request must carry the
    session's CSRF token (form field `csrf` or header `X-CSRF-Token`)."""

    async def run(request: web.Request) -> web.StreamResponse:
        signins = request.app[SIGNINS]
        session = signins.of(request)
        if session is None and not signins.token_required and not changes:
            return _signed_in(request, signins, request.path_qs)
        if session is None:
            if changes:
                return _refused(401, "Sign in first.")
            raise web.HTTPSeeOther(f"{PREFIX}/login")
        if changes:
            given = request.headers.get("X-CSRF-Token")
            if given is None:
                given = str((await request.post()).get("csrf", "")) or None
            if not csrf_ok(session, given):
                return _refused(403, "This request is missing the console's CSRF token.")
        try:
            return await handler(request, session)
        except TaskNotFoundError:
            return _refused(404, "No such task.")
        except DaemonError as exc:
            return _refused(400, exc.message)

    return run


def _signed_in(request: web.Request, signins: SignIns, to: str) -> web.Response:
    made = signins.sign_in(None)
    if made is None:  # cannot be: without tokens everyone is the anonymous principal
        raise web.HTTPUnauthorized
    response = _redirect(to)
    set_cookie(request, response, made[0], request.app[HOST].settings.console.session_ttl)
    return response


def _redirect(to: str) -> web.Response:
    return web.Response(status=303, headers={"Location": to})


def _refused(status: int, text: str) -> web.Response:
    body = render.page("Refused", f'<p class="error">{text}</p>')
    return web.Response(status=status, text=body, content_type=HTML)


def _html(body: str) -> web.Response:
    return web.Response(text=body, content_type=HTML, headers=NO_STORE)


async def login_page(request: web.Request) -> web.StreamResponse:
    signins = request.app[SIGNINS]
    if not signins.token_required:
        return _signed_in(request, signins, PREFIX)
    return _html(render.sign_in())


async def login(request: web.Request) -> web.StreamResponse:
    signins = request.app[SIGNINS]
    form = await request.post()
    made = signins.sign_in(str(form.get("token", "")))
    if made is None:
        log.info("console.sign_in_refused")
        return web.Response(
            status=401, text=render.sign_in("That token is not valid."), content_type=HTML
        )
    key, session = made
    log.info("console.signed_in", principal=session.principal)
    response = _redirect(PREFIX)
    set_cookie(request, response, key, request.app[HOST].settings.console.session_ttl)
    return response


async def logout(request: web.Request, session: Session) -> web.StreamResponse:
    request.app[SIGNINS].sign_out(request.cookies.get("a2a_console", ""))
    response = _redirect(f"{PREFIX}/login")
    response.del_cookie("a2a_console", path=PREFIX)
    return response


async def _page(host: Host, principal: str, token: str | None) -> tuple[list[Task], str, int]:
    """One page of `principal`'s tasks, most recent first: the tasks, the next page's token
    and how many there are in all."""
    page = await host.ops.list_tasks(
        principal, ListTasksRequest(page_size=PAGE, page_token=token or None, history_length=1)
    )
    return page.tasks, page.next_page_token, page.total_size


async def _waiting(host: Host, principal: str) -> list[Task]:
    """Every task of `principal` that waits for an answer, whatever page it is on."""
    found: list[Task] = []
    token: str | None = None
    while True:
        page = await host.ops.list_tasks(
            principal,
            ListTasksRequest(
                status=TaskState.INPUT_REQUIRED, page_size=PAGE, page_token=token, history_length=0
            ),
        )
        found.extend(page.tasks)
        token = page.next_page_token
        if not token:
            return found


async def _lists(host: Host, session: Session, token: str | None) -> str:
    tasks, later, total = await _page(host, session.principal, token)
    groups: dict[str, list[Task]] = {}
    for task in tasks:
        groups.setdefault(task.context_id, []).append(task)
    usage = {c: host.ops.usage(session.principal, c)[0] for c in groups}
    _, mine = host.ops.usage(session.principal, "")
    return (
        render.pending(await _waiting(host, session.principal), session.csrf)
        + render.contexts(groups, usage, total=total, first=not token, later=later)
        + '<section id="usage"><h2>Usage</h2><table>'
        + render.USAGE_HEAD
        + render.spending(f"principal {session.principal}", mine)
        + "".join(render.spending(f"context {c}", s) for c, s in usage.items())
        + "</table></section>"
    )


async def index(request: web.Request, session: Session) -> web.StreamResponse:
    host = request.app[HOST]
    base = f"{request.scheme}://{request.host}"
    card = host.card.document_for(base, strict=False)
    ready = await host.ops.readiness()
    head = render.agent(card, host.ops.backend_name, ready.ok, ready.message or "", _version())
    page = await _lists(host, session, request.query.get("page"))
    body = f'{head}<div id="live">{page}</div>'
    return _html(render.page("Console", body, csrf=session.csrf, principal=session.principal))


async def index_part(request: web.Request, session: Session) -> web.StreamResponse:
    """The live part of the index (pending approvals, contexts, usage) for the page's script."""
    return _html(await _lists(request.app[HOST], session, request.query.get("page")))


async def workspaces(request: web.Request, session: Session) -> web.StreamResponse:
    found = await request.app[HOST].ops.workspaces(session.principal)
    body = render.workspaces(found)
    return _html(render.page("Workspaces", body, csrf=session.csrf, principal=session.principal))


async def _task(request: web.Request, session: Session) -> Task:
    return await request.app[HOST].ops.get_task(
        session.principal, GetTaskRequest(id=request.match_info["id"])
    )


async def task_page(request: web.Request, session: Session) -> web.StreamResponse:
    task = await _task(request, session)
    body = render.task_page(task, session.csrf)
    return _html(render.page("Task", body, csrf=session.csrf, principal=session.principal))


async def _cumulative(request: web.Request, session: Session) -> bytes | None:
    changes = await request.app[HOST].ops.cumulative_changes(
        session.principal, request.match_info["id"]
    )
    return None if changes is None else changes.patch


async def context_page(request: web.Request, session: Session) -> web.StreamResponse:
    """A context: its tasks, its usage, and the cumulative diff of its workspace."""
    host = request.app[HOST]
    context_id = request.match_info["id"]
    page = await host.ops.list_tasks(
        session.principal, ListTasksRequest(context_id=context_id, page_size=PAGE, history_length=1)
    )
    if not page.tasks:
        return _refused(404, "No such context.")
    spent = {context_id: host.ops.usage(session.principal, context_id)[0]}
    try:
        patch = await _cumulative(request, session)
        changes = render.cumulative(context_id, patch)
    except WorkspaceError as exc:
        changes = f'<p class="error">{exc.reason}</p>'
    body = render.contexts({context_id: page.tasks}, spent, total=page.total_size) + changes
    return _html(render.page("Context", body, csrf=session.csrf, principal=session.principal))


async def cumulative_patch(request: web.Request, session: Session) -> web.StreamResponse:
    context_id = request.match_info["id"]
    try:
        patch = await _cumulative(request, session)
    except WorkspaceError as exc:
        return _refused(503, exc.reason)
    if patch is None:
        return _refused(404, "This context has no changes.")
    return _patch(patch, f"{context_id}-cumulative.patch")


def _patch(patch: bytes, name: str) -> web.Response:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return web.Response(
        body=patch,
        content_type="text/x-diff",
        headers={"Content-Disposition": f'attachment; filename="{safe}"'},
    )


async def task_events(request: web.Request, session: Session) -> web.StreamResponse:
    """The task as it runs, one JSON object per event: its state and status text, the answer
    (whole or a piece to append) and, once it stops or asks, `reload` for the full page."""
    host = request.app[HOST]
    task = await _task(request, session)
    if task.status.state.terminal or task.status.state == TaskState.INPUT_REQUIRED:
        # It stopped between the page and this request: the page is stale, draw it anew.
        frames = _once({"reload": True})
    else:
        events = await host.ops.subscribe_to_task(session.principal, task.id)
        frames = _frames(events)
    ping = host.settings.server.sse_ping_interval / 1000
    return await stream_events(request, frames, ping_interval=ping)


async def _once(data: dict[str, object]) -> AsyncIterator[bytes]:
    yield _frame(data)


def _frame(data: dict[str, object]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()


async def _frames(events: AsyncIterable[StreamResponse]) -> AsyncIterator[bytes]:
    """The page updates in place; it reloads only for what it cannot draw by itself: a
    question to answer, or the turn's changes once the task has stopped."""
    changed = False
    async for event in events:
        found: dict[str, object] = {}
        status = None
        if event.task is not None:
            status = event.task.status
            answer = [a for a in event.task.artifacts or [] if a.name != render.CHANGES]
            found["answer"] = "".join(p.text or "" for a in answer for p in a.parts)
        elif event.status_update is not None:
            status = event.status_update.status
        elif event.artifact_update is not None:
            artifact = event.artifact_update.artifact
            if artifact.name == render.CHANGES:
                changed = True
            else:
                text = "".join(p.text or "" for p in artifact.parts)
                found["append" if event.artifact_update.append else "answer"] = text
        if status is not None:
            found["state"] = render.state_of(status.state)
            if status.message is not None:
                found["status"] = "".join(p.text or "" for p in status.message.parts)
                step = _step(status.message)
                working = status.state == TaskState.WORKING
                if step is not None and working and event.status_update is not None:
                    found["step"] = step
            asks = status.state in {TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}
            if asks or (status.state.terminal and changed):
                found["reload"] = True
        if found:
            yield _frame(found)
    yield _frame({"end": True})


def _step(message: Message) -> dict[str, object] | None:
    """A progress note's structured facts (the `a2a-wrapper/progress` data part: tool, input
    summary, outcome) with its line, or just its line; None for other messages."""
    text = "".join(p.text or "" for p in message.parts)
    for part in message.parts:
        if isinstance(part.data, dict) and part.data.get("type") == PROGRESS:
            return {"text": text, **{k: v for k, v in part.data.items() if k != "type"}}
    return {"text": text} if text else None


async def download(request: web.Request, session: Session) -> web.StreamResponse:
    task = await _task(request, session)
    artifacts = task.artifacts or []
    index = int(request.match_info["index"])
    patch = render.patch_of(artifacts[index]) if index < len(artifacts) else None
    if patch is None or artifacts[index].name != render.CHANGES:
        return _refused(404, "This task has no such change.")
    return _patch(patch, f"{task.id}-changes.patch")


async def _answer(host: Host, principal: str, task_id: str, decision: str, note: str) -> None:
    data: dict[str, str] = {"decision": decision}
    if note:
        data["message"] = note
    await _continue(host, principal, task_id, Part(data=data, media_type="application/json"))
    log.info("console.answered", task_id=task_id, decision=decision)


async def _continue(host: Host, principal: str, task_id: str, part: Part) -> None:
    """The caller's message on the task, as an A2A client would send it; returns at once."""
    task = await host.ops.get_task(principal, GetTaskRequest(id=task_id))
    message = Message(
        message_id=f"console-{uuid.uuid4().hex}",
        role="ROLE_USER",
        task_id=task.id,
        context_id=task.context_id,
        parts=[part],
    )
    request = SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=True)
    )
    await host.ops.send_message(principal, request)


def _decision(form: object) -> str:
    decision = str(getattr(form, "get", lambda *_: "")("decision", ""))
    if decision not in DECISIONS:
        raise web.HTTPBadRequest(text="decision must be approve, approve_always or deny")
    return decision


async def answer_one(request: web.Request, session: Session) -> web.StreamResponse:
    form = await request.post()
    task_id = request.match_info["id"]
    note = str(form.get("message", ""))
    await _answer(request.app[HOST], session.principal, task_id, _decision(form), note)
    raise web.HTTPSeeOther(f"{PREFIX}/tasks/{task_id}")


async def reply(request: web.Request, session: Session) -> web.StreamResponse:
    """A text answer to a task that asks something other than an approval."""
    form = await request.post()
    task_id = request.match_info["id"]
    text = str(form.get("text", "")).strip()
    if not text:
        raise web.HTTPSeeOther(f"{PREFIX}/tasks/{task_id}")
    await _continue(request.app[HOST], session.principal, task_id, Part(text=text))
    raise web.HTTPSeeOther(f"{PREFIX}/tasks/{task_id}")


async def answer_many(request: web.Request, session: Session) -> web.StreamResponse:
    """One decision for every selected question (an agent that asked several)."""
    form = await request.post()
    decision = _decision(form)
    for task_id in form.getall("task", []):
        await _answer(request.app[HOST], session.principal, str(task_id), decision, "")
    raise web.HTTPSeeOther(PREFIX)


def _version() -> str:
    try:
        return version("a2a-wrapper")
    except PackageNotFoundError:
        return "unknown"
