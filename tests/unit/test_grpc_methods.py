"""The gRPC services run the one method table (core/api/methods.py) through their protobuf
codecs (core/bindings/grpc/codecs.py): every RPC of both services is a row of `METHODS`, no
module of the binding calls an A2A operation itself, and what the old per-RPC functions did
(v0.3 resource names, history 0, the cards, the empty reply) is in the codecs."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import empty_pb2

from core.api import methods
from core.api.calls import Call
from core.api.card import CardProvider, CardView
from core.api.methods import METHODS
from core.bindings.grpc import codecs
from core.bindings.grpc.protos import V03_SERVICE, V1_SERVICE, v03_pb2, v1_pb2
from core.bindings.grpc.server import V03_RPCS, V1_RPCS
from core.wire.codecs.codec import OperationCodec
from core.wire.errors import ExtendedAgentCardNotConfiguredError, InvalidParamsError
from tests.conftest import make_settings

ROOT = Path(__file__).resolve().parents[2]
BINDING = ROOT / "core" / "bindings" / "grpc"
PROTO_CODECS: tuple[OperationCodec, ...] = (codecs.V1, codecs.V03)


@pytest.mark.parametrize(
    ("service", "rows"), [(V1_SERVICE, V1_RPCS), (V03_SERVICE, V03_RPCS)], ids=["v1.0", "v0.3"]
)
def test_every_rpc_of_both_services_is_a_row_of_the_method_table(
    service: Any, rows: dict[str, methods.Method]
) -> None:
    rpcs = {m.name: m for m in service.methods}
    assert set(rows) == set(rpcs)
    for name, descriptor in rpcs.items():
        row = rows[name]
        assert any(row is m for m in METHODS), name
        assert row.streaming == descriptor.server_streaming, name
    # v0.3 renames three RPCs and has no ListTasks; v1.0 names every one after its operation.
    assert {n for n, r in V03_RPCS.items() if n != r.operation} == {
        "TaskSubscription",
        "ListTaskPushNotificationConfig",
        "GetAgentCard",
    }
    assert all(n == r.operation for n, r in V1_RPCS.items())
    assert len(V1_RPCS) == len(METHODS)


def _ops_calls(path: Path) -> set[str]:
    """The names called on an `ops` attribute or name (`call.ops.get_task(...)`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if (isinstance(owner, ast.Attribute) and owner.attr in ("ops", "_ops")) or (
                isinstance(owner, ast.Name) and owner.id == "ops"
            ):
                found.add(node.func.attr)
    return found


def test_no_hand_written_per_rpc_function_remains() -> None:
    assert importlib.util.find_spec("core.bindings.grpc.methods") is None
    operations = _ops_calls(ROOT / "core" / "api" / "methods.py") - {"require_push"}
    assert {"send_message", "get_task", "delete_push_config"} <= operations
    for module in BINDING.glob("*.py"):
        assert not _ops_calls(module) & operations, module.name


def test_v03_codec_reads_resource_names() -> None:
    codec = codecs.V03
    get = codec.get_task_in(v03_pb2.GetTaskRequest(name="tasks/t-1", history_length=0))
    assert (get.id, get.history_length) == ("t-1", None)  # 0: no limit
    assert (
        codec.get_task_in(v03_pb2.GetTaskRequest(name="tasks/t-1", history_length=3)).history_length
        == 3
    )
    assert codec.cancel_task_in(v03_pb2.CancelTaskRequest(name="tasks/t-2")).id == "t-2"
    assert codec.subscribe_in(v03_pb2.TaskSubscriptionRequest(name="tasks/t-3")).id == "t-3"
    listing = v03_pb2.ListTaskPushNotificationConfigRequest(parent="tasks/t-4")
    assert codec.push_config_ref_in(listing, need_id=False).task_id == "t-4"
    named = "tasks/t-5/pushNotificationConfigs/c-1"
    for request in (
        v03_pb2.GetTaskPushNotificationConfigRequest(name=named),
        v03_pb2.DeleteTaskPushNotificationConfigRequest(name=named),
    ):
        found = codec.push_config_ref_in(request, need_id=True)
        assert (found.task_id, found.id) == ("t-5", "c-1")
    # A get without a config id gets the task's config; a delete needs the id.
    bare_get = v03_pb2.GetTaskPushNotificationConfigRequest(name="tasks/t-6")
    assert codec.push_config_ref_in(bare_get, need_id=True).id is None
    bare_delete = v03_pb2.DeleteTaskPushNotificationConfigRequest(name="tasks/t-6")
    with pytest.raises(InvalidParamsError) as raised:
        codec.push_config_ref_in(bare_delete, need_id=True)
    assert raised.value.violations == [("name", "invalid")]
    with pytest.raises(InvalidParamsError):
        codec.get_task_in(v03_pb2.GetTaskRequest(name="t-1"))


def test_v1_codec_pages_push_configs_and_needs_ids() -> None:
    with pytest.raises(InvalidParamsError):
        codecs.V1.push_config_ref_in(
            v1_pb2.DeleteTaskPushNotificationConfigRequest(task_id="t"), need_id=True
        )
    request = codecs.V1.push_config_ref_in(
        v1_pb2.ListTaskPushNotificationConfigsRequest(task_id="t", page_size=1), need_id=False
    )
    configs = [
        codecs.V1.push_config_in(
            v1_pb2.TaskPushNotificationConfig(id=f"c{i}", task_id="t", url="https://x/h")
        )
        for i in range(3)
    ]
    page = codecs.V1.push_configs_out(configs, request)
    assert isinstance(page, v1_pb2.ListTaskPushNotificationConfigsResponse)
    assert ([c.id for c in page.configs], page.next_page_token) == (["c0"], "1")


@pytest.mark.parametrize("codec", PROTO_CODECS, ids=["v1.0", "v0.3"])
def test_empty_results_are_protobuf_empty(codec: OperationCodec) -> None:
    assert codec.empty_out() == empty_pb2.Empty()


class _NoOps:
    """Operations for a card call: none is called."""


def _card_call(**card: Any) -> Call:
    settings = make_settings(agentCard={"v03Fields": False, **card})
    view = CardView(CardProvider(settings, None), "http://127.0.0.1:1")
    return Call(_NoOps(), "alice", None, view)  # type: ignore[arg-type]


async def test_cards_per_service_version() -> None:
    card_row = methods.BY_OPERATION["GetExtendedAgentCard"]
    # v1.0: the extended card only, in its strict schema.
    with pytest.raises(ExtendedAgentCardNotConfiguredError):
        await card_row.run(_card_call(), codecs.V1)
    # v0.3: the public card without an extended one, with the v0.3 fields whatever
    # `agentCard.v03Fields` says (the v0.3 AgentCard message has no other form).
    public = await card_row.run(_card_call(), codecs.V03)
    assert isinstance(public, v03_pb2.AgentCard)
    assert public.name == "Test agent"
    assert public.url == "http://127.0.0.1:1/a2a/jsonrpc"
    extended = {
        "allowAnonymous": True,
        "skills": [{"id": "x", "name": "X", "description": "x", "tags": []}],
    }
    for codec, message in ((codecs.V1, v1_pb2.AgentCard), (codecs.V03, v03_pb2.AgentCard)):
        card = await card_row.run(_card_call(extended=extended), codec)
        assert isinstance(card, message)
        assert [s.id for s in card.skills] == ["echo", "x"]
