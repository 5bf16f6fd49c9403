"""The permission policy: answers the CLI's permission requests, since no human is there.

Without a handler the CLI silently denies every tool that needs approval, so the daemon always
installs this one. Order of the decision:

1. a `denyTools` pattern matches -> refuse (deny always wins);
2. `dangerouslyAllowAllTools` -> approve;
3. an `allowTools` pattern matches -> approve;
4. the default: file writes inside the working directory, and shell commands whose paths all lie
   inside it (and that name no URL), are approved; everything else (reads outside it, URLs, MCP
   tools, memory, ...) is refused, or, with `approvals.mode: ask`, asked of the caller.

Patterns use the CLI's own `--allow-tool` syntax, `kind` or `kind(argument)`: `shell`,
`shell(git:*)` (a command and its subcommands), `shell(make test)`, `write`, `write(.env)` (a
relative path matches trailing components), `write(/abs/path)`, `read(...)`, `url(example.com)`
(https unless a scheme is given; `*.example.com` globs), `<mcp-server>` or
`<mcp-server>(tool)`, and other request kinds by name (`memory`).

The shell check is a best-effort reading of the command line (absolute, `~` and `..` paths,
URLs); it is a policy, not a sandbox.
"""

from __future__ import annotations

import copy
import fnmatch
import os
import re
import shlex
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from copilot import PermissionRequest
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session_events import (
    PermissionRequestMcp,
    PermissionRequestRead,
    PermissionRequestShell,
    PermissionRequestUrl,
    PermissionRequestWrite,
)

from core.backend import ApprovalRequest
from wrappers.copilot.config import TOOL_PATTERN

# Paths a shell command may name without leaving the working directory.
_HARMLESS = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# scp-style remotes: git@github.com:owner/repo.git
_REMOTE = re.compile(r"^[\w.-]+@[\w.-]+:")
_SPLIT_OPERATORS = re.compile(r"[<>|&;()=]+")
_HINT = "(copilot.allowTools can allow it)"


@dataclass(frozen=True)
class Rule:
    kind: str
    argument: str | None

    @classmethod
    def parse(cls, pattern: str) -> Rule:
        match = TOOL_PATTERN.match(pattern)
        if match is None:
            raise ValueError(f"not a permission pattern: {pattern!r}")
        argument = match.group("argument")
        return cls(match.group("kind"), argument.strip() if argument else None)


@dataclass(frozen=True)
class Decision:
    """`by_default`: no rule decided it, the default policy did (in `approvals.mode: ask`
    such a refusal becomes a question to the caller instead)."""

    approved: bool
    reason: str
    by_default: bool = False


class PermissionPolicy:
    """Decides each permission request; `handler` is what the SDK session calls."""

    def __init__(
        self,
        working_directory: Path,
        *,
        allow: Iterable[str] = (),
        deny: Iterable[str] = (),
        allow_all: bool = False,
    ) -> None:
        self._root = Path(os.path.realpath(working_directory))
        self._allow = [Rule.parse(p) for p in allow]
        self._deny = [Rule.parse(p) for p in deny]
        self._allow_all = allow_all

    def at(self, working_directory: Path) -> PermissionPolicy:
        """The same rules for a session working in `working_directory` (its workspace)."""
        policy = copy.copy(self)
        policy._root = Path(os.path.realpath(working_directory))
        return policy

    def decide(self, request: PermissionRequest) -> Decision:
        what = describe(request)
        if any(self._matches(rule, request) for rule in self._deny):
            return Decision(False, f"{what} is refused by copilot.denyTools")
        if self._allow_all:
            return Decision(True, "dangerouslyAllowAllTools")
        if any(self._matches(rule, request) for rule in self._allow):
            return Decision(True, "copilot.allowTools")
        return self._default(request, what)

    async def handler(self, request: PermissionRequest, invocation: object) -> Answer:
        """The SDK callback when nobody is asked (`approvals.mode: policy`)."""
        return answer_for(self.decide(request))

    # ----- the default policy ------------------------------------------------------------------

    def _default(self, request: PermissionRequest, what: str) -> Decision:
        match request:
            case PermissionRequestWrite(file_name=path) | PermissionRequestRead(path=path):
                if self._inside(path):
                    return Decision(True, f"{request.kind} inside the working directory", True)
                return Decision(False, f"{what} is outside the working directory {_HINT}", True)
            case PermissionRequestShell() as shell:
                return self._default_shell(shell, what)
        return Decision(False, f"{what} is not allowed by default {_HINT}", True)

    def _default_shell(self, shell: PermissionRequestShell, what: str) -> Decision:
        outside = [p for p in self._shell_paths(shell) if not self._inside(p)]
        if outside:
            return Decision(
                False, f"{what} names {outside[0]}, outside the working directory", True
            )
        if _shell_urls(shell):
            return Decision(False, f"{what} reaches a URL {_HINT}", True)
        return Decision(True, "a shell command inside the working directory", True)

    def _inside(self, path: str) -> bool:
        if path in _HARMLESS:
            return True
        resolved = Path(os.path.realpath(self._root / os.path.expanduser(path)))
        return resolved == self._root or self._root in resolved.parents

    def _shell_paths(self, shell: PermissionRequestShell) -> list[str]:
        base = Path(shell.resolved_working_directory or self._root)
        found = [*shell.possible_paths, *(shell.resolved_paths or {}).values()]
        for token in _tokens(shell.full_command_text):
            if _URL.match(token) or _REMOTE.match(token):
                continue
            if token.startswith(("/", "~")) or ".." in Path(token).parts:
                found.append(token)
        return [str(base / os.path.expanduser(p)) for p in found]

    # ----- patterns ----------------------------------------------------------------------------

    def _matches(self, rule: Rule, request: PermissionRequest) -> bool:
        matched = rule.argument is None and rule.kind == request.kind
        match request:
            case PermissionRequestShell() as shell if rule.kind == "url":
                urls = _shell_urls(shell)
                matched = bool(urls) and all(_url_matches(rule.argument, u) for u in urls)
            case PermissionRequestShell() as shell:
                matched = rule.kind == "shell" and _shell_matches(rule.argument, shell)
            case PermissionRequestWrite(file_name=path) | PermissionRequestRead(path=path):
                matched = rule.kind == request.kind and _path_matches(rule.argument, path)
            case PermissionRequestUrl(url=url) if rule.kind == "url":
                matched = _url_matches(rule.argument, url)
            case PermissionRequestMcp() as mcp if rule.kind == mcp.server_name:
                matched = rule.argument is None or rule.argument in _mcp_names(mcp)
        return matched


