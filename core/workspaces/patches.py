"""A patch a caller sends with a message: which parts are patches, and whether one is safe.

A file part whose media type is `text/x-diff`, `text/x-patch` or `application/x-git-patch`
is a patch for the context's workspace. It is read twice: here, before anything is stored
(malformed, too large, or naming a path outside the workspace: InvalidParams), and by
`git apply --check` in the workspace before the turn (does it apply: all or nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from core.backend import Content, FileContent

PATCH_TYPES = frozenset({"text/x-diff", "text/x-patch", "application/x-git-patch"})

# The header lines that name a path, and how many leading components git strips (-p1).
_HEADER = re.compile(
    rb"^(?:diff --git (?P<git>.+)|--- (?P<old>\S+)|\+\+\+ (?P<new>\S+)"
    rb"|(?:rename|copy) (?:from|to) (?P<moved>.+)|new file mode (?P<mode>\d+))\s*$",
    re.MULTILINE,
)
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.MULTILINE)
_SYMLINK_MODE = b"120000"


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


def read_patch(content: FileContent, *, max_bytes: int) -> Patch:
    """The patch of a file part, or PatchError saying why it is refused."""
    if content.data is None:
        raise PatchError("a patch must be sent inline (raw), not by URL")
    data = content.data
    if len(data) > max_bytes:
        raise PatchError(
            f"the patch has {len(data)} bytes; at most {max_bytes} (workspace.maxPatchBytes)"
        )
    paths = _paths(data)
    if not paths or not (
        _HUNK.search(data) or b"GIT binary patch" in data or b"diff --git" in data
    ):
        raise PatchError("the patch is malformed: no file header and hunk found")
    return Patch(data, paths)


def _paths(data: bytes) -> tuple[str, ...]:
    found: list[str] = []
    for match in _HEADER.finditer(data):
        if match["mode"] is not None:
            if match["mode"] == _SYMLINK_MODE:
                raise PatchError("the patch creates a symbolic link; links are refused")
            continue
        if match["git"] is not None:
            words = match["git"].split(b" ")
            names = [words[0], words[-1]] if len(words) >= 2 else words
            found.extend(_checked(n, strip=True) for n in names)
        elif match["moved"] is not None:
            found.append(_checked(match["moved"].strip(), strip=False))
        else:
            name = match["old"] if match["old"] is not None else match["new"]
            if name != b"/dev/null":
                found.append(_checked(name, strip=True))
    return tuple(dict.fromkeys(found))


def _checked(raw: bytes, *, strip: bool) -> str:
    """The workspace path a header names (a/ and b/ stripped), refused when absolute or
    climbing out with `..`."""
    text = raw.decode("utf-8", "replace").strip().strip('"')
    if strip and text.startswith(("a/", "b/")):
        text = text[2:]
    elif strip and text.startswith("/"):
        raise PatchError(f"the patch names an absolute path ({text}); paths must be relative")
    path = PurePosixPath(text)
    if path.is_absolute():
        raise PatchError(f"the patch names an absolute path ({text}); paths must be relative")
    if ".." in path.parts:
        raise PatchError(f"the patch names a path outside the workspace ({text})")
    if path.parts and path.parts[0] == ".git":
        raise PatchError(f"the patch names a path inside .git ({text})")
    return str(path)


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
