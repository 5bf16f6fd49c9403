"""The `codex-linux-sandbox` name the daemon provides (wrappers/codex/sandbox_helper.py): a
symlink to the codex binary, never where a sandboxed command could swap it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from wrappers.codex.sandbox_helper import SANDBOX_ALIAS, provide_sandbox_helper


def test_the_helper_is_a_symlink_to_the_binary_in_the_daemons_cache(tmp_path: Path) -> None:
    binary = tmp_path / "bin" / "codex"
    cache = Path.home() / ".cache" / "a2a-wrapper-test" / tmp_path.name
    folder = provide_sandbox_helper(binary, {"XDG_CACHE_HOME": str(cache)}, (tmp_path,))
    try:
        assert folder is not None
        assert folder.is_relative_to(cache)
        assert Path(os.readlink(folder / SANDBOX_ALIAS)) == binary
        # A second daemon finds it made (and a binary elsewhere gets a folder of its own).
        assert provide_sandbox_helper(binary, {"XDG_CACHE_HOME": str(cache)}, ()) == folder
        other = provide_sandbox_helper(tmp_path / "codex", {"XDG_CACHE_HOME": str(cache)}, ())
        assert other is not None
        assert other != folder
    finally:
        shutil.rmtree(cache)


def test_no_helper_under_the_temporary_directory_or_a_writable_root(tmp_path: Path) -> None:
    binary = tmp_path / "codex"
    under_tmp = {"XDG_CACHE_HOME": str(Path(tempfile.gettempdir()) / "cache")}
    assert provide_sandbox_helper(binary, under_tmp, ()) is None
    home = Path.home() / ".cache" / "a2a-wrapper-test-root"
    assert provide_sandbox_helper(binary, {"XDG_CACHE_HOME": str(home)}, (home.parent,)) is None
    assert not home.exists()