Answer = PermissionDecisionApproveOnce | PermissionDecisionReject


def answer_for(decision: Decision) -> Answer:
    if decision.approved:
        return PermissionDecisionApproveOnce()
    return PermissionDecisionReject(
        feedback=f"The a2a-wrapper permission policy refused this: {decision.reason}."
    )


def approval_request(request: PermissionRequest, decision: Decision) -> ApprovalRequest:
    """The question for the caller (`approvals.mode: ask`) about a request the rules left to
    the default policy, which would refuse it."""
    kind: Literal["tool", "command", "file", "other"] = "other"
    detail: dict[str, Any] = {"reason": decision.reason}
    tool: str = request.kind
    match request:
        case PermissionRequestShell(full_command_text=command):
            kind, detail["command"] = "command", command
        case PermissionRequestWrite(file_name=path) | PermissionRequestRead(path=path):
            kind, detail["path"] = "file", path
        case PermissionRequestUrl(url=url):
            detail["url"] = url
        case PermissionRequestMcp(server_name=server, tool_title=title, args=arguments):
            kind, tool = "tool", f"{server}({title})"
            detail["arguments"] = arguments
    what = describe(request)
    return ApprovalRequest(
        request_id=str(uuid.uuid4()),
        kind=kind,
        tool=tool,
        summary=what[0].upper() + what[1:],
        detail=detail,
    )


def request_key(request: PermissionRequest) -> str:
    """What `approve_always` remembers: this command, path, URL or MCP tool."""
    match request:
        case PermissionRequestShell(full_command_text=command):
            return f"shell:{command}"
        case PermissionRequestWrite(file_name=path) | PermissionRequestRead(path=path):
            return f"{request.kind}:{path}"
        case PermissionRequestUrl(url=url):
            return f"url:{url}"
        case PermissionRequestMcp(server_name=server, tool_name=tool):
            return f"mcp:{server}:{tool}"
    return request.kind


def describe(request: PermissionRequest) -> str:
    """A short description of a request for notes and refusals (never argument values)."""
    match request:
        case PermissionRequestShell(full_command_text=command):
            return f"the shell command {_clip(command)!r}"
        case PermissionRequestWrite(file_name=name):
            return f"writing {name}"
        case PermissionRequestRead(path=path):
            return f"reading {path}"
        case PermissionRequestUrl(url=url):
            return f"fetching {url}"
        case PermissionRequestMcp(server_name=server, tool_title=tool):
            return f"the MCP tool {server}({tool})"
    return f"a {request.kind} request"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _tokens(command: str) -> list[str]:
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        words = command.split()
    tokens: list[str] = []
    for word in words:
        tokens.extend(t for t in _SPLIT_OPERATORS.split(word) if t)
    return tokens


def _shell_urls(shell: PermissionRequestShell) -> list[str]:
    urls = [u.url for u in shell.possible_urls]
    urls.extend(t for t in _tokens(shell.full_command_text) if _URL.match(t) or _REMOTE.match(t))
    return urls


def _segments(shell: PermissionRequestShell) -> list[str]:
    if shell.command_segments:
        return [s.full_command_text.strip() for s in shell.command_segments]
    if shell.commands:
        return [c.identifier.strip() for c in shell.commands]
    return [shell.full_command_text.strip()]


def _shell_matches(argument: str | None, shell: PermissionRequestShell) -> bool:
    """`shell` matches any command; `shell(x)` exactly x; `shell(x:*)` x and `x <anything>`.
    Every command of a compound line must match."""
    if argument is None:
        return True
    prefix = argument[:-2] if argument.endswith(":*") else None
    for segment in _segments(shell):
        if prefix is not None:
            if segment != prefix and not segment.startswith(prefix + " "):
                return False
        elif segment != argument:
            return False
    return True


def _path_matches(argument: str | None, path: str) -> bool:
    if argument is None:
        return True
    if os.path.isabs(argument):
        return fnmatch.fnmatchcase(path, argument)
    parts = Path(path).parts
    wanted = Path(argument).parts
    tail = str(Path(*parts[-len(wanted) :])) if len(parts) >= len(wanted) else path
    return fnmatch.fnmatchcase(tail, argument)


def _url_matches(argument: str | None, url: str) -> bool:
    if argument is None:
        return True
    want = urlsplit(argument if _URL.match(argument) else "https://" + argument)
    have = urlsplit(url if _URL.match(url) else "https://" + url)
    if want.scheme.lower() != have.scheme.lower():
        return False
    if not fnmatch.fnmatchcase((have.hostname or "").lower(), (want.hostname or "").lower()):
        return False
    return not want.path.strip("/") or have.path.startswith(want.path)


def _mcp_names(mcp: PermissionRequestMcp) -> set[str]:
    names = {mcp.tool_title, mcp.tool_name}
    prefix = mcp.server_name + "-"
    if mcp.tool_name.startswith(prefix):
        names.add(mcp.tool_name[len(prefix) :])
    return names
