"""Push notifications as a plug-in of the engine (its `Plugins.push`): each event a run
publishes, an inline config vetted before anything of its message is stored and stored with
the task, and the dispatcher's life, opened, served and closed with the engine's."""

from __future__ import annotations

from core.push.configs import vet_config
from core.push.dispatcher import PushDispatcher
from core.wire.models import TaskPushNotificationConfig


class EnginePush:
    def __init__(self, dispatcher: PushDispatcher) -> None:
        self._dispatcher = dispatcher
        self.notify = dispatcher.notify
        self.put = dispatcher.put
        self.open = dispatcher.open
        self.serve = dispatcher.serve
        self.flush = dispatcher.flush
        self.close = dispatcher.close

    async def vet(self, config: TaskPushNotificationConfig, field: str) -> None:
        await vet_config(self._dispatcher, config, field)
