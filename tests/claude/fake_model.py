#!/usr/bin/env python3
"""A scripted fake of the Anthropic Messages API, for driving the real Claude Code offline.

Written for Taskkeeper's end-to-end tests (docs/claude-code-testing.md §3). Standard library
only. Usage:

    fake_model.py --rules RULES.json --log REQUESTS.jsonl [--port 0]

It prints `fake model listening on PORT` on stdout once it accepts connections.

Endpoints
    POST /v1/messages              streaming (SSE) or plain JSON, as the request asks
    POST /v1/messages/count_tokens {"input_tokens": N}
    POST /_rules                   replace the rules (same JSON as the file); counters reset
    GET  /_rules                   the rules and how often each has fired
    anything else                  {}

Rules file
    {"rules": [RULE, ...], "default": RULE?, "side": RULE?}

A request is *main* when it offers tools (the session's own turn) and *side* otherwise (the
session-title request, the prompt-suggestion side agent, ...). Rules are tried in order on
main requests only (a rule with "side": true is tried on side requests only); the first rule
that matches answers. What a rule matches against is the *tail*: all text after the last
assistant message, whatever the role, from string content or text blocks; a tool_result
block contributes "[tool_result] <its text>". A request with no rule matching gets "default"
(main) or "side" (side), or a plain "ok".

RULE fields (all optional):
    name         a label for the log
    match        a regular expression searched in the tail (DOTALL); named or numbered groups
                 feed templates; absent means "always"
    not_match    a regular expression that must NOT be found in the tail
    tool_result  true: only when the tail holds a tool_result; false: only when it holds none
    times        fire at most this many times (then the rule is skipped)
    delay        seconds to wait before answering (keeps the session busy)
    reply        text of the answer
    tool         {"name": ..., "input": {...}}: answer with a tool_use block (after the reply
                 text, if any) and stop_reason tool_use. Strings in input and in reply may
                 hold {{group}} (a named group), {{1}} (a numbered one) or {{0}} (the match)
    error        {"status": 400, "type": "invalid_request_error", "message": "..."}: answer
                 with this API error instead

Every request is appended to the log as one JSON object per line:
    {"n", "t", "t_answer", "method", "path", "kind", "stream", "tail", "rule", "groups", "answer", "body"}
("t" is when the request arrived, "t_answer" when its answer started, after any delay.)
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class Script:
    """The rules and their counters, shared by the handler threads."""

    def __init__(self, log_path: str) -> None:
        self.lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.default: dict[str, Any] | None = None
        self.side: dict[str, Any] | None = None
        self.fired: list[int] = []
        self.n = 0
        self.log_path = log_path
        # Truncate: a log is the evidence of one run.
        with open(log_path, "w", encoding="utf-8"):
            pass

    def load(self, doc: dict[str, Any]) -> None:
        rules = doc.get("rules", [])
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise ValueError("rules must be a list of objects")
        for r in rules:
            for key in ("match", "not_match"):
                if key in r:
                    re.compile(r[key])
        with self.lock:
            self.rules = rules
            self.default = doc.get("default")
            self.side = doc.get("side")
            self.fired = [0] * len(rules)

    def state(self) -> dict[str, Any]:
        with self.lock:
            return {
                "rules": [dict(r, fired=f) for r, f in zip(self.rules, self.fired)],
                "default": self.default,
                "side": self.side,
                "requests": self.n,
            }

    def choose(self, tail: str, has_tool_result: bool, side: bool) -> tuple[dict[str, Any], re.Match[str] | None]:
        """The first rule that matches; counts it as fired."""
        with self.lock:
            for i, rule in enumerate(self.rules):
                if bool(rule.get("side", False)) != side:
                    continue
                times = rule.get("times")
                if times is not None and self.fired[i] >= int(times):
                    continue
                want = rule.get("tool_result")
                if want is not None and bool(want) != has_tool_result:
                    continue
                if "not_match" in rule and re.search(rule["not_match"], tail, re.S):
                    continue
                m = None
                if "match" in rule:
                    m = re.search(rule["match"], tail, re.S)
                    if m is None:
                        continue
                self.fired[i] += 1
                return rule, m
            fallback = self.side if side else self.default
            return (fallback or {"name": "builtin-default", "reply": "ok"}), None

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.n += 1
            entry["n"] = self.n
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def block_text(block: Any) -> tuple[str, bool]:
    """Text of one content block, and whether it is a tool_result."""
    if isinstance(block, str):
        return block, False
    if not isinstance(block, dict):
        return "", False
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", "")), False
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, list):
            inner = "\n".join(block_text(b)[0] for b in inner)
        return "[tool_result] " + str(inner), True
    return "", False


def tail_of(messages: list[Any]) -> tuple[str, bool]:
    """All text after the last assistant message, any role; and whether a tool_result is in it."""
    last = -1
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            last = i
    parts: list[str] = []
    has_result = False
    for m in messages[last + 1 :]:
        if not isinstance(m, dict):
            continue
        content = m.get("content", "")
        blocks = content if isinstance(content, list) else [content]
        for b in blocks:
            text, is_result = block_text(b)
            has_result |= is_result
            if text:
                parts.append(text)
    return "\n".join(parts), has_result


def fill(value: Any, m: re.Match[str] | None) -> Any:
    """Substitute {{group}} templates in every string of a JSON value."""
    if isinstance(value, str):

        def one(t: re.Match[str]) -> str:
            key = t.group(1)
            if m is None:
                return ""
            try:
                got = m.group(int(key)) if key.isdigit() else m.group(key)
            except IndexError:
                return ""
            return got or ""

        return TEMPLATE.sub(one, value)
    if isinstance(value, list):
        return [fill(v, m) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, m) for k, v in value.items()}
    return value


def answer_blocks(rule: dict[str, Any], m: re.Match[str] | None) -> tuple[list[dict[str, Any]], str]:
    blocks: list[dict[str, Any]] = []
    reply = rule.get("reply")
    if reply:
        blocks.append({"type": "text", "text": fill(reply, m)})
    tool = rule.get("tool")
    if tool:
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:24],
                "name": tool["name"],
                "input": fill(tool.get("input", {}), m),
            }
        )
        return blocks, "tool_use"
    if not blocks:
        blocks.append({"type": "text", "text": "ok"})
    return blocks, "end_turn"


def usage(output: int) -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def sse(blocks: list[dict[str, Any]], stop: str, model: str) -> bytes:
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    out: list[str] = []

    def ev(name: str, data: dict[str, Any]) -> None:
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")

    ev(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage(1),
            },
        },
    )
    ev("ping", {"type": "ping"})
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            text = b["text"]
            # Two deltas when there is enough text, as a real stream would.
            cut = len(text) // 2
            for piece in ([text[:cut], text[cut:]] if cut else [text]):
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}})
        else:
            ev(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}},
            )
            raw = json.dumps(b["input"])
            cut = len(raw) // 2
            for piece in [raw[:cut], raw[cut:]]:
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}})
        ev("content_block_stop", {"type": "content_block_stop", "index": i})
    ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
    ev("message_stop", {"type": "message_stop"})
    return "".join(out).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-model/1"
    script: Script  # set on the class by main()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass  # the JSONL log is the record; stderr stays quiet

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        # http.server knows no phrase for 529 (the API's "overloaded").
        self.send_response(status, "Overloaded" if status == 529 else None)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        if ctype.startswith("text/event-stream"):
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def send_json(self, status: int, doc: Any) -> None:
        self.send(status, json.dumps(doc).encode())

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.read_body()
        path = self.path.split("?", 1)[0]
        if path == "/_rules":
            self.send_json(200, self.script.state())
            return
        self.script.record({"t": time.time(), "method": "GET", "path": self.path, "kind": "other"})
        self.send_json(200, {})

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib name
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        raw = self.read_body()
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        if path == "/_rules":
            try:
                if not isinstance(body, dict):
                    raise ValueError("the rules must be a JSON object")
                self.script.load(body)
            except (ValueError, re.error, KeyError) as e:
                self.send_json(400, {"error": str(e)})
                return
            self.send_json(200, self.script.state())
            return
        if path == "/v1/messages/count_tokens":
            self.script.record({"t": time.time(), "method": "POST", "path": self.path, "kind": "count_tokens", "body": body})
            self.send_json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages" or not isinstance(body, dict):
            self.script.record({"t": time.time(), "method": "POST", "path": self.path, "kind": "other", "body": body})
            self.send_json(200, {})
            return
        self.messages(body)

    def messages(self, body: dict[str, Any]) -> None:
        msgs = body.get("messages") or []
        tail, has_result = tail_of(msgs if isinstance(msgs, list) else [])
        side = not body.get("tools")
        rule, m = self.script.choose(tail, has_result, side)
        stream = bool(body.get("stream"))
        model = str(body.get("model") or "claude-fake")
        entry: dict[str, Any] = {
            "t": time.time(),
            "method": "POST",
            "path": self.path,
            "kind": "side" if side else "main",
            "stream": stream,
            "tail": tail,
            "rule": rule.get("name"),
            "groups": ({str(i + 1): g for i, g in enumerate(m.groups())} | m.groupdict()) if m else None,
            "body": body,
        }
        delay = float(rule.get("delay") or 0)
        if delay > 0:
            time.sleep(delay)
        err = rule.get("error")
        if err:
            entry["answer"] = {"error": err}
            self.script.record(entry)
            status = int(err.get("status", 400))
            self.send_json(
                status,
                {"type": "error", "error": {"type": err.get("type", "invalid_request_error"), "message": err.get("message", "scripted error")}},
            )
            return
        blocks, stop = answer_blocks(rule, m)
        entry["answer"] = {"content": blocks, "stop_reason": stop}
        entry["t_answer"] = time.time()
        self.script.record(entry)
        if stream:
            self.send(200, sse(blocks, stop, model), "text/event-stream; charset=utf-8")
        else:
            self.send_json(
                200,
                {
                    "id": "msg_" + uuid.uuid4().hex[:24],
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage(5),
                },
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", help="JSON rules file (default: no rules, every answer is 'ok')")
    ap.add_argument("--log", required=True, help="JSONL file receiving every request")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()

    script = Script(args.log)
    if args.rules:
        with open(args.rules, encoding="utf-8") as f:
            script.load(json.load(f))
    Handler.script = script
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print(f"fake model listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
