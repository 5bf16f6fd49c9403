"""core.backend.binaries.find_cli: every backend finds its CLI the same way, `cliPath`, then the
pinned install, then PATH; real executables in tmp_path, looked up by the real `shutil.which`."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.backend.binaries import CliNotFoundError, CliSource, find_cli

SOURCE = CliSource("the demo CLI", "demo.cliPath", "demo@1.2.3 (`make`)")


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho demo\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    return {
        "configured": executable(tmp_path / "configured" / "demo"),
        "pinned": executable(tmp_path / "tools" / "demo-linux-x64" / "demo"),
        "on_path": executable(tmp_path / "bin" / "demo"),
    }


def test_cli_path_wins_over_the_pinned_install_and_path(places: dict[str, Path]) -> None:
    found = find_cli(
        places["configured"],
        [places["pinned"]],
        "demo",
        SOURCE,
        search_path=str(places["on_path"].parent),
    )

    assert found == places["configured"]


def test_the_pinned_install_wins_over_path(places: dict[str, Path]) -> None:
    found = find_cli(
        None, [places["pinned"]], "demo", SOURCE, search_path=str(places["on_path"].parent)
    )

    assert found == places["pinned"]


def test_path_is_the_last_resort(places: dict[str, Path], tmp_path: Path) -> None:
    absent = tmp_path / "tools" / "not-installed" / "demo"

    found = find_cli(
        None, [None, absent], "demo", SOURCE, search_path=str(places["on_path"].parent)
    )

    assert found == places["on_path"]


def test_a_pinned_file_that_is_not_executable_is_passed_over(
    places: dict[str, Path], tmp_path: Path
) -> None:
    stub = tmp_path / "tools" / "stub" / "demo"
    stub.parent.mkdir(parents=True)
    stub.write_text("")

    found = find_cli(None, [stub, places["pinned"]], "demo", SOURCE, search_path="")

    assert found == places["pinned"]


def test_a_bare_cli_path_name_is_looked_up_on_path(places: dict[str, Path]) -> None:
    found = find_cli(
        Path("demo"), [places["pinned"]], "other", SOURCE, search_path=str(places["on_path"].parent)
    )

    assert found == places["on_path"]


def test_a_relative_cli_path_is_made_absolute(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places["configured"].parent.parent)

    assert find_cli(Path("configured/demo"), [], "demo", SOURCE) == places["configured"]


def test_a_broken_cli_path_never_falls_back(places: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "demo"

    with pytest.raises(CliNotFoundError) as raised:
        find_cli(
            missing, [places["pinned"]], "demo", SOURCE, search_path=str(places["on_path"].parent)
        )

    assert str(raised.value) == (
        f"the demo CLI was not found: demo.cliPath {missing} is not an executable file; fix "
        "demo.cliPath, or unset it to use demo@1.2.3 (`make`) or `demo` on PATH"
    )


def test_nothing_found_names_every_place_tried(tmp_path: Path) -> None:
    pinned = [tmp_path / "a" / "demo", tmp_path / "b" / "demo"]

    with pytest.raises(CliNotFoundError) as raised:
        find_cli(None, pinned, "demo", SOURCE, search_path=str(tmp_path / "empty-bin"))

    assert str(raised.value) == (
        f"the demo CLI was not found: looked at {pinned[0]}, {pinned[1]}, then for `demo` on "
        "PATH; install demo@1.2.3 (`make`), or set demo.cliPath"
    )
