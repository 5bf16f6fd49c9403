"""Approvals over A2A: how a permission request is shown to the caller, and how the caller's
answer is read (docs/protocol.md, "Approvals").

The question is a status message with a text part (for people) and a data part (for programs):

    {"type": "a2a-wrapper/approval-request", "requestId", "kind", "tool", "summary", "detail",
     "options": ["approve", "approve_always", "deny"]}

The answer is a message on the same taskId: a data part `{"decision": "approve" |
"approve_always" | "deny", "message"?: str}`, or a text part that is just the decision
(`approve`, `approve always`, `deny`, in any case).
"""

from __future__ import annotations

from typing import Any, get_args

from core.backend import ApprovalAnswer, ApprovalRequest, Decision
from core.wire.errors import InvalidParamsError
from core.wire.models import Message, Part

REQUEST_TYPE = "a2a-wrapper/approval-request"
OPTIONS: tuple[str, ...] = get_args(Decision)


def question(event: ApprovalRequest) -> list[Part]:
    text = (
        f"Approval needed: {event.summary}\n"
        "Answer on this task with `approve`, `approve always` or `deny` "
        '(or a data part {"decision": ..., "message": ...}).'
    )
    data: dict[str, Any] = {
        "type": REQUEST_TYPE,
        "requestId": event.request_id,
        "kind": event.kind,
        "tool": event.tool,
        "summary": event.summary,
        "detail": dict(event.detail),
        "options": list(OPTIONS),
    }
    return [Part(text=text), Part(data=data, media_type="application/json")]


def _decision(value: object) -> Decision | None:
    if not isinstance(value, str):
        return None
    normal = value.strip().lower().replace(" ", "_").replace("-", "_")
    for option in get_args(Decision):
        if normal == option:
            return option  # type: ignore[no-any-return]
    return None


def answer_of(message: Message) -> ApprovalAnswer:
    """The decision in the caller's message; InvalidParams says what is accepted otherwise."""
    for part in message.parts:
        if isinstance(part.data, dict) and "decision" in part.data:
            decision = _decision(part.data["decision"])
            if decision is None:
                break
            note = part.data.get("message")
            return ApprovalAnswer(decision, note if isinstance(note, str) else None)
        if part.text is not None:
            decision = _decision(part.text)
            if decision is not None:
                return ApprovalAnswer(decision)
    raise InvalidParamsError(
        "This task waits for an approval: answer with approve, approve always or deny "
        '(text), or a data part {"decision": "approve" | "approve_always" | "deny"}',
        violations=[("message.parts", "an approval decision")],
    )
