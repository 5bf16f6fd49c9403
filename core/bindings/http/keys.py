"""Typed application keys: everything the app owns is reached through these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from core.cluster import Cluster
from core.cluster_events import ClusterEvents
from core.cluster_turns import ClusterTurns
from core.server.card import CardProvider
from core.settings import Settings
from core.tasks.service import TaskService

if TYPE_CHECKING:  # grpcio is imported only when `server.grpcPort` is set
    from core.server.grpc.server import GrpcBinding

SETTINGS = web.AppKey("settings", Settings)
SERVICE = web.AppKey("service", TaskService)
CARD = web.AppKey("card", CardProvider)
GRPC: web.AppKey[GrpcBinding] = web.AppKey("grpc")
CLUSTER = web.AppKey("cluster", Cluster)
CLUSTER_EVENTS = web.AppKey("cluster_events", ClusterEvents)
CLUSTER_TURNS = web.AppKey("cluster_turns", ClusterTurns)
