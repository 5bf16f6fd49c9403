"""Names the daemon gives a context's workspace: its folder and its branch."""

from __future__ import annotations

import hashlib
import re

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_BRANCH_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
BRANCH_MAX = 100  # bytes of `a2a/<context>` kept as is; longer ids get branch_slug


def branch_slug(context_id: str) -> str:
    """A branch name component for any context id: only letters, digits, `_` and `-` (so
    never `..`, `.lock` or a control character), bounded, and unique by its digest."""
    digest = hashlib.sha256(context_id.encode()).hexdigest()[:10]
    readable = _BRANCH_SAFE.sub("-", context_id).strip("-")[:48]
    return f"{readable}-{digest}" if readable else f"context-{digest}"


def slug(principal: str, context_id: str) -> str:
    """A directory name for the key: readable, unique, never a path."""
    digest = hashlib.sha256(f"{principal}\0{context_id}".encode()).hexdigest()[:10]
    readable = _SLUG.sub("-", context_id).strip(".-")[:48] or "context"
    return f"{readable}-{digest}"


def principal_dir(principal: str) -> str:
    """The folder of one principal's workspaces under the root (readable, unique, never a
    path): a sandbox binds it whole, so a workspace made later is seen by that principal's
    running agent server, and nobody else's is."""
    digest = hashlib.sha256(principal.encode()).hexdigest()[:10]
    readable = _SLUG.sub("-", principal).strip(".-")[:32] or "principal"
    return f"{readable}-{digest}"
