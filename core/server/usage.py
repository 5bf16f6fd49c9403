"""The daemon's usage accounting and budgets: built from the settings, opened before the task
service (its totals are read from the store before the first message is admitted) and closed
after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from core.settings import Settings
from core.settings_usage import budget_config
from core.sqlite_db import SqliteDatabase
from core.tasks.budgets import Budgets
from core.tasks.usage_store import InMemoryUsageStore, SqliteUsageStore, UsageStore

BUDGETS = web.AppKey("budgets", Budgets)


def build_budgets(settings: Settings, db: SqliteDatabase | None) -> Budgets:
    store: UsageStore = InMemoryUsageStore() if db is None else SqliteUsageStore(db.path, db=db)
    return Budgets(budget_config(settings.budget), store)


async def budgets_lifecycle(app: web.Application) -> AsyncIterator[None]:
    budgets = app[BUDGETS]
    await budgets.open()
    try:
        yield
    finally:
        await budgets.close()
