"""`storage.kind` picks the daemon's stores through one name -> implementation table."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from core.settings import StorageSettings
from core.settings.sections import storage_config
from core.storage.kinds import KINDS, Storage, storage_for
from core.storage.memory import InMemoryTaskStore, InMemoryWorkspaceStore
from core.storage.postgres.tasks import PostgresTaskStore
from core.storage.postgres.workspaces import PostgresWorkspaceStore
from core.storage.sqlite.tasks import SqliteTaskStore
from core.storage.sqlite.workspaces import SqliteWorkspaceStore
from tests.conftest import make_settings


def test_the_table_names_exactly_the_kinds_the_settings_accept() -> None:
    kind = StorageSettings.model_fields["kind"].annotation

    assert set(KINDS) == set(get_args(kind))


def test_memory_is_five_memory_stores_and_no_replicas() -> None:
    storage = storage_for(storage_config(make_settings(storage={"kind": "memory"})))

    assert isinstance(storage.tasks, InMemoryTaskStore)
    assert isinstance(storage.workspaces, InMemoryWorkspaceStore)
    assert storage.database is None
    assert storage.replicas is None


def test_sqlite_stores_share_one_database_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    storage = storage_for(
        storage_config(make_settings(storage={"kind": "sqlite", "path": str(path)}))
    )

    assert isinstance(storage.tasks, SqliteTaskStore)
    assert storage.replicas is None
    assert isinstance(storage.workspaces, SqliteWorkspaceStore)
    assert {id(getattr(s, "_db", None)) for s in stores(storage)} == {id(storage.database)}


def test_postgres_stores_share_the_replicas_database() -> None:
    url = "postgresql://nobody@127.0.0.1:1/none"
    storage = storage_for(storage_config(make_settings(storage={"kind": "postgres", "url": url})))

    assert isinstance(storage.tasks, PostgresTaskStore)
    assert isinstance(storage.workspaces, PostgresWorkspaceStore)
    assert storage.replicas is not None
    assert {id(getattr(s, "_db", None)) for s in stores(storage)} == {id(storage.replicas)}


def stores(storage: Storage) -> tuple[object, ...]:
    return (storage.tasks, storage.sessions, storage.workspaces, storage.push, storage.usage)
