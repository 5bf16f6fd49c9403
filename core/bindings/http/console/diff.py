"""A unified diff (a turn's `changes.patch`) as HTML: one block per file with its +/- counts,
added and removed lines coloured, and a light syntax colouring of the code (strings, comments,
keywords) that needs no library."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

_KEYWORDS = frozenset(
    [
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "case",
        "class",
        "const",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "enum",
        "except",
        "export",
        "extends",
        "false",
        "fn",
        "for",
        "from",
        "func",
        "function",
        "if",
        "impl",
        "import",
        "in",
        "interface",
        "is",
        "lambda",
        "let",
        "match",
        "mut",
        "nil",
        "none",
        "not",
        "null",
        "or",
        "package",
        "pass",
        "pub",
        "raise",
        "return",
        "self",
        "static",
        "struct",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "type",
        "use",
        "var",
        "while",
        "with",
        "yield",
        "None",
        "True",
        "False",
    ]
)
_TOKEN = re.compile(
    r"(?P<comment>(?:#|//).*$)"
    r"|(?P<string>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(?P<number>\b\d+(?:\.\d+)?\b)"
    r"|(?P<word>\b[A-Za-z_]\w*\b)"
)


@dataclass
class FileDiff:
    path: str
    additions: int = 0
    deletions: int = 0
    lines: list[str] = field(default_factory=list)


def parse(patch: str) -> list[FileDiff]:
    files: list[FileDiff] = []
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            names = line[len("diff --git ") :].split(" b/", 1)
            files.append(FileDiff(names[1] if len(names) == 2 else names[0]))
            continue
        if not files:
            continue
        current = files[-1]
        if line.startswith("+++ ") or line.startswith("--- "):
            continue
        if line.startswith("+"):
            current.additions += 1
        elif line.startswith("-"):
            current.deletions += 1
        current.lines.append(line)
    return files


def _colour(code: str) -> str:
    out: list[str] = []
    at = 0
    for match in _TOKEN.finditer(code):
        out.append(escape(code[at : match.start()]))
        kind = match.lastgroup
        text = match.group()
        if kind == "word" and text not in _KEYWORDS:
            out.append(escape(text))
        else:
            css = "kw" if kind == "word" else kind
            out.append(f'<span class="{css}">{escape(text)}</span>')
        at = match.end()
    out.append(escape(code[at:]))
    return "".join(out)


def _line(line: str) -> str:
    if line.startswith("@@"):
        return f'<div class="hunk">{escape(line)}</div>'
    css = {"+": "add", "-": "del"}.get(line[:1], "ctx")
    if css == "ctx" and not line.startswith(" "):
        return f'<div class="meta">{escape(line)}</div>'
    sign = f'<span class="sign">{escape(line[:1])}</span>'
    return f'<div class="{css}">{sign}{_colour(line[1:])}</div>'


def render(patch: str) -> str:
    files = parse(patch)
    if not files:
        return '<p class="muted">No changes.</p>'
    blocks = []
    for f in files:
        body = "".join(_line(x) for x in f.lines)
        blocks.append(
            f'<details class="file" open><summary><code>{escape(f.path)}</code> '
            f'<span class="plus">+{f.additions}</span> <span class="minus">&minus;{f.deletions}'
            f'</span></summary><div class="diff">{body}</div></details>'
        )
    return "".join(blocks)
