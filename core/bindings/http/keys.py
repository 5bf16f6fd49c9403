"""Typed application keys: everything the app owns is reached through these."""

from __future__ import annotations

from aiohttp import web

from core.api.card import CardProvider
from core.api.operations import Operations
from core.cluster.events import ClusterEvents
from core.cluster.lease import Cluster
from core.cluster.turns import ClusterTurns
from core.engine.service import TaskService
from core.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
SERVICE = web.AppKey("service", TaskService)
OPERATIONS = web.AppKey("operations", Operations)
CARD = web.AppKey("card", CardProvider)
CLUSTER = web.AppKey("cluster", Cluster)
CLUSTER_EVENTS = web.AppKey("cluster_events", ClusterEvents)
CLUSTER_TURNS = web.AppKey("cluster_turns", ClusterTurns)
