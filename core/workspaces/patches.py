"""A patch a caller sends with a message: which parts are patches, and whether one is safe.

A file part whose media type is `text/x-diff`, `text/x-patch` or `application/x-git-patch`
is a patch for the context's workspace. It is read twice: here, before anything is stored
(malformed, too large, or naming a path outside the workspace: InvalidParams), and by
`git apply --check` in the workspace before the turn (does it apply: all or nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.backend import Content, FileContent
from core.workspaces.patch_names import PatchNameError, names

PATCH_TYPES = frozenset({"text/x-diff", "text/x-patch", "application/x-git-patch"})

_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.MULTILINE)


class PatchError(ValueError):
    """The patch is refused; the message is written for the caller."""


@dataclass(frozen=True)
class Patch:
    data: bytes
    paths: tuple[str, ...]


def is_patch(content: Content) -> bool:
    if not isinstance(content, FileContent):
        return False
    return (content.media_type or "").split(";")[0].strip().lower() in PATCH_TYPES


def read_patch(content: FileContent, *, max_bytes: int, before: int = 0) -> Patch:
    """The patch of a file part, or PatchError saying why it is refused; `before` is how
    many bytes the message's earlier patch parts have (the limit holds for all together)."""
    if content.data is None:
        raise PatchError("a patch must be sent inline (raw), not by URL")
    data = content.data
    if len(data) > max_bytes:
        raise PatchError(
            f"the patch has {len(data)} bytes; at most {max_bytes} (workspace.maxPatchBytes)"
        )
    if before + len(data) > max_bytes:
        raise PatchError(
            f"the message's patches have {before + len(data)} bytes or more together; at most "
            f"{max_bytes} (workspace.maxPatchBytes)"
        )
    try:
        paths = names(data)
    except PatchNameError as exc:
        raise PatchError(str(exc)) from None
    if not paths or not (
        _HUNK.search(data) or b"GIT binary patch" in data or b"diff --git" in data
    ):
        raise PatchError("the patch is malformed: no file header and hunk found")
    return Patch(data, paths)


_CONFLICT = re.compile(
    r"^error: (?:patch failed: (?P<failed>.+?):\d+"
    r"|(?P<missing>.+?): (?:does not exist in (?:index|working tree)|No such file or directory)"
    r"|(?P<exists>.+?): already exists in (?:index|working directory)"
    r"|(?P<link>.+?): (?:affected file .+ is )?beyond a symbolic link"
    r"|(?P<other>.+?): .+)$",
    re.MULTILINE,
)


def conflicting(stderr: str) -> list[str]:
    names = []
    for match in _CONFLICT.finditer(stderr):
        name = next((g for g in match.groups() if g), None)
        if name and name not in names:
            names.append(name)
    return names
