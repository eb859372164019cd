#!/usr/bin/env python3
"""A scripted fake of the two model APIs Codex CLI and Gemini CLI speak (docs/agents.md §2, §6),
for the offline tests in crates/cli/tests/it/ (codex_gemini.rs and the modules that use its
harness). Standard library only.

It answers every request from the last thing the session said or got:
- a tool's result: a short text reply ("Noted."), so the turn ends;
- a prompt holding "«Taskkeeper» Task <id>": a task_update call ending that task as done;
- a prompt holding "END OTHER <id>": a task_update call for that id (another session's task);
- a task whose request holds "GO QUIET": the last words "Now writing the probe." and nothing
  more, so the turn ends with the task still open (a session gone quiet);
- a watchdog reminder ("«Taskkeeper» Reminder #<n>" naming "• Task <id> from"): a task_update
  call ending that task as done, "Finished it after the reminder.";
- a prompt holding "RUN SHELL: <command>" (to the line's end): the agent's own shell tool running
  that command (Codex's exec_command, Gemini's run_shell_command), ahead of any task in it; the
  shell's result then ends the prompt's task with task_update: done when it ran, failed when
  the agent refused to run it (Gemini's shell call carries a model-chosen id that names
  Taskkeeper's tool, which must not make it Taskkeeper's);
- anything else: "Hello.".
Each request, with what was answered, is one line of the JSONL log (the tests' evidence), with
"t" (when it arrived) and "t_answer" (when its answer was sent), for bench/delivery/per_agent.py.

Usage: fake_model.py LOG  (prints the port it listens on, on 127.0.0.1, then serves).
"""

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
LOCK = threading.Lock()
TASK = re.compile(r"«Taskkeeper» Task ([0-9a-f-]{36})")
OTHER = re.compile(r"END OTHER ([0-9a-f-]{36})")
SHELL = re.compile(r"RUN SHELL: ([^\n]+)")
REMINDER = re.compile(r"«Taskkeeper» Reminder #\d+:[\s\S]*?• Task ([0-9a-f-]{36}) from ")
QUIET = "GO QUIET"
LAST_WORDS = "Now writing the probe."
# What Taskkeeper steers into a Codex turn with the owner's denial: read with the tool's result.
OWNER_NOTE = "«Taskkeeper» The owner did not allow it:"
COUNT = [0]


def log(entry):
    with LOCK:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def refused(output):
    """The agent's shell tool did not run the command: the user rejected or cancelled it."""
    return "rejected" in output or "canceled" in output or "cancelled" in output


def decide(last_kind, text, prompt=""):
    """('text', words), ('call', task_id[, status]) or ('shell', command)."""
    if last_kind == "shell":
        found = TASK.findall(prompt)
        if found:
            return ("call", found[-1], "failed" if refused(text) else "done")
        return ("text", "Noted.")
    if last_kind == "tool":
        return ("text", "Noted.")
    # A reminder quotes the request, so it is read before the request's own words.
    reminded = REMINDER.findall(text)
    if reminded:
        return ("call", reminded[0], "done", "Finished it after the reminder.")
    shell = SHELL.findall(text)
    if shell:
        return ("shell", shell[-1].strip())
    if QUIET in text and TASK.search(text):
        return ("text", LAST_WORDS)
    found = TASK.findall(text) or OTHER.findall(text)
    if found:
        return ("call", found[-1])
    return ("text", "Hello.")


def update_args(task_id, status="done", text=None):
    if text is None:
        text = "Finished it offline." if status == "done" else "The command was not allowed."
    return {"task_id": task_id, "status": status, "text": text}


def text_of(content):
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            out.append(part.get("text") or "")
    return "\n".join(out)


# ---- Codex: POST /v1/responses, streamed -------------------------------------------------


def owner_note(item):
    return item.get("type") == "message" and item.get("role") == "user" \
        and text_of(item.get("content")).startswith(OWNER_NOTE)


def codex_last(body):
    items = body.get("input") or []
    notes = []
    for item in reversed(items):
        kind = item.get("type")
        if owner_note(item):
            notes.insert(0, text_of(item.get("content")))
            continue
        if kind in ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output"):
            output = item.get("output")
            output = output if isinstance(output, str) else json.dumps(output)
            shell = any(i.get("type") == "function_call" and i.get("call_id") == item.get("call_id")
                        and i.get("name") == "exec_command" for i in items)
            return ("shell" if shell else "tool", "\n".join([output] + notes))
        if kind == "message" and item.get("role") == "user":
            return ("user", text_of(item.get("content")))
    return ("user", "")


def codex_prompt(body):
    """The last user message's text."""
    for item in reversed(body.get("input") or []):
        if item.get("type") == "message" and item.get("role") == "user" and not owner_note(item):
            return text_of(item.get("content"))
    return ""


