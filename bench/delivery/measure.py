#!/usr/bin/env python3
"""Delivery latency: from the moment a task is given to a desk until it is inside the agent,
for the two ways in that Taskkeeper drives without a hook, each beside a reference that does
the same last step directly.

    cargo build --release -p taskkeeper-cli
    python3 bench/delivery/measure.py [--runs 20] [--claude PATH]

stdin (a headless Claude Code session Taskkeeper launched, `taskkeeper session launch`):
    ours       POST /api/tasks, then the daemon's delivery loop writes the task to the
               session's stdin; measured until the model (the scripted fake of
               tests/claude/fake_model.py) receives the request that carries the task.
    reference  this script writes the same user message to the stdin of a `claude -p`
               stream-json process it started itself, same flags, same fake model.
    Each task is ended by the model with task_update (over MCP) before the next is given,
    so every run starts from an idle session.

command (a desk's delivery command, for agents without hooks):
    ours       POST /api/tasks, then the daemon runs the desk's command `date +%s.%N >> F`
               with the text on stdin; measured until the command's timestamp.
    reference  this script runs the same command with `sh -c` itself (subprocess, text on
               stdin) right after taking the start time.
    Each task is ended over the owner API before the next.

Times are wall clock on one machine, between processes; the medians are what to read. The
daemon is a release build with its store at synchronous=FULL (each task is an fsync'd
write before anything is delivered). The pinned Claude Code is the one the tests install
(<target>/claude-code-VERSION; run `cargo nextest run -p taskkeeper-cli claude::smoke` once).
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
CLAUDE_CODE = "2.1.332"
API_KEY = "sk-ant-api03-taskkeeper-offline-test-key-0123456789abcdef"
TOKEN = "bench-token-0123456789abcdef0123456789abcdef"
TASK_UPDATE = "mcp__taskkeeper__task_update"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_claude() -> Path:
    base = TARGET / f"claude-code-{CLAUDE_CODE}" / "node_modules" / "@anthropic-ai"
    for p in sorted(base.glob("claude-code-*/claude")):
        return p
    sys.exit(f"no Claude Code under {base}: run `cargo nextest run -p taskkeeper-cli claude::smoke` once")


def wait_until(what: str, check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = check()
        if v:
            return v
        time.sleep(0.002)
    sys.exit(f"timed out waiting for {what}")


class Daemon:
    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        exe = next((p for p in (TARGET / "release" / "taskkeeper", TARGET / "debug" / "taskkeeper") if p.exists()),
                   TARGET / "release" / "taskkeeper")
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--port", str(self.port), "--data-dir", str(work / "data")],
            env={**env, "TASKKEEPER_TOKEN": TOKEN},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        line = self.proc.stdout.readline().decode()
        if "listening" not in line:
            sys.exit(f"daemon did not start: {line}")

    def call(self, method: str, path: str, body=None):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            sys.exit(f"{method} {path}: {e.code} {e.read().decode()}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Fake:
    def __init__(self, work: Path, rules: dict | None = None) -> None:
        rules = rules or {
            "rules": [
                {"name": "task", "match": r"«Taskkeeper» Task (?P<id>[0-9a-f-]{36}) from", "tool_result": False,
                 "tool": {"name": TASK_UPDATE, "input": {"task_id": "{{id}}", "status": "done", "text": "ok"}}},
                {"name": "raw", "match": "RAW-", "reply": "ok"},
                {"name": "after-tool", "tool_result": True, "reply": "done"},
            ],
            "default": {"reply": "ok"},
            "side": {"reply": "{\"title\": \"bench\"}"},
        }
        (work / "rules.json").write_text(json.dumps(rules))
        self.log = work / "requests.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/claude/fake_model.py"), "--rules", str(work / "rules.json"),
             "--log", str(self.log), "--port", "0"],
            stdout=subprocess.PIPE,
        )
        line = self.proc.stdout.readline().decode()
        self.port = int(line.strip().rsplit(" ", 1)[-1])

    def first_request_with(self, needle: str) -> float | None:
        if not self.log.exists():
            return None
        for line in self.log.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("kind") == "main" and needle in (r.get("tail") or ""):
                return float(r["t"])
        return None

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def claude_env(work: Path, fake: Fake, claude: Path) -> dict[str, str]:
    home = work / "home"
    home.mkdir(exist_ok=True)
    (work / "tmp").mkdir(exist_ok=True)
    desk_dir = work / "web"
    desk_dir.mkdir(exist_ok=True)
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {str(desk_dir): {"hasTrustDialogAccepted": True}},
    }))
    return {
        "PATH": f"{claude.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}",
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
        "TMPDIR": str(work / "tmp"),
        "NO_PROXY": "127.0.0.1,localhost",
    }


def summary(name: str, xs: list[float]) -> dict:
    xs = sorted(xs)
    return {
        "name": name,
        "n": len(xs),
        "median_ms": statistics.median(xs) * 1000,
        "p90_ms": xs[int(0.9 * (len(xs) - 1))] * 1000,
        "min_ms": xs[0] * 1000,
    }


def bench_stdin(runs: int, claude: Path) -> tuple[list[float], list[float]]:
    work = Path(tempfile.mkdtemp(prefix="tk-delivery-"))
    fake = Fake(work)
    env = claude_env(work, fake, claude)
    daemon = Daemon(work, env)
    ours: list[float] = []
    raw: list[float] = []
    try:
        daemon.call("POST", "/api/desks", {"name": "web", "dir": str(work / "web")})
        session = daemon.call("POST", "/api/desks/web/launch", {})

        def idle() -> bool:
            for s in daemon.call("GET", "/api/sessions")["sessions"]:
                if s["id"] == session["id"]:
                    return s["activity"] == "idle" and not daemon.call("GET", "/api/tasks?state=open")["tasks"]
            return False

        for i in range(runs + 2):
            wait_until("an idle session", idle)
            t0 = time.time()
            task = daemon.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            t1 = wait_until("the task at the model", lambda: fake.first_request_with(task["id"]))
            if i >= 2:  # the first two warm the session up (MCP connect, caches)
                ours.append(t1 - t0)
            wait_until("the task to end", lambda: daemon.call("GET", f"/api/tasks/{task['id']}")["state"] == "completed")

        # The reference: our own `claude -p` with the same flags, written to directly.
        proc = subprocess.Popen(
            [str(claude), "-p", "--verbose", "--input-format", "stream-json", "--output-format", "stream-json",
             "--allowedTools", "mcp__taskkeeper"],
            cwd=work / "web",
            env={**env, "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        for i in range(runs + 2):
            marker = f"RAW-{i}-{os.getpid()}"
            line = json.dumps({"type": "user", "message": {"role": "user", "content": marker}}) + "\n"
            t0 = time.time()
            proc.stdin.write(line.encode())
            proc.stdin.flush()
            t1 = wait_until("the raw message at the model", lambda: fake.first_request_with(marker))
            if i >= 2:
                raw.append(t1 - t0)
            # Until its turn is over.
            while True:
                out = json.loads(proc.stdout.readline() or b"{}")
                if out.get("subtype") == "session_state_changed" and out.get("state") == "idle":
                    break
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        daemon.stop()
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
    return ours, raw


def bench_command(runs: int) -> tuple[list[float], list[float]]:
    work = Path(tempfile.mkdtemp(prefix="tk-delivery-"))
    stamps = work / "stamps"
    command = f"cat > /dev/null; date +%s.%N >> {stamps}"
    daemon = Daemon(work, {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work)})
    ours: list[float] = []
    raw: list[float] = []

    def stamp_count() -> int:
        return len(stamps.read_text().split()) if stamps.exists() else 0

    try:
        (work / "bot").mkdir()
        daemon.call("POST", "/api/desks", {"name": "bot", "dir": str(work / "bot"), "agent": "generic",
                                            "deliverCommand": command})
        for i in range(runs + 2):
            n = stamp_count()
            t0 = time.time()
            task = daemon.call("POST", "/api/tasks", {"desk": "bot", "text": f"BENCH-{i}"})
            wait_until("the command", lambda: stamp_count() > n)
            t1 = float(stamps.read_text().split()[-1])
            if i >= 2:
                ours.append(t1 - t0)
            wait_until("delivered", lambda: daemon.call("GET", f"/api/tasks/{task['id']}")["deliveredAt"])
            daemon.call("POST", f"/api/tasks/{task['id']}/update", {"status": "done", "text": "ok"})
        for i in range(runs + 2):
            n = stamp_count()
            t0 = time.time()
            subprocess.run(["sh", "-c", command], input=b"the text", cwd=work / "bot", check=True)
            t1 = float(stamps.read_text().split()[-1])
            if i >= 2:
                raw.append(t1 - t0)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    return ours, raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--claude", type=Path, default=None)
    args = ap.parse_args()
    claude = args.claude or find_claude()
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[:3]
    rows = []
    ours, raw = bench_command(args.runs)
    rows.append(("command", summary("ours", ours), summary("reference", raw)))
    ours, raw = bench_stdin(args.runs, claude)
    rows.append(("stdin", summary("ours", ours), summary("reference", raw)))
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[:3]
    print(f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; {args.runs} runs each\n")
    print("| method | ours median (p90) ms | reference median (p90) ms | ours − reference, median | ratio of medians |")
    print("|---|---|---|---|---|")
    for method, o, r in rows:
        print(f"| {method} | {o['median_ms']:.1f} ({o['p90_ms']:.1f}) | {r['median_ms']:.1f} ({r['p90_ms']:.1f}) "
              f"| {o['median_ms'] - r['median_ms']:.1f} | {o['median_ms'] / r['median_ms']:.2f}× |")


if __name__ == "__main__":
    main()
