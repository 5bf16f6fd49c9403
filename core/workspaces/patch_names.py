"""The file names a patch touches, read as `git apply` reads them, so the pre-check refuses
what git would write outside the workspace (or refuse) before anything is stored.

Git takes a file's names from the `---`/`+++` lines (a name ends at a tab, where a timestamp
may follow), from `rename`/`copy from`/`to`, and from `diff --git` when those are missing;
any of them may be C-quoted (`"b/\\056git/x"`: escapes, octal bytes). Hunk bodies are skipped
by their line counts, so a removed line `-- x` is never taken for a header. Names lose their
first component (`-p1`) except after `rename`/`copy`.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_HUNK = re.compile(rb"^@@ -\d+(?:,(?P<old>\d+))? \+\d+(?:,(?P<new>\d+))? @@")
_MODE = re.compile(rb"^(?:new file mode|new mode|deleted file mode|old mode) (?P<mode>\d+)\s*$")
_MOVED = re.compile(rb"^(?:rename|copy) (?:from|to) (?P<name>.+)$")
_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13}
_SYMLINK_MODE = b"120000"


class PatchNameError(ValueError):
    """A name git would refuse or that leaves the workspace; the message is for the caller."""


def names(data: bytes) -> tuple[str, ...]:
    """Every workspace path `data` touches (in order, once each); PatchNameError when one is
    absolute, climbs out with `..`, is inside `.git`, or the patch makes a symbolic link."""
    found: list[str] = []
    lines = data.split(b"\n")
    i = 0
    while i < len(lines):
        line = lines[i].rstrip(b"\r")
        i += 1
        hunk = _HUNK.match(line)
        if hunk is not None:
            i = _skip_hunk(lines, i, int(hunk["old"] or 1), int(hunk["new"] or 1))
        elif line.startswith(b"diff --git "):
            found.extend(_git_header(line[len(b"diff --git ") :]))
        elif line.startswith((b"--- ", b"+++ ")):
            for name in _traditional(line[4:]):
                if name != "/dev/null":
                    found.append(_checked(name, strip=True))
        elif (moved := _MOVED.match(line)) is not None:
            found.append(_checked(_unquoted(moved["name"].strip()), strip=False))
        elif (mode := _MODE.match(line)) is not None and mode["mode"] == _SYMLINK_MODE:
            raise PatchNameError("the patch creates a symbolic link; links are refused")
    return tuple(dict.fromkeys(found))


def _skip_hunk(lines: list[bytes], i: int, old: int, new: int) -> int:
    while i < len(lines) and (old > 0 or new > 0):
        first = lines[i][:1]
        if first in (b" ", b"", b"\r"):
            old, new = old - 1, new - 1
        elif first == b"-":
            old -= 1
        elif first == b"+":
            new -= 1
        elif first != b"\\":  # "\ No newline at end of file"
            break
        i += 1
    return i


def _git_header(rest: bytes) -> list[str]:
    """The names of `diff --git A B`: quoted ones unquoted; unquoted ones split where both
    halves name the same file (as git does), else every split is checked."""
    if rest.startswith(b'"'):
        first, after = _quoted(rest)
        second = after.lstrip(b" ")
        other = _quoted(second)[0] if second.startswith(b'"') else second.decode("utf-8", "replace")
        return [_checked(first, strip=True), _checked(other, strip=True)]
    text = rest.decode("utf-8", "replace")
    start = rest.rfind(b' "')
    if rest.endswith(b'"') and start > 0:
        last, _ = _quoted(rest[start + 1 :])
        first_name = rest[:start].decode("utf-8", "replace")
        return [_checked(first_name, strip=True), _checked(last, strip=True)]
    splits = [(text[:n], text[n + 1 :]) for n, c in enumerate(text) if c == " "]
    for one, two in splits:
        if _strip(one) == _strip(two):
            return [_checked(one, strip=True)]
    return [_checked(part, strip=True) for pair in splits for part in pair] or [
        _checked(text, strip=True)
    ]


def _traditional(rest: bytes) -> list[str]:
    """The name of a `---`/`+++` line: up to a tab (a timestamp may follow); where no tab
    ends it, both the whole and its first word are checked (a space-separated date)."""
    if rest.startswith(b'"'):
        return [_quoted(rest)[0]]
    name = rest.split(b"\t", 1)[0].rstrip()
    text = name.decode("utf-8", "replace")
    word = text.split(" ", 1)[0]
    return [text] if word == text else [text, word]


def _quoted(raw: bytes) -> tuple[str, bytes]:
    """A C-quoted name at the start of `raw` (git's unquote_c_style) and what follows it."""
    out = bytearray()
    i = 1
    while i < len(raw):
        char = raw[i : i + 1]
        if char == b'"':
            return out.decode("utf-8", "surrogateescape"), raw[i + 1 :]
        if char != b"\\":
            out += char
            i += 1
            continue
        escape = raw[i + 1 : i + 2]
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            i += 2
        elif escape in (b"\\", b'"'):
            out += escape
            i += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", raw[i + 1 : i + 4]):
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            raise PatchNameError("the patch has a malformed quoted file name")
    raise PatchNameError("the patch has a malformed quoted file name")


def _unquoted(raw: bytes) -> str:
    if raw.startswith(b'"'):
        return _quoted(raw)[0]
    return raw.decode("utf-8", "replace")


def _strip(name: str) -> str:
    """`-p1`: the name without its first component (as git apply strips it)."""
    return name.split("/", 1)[1] if "/" in name else name


def _checked(name: str, *, strip: bool) -> str:
    """The workspace path a header names, refused when absolute, climbing out with `..` or
    inside `.git` (any component, any case: git refuses those too)."""
    if name.startswith("/"):
        raise PatchNameError(f"the patch names an absolute path ({name}); paths must be relative")
    text = _strip(name) if strip else name
    path = PurePosixPath(text)
    if path.is_absolute():
        raise PatchNameError(f"the patch names an absolute path ({text}); paths must be relative")
    if ".." in path.parts or "\0" in text:
        raise PatchNameError(f"the patch names a path outside the workspace ({text})")
    if any(part.lower() == ".git" for part in path.parts):
        raise PatchNameError(f"the patch names a path inside .git ({text})")
    return str(path)
