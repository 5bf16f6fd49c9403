"""Typed application keys: everything the app owns is reached through these."""

from __future__ import annotations

from aiohttp import web

from core.server.card import CardProvider
from core.settings import Settings
from core.tasks.service import TaskService

SETTINGS = web.AppKey("settings", Settings)
SERVICE = web.AppKey("service", TaskService)
CARD = web.AppKey("card", CardProvider)
