"""TaskBroker: ordered fan-out of a task's events to independent subscribers."""

from __future__ import annotations

import anyio
import pytest

from core.engine import broker as broker_module
from core.engine.broker import SubscriberOverflowError, Subscription, TaskBroker
from core.wire.enums import TaskState
from core.wire.models import StreamResponse, Task, TaskStatus, TaskStatusUpdateEvent

TASK_ID = "t-1"
CONTEXT_ID = "ctx-1"


def update(seq: int, state: TaskState = TaskState.WORKING) -> StreamResponse:
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id=TASK_ID,
            context_id=CONTEXT_ID,
            status=TaskStatus(state=state),
            metadata={"seq": seq},
        )
    )


def snapshot() -> StreamResponse:
    return StreamResponse(
        task=Task(id=TASK_ID, context_id=CONTEXT_ID, status=TaskStatus(state=TaskState.WORKING))
    )


async def drain(subscription: Subscription) -> list[StreamResponse]:
    """Every event until the subscription ends, then release it (as every caller must)."""
    async with subscription:
        return [event async for event in subscription]


async def test_every_subscriber_receives_every_event_in_order() -> None:
    broker = TaskBroker()
    events = [update(i) for i in range(5)] + [update(5, TaskState.COMPLETED)]
    received: dict[str, list[StreamResponse]] = {"a": [], "b": []}

    async def consume(name: str, subscription: Subscription) -> None:
        async with subscription:
            async for event in subscription:
                received[name].append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume, "a", broker.subscribe())
        tg.start_soon(consume, "b", broker.subscribe())
        for event in events:
            broker.publish(event)
        broker.close()

    assert received["a"] == events
    assert received["b"] == events


async def test_first_snapshot_comes_before_later_events() -> None:
    broker = TaskBroker()
    broker.publish(update(0))  # before subscribing: not delivered
    first = snapshot()

    subscription = broker.subscribe(first)
    broker.publish(update(1))
    broker.publish(update(2))
    broker.close()

    assert await drain(subscription) == [first, update(1), update(2)]


async def test_closing_one_subscription_leaves_the_other_receiving() -> None:
    broker = TaskBroker()
    leaving = broker.subscribe()
    staying = broker.subscribe()
    broker.publish(update(0))

    leaving.close()
    broker.publish(update(1))
    broker.publish(update(2))

    assert broker.has_subscribers
    broker.close()
    assert await drain(staying) == [update(0), update(1), update(2)]


async def test_close_delivers_published_events_then_ends_every_subscription() -> None:
    broker = TaskBroker()
    subscriptions = [broker.subscribe(), broker.subscribe()]
    for i in range(3):
        broker.publish(update(i))

    broker.close()
    broker.publish(update(99))  # after close: goes nowhere

    assert broker.closed
    assert not broker.has_subscribers
    for subscription in subscriptions:
        assert await drain(subscription) == [update(0), update(1), update(2)]


async def test_close_wakes_a_subscriber_waiting_for_events() -> None:
    broker = TaskBroker()
    subscription = broker.subscribe()
    waiting = anyio.Event()
    received: list[StreamResponse] = []

    async def consume() -> None:
        waiting.set()
        received.extend(await drain(subscription))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await waiting.wait()
            broker.publish(update(0))
            broker.close()

    assert received == [update(0)]


async def test_subscribing_to_a_closed_broker_yields_only_first() -> None:
    broker = TaskBroker()
    broker.publish(update(0))
    broker.close()
    first = snapshot()

    with_first = broker.subscribe(first)
    without_first = broker.subscribe()
    broker.publish(update(1))

    assert await drain(with_first) == [first]
    assert await drain(without_first) == []
    assert not broker.has_subscribers


async def test_a_subscriber_that_falls_behind_is_dropped_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(broker_module, "SUBSCRIBER_BUFFER", 3)
    broker = TaskBroker()
    slow = broker.subscribe()
    fast = broker.subscribe()
    events = [update(i) for i in range(10)]
    fast_received: list[StreamResponse] = []
    send_ack, receive_ack = anyio.create_memory_object_stream[None](1)

    async def consume_fast() -> None:
        async with send_ack, fast:
            async for event in fast:
                fast_received.append(event)
                await send_ack.send(None)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg, receive_ack:
            tg.start_soon(consume_fast)
            for event in events:
                broker.publish(event)
                # The fast subscriber keeps up: never more than one event buffered for it.
                await receive_ack.receive()
            assert broker.has_subscribers
            broker.close()

    assert fast_received == events
    slow_received: list[StreamResponse] = []
    async with slow:
        with pytest.raises(SubscriberOverflowError):
            async for event in slow:
                slow_received.append(event)
    assert slow_received == events[:3]
