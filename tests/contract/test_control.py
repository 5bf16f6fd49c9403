"""Conversation control on every agent (issue 37, docs/protocol.md#conversation-control): the
card says what the agent can do; a message steers a running turn where the agent can (and is
refused, naming the queue, where it cannot); messages behind a running turn wait visibly, in
order, and leave the queue when canceled; a new context forks another one's session where the
agent can (and is refused where it cannot); a message chooses its turn's model; `readOnly`
prevents an edit. Each case runs on the targets that declare what it needs (targets.py), a
refusal case on those that lack it."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Hold, ModelRequest, Say, Shell, Step, WriteFile
from tests.contract.agent import Agent, Task, answer, context, state, status_text, wrapper
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget

COMPLETED = "TASK_STATE_COMPLETED"
SUBMITTED = "TASK_STATE_SUBMITTED"
TERMINAL = ("COMPLETED", "FAILED", "CANCELED", "REJECTED")
UNSUPPORTED = -32004
STEER = "No, use the other table: ORDERS_2024."
RECORD_KEYS = {"steer", "fork", "models", "efforts", "modes"}


@pytest.fixture(scope="module")
def agent(target: BackendTarget, serve: Serve) -> Agent:
    return serve(block=target.runs_shell)


def _record(card: dict[str, Any]) -> dict[str, Any]:
    """The params of the card's conversation-control extension (there is exactly one)."""
    extensions = (card.get("capabilities") or {}).get("extensions") or []
    records = [
        e["params"]
        for e in extensions
        if isinstance(e.get("params"), dict) and e["params"].keys() >= RECORD_KEYS
    ]
    assert len(records) == 1, extensions
    record: dict[str, Any] = records[0]
    return record


def test_the_card_publishes_what_the_agent_can_do(agent: Agent) -> None:
    record = _record(agent.card())
    lacks = agent.target.lacks

    assert record["steer"] is ("steer" not in lacks), record
    assert record["fork"] is ("fork" not in lacks), record
    models = record["models"]
    chooses = models is None or agent.target.other_model in models
    assert chooses is ("model" not in lacks), record
    assert ("readOnly" in record["modes"]) is ("readOnly" not in lacks), record
    assert "default" in record["modes"]


def _held(agent: Agent, model: MockModel, text: str, *steps: Step) -> tuple[Task, ModelRequest]:
    """A task whose turn's first model request the mock holds (then `steps`), sent on a
    context of its own without waiting; the task and that request."""
    model.script(list(steps))
    task = agent.send(text, context(), returnImmediately=True)
    return task, model.wait_for_request(lambda r: text in r.last_user_text)


