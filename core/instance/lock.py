"""The storage lock: one daemon per storage file, for that daemon's whole life."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


class StorageLockError(Exception):
    """The storage lock cannot be taken; the message says why, for the operator."""


class StorageInUseError(StorageLockError):
    """Another daemon holds the storage: this one must not touch it."""

    def __init__(self, storage: Path, holder: str) -> None:
        self.storage = storage
        self.holder = holder
        super().__init__(
            f"storage {storage} is in use by another a2a-wrapper daemon (pid {holder}); "
            "stop it or give this one a storage.path of its own"
        )


def lock_path(storage: Path) -> Path:
    return storage.with_name(storage.name + ".lock")


@contextlib.contextmanager
def storage_lock(storage: Path) -> Iterator[None]:
    """Hold an exclusive, non-blocking `flock` on `<storage>.lock` while entered. The kernel
    drops it when the process ends, however it ends, so holding it also proves that every
    earlier daemon on this storage is dead. Raises StorageInUseError when another process holds
    it, StorageLockError when the lock file cannot be created."""
    path = lock_path(storage)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_CLOEXEC: an agent process must not inherit (and so keep) the lock.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StorageLockError(
            f"cannot open the storage at {storage}: "
            f"cannot create its lock file {path}: {exc.strerror}"
        ) from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise StorageInUseError(storage, holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
