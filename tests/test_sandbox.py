"""The kit's sandbox (issue 38), with real bubblewrap and real processes: what a jail hides and
what it binds back, the spawn helper and the SDK launcher putting processes in it, one backend
instance per principal (or per context), and what `check` says about it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from core.backend import Content, SessionBound, Text, TextContent, Turn
from core.backend import process as kit
from core.backend.base import BackendBase, running
from core.backend.control import Capabilities, SteerRefusedError, capabilities_of
from core.backend.jails import PerJail
from core.backend.sandbox import Jail, find_bwrap, probe, sdk_cli, serving
from core.cli import main

BWRAP = find_bwrap()


def jail(tmp_path: Path, *, network: str = "host", key: str = "alice") -> Jail:
    assert BWRAP is not None, "bubblewrap is not installed (the project's .ci/run installs it)"
    own = tmp_path / "root" / "workspaces" / key
    own.mkdir(parents=True, exist_ok=True)
    return Jail(
        key=key,
        bwrap=BWRAP,
        network=network,  # type: ignore[arg-type]
        hidden=(tmp_path / "root",),
        read_only=(),
        read_write=(own,),
        home=tmp_path / "state" / key / "home",
        launchers=tmp_path / "state" / ".launchers" / key,
    )


def test_a_jail_hides_the_rest_of_the_root_and_binds_back_its_own(tmp_path: Path) -> None:
    j = jail(tmp_path)
    other = tmp_path / "root" / "workspaces" / "bob"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("bob's")
    own = j.read_write[0]
    loose = tmp_path / "loose.txt"  # under /tmp, neither hidden nor bound: the private /tmp
    loose.write_text("loose")
    script = (
        f"cat {other}/secret.txt; echo mine > {own}/mine.txt; "
        f"echo intruder > {other}/x.txt; echo HOME=$HOME; cat {loose}"
    )
    done = subprocess.run(  # noqa: S603 - an argument list
        j.wrap(["sh", "-c", script]), capture_output=True, text=True, check=False
    )
    assert "bob's" not in done.stdout
    assert (own / "mine.txt").read_text() == "mine\n"
    assert not (other / "x.txt").exists()
    assert f"HOME={j.home}" in done.stdout
    assert "loose" not in done.stdout, "a private /tmp"


def test_a_jail_without_network_reaches_no_address(tmp_path: Path) -> None:
    done = subprocess.run(  # noqa: S603
        jail(tmp_path, network="none").wrap(["cat", "/proc/net/dev"]),
        capture_output=True,
        text=True,
        check=True,
    )
    devices = [line.split(":")[0].strip() for line in done.stdout.splitlines()[2:]]
    assert devices == ["lo"]


async def test_the_spawn_helper_starts_processes_in_the_current_jail(tmp_path: Path) -> None:
    j = jail(tmp_path)
    secret = tmp_path / "root" / "daemon.sqlite3"
    secret.write_text("state")
    with serving(j):
        inside = await kit.spawn(["sh", "-c", f"cat {secret}; echo $$"])
    outside = await kit.spawn(["cat", str(secret)])
    assert inside.stdout is not None and outside.stdout is not None
    said = (await inside.stdout.receive()).decode()
    await kit.stop(inside)
    assert "state" not in said
    assert said.strip() == "2", "pid 2 of a pid namespace of its own (bwrap's init is 1)"
    assert (await outside.stdout.receive()).decode() == "state"
    await kit.stop(outside)


def test_an_sdk_launcher_runs_its_binary_in_the_jail_out_of_the_agents_reach(
    tmp_path: Path,
) -> None:
    j = jail(tmp_path)
    assert sdk_cli("/bin/sh") == "/bin/sh", "no sandbox: the binary itself"
    with serving(j):
        launcher = sdk_cli("/bin/sh")
    assert Path(launcher).parent == j.launchers
    secret = tmp_path / "root" / "x.txt"
    secret.write_text("hidden")
    done = subprocess.run(  # noqa: S603
        [launcher, "-c", f"cat {secret}; echo ran; ls {j.launchers}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "ran" in done.stdout and "hidden" not in done.stdout
    assert Path(launcher).name not in done.stdout, "the launcher is hidden from the agent"


class Recorder(BackendBase):
    """A backend that says which jail it runs in."""

    name = "recorder"
    made: list[str] = []  # noqa: RUF012 - shared by the instances of one test

    async def start(self) -> None:
        from core.backend.sandbox import current  # noqa: PLC0415

        jail_now = current()
        Recorder.made.append(jail_now.key if jail_now else "none")

    async def run_turn(self, turn: Turn) -> AsyncIterator[Any]:
        from core.backend.sandbox import current  # noqa: PLC0415

        jail_now = current()
        yield SessionBound(f"s-{turn.context_id}")
        yield Text(jail_now.key if jail_now else "none")


def turn(principal: str, context_id: str) -> Turn:
    return Turn(principal, context_id, "t", "m", None, ())


@pytest.mark.parametrize("scope", ["principal", "context"])
async def test_one_backend_instance_per_principal_or_per_context(
    tmp_path: Path, scope: str
) -> None:
    Recorder.made = []

    def jail_of(principal: str, context_id: str) -> Jail:
        key = principal if scope == "principal" else f"{principal}/{context_id}"
        return jail(tmp_path, key=key)

    backend = PerJail(Recorder(), lambda j: Recorder(), jail_of)
    async with running(backend):
        said = []
        for who, ctx in [("alice", "a1"), ("alice", "a2"), ("bob", "b1")]:
            said += [e.text async for e in backend.run_turn(turn(who, ctx)) if isinstance(e, Text)]
    if scope == "principal":
        assert said == ["alice", "alice", "bob"]
        assert Recorder.made == ["alice", "bob"]
    else:
        assert said == ["alice/a1", "alice/a2", "bob/b1"]
        assert Recorder.made == ["alice/a1", "alice/a2", "bob/b1"]


class Steered(Recorder):
    """A recorder that declares steering and models, and says in which jail it was steered."""

    steered: list[tuple[str, str]] = []  # noqa: RUF012 - shared by the instances of one test

    def __init__(self, models: tuple[str, ...]) -> None:
        self.models = models

    def capabilities(self) -> Capabilities:
        return Capabilities(steer=True, models=self.models)

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        from core.backend.sandbox import current  # noqa: PLC0415

        jail_now = current()
        text = " ".join(p.text for p in parts if isinstance(p, TextContent))
        Steered.steered.append((jail_now.key if jail_now else "none", text))


async def test_sandboxed_instances_declare_and_steer_as_the_backend_does(tmp_path: Path) -> None:
    Steered.steered = []
    backend = PerJail(
        Steered(("declared",)), lambda j: Steered(("reported",)), lambda p, c: jail(tmp_path, key=p)
    )
    async with running(backend):
        # Before any instance starts, the template's declaration; then an instance's.
        assert capabilities_of(backend) == Capabilities(steer=True, models=("declared",))
        with pytest.raises(SteerRefusedError):
            await backend.steer(turn("alice", "a1"), (TextContent("too early"),))
        async for _ in backend.run_turn(turn("alice", "a1")):
            pass
        assert capabilities_of(backend) == Capabilities(steer=True, models=("reported",))
        await backend.steer(turn("alice", "a1"), (TextContent("use the other table"),))
    assert Steered.steered == [("alice", "use the other table")]


def refusal(words: str) -> str:
    """A `bwrap` that the kernel refuses, as bubblewrap reports it."""
    return f"#!/bin/sh\necho 'bwrap: {words}' >&2\nexit 1\n"


def test_probe_says_when_bubblewrap_is_refused(tmp_path: Path) -> None:
    assert probe(BWRAP)[0], probe(BWRAP)[1]
    refused = tmp_path / "bwrap"
    refused.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    refused.chmod(0o755)
    works, detail = probe(str(refused))
    assert not works
    assert "installed but refused" in detail and "No permissions" in detail
    assert probe(None) == (
        False,
        "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)",
    )


def two_principals(tmp_path: Path, mode: str) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    config = {
        "backend": "claude",
        "claude": {"workingDirectory": str(work), "env": {"ANTHROPIC_API_KEY": "k"}},
        "storage": {"path": str(tmp_path / "state" / "t.sqlite3")},
        "workspace": {"mode": "copy"},
        "sandbox": {"mode": mode},
        "server": {
            "auth": {
                "tokens": [
                    {"token": "a" * 40, "principal": "alice"},
                    {"token": "b" * 40, "principal": "bob"},
                ]
            }
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_check_warns_of_several_principals_without_a_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", two_principals(tmp_path, "none")])
    out = capsys.readouterr().out
    assert "warn sandbox: the tokens name 2 principals" in out
    assert "ok   sandbox: mode none; " in out
    main(["check", two_principals(tmp_path, "bubblewrap")])
    out = capsys.readouterr().out
    assert "warn sandbox" not in out
    assert f"ok   sandbox: mode bubblewrap; {BWRAP} makes sandboxes here" in out


def test_check_fails_when_the_kernel_refuses_bubblewrap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    refused = bin_dir / "bwrap"
    refused.write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    refused.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert main(["check", two_principals(tmp_path, "bubblewrap")]) == 1
    out = capsys.readouterr().out
    assert "FAIL sandbox: mode bubblewrap; " in out
    assert "refused to make a sandbox: bwrap: setting up uid map: Permission denied" in out