def _terminal_updates(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    updates = [e["statusUpdate"] for e in events if "statusUpdate" in e]
    return [u for u in updates if u["status"]["state"].endswith(TERMINAL)]


@pytest.mark.needs("steer")
def test_a_steered_message_reaches_the_running_turn_which_completes_once(
    agent: Agent, model: MockModel
) -> None:
    task, held = _held(
        agent,
        model,
        "Update the report from the SALES table.",
        Hold(Shell("echo first-step")),
        Say("Done, with the other table."),
    )
    steer = agent.params(STEER, taskId=task["id"], control={"delivery": "steer"})
    steer_id = steer["message"]["messageId"]

    with ThreadPoolExecutor(1) as pool:
        # The steering message's stream: the task's events from then on.
        streamed = pool.submit(agent.events, "SendStreamingMessage", steer)
        model.wait_until(
            lambda: (
                True
                if any(
                    m["messageId"] == steer_id for m in agent.get(task["id"]).get("history") or []
                )
                else None
            )
        )
        model.release()
        events = streamed.result(timeout=120)
    done = agent.until_done(task["id"], timeout=120)

    assert state(done) == COMPLETED, done
    turn = model.tool_requests()
    after = turn[[r is held for r in turn].index(True) + 1 :]
    assert after, "the turn went on after the held request"
    assert STEER in after[0].dump(), "the running turn's next request carries the steer"
    assert [m["messageId"] for m in done["history"]].count(steer_id) == 1
    assert len(_terminal_updates(events)) == 1, events
    assert events[-1]["statusUpdate"]["status"]["state"] == COMPLETED
    # The stream starts with the Task, whose status (or a later update) says it was steered.
    statuses = [
        e["task"]["status"] if "task" in e else e.get("statusUpdate", {}).get("status", {})
        for e in events
    ]
    steered = [s for s in statuses if wrapper(s.get("message") or {}).get("steered") == steer_id]
    assert steered, events
    assert "steered" in status_text({"status": steered[0]}).lower()


@pytest.mark.lacks("steer")
def test_steering_an_agent_that_cannot_is_refused_naming_the_queue(
    agent: Agent, model: MockModel
) -> None:
    task, _ = _held(
        agent, model, "Update the report from the SALES table.", Hold(Say("Done as first."))
    )

    error = agent.refusal(agent.params(STEER, taskId=task["id"], control={"delivery": "steer"}))
    model.release()
    done = agent.until_done(task["id"], timeout=120)

    assert error["code"] == UNSUPPORTED, error
    assert 'delivery: "queue"' in error["message"], error
    assert state(done) == COMPLETED, done
    assert not any(STEER in r.dump() for r in model.requests)


def test_messages_behind_a_running_turn_wait_in_a_visible_queue_and_leave_it_when_canceled(
    agent: Agent, model: MockModel
) -> None:
    first, _ = _held(agent, model, "First: count the rows.", Hold(Say("First done.")))
    ctx = first["contextId"]

    second = agent.send("Second: drop the table.", ctx, returnImmediately=True)
    # With the running task's id and `delivery: queue`: a new task in its context.
    third = agent.send_params(
        agent.params(
            "Third: summarize the rows.",
            taskId=first["id"],
            returnImmediately=True,
            control={"delivery": "queue"},
        )
    )

    assert (state(second), state(third)) == (SUBMITTED, SUBMITTED), (second, third)
    assert third["id"] not in (first["id"], second["id"]) and third["contextId"] == ctx
    assert wrapper(second)["queue"] == {"position": 1, "ahead": [first["id"]]}
    assert wrapper(third)["queue"] == {"position": 2, "ahead": [first["id"], second["id"]]}

    canceled = agent.cancel(second["id"])
    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    assert "queue" not in wrapper(canceled)
    assert wrapper(agent.get(third["id"]))["queue"] == {"position": 1, "ahead": [first["id"]]}

    model.release()
    assert state(agent.until_done(first["id"], timeout=120)) == COMPLETED
    last = agent.until_done(third["id"], timeout=120)
    assert state(last) == COMPLETED, last
    assert "queue" not in wrapper(last)
    assert not any("drop the table" in r.dump() for r in model.requests)


def _remembered(agent: Agent, model: MockModel) -> tuple[str, dict[str, Any]]:
    """A context whose session has one turn (the word KIWI): its id and that task."""
    source = context()
    model.script([Say("Noted: KIWI.")])
    first = agent.send("Remember the word KIWI.", source)
    assert state(first) == COMPLETED, first
    return source, first


@pytest.mark.needs("fork")
def test_a_fork_starts_from_the_source_history_and_the_source_never_sees_the_fork(
    agent: Agent, model: MockModel
) -> None:
    source, first = _remembered(agent, model)
    fork = context()

    forked = agent.send("Which word did I ask you to remember?", fork, control={"forkFrom": source})
    again = agent.send("Is this conversation still yours alone?", source)

    assert state(forked) == COMPLETED, forked
    assert wrapper(forked)["forkedFrom"] == {"contextId": source}
    assert wrapper(forked)["sessionId"] != wrapper(first)["sessionId"]
    seen = model.wait_for_request(lambda r: "Which word" in r.last_user_text)
    assert any(t.endswith("Remember the word KIWI.") for t in seen.texts("user"))
    assert "Noted: KIWI." in seen.texts("assistant")
    assert state(again) == COMPLETED, again
    assert wrapper(again)["sessionId"] == wrapper(first)["sessionId"]
    later = model.wait_for_request(lambda r: "still yours alone" in r.last_user_text)
    assert any(t.endswith("Remember the word KIWI.") for t in later.texts("user"))
    assert not any("Which word" in t for t in later.texts("user")), "the source saw the fork"


@pytest.mark.lacks("fork")
def test_forking_on_an_agent_that_cannot_is_refused_clearly(agent: Agent, model: MockModel) -> None:
    source, _ = _remembered(agent, model)
    asked = len(model.requests)

    error = agent.refusal(
        agent.params("Which word?", contextId=context(), control={"forkFrom": source})
    )

    assert error["code"] == UNSUPPORTED, error
    assert "cannot fork" in error["message"], error
    assert len(model.requests) == asked, "no turn ran (never a silent fresh session)"


@pytest.mark.needs("model")
def test_a_message_chooses_the_model_of_its_turn(agent: Agent, model: MockModel) -> None:
    target = agent.target
    model.script([Say("Answered by the other model.")])

    task = agent.send(
        "Answer on the model I chose.", context(), control={"model": target.other_model}
    )

    assert state(task) == COMPLETED, task
    assert answer(task) == "Answered by the other model."
    assert wrapper(task)["options"]["model"] == target.other_model
    seen = model.wait_for_request(lambda r: "model I chose" in r.last_user_text)
    assert seen.model == (target.other_model_seen or target.other_model)


@pytest.mark.needs("readOnly")
def test_a_read_only_turn_leaves_the_workspace_unchanged(agent: Agent, model: MockModel) -> None:
    work = agent.places.work
    target = work / "read-only-proof.txt"
    before = sorted(p.relative_to(work) for p in work.rglob("*"))
    model.script([WriteFile(str(target), "edited\n"), Say("Tried to write it.")])

    task = agent.send("Write read-only-proof.txt.", context(), control={"mode": "readOnly"})

    assert state(task).endswith(TERMINAL), task
    assert wrapper(task)["options"]["mode"] == "readOnly"
    model.wait_for_request(lambda r: "read-only-proof" in r.last_user_text)
    assert not target.exists(), "a readOnly turn wrote a file"
    assert sorted(p.relative_to(work) for p in work.rglob("*")) == before
