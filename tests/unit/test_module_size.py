"""Modules stay small (style.md §4): no module in core, wrappers or examples/crew over 500
lines. Wrappers keep
only their SDK client, event mapping and permission policy; shared plumbing lives in
core/backend. Folders stay small too: none of the scanned trees holds more than about 20
modules side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def oversized(root: Path, folder: str) -> list[str]:
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            found.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return found


@pytest.mark.parametrize("folder", ["core", "wrappers", "examples/crew"])
def test_no_module_is_over_500_lines(folder: str) -> None:
    assert (ROOT / folder / "__init__.py").is_file()

    found = oversized(ROOT, folder)

    assert not found, "split these by responsibility:\n  " + "\n  ".join(found)


def test_the_scan_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "wrappers" / "x").mkdir(parents=True)
    (tmp_path / "wrappers" / "x" / "big.py").write_text("pass\n" * (LIMIT + 1))
    (tmp_path / "wrappers" / "x" / "small.py").write_text("pass\n" * LIMIT)

    assert oversized(tmp_path, "wrappers") == [f"wrappers/x/big.py: {LIMIT + 1} lines"]


FOLDER_LIMIT = 20
ROOT_MODULES = {"__init__.py", "cli.py", "daemon.py", "registry.py", "logs.py"}


def crowded(root: Path, folder: str) -> list[str]:
    """Folders (`folder` and every folder below it) holding more than FOLDER_LIMIT modules
    side by side (a sign that one is several things)."""
    found = []
    top = root / folder
    for path in [top, *sorted(p for p in top.rglob("*") if p.is_dir())]:
        modules = [p for p in path.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > FOLDER_LIMIT:
            found.append(f"{path.relative_to(root).as_posix()}: {len(modules)} modules")
    return found


# Every folder the layering test walks (tests/unit/test_layering.py's SCANNED).
SCANNED = ("core", "wrappers", "bench", "examples", "harness")


@pytest.mark.parametrize("folder", SCANNED)
def test_no_folder_holds_more_than_twenty_modules(folder: str) -> None:
    assert (ROOT / folder / "__init__.py").is_file()

    found = crowded(ROOT, folder)

    assert not found, "split these into folders:\n  " + "\n  ".join(found)


def test_the_core_root_holds_only_the_entry_points() -> None:
    assert {p.name for p in (ROOT / "core").glob("*.py")} == ROOT_MODULES


def test_the_folder_scan_counts_modules(tmp_path: Path) -> None:
    (tmp_path / "core" / "big").mkdir(parents=True)
    for n in range(FOLDER_LIMIT + 1):
        (tmp_path / "core" / "big" / f"m{n}.py").write_text("")
    (tmp_path / "core" / "big" / "__init__.py").write_text("")

    assert crowded(tmp_path, "core") == [f"core/big: {FOLDER_LIMIT + 1} modules"]


def test_the_folder_scan_counts_the_top_folder_too(tmp_path: Path) -> None:
    (tmp_path / "bench").mkdir()
    for n in range(FOLDER_LIMIT):
        (tmp_path / "bench" / f"m{n}.py").write_text("")
    (tmp_path / "bench" / "__init__.py").write_text("")

    assert crowded(tmp_path, "bench") == []

    (tmp_path / "bench" / "one_more.py").write_text("")

    assert crowded(tmp_path, "bench") == [f"bench: {FOLDER_LIMIT + 1} modules"]
