"""The console's pages, rendered on the server: plain HTML with one stylesheet and one small
script of the package (static/), nothing from the network."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import quote

from core.api.operations import Spending, WorkspaceView
from core.bindings.http.console import diff
from core.client import control
from core.engine.turn.approvals import REQUEST_TYPE
from core.wire.enums import TaskState
from core.wire.models import Artifact, Message, Part, Task

CHANGES = "changes"


def page(title: str, body: str, *, csrf: str = "", principal: str = "") -> str:
    who = ""
    if principal:
        who = (
            f'<form method="post" action="/console/logout" class="who">'
            f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
            f"signed in as <b>{escape(principal)}</b> <button>Sign out</button></form>"
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)} - a2a-wrapper</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/console/static/console.css">'
        '<script src="/console/static/console.js" defer></script></head>'
        f'<body data-csrf="{escape(csrf)}"><header><a href="/console">a2a-wrapper console</a>'
        ' <a href="/console/workspaces">workspaces</a>'
        f"{who}</header><main>{body}</main></body></html>"
    )


def sign_in(error: str = "") -> str:
    shown = f'<p class="error">{escape(error)}</p>' if error else ""
    return page(
        "Sign in",
        f"<h1>Sign in</h1>{shown}"
        '<form method="post" action="/console/login"><label>Token '
        '<input type="password" name="token" autocomplete="current-password" autofocus>'
        "</label> <button>Sign in</button></form>"
        '<p class="muted">One of the bearer tokens of <code>server.auth.tokens</code>.</p>',
    )


def state_of(state: TaskState) -> str:
    return str(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def state_name(task: Task) -> str:
    return state_of(task.status.state)


def _text(parts: Iterable[Part]) -> str:
    return "".join(p.text or "" for p in parts)


def question(task: Task) -> dict[str, Any] | None:
    """The approval the task waits for, if it waits for one."""
    if task.status.state != TaskState.INPUT_REQUIRED or task.status.message is None:
        return None
    for part in task.status.message.parts:
        if isinstance(part.data, dict) and part.data.get("type") == REQUEST_TYPE:
            return part.data
    return None


def _when(task: Task) -> str:
    stamp = task.status.timestamp
    if stamp is None:
        return ""
    return escape(stamp if isinstance(stamp, str) else stamp.strftime("%Y-%m-%d %H:%M:%S"))


def _first_words(task: Task) -> str:
    for message in task.history or []:
        if str(message.role) == "ROLE_USER":
            return _text(message.parts)[:120]
    return ""


def agent(card: dict[str, Any], backend: str, ready: bool, reason: str, version: str) -> str:
    skills = ", ".join(escape(str(s.get("name", ""))) for s in card.get("skills") or [])
    status = "ready" if ready else f"not ready: {escape(reason)}"
    return (
        f'<section class="agent"><h1>{escape(str(card.get("name", "")))}</h1>'
        f"<p>{escape(str(card.get('description', '')))}</p>"
        f"<dl><dt>backend</dt><dd>{escape(backend)}</dd>"
        f'<dt>readiness</dt><dd class="{"ok" if ready else "bad"}">{status}</dd>'
        f"<dt>agent version</dt><dd>{escape(str(card.get('version', '')))}</dd>"
        f"<dt>a2a-wrapper</dt><dd>{escape(version)}</dd>"
        f"<dt>skills</dt><dd>{skills or '-'}</dd></dl>{capabilities(card)}</section>"
    )


def capabilities(card: dict[str, Any]) -> str:
    """What a message may choose of this agent (the card's conversation-control record)."""
    record = control.record_of(card)
    if record is None:
        return ""
    rows = "".join(
        f"<dt>{escape(what)}</dt><dd>{escape(value)}</dd>"
        for what, value in control.summary(record)
    )
    return f'<h2>What it can do</h2><dl id="capabilities">{rows}</dl>'


def approval_form(task: Task, asked: dict[str, Any], csrf: str) -> str:
    return (
        f'<form method="post" action="/console/tasks/{escape(task.id)}/answer" class="answer">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        f'<p class="question"><b>{escape(str(asked.get("tool", "")))}</b>: '
        f"{escape(str(asked.get('summary', '')))}</p>"
        '<input name="message" placeholder="a note for the agent (optional)">'
        '<button name="decision" value="approve" class="approve">Approve</button>'
        '<button name="decision" value="approve_always">Approve always</button>'
        '<button name="decision" value="deny" class="deny">Deny</button></form>'
    )


def reply_form(task: Task, csrf: str) -> str:
    return (
        f'<form method="post" action="/console/tasks/{escape(task.id)}/reply" class="reply">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<textarea name="text" rows="3" placeholder="your answer"></textarea>'
        "<button>Send</button></form>"
    )


def pending(tasks: list[Task], csrf: str) -> str:
    waiting = [(t, q) for t in tasks if (q := question(t)) is not None]
    if not waiting:
        none = '<p class="muted">None.</p>'
        return f'<section id="pending"><h2>Pending approvals</h2>{none}</section>'
    rows = "".join(
        f'<tr><td><input type="checkbox" name="task" value="{escape(t.id)}" checked></td>'
        f'<td><a href="/console/tasks/{escape(t.id)}">{escape(t.id[:8])}</a></td>'
        f"<td><b>{escape(str(q.get('tool', '')))}</b></td>"
        f"<td>{escape(str(q.get('summary', '')))}</td></tr>"
        for t, q in waiting
    )
    return (
        '<section id="pending"><h2>Pending approvals</h2>'
        '<form method="post" action="/console/answer">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        f"<table><tr><th></th><th>task</th><th>tool</th><th>asks</th></tr>{rows}</table>"
        '<button name="decision" value="approve" class="approve">Approve selected</button> '
        '<button name="decision" value="deny" class="deny">Deny selected</button>'
        "</form></section>"
    )


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def spending(label: str, spent: Spending) -> str:
    left = spent.left()
    used = spent.used
    return (
        f"<tr><td>{label}</td><td>{_money(used.cost_usd)}</td><td>{used.tokens}</td>"
        f"<td>{used.turns}</td><td>{_money(left.max_cost_usd)}</td>"
        f"<td>{_num(left.max_tokens)}</td><td>{_num(left.max_turns)}</td></tr>"
    )


USAGE_HEAD = (
    "<tr><th></th><th>cost</th><th>tokens</th><th>turns</th><th>cost left</th>"
    "<th>tokens left</th><th>turns left</th></tr>"
)


def _pages(total: int, *, first: bool, later: str) -> str:
    links = ['<a href="/console">newest</a>'] if not first else []
    if later:
        links.append(f'<a href="/console?page={quote(later)}">older tasks</a>')
    return f'<p class="muted">{total} tasks in all, newest first. {" &middot; ".join(links)}</p>'


def contexts(
    groups: dict[str, list[Task]],
    usage: dict[str, Spending],
    *,
    total: int = 0,
    first: bool = True,
    later: str = "",
) -> str:
    if not groups:
        none = '<p class="muted">No tasks yet.</p>'
        return f'<section id="contexts"><h2>Contexts</h2>{none}</section>'
    blocks = []
    for context_id, tasks in groups.items():
        rows = "".join(
            f'<tr class="task" data-task="{escape(t.id)}">'
            f'<td><a href="/console/tasks/{escape(t.id)}">{escape(t.id)}</a></td>'
            f'<td class="state {state_name(t)}">{state_name(t)}</td>'
            f"<td>{_when(t)}</td><td>{escape(_first_words(t))}</td></tr>"
            for t in tasks
        )
        spent = usage[context_id]
        blocks.append(
            f'<details class="context" open><summary>context <a href="/console/contexts/'
            f'{quote(context_id)}"><code>{escape(context_id)}</code></a> '
            f'<span class="muted">{len(tasks)} task{"" if len(tasks) == 1 else "s"}, '
            f"{_money(spent.used.cost_usd)}, "
            f"{spent.used.tokens} tokens, cost left {_money(spent.left().max_cost_usd)}</span>"
            f"</summary><table>{rows}</table></details>"
        )
    pages = _pages(total, first=first, later=later)
    return f'<section id="contexts"><h2>Contexts</h2>{pages}{"".join(blocks)}</section>'


def _bytes(part: Part) -> bytes:
    try:
        return base64.b64decode(part.raw or "", validate=True)
    except (binascii.Error, ValueError):
        return b""


def patch_of(artifact: Artifact) -> bytes | None:
    for part in artifact.parts:
        if part.raw is not None:
            return _bytes(part)
    return None


def _changes(task: Task, index: int, artifact: Artifact) -> str:
    patch = patch_of(artifact) or b""
    scope = next(
        (str(p.data.get("scope", "turn")) for p in artifact.parts if isinstance(p.data, dict)),
        "turn",
    )
    return (
        f'<section class="changes"><h2>Changes ({escape(scope)})</h2>'
        f'<a class="download" download="changes.patch" '
        f'href="/console/tasks/{escape(task.id)}/changes/{index}.patch">Download patch</a>'
        f"{diff.render(patch.decode('utf-8', 'replace'))}</section>"
    )


def cumulative(context_id: str, patch: bytes | None) -> str:
    if patch is None:
        shown = '<p class="muted">No changes in a workspace of its own.</p>'
    else:
        shown = (
            '<a class="download" download="changes.patch" '
            f'href="/console/contexts/{quote(context_id)}/changes.patch">Download patch</a>'
            + diff.render(patch.decode("utf-8", "replace"))
        )
    return f'<section class="changes cumulative"><h2>All changes so far</h2>{shown}</section>'


def _message(message: Message) -> str:
    who = "you" if str(message.role) == "ROLE_USER" else "agent"
    text = _text(message.parts)
    data = [p.data for p in message.parts if p.data is not None]
    shown = escape(text) if text else escape(json.dumps(data[0]) if data else "")
    return f'<div class="msg {who}"><span class="who">{who}</span><pre>{shown}</pre></div>'


def task_page(task: Task, csrf: str) -> str:
    state = state_name(task)
    live = not task.status.state.terminal and task.status.state != TaskState.INPUT_REQUIRED
    asked = question(task)
    # A question shows as its form; its text would repeat it.
    status = _text(task.status.message.parts) if task.status.message and not asked else ""
    answer_parts = [a for a in task.artifacts or [] if a.name != CHANGES]
    changes = [
        _changes(task, i, a) for i, a in enumerate(task.artifacts or []) if a.name == CHANGES
    ]
    history = "".join(_message(m) for m in task.history or [])
    ask = approval_form(task, asked, csrf) if asked is not None else ""
    if asked is None and task.status.state in {TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED}:
        ask = reply_form(task, csrf)
    answer = "".join(_text(a.parts) for a in answer_parts)
    return (
        f'<section class="task" id="task" data-task="{escape(task.id)}" '
        f'data-live="{"1" if live else ""}"><h1>Task <code>{escape(task.id)}</code></h1>'
        f"<p>context <code>{escape(task.context_id)}</code> &middot; state "
        f'<span id="state" class="state {state}">{state}</span></p>'
        f'<p id="status" class="status">{escape(status)}</p>{ask}'
        '<ol id="steps" class="steps"></ol>'
        f'<h2>Answer</h2><pre id="answer" class="answer">{escape(answer)}</pre>'
        f'{"".join(changes)}<h2>Conversation</h2><div class="history">{history}</div></section>'
    )


def workspaces(found: list[WorkspaceView]) -> str:
    if not found:
        return '<h1>Workspaces</h1><p class="muted">None.</p>'
    rows = "".join(
        f"<tr><td><code>{escape(w.record.context_id)}</code></td><td>{escape(w.record.mode)}</td>"
        f"<td>{escape(w.record.branch)}</td><td>{_size(w.size)}</td>"
        f"<td>{'expired, not saved' if w.expired_unsaved else ''}</td></tr>"
        for w in found
    )
    total = _size(sum(w.size for w in found))
    return (
        f"<h1>Workspaces</h1><p>{len(found)} workspaces, {total} in all.</p>"
        "<table><tr><th>context</th><th>mode</th><th>branch</th><th>size</th><th></th></tr>"
        f"{rows}</table>"
    )


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
