"""The client commands: `a2a-wrapper send | tasks | watch | pending | answer | cancel | changes`
against any A2A agent, and `a2a-wrapper mcp` (mcp_server.py).

Exit codes: 0 the task completed (or the command did what it says), 1 the task failed, was
canceled or rejected (or a patch did not apply), 3 the task waits for input or authorization
(the question is printed), 2 a usage or connection error.
"""

from __future__ import annotations

import argparse
import asyncio
import mimetypes
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from core.client import changes as changes_out
from core.client.access import Attachment, ClientError, Outgoing
from core.client.connection import BINDINGS, AgentRef
from core.client.remote import RemoteAgents
from core.client.views import STATES, TaskView, Update, dumps

EXIT_OK, EXIT_TASK_FAILED, EXIT_USAGE, EXIT_WAITING = 0, 1, 2, 3
AGENT = "agent"  # the one agent of a command, by this name
PATCH_TYPES = {".patch": "text/x-diff", ".diff": "text/x-diff"}
NAMES = ("send", "tasks", "watch", "pending", "answer", "cancel", "changes", "mcp")


def register(commands: Any) -> None:
    """Add the client's subcommands to the `a2a-wrapper` parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("url", help="the agent's base URL (where its agent card is)")
    common.add_argument("--token", help="bearer token (default: env A2A_TOKEN)")
    common.add_argument("--json", action="store_true", help="JSON output for scripts")
    common.add_argument(
        "--binding", choices=sorted(BINDINGS), help="use this binding (default: the card's first)"
    )
    common.add_argument(
        "--protocol", choices=["1.0", "0.3"], help="use this A2A version (default: the newest)"
    )
    send = commands.add_parser(
        "send", parents=[common], help="send a message to an A2A agent and print its answer"
    )
    send.add_argument("text")
    send.add_argument("--context", help="contextId: continue this conversation")
    send.add_argument("--task", help="taskId: continue this task")
    send.add_argument("--file", action="append", type=Path, default=[], help="attach a file")
    send.add_argument("--no-wait", action="store_true", help="return once the task is accepted")
    send.add_argument(
        "--cumulative",
        action="store_true",
        help="ask for the cumulative diff since the workspace's base (a2a-wrapper daemons)",
    )
    tasks = commands.add_parser("tasks", parents=[common], help="list an agent's tasks")
    tasks.add_argument("--context", help="only this contextId")
    tasks.add_argument("--state", choices=STATES, help="only tasks in this state")
    watch = commands.add_parser("watch", parents=[common], help="follow a running task")
    watch.add_argument("task")
    commands.add_parser(
        "pending", parents=[common], help="tasks waiting for input, with their questions"
    )
    answer = commands.add_parser("answer", parents=[common], help="answer a waiting task")
    answer.add_argument("task")
    answer.add_argument("reply", help="approve, deny, or any text")
    cancel = commands.add_parser("cancel", parents=[common], help="cancel a task")
    cancel.add_argument("task")
    changes = commands.add_parser(
        "changes", parents=[common], help="a task's changes (changes.patch), or apply them"
    )
    changes.add_argument("task")
    changes.add_argument(
        "--cumulative", action="store_true", help="the context's changes up to this task"
    )
    changes.add_argument(
        "--apply", type=Path, metavar="DIR", help="apply them to the git checkout DIR"
    )
    from core.client.mcp_config import register as register_mcp  # noqa: PLC0415 - keeps `mcp` out of the other commands' start

    register_mcp(commands)


def main(args: argparse.Namespace) -> int:
    if args.command == "mcp":
        from core.client.mcp_config import main as mcp_main  # noqa: PLC0415 - as above

        return mcp_main(args)
    token = args.token or os.environ.get("A2A_TOKEN") or None
    ref = AgentRef(AGENT, args.url, token, binding=args.binding, protocol=args.protocol)
    out = Output(json=args.json)
    command: Callable[[RemoteAgents, argparse.Namespace, Output], Awaitable[int]] = COMMANDS[
        args.command
    ]

    async def run() -> int:
        async with RemoteAgents([ref]) as agents:
            return await command(agents, args, out)

    try:
        return asyncio.run(run())
    except ClientError as exc:
        out.error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


class Output:
    """Human lines (progress on stderr, answers on stdout), or JSON on stdout with `json`."""

    def __init__(self, *, json: bool, out: TextIO | None = None, err: TextIO | None = None):
        self.json = json
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def line(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def note(self, text: str) -> None:
        if not self.json:
            print(text, file=self.err, flush=True)

    def error(self, text: str) -> None:
        print(f"a2a-wrapper: {text}", file=self.err, flush=True)

    def data(self, value: Any) -> None:
        self.line(dumps(value))


def exit_code(task: TaskView) -> int:
    if task.state == "completed" or task.state in ("submitted", "working"):
        return EXIT_OK
    if task.waiting:
        return EXIT_WAITING
    return EXIT_TASK_FAILED


async def follow(stream: AsyncIterator[Update | TaskView], out: Output) -> int:
    """Show the updates as they come, then the task: its answer, its question, or its end."""
    task: TaskView | None = None
    async for item in stream:
        if isinstance(item, TaskView):
            task = item
        elif item.text and item.state == "working":
            out.note(f"  {item.text}")
    if task is None:
        raise ClientError("the agent ended the stream without a task")
    show(task, out)
    return exit_code(task)


def show(task: TaskView, out: Output) -> None:
    if out.json:
        out.data(task.as_dict())
        return
    if task.answer:
        out.line(task.answer)
    elif task.state == "completed" and task.status_text:
        out.line(task.status_text)
    if task.changes is not None:
        out.note(f"  {task.changes.summary()} (a2a-wrapper changes URL {task.id})")
    if task.question is not None:
        out.line(f"{task.state}: {task.question.text}")
        options = (task.question.approval or {}).get("options")
        hint = "|".join(options) if options else "TEXT"
        out.note(f"  answer with: a2a-wrapper answer URL {task.id} {hint}")
    elif task.state in ("submitted", "working"):
        out.line(f"task {task.id} is {task.state} (context {task.context_id})")
    elif task.state != "completed":
        out.line(f"{task.state}: {task.status_text}".rstrip(": "))
    out.note(f"  task {task.id}, context {task.context_id}: {task.state}")


async def _send(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    attachments = tuple(_attachment(path) for path in args.file)
    message = Outgoing(
        args.text,
        context_id=args.context,
        task_id=args.task,
        attachments=attachments,
        cumulative=args.cumulative,
        wait=not args.no_wait,
    )
    return await follow(agents.send(AGENT, message), out)


def _attachment(path: Path) -> Attachment:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from exc
    media = PATCH_TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
    return Attachment(path.name, data, media or "application/octet-stream")


async def _tasks(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    found = await agents.list_tasks(AGENT, args.context, args.state)
    if out.json:
        out.data([t.as_dict() for t in found])
        return EXIT_OK
    for task in found:
        text = task.question.text if task.question else task.status_text or task.answer
        first = text.strip().splitlines()[0][:80] if text.strip() else ""
        out.line(f"{task.id}  {task.context_id}  {task.state:<14}  {first}".rstrip())
    if not found:
        out.note("no tasks")
    return EXIT_OK


async def _pending(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    found = [
        task
        for state in ("input-required", "auth-required")
        for task in await agents.list_tasks(AGENT, None, state)
    ]
    if out.json:
        out.data([t.as_dict() for t in found])
        return EXIT_OK
    for task in found:
        question = task.question.text if task.question else ""
        out.line(f"{task.id}  {task.context_id}  {task.state}")
        for line in question.splitlines() or [""]:
            out.line(f"    {line}")
    if not found:
        out.note("no task waits for input")
    return EXIT_OK


async def _watch(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    return await follow(agents.watch(AGENT, args.task), out)


async def _answer(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    return await follow(agents.answer(AGENT, args.task, args.reply), out)


async def _cancel(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    task = await agents.cancel(AGENT, args.task)
    if out.json:
        out.data(task.as_dict())
    else:
        out.line(f"task {task.id}: {task.state}")
    return EXIT_OK if task.state == "canceled" else EXIT_TASK_FAILED


async def _changes(agents: RemoteAgents, args: argparse.Namespace, out: Output) -> int:
    found = await agents.changes(AGENT, args.task, cumulative=args.cumulative)
    if found is None:
        out.error(f"task {args.task} has no changes")
        return EXIT_TASK_FAILED
    if args.apply is not None:
        try:
            applied = changes_out.apply(found.patch, args.apply)
        except ClientError as exc:
            out.error(str(exc))
            return EXIT_TASK_FAILED
        if out.json:
            out.data({**found.as_dict(), "applied": str(applied.directory)})
        else:
            out.line(f"applied {found.summary()} to {applied.directory}")
        return EXIT_OK
    if out.json:
        out.data(found.as_dict())
    else:
        out.note(found.summary())
        out.out.write(found.patch)
        out.out.flush()
    return EXIT_OK


COMMANDS: dict[str, Callable[[RemoteAgents, argparse.Namespace, Output], Awaitable[int]]] = {
    "send": _send,
    "tasks": _tasks,
    "pending": _pending,
    "watch": _watch,
    "answer": _answer,
    "cancel": _cancel,
    "changes": _changes,
}
