"""v1 enums. Serialised by name; accepted by name or by proto number (§5.7)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator


class TaskState(StrEnum):
    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL

    @property
    def interrupted(self) -> bool:
        return self in _INTERRUPTED


_TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
_INTERRUPTED = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
_STATE_BY_NUMBER = dict(enumerate(TaskState))


class Role(StrEnum):
    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


_ROLE_BY_NUMBER = dict(enumerate(Role))


def _by_number(table: dict[int, Any]) -> BeforeValidator:
    def convert(value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            if value not in table:
                raise ValueError(f"unknown enum number {value}")
            return table[value]
        return value

    return BeforeValidator(convert)


TaskStateField = Annotated[TaskState, _by_number(_STATE_BY_NUMBER)]
RoleField = Annotated[Role, _by_number(_ROLE_BY_NUMBER)]
