"""The MCP face: tools and resources over an `AgentAccess`, for IDE agents (docs/mcp.md
names them) to hand work to A2A agents.

Written once against `core.client.access.AgentAccess`: `a2a-wrapper mcp` serves it over stdio
with `RemoteAgents` (A2A); a daemon can serve the same tools over its own agent. Every tool
names its agent and the A2A contextId / taskId explicitly: nothing is kept per MCP session, so
any client (and the stateless 2026-07-28 protocol revision) sees the same results.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from core.client import control
from core.client.access import AgentAccess, Attachment, ClientError, Outgoing
from core.client.views import TaskView, Update

DEFAULT_WAIT = 600.0
T = TypeVar("T")
INSTRUCTIONS = (
    "These tools hand tasks to A2A agents (coding agents and others). `list_agents` says who "
    "is there. `send_message` gives an agent a task and waits for the answer; a conversation "
    "continues when you pass back the context_id you got. When the agent asks a question or "
    "for permission, answer with `answer`; take its code changes as a patch with `get_changes`."
)


class FileIn(BaseModel):
    """A file to attach: `text` for text files, `base64` for anything else."""

    name: str
    text: str | None = None
    base64: str | None = None
    media_type: str = "text/plain"


def build_server(access: AgentAccess, *, name: str = "a2a-wrapper") -> MCPServer:
    server: MCPServer = MCPServer(name=name, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = _Tools(access)
    server.add_tool(tools.list_agents, name="list_agents", structured_output=False)
    server.add_tool(tools.send_message, name="send_message", structured_output=False)
    server.add_tool(tools.get_task, name="get_task", structured_output=False)
    server.add_tool(tools.answer, name="answer", structured_output=False)
    server.add_tool(tools.cancel_task, name="cancel_task", structured_output=False)
    server.add_tool(tools.get_changes, name="get_changes", structured_output=False)

    @server.resource("a2a://agents/{agent}/card", name="agent card", mime_type="application/json")
    async def card(agent: str) -> str:
        """The agent's A2A agent card."""
        return json.dumps(await _call(access.card(agent)), indent=2)

    @server.resource("a2a://agents/{agent}/tasks/{task_id}/transcript", name="task transcript")
    async def transcript(agent: str, task_id: str) -> str:
        """A task's messages, answer and state as text."""
        return await _call(access.transcript(agent, task_id))

    return server


async def add_card_resources(server: MCPServer, access: AgentAccess, names: list[str]) -> None:
    """List each agent's card as a concrete resource (templates alone are not listed)."""
    from mcp.server.mcpserver.resources import FunctionResource  # noqa: PLC0415 - MCP only

    for agent in names:

        async def read(agent: str = agent) -> str:
            return json.dumps(await _call(access.card(agent)), indent=2)

        server.add_resource(
            FunctionResource.from_function(
                read,
                uri=f"a2a://agents/{agent}/card",
                name=f"{agent} agent card",
                mime_type="application/json",
            )
        )


