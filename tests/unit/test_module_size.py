"""Wrappers keep only their SDK client, event mapping and permission policy, in modules of at
most 500 lines (style.md §4); shared plumbing lives in core/backend."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def oversized(root: Path) -> list[str]:
    found = []
    for path in sorted((root / "wrappers").rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT:
            found.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return found


def test_no_module_in_wrappers_is_over_500_lines() -> None:
    found = oversized(ROOT)

    assert not found, "split these:\n  " + "\n  ".join(found)


def test_the_scan_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "wrappers" / "x").mkdir(parents=True)
    (tmp_path / "wrappers" / "x" / "big.py").write_text("pass\n" * (LIMIT + 1))
    (tmp_path / "wrappers" / "x" / "small.py").write_text("pass\n" * LIMIT)

    assert oversized(tmp_path) == [f"wrappers/x/big.py: {LIMIT + 1} lines"]
