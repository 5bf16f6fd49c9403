"""Where Codex's shell commands find `codex-linux-sandbox`, whatever bubblewrap the machine has.

Codex runs each sandboxed command as `bwrap ... -- codex-linux-sandbox ...`: its own binary under
the name `codex-linux-sandbox` (the arg0 trick). It makes that name at start, as a symlink in a
folder under CODEX_HOME that it puts first on PATH, and passes the link's full path to bwrap. It
refuses to make the folder when CODEX_HOME lies under the temporary directory (a sandboxed
command may write there and could swap the helper for something that skips the sandbox); then
it passes the bare name. Its bundled bwrap takes `--argv0` and copes; Debian's bubblewrap (0.8,
no `--argv0`) looks the bare name up on PATH and fails: `bwrap: execvp codex-linux-sandbox: No
such file or directory`, for every command.

So the daemon provides the name itself: a folder holding only a `codex-linux-sandbox` symlink to
the codex binary, first on the agent's PATH (Codex's own folder, when it makes one, goes before
it). The folder lies under the daemon's own cache, never under the temporary directory or the
working directory: the same rule Codex applies, for the same reason.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import structlog

SANDBOX_ALIAS = "codex-linux-sandbox"

_log = structlog.get_logger(__name__)


def helper_directory(binary: Path, environ: Mapping[str, str]) -> Path:
    """The daemon's folder of Codex helper names for `binary` (one per binary path)."""
    home = Path(environ.get("HOME") or Path.home())
    cache = environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    tag = hashlib.sha256(str(binary).encode()).hexdigest()[:16]
    return Path(cache) / "a2a-wrapper" / "codex-helpers" / tag


def provide_sandbox_helper(
    binary: Path, environ: Mapping[str, str], writable: tuple[Path, ...]
) -> Path | None:
    """Make (or find) the folder with `codex-linux-sandbox` -> `binary`; None when it would lie
    somewhere a sandboxed command can write (under the temporary directory or one of
    `writable`), or cannot be made (logged: commands then work only with a bwrap that takes
    `--argv0`)."""
    folder = helper_directory(binary, environ)
    unsafe = (Path(tempfile.gettempdir()).resolve(), *(p.resolve() for p in writable))
    if any(folder.resolve().is_relative_to(root) for root in unsafe):
        _log.warning("codex.sandbox_helper.unsafe_place", folder=str(folder))
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        link = folder / SANDBOX_ALIAS
        if not (link.is_symlink() and Path(os.readlink(link)) == binary):
            staged = folder / f".{SANDBOX_ALIAS}.{os.getpid()}"
            staged.unlink(missing_ok=True)
            staged.symlink_to(binary)
            staged.replace(link)  # atomic: a daemon starting beside this one sees one or the other
    except OSError as exc:
        _log.warning("codex.sandbox_helper.not_made", folder=str(folder), error=str(exc))
        return None
    return folder
