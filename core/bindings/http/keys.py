"""Typed application keys: everything the app owns is reached through these."""

from __future__ import annotations

from aiohttp import web

from core.api.card import CardProvider
from core.api.operations import Operations
from core.engine.service import TaskService
from core.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
SERVICE = web.AppKey("service", TaskService)
OPERATIONS = web.AppKey("operations", Operations)
CARD = web.AppKey("card", CardProvider)
