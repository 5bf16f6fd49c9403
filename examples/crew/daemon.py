"""The crew's one door into the daemon (`core`): everything it uses of a2a-wrapper, by name.

The crew is a client of A2A agents and, served, a backend of our daemon; it uses only what the
daemon offers any backend or tool: the backend kit, the settings loader (and its `${VAR}`
substitution), the server's entry point, logging and the SQLite layer its stores run on. When
`core` moves things, this module follows and nothing else in the crew changes
(tests/unit/test_layering.py holds the crew to it).
"""

from __future__ import annotations

from core import logs
from core.backend import (
    ArtifactOut,
    BackendEvent,
    DataContent,
    Diagnosis,
    Failed,
    FileContent,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextContent,
    Turn,
    safe_failure,
)
from core.backend.base import BackendBase
from core.backend.config import AgentBlock
from core.backend.spec import BackendSpec
from core.daemon import serve
from core.settings import ConfigError, load, substitute
from core.storage.sqlite.database import SqliteDatabase

__all__ = [
    "AgentBlock",
    "ArtifactOut",
    "BackendBase",
    "BackendEvent",
    "BackendSpec",
    "ConfigError",
    "DataContent",
    "Diagnosis",
    "Failed",
    "FileContent",
    "NeedsInput",
    "Progress",
    "SessionBound",
    "SqliteDatabase",
    "Text",
    "TextContent",
    "Turn",
    "load",
    "logs",
    "safe_failure",
    "serve",
    "substitute",
]
