#!/usr/bin/env python3
"""The A2A reference server for the side-by-side benchmark (bench/a2a/run.sh).

    reference_server.py --port PORT --db PATH

a2a-sdk's own server pieces, as its documentation assembles them: DefaultRequestHandler with
the SDK's SQLite task store (DatabaseTaskStore over SQLAlchemy + aiosqlite, the database left
at SQLite's defaults), JSON-RPC, HTTP+JSON and the agent card on a Starlette app, served by
uvicorn on 127.0.0.1. The JSON-RPC endpoint is `/`, the HTTP+JSON paths hang off the same URL
(`/message:send`, `/tasks/{id}`, …), the card is at `/.well-known/agent-card.json`.

The executor does what Taskkeeper does with a new task on an idle desk: it stores a WORKING
task holding the request and answers; nothing ends it (a Taskkeeper task is ended later by its
worker). So SendMessage with `returnImmediately: true` costs one task creation and one store
write on both servers, and GetTask one read. The handler saves the task before it answers
(ActiveTask's consumer persists each event, then hands it to the waiting request).
"""

from __future__ import annotations

import argparse
import logging

import uvicorn
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import DatabaseTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)


class LeaveWorking(AgentExecutor):
    """Stores the new task as WORKING with the request in its history, and returns."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is not None:
            # A follow-up to a known task: nothing to do for the benchmark.
            return
        history = [context.message] if context.message is not None else []
        task = new_task(
            context.task_id or "", context.context_id or "", TaskState.TASK_STATE_WORKING, history=history
        )
        await event_queue.enqueue_event(task)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def card(port: int) -> AgentCard:
    url = f"http://127.0.0.1:{port}/"
    return AgentCard(
        name="reference",
        description="a2a-sdk reference server with its SQLite task store, for benchmarking",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="bench",
                name="bench",
                description="stores a WORKING task",
                tags=["bench"],
            )
        ],
    )


def app(port: int, db: str) -> Starlette:
    engine = create_async_engine(f"sqlite+aiosqlite:///{db}")
    store = DatabaseTaskStore(engine)  # creates its table on first use
    agent_card = card(port)
    handler = DefaultRequestHandler(
        agent_executor=LeaveWorking(), task_store=store, agent_card=agent_card
    )
    routes = (
        create_agent_card_routes(agent_card)
        + create_jsonrpc_routes(handler, "/")
        + create_rest_routes(handler)
    )
    return Starlette(routes=routes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--db", required=True, help="the SQLite file for the task store")
    args = p.parse_args()
    # Logging a line per request would measure the logger.
    logging.basicConfig(level=logging.WARNING)
    uvicorn.run(
        app(args.port, args.db),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