def codex_tool(body):
    """(namespace, name) of our task_update as the request offers it."""
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace" or "tools" in tool:
            for inner in tool.get("tools") or []:
                if inner.get("name", "").endswith("task_update"):
                    return (tool.get("name"), inner.get("name"))
        name = tool.get("name", "")
        if name.endswith("task_update"):
            return (None, name)
    return (None, "mcp__taskkeeper__task_update")


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.end_headers()
    for name, data in events:
        chunk = ""
        if name:
            chunk += f"event: {name}\n"
        chunk += f"data: {json.dumps(data)}\n\n"
        handler.wfile.write(chunk.encode())
    handler.wfile.flush()
    handler.close_connection = True


def codex_answer(handler, body, n):
    last_kind, text = codex_last(body)
    action = decide(last_kind, text, codex_prompt(body))
    rid = f"resp_{n}"
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 15}
    if action[0] == "text":
        item = {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": action[1], "annotations": []}]}
        events = [
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                            "item": dict(item, content=[], status="in_progress")}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": f"msg_{n}",
                                            "output_index": 0, "content_index": 0, "delta": action[1]}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ]
    elif action[0] == "shell":
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "exec_command",
                "arguments": json.dumps({"cmd": action[1]}), "status": "completed"}
        events = [
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ]
    else:
        namespace, name = codex_tool(body)
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                "arguments": json.dumps(update_args(*action[1:])), "status": "completed"}
        if namespace:
            item["namespace"] = namespace
        events = [
            ("response.created", {"type": "response.created", "response": {"id": rid}}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ]
    events.append(("response.completed", {"type": "response.completed",
                                           "response": {"id": rid, "usage": usage}}))
    sse(handler, events)
    return last_kind, text, action


# ---- Gemini: POST /v1beta/models/<model>:streamGenerateContent?alt=sse --------------------


def gemini_last(body):
    contents = body.get("contents") or []
    for content in reversed(contents):
        parts = content.get("parts") or []
        responses = [p.get("functionResponse") for p in parts if "functionResponse" in p]
        if responses:
            shell = any(r.get("name") == "run_shell_command" for r in responses)
            return ("shell" if shell else "tool", json.dumps(responses))
        if content.get("role") == "user":
            return ("user", "\n".join(p.get("text", "") for p in parts))
    return ("user", "")


def gemini_prompt(body):
    """The last user prompt's text (not a tool's result)."""
    for content in reversed(body.get("contents") or []):
        parts = content.get("parts") or []
        if content.get("role") == "user" and not any("functionResponse" in p for p in parts):
            return "\n".join(p.get("text", "") for p in parts)
    return ""


def gemini_answer(handler, body, stream):
    last_kind, text = gemini_last(body)
    action = decide(last_kind, text, gemini_prompt(body))
    if action[0] == "text":
        parts = [{"text": action[1]}]
    elif action[0] == "shell":
        # The call's id names Taskkeeper's tool: a model's words never make a call Taskkeeper's.
        parts = [{"functionCall": {"name": "run_shell_command", "id": f"mcp_taskkeeper_task_update__{time.time_ns()}",
                                   "args": {"command": action[1], "description": "Run what the prompt asks."}}}]
    else:
        parts = [{"functionCall": {"name": "mcp_taskkeeper_task_update", "args": update_args(*action[1:])}}]
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "fake"}
    if stream:
        sse(handler, [(None, chunk)])
    else:
        payload = json.dumps(chunk).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
    return last_kind, text, action


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        arrived = time.time()
        with LOCK:
            COUNT[0] += 1
            n = COUNT[0]
        path = self.path
        if path.startswith("/v1/responses"):
            kind = "codex"
            last_kind, text, action = codex_answer(self, body, n)
        elif ":streamGenerateContent" in path:
            kind = "gemini"
            last_kind, text, action = gemini_answer(self, body, True)
        elif ":generateContent" in path:
            kind = "gemini-utility"
            last_kind, text, action = gemini_answer(self, {"contents": []}, False)
        elif ":countTokens" in path:
            payload = b'{"totalTokens": 10}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            log({"n": n, "path": path, "kind": "count"})
            return
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            log({"n": n, "path": path, "kind": "unknown"})
            return
        log({"n": n, "t": arrived, "t_answer": time.time(), "path": path, "kind": kind, "last": last_kind, "text": text[-2000:],
             "answer": list(action), "tools": [t.get("name") for t in body.get("tools") or []], "tool_defs": [t for t in body.get("tools") or [] if "taskkeeper" in json.dumps(t)]})

    def do_GET(self):
        payload = b'{"models": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        log({"path": self.path, "kind": "get"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