class _Tools:
    def __init__(self, access: AgentAccess) -> None:
        self._access = access

    async def _agent(self, agent: str) -> str:
        if agent:
            return agent
        known = await self._access.agents()
        if len(known) == 1:
            return known[0].name
        raise ToolError("name the agent: one of " + ", ".join(a.name for a in known))

    async def list_agents(self) -> CallToolResult:
        """The A2A agents these tools reach: name, description, skills (what each can do),
        protocol, binding, and what each lets a message choose (its conversation-control
        capabilities: steer, fork, models, efforts, modes; null when its card says nothing)."""
        found = [a.as_dict() for a in await _call(self._access.agents())]
        lines = []
        for a in found:
            skills = "; ".join(f"{s['name']}: {s['description']}" for s in a["skills"])
            lines.append(f"- {a['name']} ({a['url']}): {a['description']}")
            if skills:
                lines.append(f"  skills: {skills}")
            if a["capabilities"] is not None:
                shown = "; ".join(f"{k}: {v}" for k, v in control.summary(a["capabilities"]))
                lines.append(f"  conversation control: {shown}")
        return CallToolResult(
            content=[TextContent(type="text", text="\n".join(lines) or "no agents")],
            structured_content={"agents": found},
        )

    async def send_message(
        self,
        *,
        text: Annotated[str, Field(description="the message (the task, or a follow-up)")],
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name (list_agents)")] = "",
        context_id: Annotated[
            str | None, Field(description="continue this conversation (a previous context_id)")
        ] = None,
        task_id: Annotated[
            str | None, Field(description="continue this task (one waiting for input)")
        ] = None,
        files: Annotated[list[FileIn] | None, Field(description="files to attach")] = None,
        patches: Annotated[
            list[str] | None,
            Field(description="unified diffs to apply to the agent's workspace first"),
        ] = None,
        cumulative_changes: Annotated[
            bool, Field(description="report the workspace's changes since its base")
        ] = False,
        wait: Annotated[
            bool, Field(description="wait for the answer (else return at once)")
        ] = True,
        timeout_seconds: Annotated[
            float, Field(description="how long to wait before returning the running task", gt=0)
        ] = DEFAULT_WAIT,
    ) -> CallToolResult:
        """Send a message to an A2A agent and wait for its answer (progress is reported while
        waiting). Returns the answer; or, when the agent asks a question or permission, the
        question (reply with `answer`); or the task's id and state when it is still running
        (check with `get_task`)."""
        attachments = [_file(f) for f in files or ()]
        attachments += [_patch(p, n) for n, p in enumerate(patches or ())]
        message = Outgoing(
            text,
            context_id=context_id,
            task_id=task_id,
            attachments=tuple(attachments),
            cumulative=cumulative_changes,
            wait=wait,
        )
        name = await self._agent(agent)
        stream = self._access.send(name, message)
        return await _waited(stream, ctx, timeout_seconds, self._access, name)

    async def get_task(
        self,
        task_id: str,
        agent: Annotated[str, Field(description="the agent's name")] = "",
    ) -> CallToolResult:
        """A task's state, and its answer or question."""
        return _result(await _call(self._access.get_task(await self._agent(agent), task_id)))

    async def answer(
        self,
        task_id: str,
        reply: Annotated[
            str, Field(description="approve, deny, or text (a denial's reason, or the answer)")
        ],
        ctx: Context,
        agent: Annotated[str, Field(description="the agent's name")] = "",
        timeout_seconds: Annotated[float, Field(gt=0)] = DEFAULT_WAIT,
    ) -> CallToolResult:
        """Answer a task that waits for input (a question or a permission request) and wait
        for what comes next, as `send_message` does."""
        name = await self._agent(agent)
        stream = self._access.answer(name, task_id, reply)
        return await _waited(stream, ctx, timeout_seconds, self._access, name)

    async def cancel_task(
        self, task_id: str, agent: Annotated[str, Field(description="the agent's name")] = ""
    ) -> CallToolResult:
        """Cancel a task (the agent stops its work)."""
        return _result(await _call(self._access.cancel(await self._agent(agent), task_id)))

    async def get_changes(
        self,
        task_id: str,
        agent: Annotated[str, Field(description="the agent's name")] = "",
        cumulative: Annotated[
            bool, Field(description="all the conversation's changes up to this task")
        ] = False,
    ) -> CallToolResult:
        """The code changes of a task's turn (or of its whole conversation) as a unified diff
        (`git apply` applies it)."""
        name = await self._agent(agent)
        found = await _call(self._access.changes(name, task_id, cumulative=cumulative))
        said = (
            f"{found.summary()}\n\n{found.patch}" if found else f"Task {task_id} changed no files."
        )
        return CallToolResult(
            content=[TextContent(type="text", text=said)],
            structured_content={"message": said, "changes": found.as_dict() if found else None},
        )


async def _call(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except ClientError as exc:
        raise ToolError(str(exc)) from exc


async def _waited(
    stream: AsyncIterator[Update | TaskView],
    ctx: Context,
    seconds: float,
    access: AgentAccess,
    agent: str,
) -> CallToolResult:
    """Follow `stream` for at most `seconds`, reporting progress; the task then."""
    task: TaskView | None = None
    task_id = ""
    steps = 0
    try:
        with anyio.move_on_after(seconds):
            async for item in stream:
                if isinstance(item, TaskView):
                    task = item
                    continue
                task_id = item.task_id or task_id
                if item.text and item.state == "working":
                    steps += 1
                    await ctx.report_progress(steps, None, item.text)
    except ClientError as exc:
        raise ToolError(str(exc)) from exc
    finally:
        await _close(stream)
    if task is None and task_id:
        task = await _call(access.get_task(agent, task_id))
    if task is None:
        return CallToolResult(
            content=[TextContent(type="text", text=f"No answer within {seconds:g} s.")],
            is_error=True,
        )
    return _result(task)


async def _close(stream: AsyncIterator[Any]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def _result(task: TaskView) -> CallToolResult:
    said = describe(task)
    # Some clients hand the model the structured content instead of the text: it says the
    # same in words too.
    return CallToolResult(
        content=[TextContent(type="text", text=said)],
        structured_content={"message": said, **task.as_dict()},
        is_error=task.state in ("failed", "rejected"),
    )


def describe(task: TaskView) -> str:
    """The task in words a calling model can act on."""
    head = f"Task {task.id} (context_id {task.context_id}) is {task.state}."
    if task.state == "completed":
        lines = [head, "", task.answer or task.status_text or "(no text)"]
        if task.changes is not None:
            lines += ["", f"It made {task.changes.summary()}: get_changes(task_id={task.id!r})."]
        return "\n".join(lines)
    if task.question is not None:
        return f"{head}\n\n{task.question.for_a_model(task.id)}"
    if task.state in ("submitted", "working"):
        return (
            f"{head} It is still running: check on it with get_task(task_id={task.id!r}), or "
            "stop it with cancel_task."
        )
    return f"{head}\n\n{task.status_text}".rstrip()


def _file(spec: FileIn) -> Attachment:
    if spec.text is not None:
        return Attachment(spec.name, spec.text.encode(), spec.media_type)
    try:
        data = base64.b64decode(spec.base64 or "", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ToolError(f"file {spec.name}: base64 is not valid") from exc
    return Attachment(spec.name, data, spec.media_type)


def _patch(text: str, n: int) -> Attachment:
    return Attachment(f"patch-{n + 1}.patch", text.encode(), "text/x-diff")
