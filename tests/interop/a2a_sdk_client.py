#!/usr/bin/env python3
"""Drive a Taskkeeper desk with the A2A reference SDK's client (a2a-sdk, pinned by the caller).

    a2a_sdk_client.py --url http://127.0.0.1:PORT/a2a/web --token TOKEN --version 1.0|0.3
                      [--binding jsonrpc|http+json|grpc] [--worker harness|self]
                      [--pin SHA256] [--webhook-host IP --webhook-cert PEM --webhook-key PEM]

With `--pin` (an https:// URL, an asker on another machine), the client pins the server's
certificate by the SHA-256 fingerprint `taskkeeper asker add` printed: it reads the certificate
the server presents, refuses it unless its fingerprint is the pinned one, and then trusts that
certificate alone, with the usual name check, for every request the SDK makes.

The webhook check runs a receiver here: plain HTTP on 127.0.0.1 by default; with
`--webhook-host` (an asker on another machine), an https:// receiver on that address with the
certificate and key given, which the daemon must trust (its owner names the CA in
`push.extra_roots`). Pinned without a webhook host, the check is left out: the daemon's machine
cannot reach this one's loopback.

Only the SDK's public client is used (A2ACardResolver, ClientFactory, Client): the point is to
see what a stock A2A client makes of our wire, not what a hand-written one does. With
`--version 0.3` the client is the same package's v0.3 compatibility client, picked by the SDK
itself from the card's v0.3 fields (`url`, `protocolVersion`), as a v0.3-only peer would.
With `--binding http+json` (v1.0 only) the client is told to speak HTTP+JSON, and the SDK picks
its REST transport from the card's HTTP+JSON interface: the same checks, the other binding.
With `--binding grpc` (v1.0 only) it speaks gRPC, through the SDK's gRPC transport (the `grpc`
extra) on the card's GRPC interface, whose tenant names the desk (the SDK sets it on every
request); the bearer goes in each call's `authorization` metadata.

Each check prints one JSON line: {"check", "version", "ok", ...}. A mismatch prints
"ok": false with what was expected and what came back; the script then goes on with the checks
that do not depend on the failed one and exits 1 at the end.

A Taskkeeper task ends only when the worker says so. Where a check needs that, the script prints

    {"await": "worker", "request": TEXT, "status": "done"|"blocked", "text": SUMMARY}

and the worker's side must end the open, WORKING task whose request is TEXT with that status
and text through the owner API (`POST /api/tasks/{id}/update`). With `--worker harness` (the
default) the caller does it (crates/cli/tests/it/interop.rs); with `--worker self` the script
does it itself, which needs the owner token (handy by hand against a running daemon).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import ssl
import sys
import uuid
import urllib.parse
from typing import Any

import httpx
from google.protobuf import json_format, struct_pb2
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
)

EXTENSION_URI = "https://taskkeeper.dev/a2a/extensions/open-until-done/v1"
# Long enough for a blocking send that waits on the worker's side, short enough that a hung
# server fails the run instead of stalling it.
HTTP_TIMEOUT_S = 30.0
STREAM_EVENT_TIMEOUT_S = 10.0


class Mismatch(Exception):
    """What the server answered is not what the check expected."""


class Skipped(Exception):
    """A check that depends on an earlier one that failed."""


def state_name(state: int) -> str:
    return TaskState.Name(state)


def text_of(parts: Any) -> str:
    return "".join(p.text for p in parts if p.HasField("text"))


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise Mismatch(message)


def expect_state(task: Any, want: int, what: str) -> None:
    got = task.status.state
    expect(got == want, f"{what}: task {task.id} is {state_name(got)}, expected {state_name(want)}")


def grpc_channel(token: str) -> Any:
    """A channel factory for the SDK's gRPC transport: plain HTTP/2 to the card's target
    (loopback), the bearer added to every call's metadata, as an asker's client would."""
    import grpc  # the SDK's `grpc` extra; only this binding needs it

    def with_token(details: Any) -> Any:
        metadata = list(details.metadata or []) + [("authorization", f"Bearer {token}")]
        return details._replace(metadata=metadata)

    # One interceptor per kind of call: a channel files each interceptor under one kind only.
    class Unary(grpc.aio.UnaryUnaryClientInterceptor):
        async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            return await continuation(with_token(details), request)

    class Streaming(grpc.aio.UnaryStreamClientInterceptor):
        async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
            return await continuation(with_token(details), request)

    return lambda target: grpc.aio.insecure_channel(target, interceptors=[Unary(), Streaming()])


def pinned_context(url: str, pin: str) -> ssl.SSLContext:
    """Trust the certificate the server at `url` presents, if its SHA-256 is `pin`, alone."""
    parts = urllib.parse.urlsplit(url)
    pem = ssl.get_server_certificate((parts.hostname, parts.port or 443))
    der = ssl.PEM_cert_to_DER_cert(pem)
    got = hashlib.sha256(der).hexdigest().upper()
    want = pin.replace(":", "").upper()
    if got != want:
        raise SystemExit(f"the server's certificate has SHA-256 {got}, not the pinned {want}")
    return ssl.create_default_context(cadata=pem)


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.url: str = args.url.rstrip("/")
        self.token: str = args.token
        self.version: str = args.version
        self.binding: str = args.binding
        self.worker: str = args.worker
        self.failed = 0
        # Task ids shared between checks.
        self.ids: dict[str, str] = {}
        self.pinned = bool(args.pin)
        self.webhook_host: str = args.webhook_host
        self.webhook_cert: str = args.webhook_cert
        self.webhook_key: str = args.webhook_key
        self.verify: Any = pinned_context(self.url, args.pin) if args.pin else True
        self.http = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {self.token}"}, timeout=HTTP_TIMEOUT_S, verify=self.verify
        )
        self.card: Any = None
        self.plain: Any = None  # non-streaming client: SendMessage / message/send
        self.streaming: Any = None  # SendStreamingMessage / message/stream, subscribe

    def emit(self, **fields: Any) -> None:
        print(json.dumps({"version": self.version, "binding": self.binding, **fields}), flush=True)

    async def check(self, name: str, body: Any) -> None:
        try:
            detail = await body()
            self.emit(check=name, ok=True, **(detail or {}))
        except Skipped as e:
            self.failed += 1
            self.emit(check=name, ok=False, skipped=str(e))
        except Mismatch as e:
            self.failed += 1
            self.emit(check=name, ok=False, error=str(e))
        except Exception as e:  # an SDK exception is a failed check too, with its type
            self.failed += 1
            self.emit(check=name, ok=False, error=f"{type(e).__name__}: {e}")

    def need(self, key: str) -> str:
        if key not in self.ids:
            raise Skipped(f"needs the task from an earlier check ({key}), which failed")
        return self.ids[key]

    def message(self, text: str, task_id: str = "", context_id: str = "") -> Message:
        return Message(
            message_id=f"interop-{uuid.uuid4()}",
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            task_id=task_id,
            context_id=context_id,
        )

    async def send_one(self, request: SendMessageRequest) -> Any:
        """A non-streaming send through the SDK; it yields exactly one StreamResponse."""
        events = [e async for e in self.plain.send_message(request)]
        expect(len(events) == 1, f"a non-streaming send gave {len(events)} results, expected 1")
        expect(events[0].HasField("task"), f"SendMessage answered {events[0]}, expected a Task")
        return events[0].task

    # ---- the worker's side ----------------------------------------------------------------

    async def worker_ends(self, request_text: str, status: str, text: str, **attach: Any) -> None:
        """Have the open task whose request is `request_text` ended by its worker; `attach`
        may add `files` ({name: content}, written in the desk's directory and attached),
        `data` (a list of JSON values to attach) and `saved` (the content of a file part the
        worker must find saved by the daemon)."""
        print(
            json.dumps(
                {
                    "version": self.version,
                    "await": "worker",
                    "request": request_text,
                    "status": status,
                    "text": text,
                    **attach,
                }
            ),
            flush=True,
        )
        if self.worker == "self":
            asyncio.get_running_loop().create_task(self.end_task_as_worker(request_text, status, text))

    async def end_task_as_worker(self, request_text: str, status: str, text: str) -> None:
        base = self.url.split("/a2a/", 1)[0]
        for _ in range(400):
            r = await self.http.get(f"{base}/api/tasks", params={"state": "open"})
            r.raise_for_status()
            for t in r.json()["tasks"]:
                if t["request"] == request_text and t["state"] == "working":
                    u = await self.http.post(
                        f"{base}/api/tasks/{t['id']}/update", json={"status": status, "text": text}
                    )
                    u.raise_for_status()
                    return
            await asyncio.sleep(0.05)

    # ---- checks -----------------------------------------------------------------------------

    async def fetch_card(self) -> dict[str, Any]:
        # The card lives under the endpoint: /a2a/{desk}/.well-known/agent-card.json.
        card = await A2ACardResolver(self.http, self.url).get_agent_card()
        interfaces = {(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces}
        for version in ("1.0", "0.3"):
            expect(
                (self.url, "JSONRPC", version) in interfaces,
                f"supportedInterfaces lacks {{url: {self.url}, JSONRPC, {version}}}: {sorted(interfaces)}",
            )
        expect(
            (self.url, "HTTP+JSON", "1.0") in interfaces,
            f"supportedInterfaces lacks {{url: {self.url}, HTTP+JSON, 1.0}}: {sorted(interfaces)}",
        )
        expect(card.capabilities.streaming, "capabilities.streaming is not true")
        uris = [e.uri for e in card.capabilities.extensions]
        expect(EXTENSION_URI in uris, f"the Taskkeeper extension is not declared: {uris}")
        if self.version == "0.3":
            # A v0.3-only peer knows nothing of supportedInterfaces: it reads `url` and
            # `protocolVersion`. The SDK's legacy card parser does exactly that when the v1.0
            # list is absent, so hand it the card without it.
            raw = (await self.http.get(f"{self.url}/.well-known/agent-card.json")).json()
            expect("url" in raw, "the card has no v0.3 `url` field")
            raw.pop("supportedInterfaces", None)
            card = parse_agent_card(raw)
            legacy = [(i.url, i.protocol_version) for i in card.supported_interfaces]
            expect(
                legacy == [(self.url, "0.3.0")],
                f"the card's v0.3 fields give interfaces {legacy}, expected [({self.url!r}, '0.3.0')]",
            )
        if self.binding == "grpc":
            grpc_interfaces = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
            desk = self.url.rsplit("/", 1)[-1]
            expect(
                [(i.protocol_version, i.tenant) for i in grpc_interfaces] == [("1.0", desk)],
                f"supportedInterfaces has no GRPC 1.0 interface with tenant {desk}: {grpc_interfaces}",
            )
        self.card = card
        bindings = {"http+json": ["HTTP+JSON"], "grpc": ["GRPC"]}.get(self.binding, ["JSONRPC"])
        channels = grpc_channel(self.token) if self.binding == "grpc" else None

        def config(streaming: bool) -> ClientConfig:
            return ClientConfig(
                streaming=streaming,
                httpx_client=self.http,
                supported_protocol_bindings=bindings,
                grpc_channel_factory=channels,
            )

        self.plain = ClientFactory(config(False)).create(card)
        self.streaming = ClientFactory(config(True)).create(card)
        # A tenant on the interface wraps the transport in the SDK's tenant decorator.
        chosen = getattr(self.plain._transport, "_base", self.plain._transport)
        transport = type(chosen).__name__
        if self.binding == "http+json":
            want = "RestTransport"
        elif self.binding == "grpc":
            want = "GrpcTransport"
        elif self.version == "0.3":
            want = "CompatJsonRpcTransport"
        else:
            want = "JsonRpcTransport"
        expect(transport == want, f"the SDK chose {transport}, expected {want}")
        return {"name": card.name, "transport": transport}

    async def card_v03_security(self) -> dict[str, Any]:
        # v0.3's AgentCard.securitySchemes maps names to SecurityScheme objects told apart by a
        # required `type` ("http" with `scheme` for a bearer token; specification/json/a2a.json
        # at v0.3.0). A card with only v1.0's `{"httpAuthSecurityScheme": {...}}` wrapper is
        # read by the SDK's v0.3 model as mutualTLS (the one member with no required field), so
        # a v0.3 client never learns it must send a bearer token. This check found exactly that
        # in our card; card.rs now adds `type`/`scheme` beside the wrapper when the v0.3 fields
        # are on, as the reference server's merged card does. Kept as a regression check.
        raw = (await self.http.get(f"{self.url}/.well-known/agent-card.json")).json()
        card = types_v03.AgentCard.model_validate(raw)
        schemes = card.security_schemes or {}
        kinds = {name: type(s.root).__name__ for name, s in schemes.items()}
        bearer = [
            name
            for name, s in schemes.items()
            if isinstance(s.root, types_v03.HTTPAuthSecurityScheme) and s.root.scheme.lower() == "bearer"
        ]
        expect(
            bool(bearer),
            f"read as a v0.3 card, securitySchemes declares no http bearer scheme: {kinds}",
        )
        return {"schemes": kinds}

    async def extended_card(self) -> dict[str, Any]:
        # The card at the well-known path is public (read here without any credentials) and
        # says nothing of where the desk works; the SDK's client fetches the extended card
        # with its token, because the public card declares one, and that card does.
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, verify=self.verify) as anonymous:
            r = await anonymous.get(f"{self.url}/.well-known/agent-card.json")
        expect(r.status_code == 200, f"the public card without a token: HTTP {r.status_code}")
        public = r.json()
        expect(
            public.get("capabilities", {}).get("extendedAgentCard") is True,
            "the public card does not declare capabilities.extendedAgentCard",
        )
        expect(" working in " not in json.dumps(public), "the public card names the directory")
        card = await self.plain.get_extended_agent_card(GetExtendedAgentCardRequest())
        described = [s.description for s in card.skills]
        expect(
            any(" working in " in d for d in described),
            f"the extended card does not name the directory: {described}",
        )
        return {"skills": len(described)}

    async def send_nonblocking(self) -> dict[str, Any]:
        text = "interop: non-blocking send"
        msg = self.message(text)
        task = await self.send_one(
            SendMessageRequest(
                message=msg, configuration=SendMessageConfiguration(return_immediately=True)
            )
        )
        expect(bool(task.id), "the Task has no id")
        expect(bool(task.context_id), "the Task has no contextId")
        expect(task.status.HasField("timestamp"), "status.timestamp is missing or unreadable")
        # The desk is idle, so the task goes straight to the worker.
        expect_state(task, TaskState.TASK_STATE_WORKING, "non-blocking send")
        self.ids["nonblocking"] = task.id
        self.ids["nonblocking-message"] = msg.message_id
        return {"taskId": task.id, "state": state_name(task.status.state)}

    async def get_task(self) -> dict[str, Any]:
        tid = self.need("nonblocking")
        task = await self.plain.get_task(GetTaskRequest(id=tid))
        expect(task.id == tid, f"GetTask({tid}) answered task {task.id}")
        expect_state(task, TaskState.TASK_STATE_WORKING, "GetTask")
        mine = [m for m in task.history if m.message_id == self.ids["nonblocking-message"]]
        expect(len(mine) == 1, f"history does not hold the request once: {list(task.history)}")
        expect(mine[0].role == Role.ROLE_USER, "the request in history is not ROLE_USER")
        expect(text_of(mine[0].parts) == "interop: non-blocking send", "the request's text changed")
        ext = task.metadata.fields.get(EXTENSION_URI)
        expect(ext is not None, f"metadata has no {EXTENSION_URI} entry")
        desk = ext.struct_value.fields["desk"].string_value
        expect(desk == self.url.rsplit("/", 1)[1], f"metadata says desk {desk!r}")
        return {"taskId": task.id, "state": state_name(task.status.state), "history": len(task.history)}

    async def list_tasks(self) -> dict[str, Any]:
        tid = self.need("nonblocking")
        page = await self.plain.list_tasks(ListTasksRequest(page_size=10))
        ids = [t.id for t in page.tasks]
        expect(tid in ids, f"ListTasks does not list {tid}: {ids}")
        expect(page.page_size == 10, f"pageSize {page.page_size}, expected 10")
        expect(page.next_page_token == "", f"a one-page answer has nextPageToken {page.next_page_token!r}")
        return {"tasks": len(ids), "totalSize": page.total_size}

    async def push_config(self) -> dict[str, Any]:
        """Set, read, list and delete a webhook through the SDK; the webhook (a raw HTTP
        server on 127.0.0.1 here, or https:// on `--webhook-host`) gets the task as its first
        push, with the token."""
        tid = self.need("nonblocking")
        pushes: asyncio.Queue[tuple[dict[str, str], Any]] = asyncio.Queue()

        async def receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = (await reader.readuntil(b"\r\n\r\n")).decode()
            headers = {}
            for line in head.split("\r\n")[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            await pushes.put((headers, json.loads(body or b"null")))

        tls = None
        host, scheme = "127.0.0.1", "http"
        if self.webhook_host:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(self.webhook_cert, self.webhook_key)
            host, scheme = self.webhook_host, "https"
        server = await asyncio.start_server(receive, host, 0, ssl=tls)
        port = server.sockets[0].getsockname()[1]
        try:
            url = f"{scheme}://{host}:{port}/hook"
            made = await self.plain.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=tid,
                    id="interop-hook",
                    url=url,
                    token="interop-token",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials="interop-secret"),
                )
            )
            expect(made.url == url, f"the created config has url {made.url!r}")
            headers, body = await asyncio.wait_for(pushes.get(), STREAM_EVENT_TIMEOUT_S)
            expect(headers.get("authorization") == "Bearer interop-secret", f"push headers {headers}")
            expect(headers.get("x-a2a-notification-token") == "interop-token", f"push headers {headers}")
            first = body.get("task", body) if isinstance(body, dict) else {}
            expect(first.get("id") == tid, f"the first push is not the task {tid}: {body}")
            got = await self.plain.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=tid, id=made.id or "interop-hook")
            )
            expect(got.url == url, f"GetTaskPushNotificationConfig answered {got}")
            listed = await self.plain.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=tid)
            )
            expect([c.url for c in listed.configs] == [url], f"ListTaskPushNotificationConfigs: {listed}")
            await self.plain.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=tid, id=made.id or "interop-hook")
            )
            after = await self.plain.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=tid)
            )
            expect(len(after.configs) == 0, f"a deleted config is still listed: {after}")
        finally:
            server.close()
        return {"taskId": tid, "configId": made.id, "firstPush": "task", "scheme": scheme}

    async def task_not_found(self) -> dict[str, Any]:
        try:
            await self.plain.get_task(GetTaskRequest(id="interop-no-such-task"))
        except TaskNotFoundError as e:
            return {"error": type(e).__name__}
        raise Mismatch("GetTask of an unknown id did not raise TaskNotFoundError")

    async def cancel(self) -> dict[str, Any]:
        tid = self.need("nonblocking")
        task = await self.plain.cancel_task(CancelTaskRequest(id=tid))
        expect(task.id == tid, f"CancelTask({tid}) answered task {task.id}")
        expect_state(task, TaskState.TASK_STATE_CANCELED, "CancelTask")
        got = await self.plain.get_task(GetTaskRequest(id=tid))
        expect_state(got, TaskState.TASK_STATE_CANCELED, "GetTask after CancelTask")
        return {"taskId": tid, "state": state_name(task.status.state)}

    async def stream(self) -> dict[str, Any]:
        events = self.streaming.send_message(
            SendMessageRequest(message=self.message("interop: streamed send"))
        )
        try:
            first = await asyncio.wait_for(anext(events), STREAM_EVENT_TIMEOUT_S)
        finally:
            # The task stays open until its worker ends it; this client has seen what it
            # needed and lets go of the stream (the task is not affected).
            await events.aclose()
        expect(first.HasField("task"), f"the stream's first event is not the Task: {first}")
        expect_state(first.task, TaskState.TASK_STATE_WORKING, "stream's first event")
        self.ids["streamed"] = first.task.id
        return {"taskId": first.task.id, "first": "task", "state": state_name(first.task.status.state)}

    async def subscribe_then_cancel(self) -> dict[str, Any]:
        tid = self.need("streamed")
        events = self.streaming.subscribe(SubscribeToTaskRequest(id=tid))
        seen: list[str] = []
        try:
            first = await asyncio.wait_for(anext(events), STREAM_EVENT_TIMEOUT_S)
            expect(first.HasField("task"), f"the subscription's first event is not the Task: {first}")
            expect(first.task.id == tid, f"subscribed to {tid}, got task {first.task.id}")
            seen.append("task")
            canceled = await self.plain.cancel_task(CancelTaskRequest(id=tid))
            expect_state(canceled, TaskState.TASK_STATE_CANCELED, "CancelTask while subscribed")
            last = None
            while True:
                try:
                    ev = await asyncio.wait_for(anext(events), STREAM_EVENT_TIMEOUT_S)
                except StopAsyncIteration:
                    break
                kind = ev.WhichOneof("payload") or "?"
                seen.append(kind)
                if ev.HasField("status_update"):
                    last = ev.status_update.status.state
        finally:
            await events.aclose()
        expect(
            last == TaskState.TASK_STATE_CANCELED,
            f"the subscription ended without a CANCELED status update (events: {seen})",
        )
        return {"taskId": tid, "events": seen}

    async def blocking_input_required(self) -> dict[str, Any]:
        text = f"interop: blocking send {uuid.uuid4()}"
        need = "Which branch should I use?"
        await self.worker_ends(text, "blocked", need)
        task = await self.send_one(SendMessageRequest(message=self.message(text)))
        expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED, "blocking send, worker blocked")
        expect(
            text_of(task.status.message.parts) == need,
            f"status.message says {text_of(task.status.message.parts)!r}, expected {need!r}",
        )
        expect(task.status.message.role == Role.ROLE_AGENT, "status.message is not ROLE_AGENT")
        self.ids["blocking"] = task.id
        self.ids["blocking-context"] = task.context_id
        self.ids["blocking-request"] = text
        return {"taskId": task.id, "state": state_name(task.status.state)}

    async def blocking_completed(self) -> dict[str, Any]:
        tid = self.need("blocking")
        summary = "Used main; all tests pass."
        await self.worker_ends(self.ids["blocking-request"], "done", summary)
        # The asker's answer continues the same task (contextId and taskId given).
        answer = self.message("Use main.", task_id=tid, context_id=self.ids["blocking-context"])
        task = await self.send_one(SendMessageRequest(message=answer))
        expect(task.id == tid, f"the answer to {tid} came back as task {task.id}")
        expect_state(task, TaskState.TASK_STATE_COMPLETED, "blocking send, worker done")
        got_summary = text_of(task.status.message.parts)
        expect(got_summary == summary, f"status.message says {got_summary!r}, expected {summary!r}")
        arts = [text_of(a.parts) for a in task.artifacts]
        expect(summary in arts, f"no artifact carries the summary: {arts}")
        return {"taskId": task.id, "state": state_name(task.status.state), "summary": got_summary}

    async def file_parts_and_artifacts(self) -> dict[str, Any]:
        """A message with a file part (bytes), a file URL and a data part goes in; the worker
        finds the file saved by the daemon, attaches a file and data, and ends the task; the
        blocking send comes back with them as artifacts, and the file's bytes are fetched from
        the daemon with this client's token."""
        text = f"interop: file parts {uuid.uuid4()}"
        data_in = struct_pb2.Value()
        data_in.struct_value.update({"tests": 12})
        msg = Message(
            message_id=f"interop-{uuid.uuid4()}",
            role=Role.ROLE_USER,
            parts=[
                Part(text=text),
                Part(raw=b"interop file part", filename="notes.txt", media_type="text/plain"),
                Part(url="https://example.com/spec.pdf", filename="spec.pdf", media_type="application/pdf"),
                Part(data=data_in, media_type="application/json"),
            ],
        )
        await self.worker_ends(
            text,
            "done",
            "Report attached.",
            files={"report.txt": "interop artifact bytes"},
            data=[{"p50": 3}],
            saved="interop file part",
        )
        task = await self.send_one(SendMessageRequest(message=msg))
        expect_state(task, TaskState.TASK_STATE_COMPLETED, "blocking send with file parts")
        sent = [m for m in task.history if m.message_id == msg.message_id]
        expect(len(sent) == 1, "the request with file parts is not in history once")
        raws = [p.raw for p in sent[0].parts if p.HasField("raw")]
        expect(raws == [b"interop file part"], f"the file part's bytes came back as {raws}")
        files = [p for a in task.artifacts for p in a.parts if p.HasField("url")]
        expect(len(files) == 1, f"expected one file artifact: {list(task.artifacts)}")
        part = files[0]
        expect(part.filename == "report.txt", f"the file artifact is named {part.filename!r}")
        expect(part.media_type == "text/plain", f"the file artifact's media type is {part.media_type!r}")
        r = await self.http.get(part.url)
        expect(r.status_code == 200, f"fetching {part.url} with the asker's token: HTTP {r.status_code}")
        expect(r.content == b"interop artifact bytes", f"the fetched bytes are {r.content!r}")
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S, verify=self.verify) as anonymous:
            r = await anonymous.get(part.url)
        expect(r.status_code == 401, f"fetching without a token: HTTP {r.status_code}")
        data = [
            json_format.MessageToDict(p.data)
            for a in task.artifacts
            for p in a.parts
            if p.HasField("data")
        ]
        expect(data == [{"p50": 3}], f"the data artifacts are {data}")
        return {"taskId": task.id, "artifacts": len(task.artifacts)}

    async def main(self) -> int:
        try:
            await self.check("card", self.fetch_card)
            if self.card is None:
                self.emit(check="all", ok=False, error="no card, no client: nothing else can run")
                return 1
            if self.version == "0.3":
                await self.check("card-v0.3-security", self.card_v03_security)
            await self.check("extended-card", self.extended_card)
            await self.check("send-nonblocking", self.send_nonblocking)
            await self.check("get-task", self.get_task)
            if self.version == "1.0":
                # v0.3 has no JSON-RPC ListTasks (the SDK's compat client refuses it itself).
                await self.check("list-tasks", self.list_tasks)
            if not self.pinned or self.webhook_host:
                await self.check("push-config", self.push_config)
            await self.check("get-unknown-task", self.task_not_found)
            await self.check("cancel", self.cancel)
            await self.check("stream", self.stream)
            await self.check("subscribe-cancel", self.subscribe_then_cancel)
            await self.check("blocking-input-required", self.blocking_input_required)
            await self.check("blocking-completed", self.blocking_completed)
            await self.check("file-parts-artifacts", self.file_parts_and_artifacts)
        finally:
            await self.http.aclose()
        self.emit(check="all", ok=self.failed == 0, failed=self.failed)
        return 1 if self.failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the desk's A2A endpoint, http://127.0.0.1:PORT/a2a/DESK")
    p.add_argument("--token", required=True, help="bearer token (an asker's, or the owner's)")
    p.add_argument("--version", required=True, choices=["1.0", "0.3"])
    p.add_argument(
        "--binding",
        choices=["jsonrpc", "http+json", "grpc"],
        default="jsonrpc",
        help="the binding the client speaks (HTTP+JSON and gRPC are v1.0's only)",
    )
    p.add_argument(
        "--worker",
        choices=["harness", "self"],
        default="harness",
        help="who ends tasks through the owner API: the caller (default) or this script",
    )
    p.add_argument(
        "--pin",
        default="",
        help="the server certificate's SHA-256 fingerprint (AB:CD:...), for an https:// URL",
    )
    p.add_argument("--webhook-host", default="", help="an address of this machine for an https:// webhook")
    p.add_argument("--webhook-cert", default="", help="the webhook's certificate chain (PEM)")
    p.add_argument("--webhook-key", default="", help="the webhook's private key (PEM)")
    args = p.parse_args()
    if args.webhook_host and not (args.webhook_cert and args.webhook_key):
        p.error("--webhook-host needs --webhook-cert and --webhook-key")
    if args.binding in ("http+json", "grpc") and args.version != "1.0":
        p.error(f"--binding {args.binding} is v1.0's; use --version 1.0")
    return asyncio.run(Run(args).main())


if __name__ == "__main__":
    sys.exit(main())
