"""The sandbox an agent process runs in: bubblewrap, one per principal (or per context).

A `Jail` says what the processes of one principal's agent may see: the whole system read-only,
then a private `/tmp`, then empty directories over what belongs to the daemon's user (its home,
the daemon's state directory, the workspace root, the agents' configured homes), then this
principal's own workspaces and agent home bound back read-write. Its processes live in their own
pid and IPC namespaces (and network namespace with `network="none"`), and die with the process
that started them.

The kit applies it: while `serving(jail)` is entered (the per-principal backend enters it around
everything its backend instance does), `process.spawn` / `guarded_command` start every agent
process inside it, and an SDK that starts its CLI itself is handed `sdk_cli(binary)`: a
launcher script that execs bubblewrap and then the binary. Children inherit the sandbox.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Network = Literal["host", "none"]
PRIVATE_TMP = "/tmp"  # noqa: S108 - inside the sandbox: an empty tmpfs of its own


@dataclass(frozen=True)
class Jail:
    """One sandbox. `hidden` paths get an empty tmpfs; `read_only` and `read_write` are bound
    back after that (in that order), so a path of this principal under a hidden one is seen.
    `home` is the `HOME` inside (read-write, this principal's). `launchers` is where the
    daemon writes SDK launcher scripts: it must be hidden, so an agent can never rewrite
    what the daemon later runs outside the sandbox."""

    key: str
    bwrap: str
    network: Network
    hidden: tuple[Path, ...]
    read_only: tuple[Path, ...]
    read_write: tuple[Path, ...]
    home: Path
    launchers: Path

    def arguments(self, *, set_home: bool = True, exposed: Sequence[Path] = ()) -> list[str]:
        """bubblewrap's arguments, up to and including the `--` before the command.
        `exposed`: more paths bound read-only (see `needed`)."""
        args = [
            self.bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", PRIVATE_TMP,
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
        ]  # fmt: skip
        if self.network == "none":
            args.append("--unshare-net")
        # The most specific path wins whatever its kind: a later mount covers what an earlier
        # one put below it, so they go shallowest first (a hidden root inside a read-only
        # repository stays hidden; a workspace inside the hidden root is seen).
        # (A hidden path that does not exist yet hides nothing; checked at each start.)
        mounts = [(p, 0, ["--tmpfs", str(p)]) for p in self.hidden if p.exists()]
        read_only = [*self.read_only, *exposed]
        mounts += [(p, 1, ["--ro-bind-try", str(p), str(p)]) for p in read_only]
        mounts += [(p, 2, ["--bind-try", str(p), str(p)]) for p in self.read_write]
        for _path, _kind, mount in sorted(mounts, key=lambda m: (len(m[0].parts), m[1])):
            args += mount
        if set_home:
            args += ["--setenv", "HOME", str(self.home)]
        return [*args, "--"]

    def prepare(self) -> None:
        """Make the directories the jail binds read-write (bwrap binds only what exists)."""
        for path in (*self.read_write, self.home, self.launchers):
            path.mkdir(parents=True, exist_ok=True)

    def needed(self, binary: str, env: Mapping[str, str] | None = None) -> list[Path]:
        """What the process must still see of what is hidden: the folder of its binary and the
        folders on its PATH (the daemon chose them: e.g. a helper a wrapper puts first on the
        agent's PATH under the daemon's cache), read-only; never a hidden path itself."""
        path = (env if env is not None else os.environ).get("PATH", "")
        wanted = [Path(binary).parent, *(Path(p) for p in path.split(os.pathsep) if p)]
        return [
            folder
            for folder in dict.fromkeys(wanted)
            if folder.is_absolute()
            and any(folder != h and _under(folder, h) for h in self.hidden)
            and not any(_under(folder, p) for p in self.read_write)
        ]

    def wrap(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
        """`argv` inside this jail. The environment's HOME is kept when it is one of the
        jail's own read-write places, else it becomes the jail's `home`."""
        self.prepare()
        home = (env if env is not None else os.environ).get("HOME")
        own = home is not None and any(_under(Path(home), p) for p in self.read_write)
        exposed = self.needed(argv[0], env) if argv else []
        return [*self.arguments(set_home=not own, exposed=exposed), *argv]


def _under(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


_current: contextvars.ContextVar[Jail | None] = contextvars.ContextVar(
    "a2a_wrapper_sandbox", default=None
)


def current() -> Jail | None:
    """The jail agent processes started here go into (None: no sandbox)."""
    return _current.get()


@contextlib.contextmanager
def serving(jail: Jail | None) -> Iterator[None]:
    """Start every agent process started in this block (and in tasks it starts) in `jail`."""
    token = _current.set(jail)
    try:
        yield
    finally:
        _current.reset(token)


def sdk_cli(binary: Path | str) -> str:
    """What to give an SDK that starts the agent's CLI itself (a `cli_path`-like option):
    `binary` as it is without a sandbox; in one, a launcher script that execs bubblewrap and
    then `binary`, with the SDK's arguments. The script lives in the jail's hidden launcher
    directory, named by its content, written once."""
    jail = current()
    if jail is None:
        return str(binary)
    jail.prepare()
    exposed = jail.needed(str(binary))
    command = shlex.join([*jail.arguments(exposed=exposed), str(binary)])
    text = f'#!/bin/sh\nexec {command} "$@"\n'
    name = hashlib.sha256(text.encode()).hexdigest()[:16]
    script = jail.launchers / f"{Path(binary).name}-{name}"
    if not script.exists():
        partial = script.with_suffix(".partial")
        partial.write_text(text)
        partial.chmod(0o700)
        partial.replace(script)
    return str(script)


def find_bwrap(environ: Mapping[str, str] | None = None) -> str | None:
    path = (environ if environ is not None else os.environ).get("PATH", os.defpath)
    return shutil.which("bwrap", path=path)


def probe(bwrap: str | None) -> tuple[bool, str]:
    """Whether bubblewrap can make a sandbox here (it may be installed and still refused by
    the kernel: no user namespaces, a seccomp profile) and what it said."""
    if bwrap is None:
        return False, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = [
        bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", PRIVATE_TMP,
        "--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent", "--", "true",
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{bwrap} could not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return False, f"{bwrap} is installed but refused to make a sandbox: {said[0]}"
    return True, f"{bwrap} makes sandboxes here"
