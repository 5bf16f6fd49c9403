"""Conversation control for Antigravity: what the backend declares (core/backend/control.py)
and what a `readOnly` turn lets run.

The SDK offers no way into a running turn (`Conversation.send` waits for the running turn to
end first, and the connection's `send` starts a new turn's step tracking), and no fork of a
conversation: steer and fork are not declared. A turn's own model is the model of the harness
serving it (a harness runs one model): a turn choosing another one gets a harness started on
it, which resumes the stored conversation, and the next turn one on the configured model.
`readOnly` is the pre-tool hook refusing every tool but reads for that turn.
"""

from __future__ import annotations

from core.backend.control import Capabilities

# What a readOnly turn may call: reading files, the web, its own task list, asking or ending.
# Everything else (writes, commands, images, schedules, subagents, MCP tools, a tool the
# runtime adds later) is refused by the pre-tool hook.
READ_TOOLS = frozenset(
    {"view_file", "list_dir", "list_directory", "search_directory", "grep_search", "find_file",
     "find_by_name", "read_url_content", "search_web", "manage_task", "ask_question", "finish"}
)  # fmt: skip


def capabilities() -> Capabilities:
    """Any model name (the endpoint checks it), the readOnly mode, approvals, resume."""
    return Capabilities(
        steer=False,
        fork=False,
        models=None,
        modes=("default", "readOnly"),
        approvals=True,
        resume=True,
        image_input=False,
    )


def read_only_refusal(tool: str) -> str | None:
    """Why a readOnly turn refuses `tool` (None: it may run)."""
    if tool in READ_TOOLS:
        return None
    return (
        f"{tool} is not allowed in readOnly mode, where this turn may read but not change anything."
    )
