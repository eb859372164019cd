#!/usr/bin/env python3
"""Delivery per agent and way in (issue 15): from the moment a task can go into a session until
the model receives the request that carries it, for each agent and each way in Taskkeeper has,
each beside a reference that does only the last step directly, with the same binary, flags
and fake model, without Taskkeeper.

    cargo build --release -p taskkeeper-cli
    python3 bench/delivery/per_agent.py [--runs 10] [--only claude-stop,codex-stop,...]

The whole run is inside a network namespace with only loopback (`unshare -rn`, as the real
agent tests do): nothing can leave the machine. The agents are the pinned ones the tests
cache under the target directory (<target>/claude-code-2.1.332, codex-0.171.0,
gemini-cli-0.61.0; run `cargo nextest run -p taskkeeper-cli claude::smoke codex_gemini` once).
The fake models are tests/claude/fake_model.py and tests/agents/fake_model.py; each logs when
a request arrived ("t") and when its answer went out ("t_answer").

Ways in (`--only` names):

claude-stop    the Stop handover. A `claude -p` run at a connected desk is busy (the fake
               holds its answer 2 s); a task is given to the desk meanwhile, once the daemon
               holds the turn busy (the fake logs a held request only when it answers, so
               waiting for its log would give the task at the turn's end); the turn ends and
               Taskkeeper's Stop hook hands the task over. Timed from the answer that ends the
               turn to the request carrying the task. Reference: the same run with no
               Taskkeeper, a Stop hook that prints the block decision from a file.
claude-start   the SessionStart first message. A task waits at the desk; `claude -p hello` is
               started; timed from the spawn to the request carrying the task. Reference:
               `claude -p <the text>`, from the spawn to the request carrying it.
codex-stop     Codex CLI's Stop `block`, as claude-stop but the task waits before the run
               (`codex exec`), and timed from the answer that ends the first turn. Reference:
               a Stop hook printing the block decision.
gemini-stop    Gemini CLI's AfterAgent `deny`, likewise (`gemini -p`).
claude-waiter  an idle Claude Code TUI at a connected desk that has had a turn, so its Stop
               armed Taskkeeper's asyncRewake waiter, which wakes it with the task. Timed
               from the task's submit to the request carrying it. Reference: a paste
               (set-buffer, paste-buffer -p, Enter) done by this script into an idle TUI with
               no Taskkeeper. Both wait 3 s of idleness before each submit.
claude-inbox   a fresh TUI (no Stop yet, so no waiter), non-essential traffic on: the inbox
               socket. Reference: the socket's two lines (auth, user message) written by
               this script, with the session id and token a SessionStart hook saw.
claude-tmux    a fresh TUI whose inbox socket is removed (as the paste test does): the tmux
               paste. Reference: the same paste done by this script. One TUI per run.
codex-app-server  an idle Codex TUI in tmux (`codex --remote unix://` on an app server this
               script starts, `codex app-server --listen unix://`, as Codex's shared daemon
               runs it) at a connected desk, after a warm-up turn (Codex runs a TUI's hooks
               from its first turn on): Taskkeeper's `turn/start` into its thread on the
               control socket. Timed from the task's submit to the request carrying it.
               Reference: the same TUI and app server, no Taskkeeper; this script connects
               to the socket and writes `initialize` and `turn/start` itself (a minimal
               WebSocket client by hand: the standard library has none). Both wait 3 s of
               idleness before each submit.
codex-app-server-hooked  the same, but the reference's TUI is at a connected desk too, so
               Codex runs Taskkeeper's UserPromptSubmit hook (`taskkeeper hook codex`)
               before it sends the request on both sides, and the difference is the
               delivery's own.

A task a turn's end does not take is a MISS line (with what the daemon holds of it), not a
stop of the bench. BENCH_KEEP_LOGS=DIR keeps each daemon's log there.

codex-headless a session Taskkeeper launched at a Codex desk (`codex app-server`, JSON-RPC on its
               stdio), idle: from the task's submit to the request carrying it (a `turn/start`
               into its thread). Reference: `codex app-server` started by this script, the
               same `thread/start` settings bar Taskkeeper's MCP server, a `turn/start` written
               to it. The first run of each side waits for the handshake and is dropped.
gemini-headless likewise at a Gemini desk (`gemini --acp`, a `session/prompt`).
codex-tmux     an idle Codex TUI (`codex --no-daemon` in tmux) at a connected desk, after one
               turn: the tmux paste, from the task's submit to the request carrying it.
               Reference: the same paste done by this script into the same TUI without
               Taskkeeper, Enter 0.15 s after it as the daemon's paste presses it. Both wait 3 s
               of idleness before each submit. Taskkeeper pastes
               only into a pane whose owner it checks by the session's pid, which the hook
               helper finds among its ancestors (Codex's and Gemini's hooks name none): a
               session with a pane and no pid is a MISS with the reference alone.
gemini-tmux    likewise, the Gemini TUI (`gemini` in tmux).

Wall clock between processes on one machine; read the medians. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402  (the delivery bench's daemon, fake and summaries)

ROOT = measure.ROOT
TARGET = measure.TARGET
INSIDE = "TASKKEEPER_BENCH_NETNS"
CODEX = TARGET / "codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
GEMINI = TARGET / "gemini-cli-0.61.0/node_modules/@google/gemini-cli/bundle/gemini.js"
TASK = "«Taskkeeper» Task "


def taskkeeper_bin() -> Path:
    for p in (TARGET / "release" / "taskkeeper", TARGET / "debug" / "taskkeeper"):
        if p.exists():
            return p
    sys.exit(f"no taskkeeper under {TARGET}: cargo build --release -p taskkeeper-cli")


def log_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a line being written
    return out


def handover_gap(entries: list[dict], needle: str, text_key: str) -> float | None:
    """From the answer before the first request carrying `needle` to that request."""
    entries = sorted(entries, key=lambda e: e["n"])
    for i, e in enumerate(entries):
        if needle in (e.get(text_key) or ""):
            if i == 0:
                return None
            return e["t"] - entries[i - 1]["t_answer"]
    return None


def first_with(entries: list[dict], needle: str, text_key: str) -> dict | None:
    for e in sorted(entries, key=lambda e: e["n"]):
        if needle in (e.get(text_key) or ""):
            return e
    return None


def run(cmd: list[str], env: dict, cwd: Path, timeout: float = 180) -> float:
    """Run to the end; the wall-clock time it was spawned."""
    t0 = time.time()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}):\n{p.stdout.decode()[-2000:]}\n{p.stderr.decode()[-2000:]}")
    return t0


def once_hook(dir: Path, name: str) -> tuple[str, Path]:
    """A hook command that prints the decision in `dir/next` once, then nothing: the
    reference's last step, with nothing of Taskkeeper."""
    script = dir / f"{name}.sh"
    nxt = dir / f"{name}.next"
    script.write_text(f"#!/bin/sh\ncat > /dev/null\nif [ -e '{nxt}' ]; then cat '{nxt}'; rm -f '{nxt}'; fi\n")
    script.chmod(0o755)
    return str(script), nxt


class World:
    """A fresh HOME and desk directory under /tmp (socket paths stay short)."""

    def __init__(self, tag: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"tk-{tag}-", dir="/tmp"))
        self.home = self.dir / "home"
        self.web = self.dir / "web"
        for d in (self.home, self.web, self.dir / "tmp"):
            d.mkdir(parents=True, exist_ok=True)

    def done(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def daemon_for(w: World, env: dict, agent: str) -> measure.Daemon:
    d = measure.Daemon(w.dir, env)
    d.call("POST", "/api/desks", {"name": "web", "dir": str(w.web), "agent": agent})
    return d


def connect(w: World, env: dict, d: measure.Daemon, kind: str) -> dict:
    env = {**env, "TASKKEEPER_URL": f"http://127.0.0.1:{d.port}", "TASKKEEPER_DATA_DIR": str(w.dir / "data")}
    args = [str(taskkeeper_bin()), "connect", kind, "--force"] + (["--user"] if kind == "claude-code" else [])
    p = subprocess.run(args, env={**env, "TASKKEEPER_TOKEN": measure.TOKEN}, cwd=w.web, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"connect {kind} failed:\n{p.stdout.decode()}{p.stderr.decode()}")
    return env


def methods(w: World) -> str:
    """The ways in the daemon's log says delivered, with how often."""
    import re
    log = w.dir / "data" / "taskkeeper.log"
    found: dict[str, int] = {}
    for line in (log.read_text(errors="replace").splitlines() if log.exists() else []):
        if "waiter wakes the session" in line:
            found["waiter"] = found.get("waiter", 0) + 1
        elif "delivered" in line:
            m = re.search(r'method[=":\s]+"?([a-z -]+[a-z])', line)
            if m:
                found[m.group(1)] = found.get(m.group(1), 0) + 1
    keep = os.environ.get("BENCH_KEEP_LOGS")
    if keep and log.exists():
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(log, Path(keep) / f"{w.dir.name}.log")
    METHODS_SEEN.append(", ".join(f"{k} ×{v}" for k, v in found.items()) or "none logged")
    return METHODS_SEEN[-1]


METHODS_SEEN: list[str] = []


def wait_state(d: measure.Daemon, task_id: str, state: str = "completed") -> None:
    measure.wait_until(f"task {task_id} {state}",
                       lambda: d.call("GET", f"/api/tasks/{task_id}")["state"] == state, timeout=120)


MISSES: list[str] = []


def completed_or_missed(d: measure.Daemon, task_id: str, what: str, timeout: float = 30) -> bool:
    """Whether the task was ended; if not, the miss is recorded with what the daemon holds of
    it, and the task is ended over the owner API so the next run starts clean."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if d.call("GET", f"/api/tasks/{task_id}")["state"] == "completed":
            return True
        time.sleep(0.05)
    t = d.call("GET", f"/api/tasks/{task_id}")
    t.pop("text", None)
    MISSES.append(f"{what}: task {task_id} not ended: {json.dumps(t)[:800]}")
    print(MISSES[-1], file=sys.stderr, flush=True)
    d.call("POST", f"/api/tasks/{task_id}/update", {"status": "done", "text": "ended by the bench after a miss"})
    return False


# ---- Claude Code ------------------------------------------------------------------------


def claude_rules() -> dict:
    return {
        "rules": [
            {"name": "task", "match": r"«Taskkeeper» Task (?P<id>[0-9a-f-]{36}) from", "tool_result": False,
             "tool": {"name": measure.TASK_UPDATE, "input": {"task_id": "{{id}}", "status": "done", "text": "ok"}}},
            {"name": "busy", "match": "BUSY-", "tool_result": False, "delay": 2.0, "reply": "ok"},
            {"name": "after-tool", "tool_result": True, "reply": "done"},
        ],
        "default": {"reply": "ok"},
        "side": {"reply": "{\"title\": \"bench\"}"},
    }


class ClaudeFake(measure.Fake):
    def main_requests(self) -> list[dict]:
        return [e for e in log_lines(self.log) if e.get("kind") == "main"]


def claude_world(tag: str) -> tuple[World, ClaudeFake, dict, Path]:
    w = World(tag)
    fake = ClaudeFake(w.dir, claude_rules())
    claude = measure.find_claude()
    env = measure.claude_env(w.dir, fake, claude)
    # claude_env made HOME and the desk under the world's dir with these names.
    env["PATH"] = f"{taskkeeper_bin().parent}:{env['PATH']}"
    env["TERM"] = "xterm-256color"
    return w, fake, env, claude


def claude_stop(runs: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    w, fake, env, claude = claude_world("cstop")
    d = daemon_for(w, env, "claude-code")
    try:
        env = connect(w, env, d, "claude-code")
        seen: set[str] = set()
        for i in range(runs + 1):
            p = subprocess.Popen([str(claude), "-p", "--allowedTools", "mcp__taskkeeper", "--", f"BUSY-{i}."],
                                 env=env, cwd=w.web, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            # The daemon's own word that the turn runs (the fake logs a held request only when
            # it answers): the task is given 2 s before the turn can end.
            def busy() -> bool:
                ss = d.call("GET", "/api/sessions")["sessions"]
                return any(s["activity"] == "busy" and s["id"] not in seen for s in ss)
            measure.wait_until("the busy turn", busy, 120)
            seen.update(s["id"] for s in d.call("GET", "/api/sessions")["sessions"])
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            p.wait(timeout=180)
            if not completed_or_missed(d, task["id"], f"claude-stop run {i}"):
                continue
            gap = handover_gap(fake.main_requests(), task["id"], "tail")
            if gap is None:
                sys.exit("claude-stop: the task never reached the model")
            if i >= 1:
                ours.append(gap)
    finally:
        methods(w)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env, claude = claude_world("cstopref")
    try:
        hook, nxt = once_hook(w.dir, "stop")
        settings = w.dir / "ref-settings.json"
        settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]}}))
        for i in range(runs + 1):
            marker = f"RAW-{i}-{os.getpid()}"
            nxt.write_text(json.dumps({"decision": "block", "reason": marker}))
            run([str(claude), "-p", "--allowedTools", "mcp__taskkeeper", "--settings", str(settings), "--",
                 f"BUSY-r{i}."], env, w.web)
            gap = handover_gap(fake.main_requests(), marker, "tail")
            if gap is None:
                sys.exit("claude-stop reference: the block reason never reached the model")
            if i >= 1:
                raw.append(gap)
    finally:
        fake.stop()
        w.done()
    return ours, raw


def claude_start(runs: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    w, fake, env, claude = claude_world("cstart")
    d = daemon_for(w, env, "claude-code")
    try:
        env = connect(w, env, d, "claude-code")
        for i in range(runs + 1):
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            t0 = run([str(claude), "-p", "--allowedTools", "mcp__taskkeeper", "--", f"hello-{i}"], env, w.web)
            wait_state(d, task["id"])
            e = first_with(fake.main_requests(), task["id"], "tail")
            if e is None:
                sys.exit("claude-start: the task never reached the model")
            if i >= 1:
                ours.append(e["t"] - t0)
    finally:
        methods(w)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env, claude = claude_world("cstartref")
    try:
        for i in range(runs + 1):
            marker = f"RAW-{i}-{os.getpid()}"
            t0 = run([str(claude), "-p", "--allowedTools", "mcp__taskkeeper", "--", marker], env, w.web)
            e = first_with(fake.main_requests(), marker, "tail")
            if e is None:
                sys.exit("claude-start reference: the prompt never reached the model")
            if i >= 1:
                raw.append(e["t"] - t0)
    finally:
        fake.stop()
        w.done()
    return ours, raw


class Tmux:
    def __init__(self, w: World, command: str, env: dict) -> None:
        self.sock = w.dir / "tmux.sock"
        conf = w.dir / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")
        subprocess.run(["tmux", "-S", str(self.sock), "-f", str(conf), "new-session", "-d", "-s", "cc",
                        "-x", "180", "-y", "50", command], env=env, check=True, stdin=subprocess.DEVNULL)

    def screen(self) -> str:
        return subprocess.run(["tmux", "-S", str(self.sock), "capture-pane", "-p", "-J", "-t", "cc"],
                              capture_output=True).stdout.decode(errors="replace")

    def paste(self, text: str, gap: float = 0.3) -> None:
        """The paste, then Enter after `gap` s, so the TUI takes Enter apart (the daemon's
        paste waits 0.15 s, and presses Enter once more if no turn starts)."""
        t = ["tmux", "-S", str(self.sock)]
        subprocess.run(t + ["set-buffer", "-b", "tk", "--", text], check=True)
        subprocess.run(t + ["paste-buffer", "-p", "-d", "-b", "tk", "-t", "cc"], check=True)
        time.sleep(gap)
        subprocess.run(t + ["send-keys", "-t", "cc", "Enter"], check=True)

    def stop(self) -> None:
        subprocess.run(["tmux", "-S", str(self.sock), "kill-server"], capture_output=True)


def claude_tui_idle(t: Tmux) -> bool:
    s = t.screen()
    return "? for shortcuts" in s and "esc to interrupt" not in s


def claude_tmux(runs: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    w, fake, env, claude = claude_world("ctmux")
    d = daemon_for(w, env, "claude-code")
    t = None
    try:
        env = connect(w, env, d, "claude-code")
        t = Tmux(w, f"cd '{w.web}' && exec '{claude}' --permission-mode manual", env)
        measure.wait_until("the prompt box", lambda: claude_tui_idle(t), 120)
        time.sleep(1.0)
        t.paste("warm up")
        measure.wait_until("the warm-up turn", lambda: first_with(fake.main_requests(), "warm up", "tail"), 120)
        for i in range(runs + 1):
            def idle() -> bool:
                ss = d.call("GET", "/api/sessions")["sessions"]
                return claude_tui_idle(t) and any(s["activity"] == "idle" for s in ss)
            measure.wait_until("an idle session", idle, 120)
            time.sleep(3.0)
            t0 = time.time()
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            e = measure.wait_until("the pasted task", lambda: first_with(fake.main_requests(), task["id"], "tail"), 120)
            wait_state(d, task["id"])
            if i >= 1:
                ours.append(e["t"] - t0)
    finally:
        methods(w)
        if t:
            t.stop()
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env, claude = claude_world("ctmuxref")
    t = None
    try:
        t = Tmux(w, f"cd '{w.web}' && exec '{claude}' --permission-mode manual", env)
        measure.wait_until("the prompt box", lambda: claude_tui_idle(t), 120)
        time.sleep(1.0)
        for i in range(runs + 1):
            measure.wait_until("an idle TUI", lambda: claude_tui_idle(t), 120)
            time.sleep(3.0)
            marker = f"RAW-{i}-{os.getpid()}"
            t0 = time.time()
            t.paste(marker)
            e = measure.wait_until("the pasted line", lambda: first_with(fake.main_requests(), marker, "tail"), 120)
            if i >= 1:
                raw.append(e["t"] - t0)
    finally:
        if t:
            t.stop()
        fake.stop()
        w.done()
    return ours, raw


def session_socket(w: World) -> str | None:
    """The inbox socket Claude Code's session file names (`messagingSocketPath`)."""
    for f in (w.home / ".claude" / "sessions").glob("*.json"):
        try:
            p = json.loads(f.read_text()).get("messagingSocketPath")
        except ValueError:
            continue
        if p and Path(p).exists():
            return p
    return None


def claude_fresh(runs: int, inbox: bool) -> tuple[list[float], list[float]]:
    """A fresh TUI per run (no Stop yet, so no waiter is armed): the task goes in by the inbox
    socket when the session has one (non-essential traffic on, as Claude Code needs for it),
    else by the tmux paste. Reference: the same fresh TUI, written to directly (the socket's
    two lines, from what a SessionStart hook saw, or the same paste)."""
    def world(tag: str):
        w, fake, env, claude = claude_world(tag)
        if inbox:
            for k in ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING"):
                env.pop(k, None)
        return w, fake, env, claude

    ours: list[float] = []
    w, fake, env, claude = world("cfresh")
    d = daemon_for(w, env, "claude-code")
    try:
        env = connect(w, env, d, "claude-code")
        for i in range(runs):
            t = Tmux(w, f"cd '{w.web}' && exec '{claude}' --permission-mode manual", env)
            try:
                def ready() -> bool:
                    ss = d.call("GET", "/api/sessions")["sessions"]
                    return claude_tui_idle(t) and any(s["activity"] == "idle" and s.get("state") != "ended" for s in ss)
                measure.wait_until("a fresh idle session", ready, 120)
                time.sleep(3.0)
                if not inbox:
                    # As the paste test does: without the inbox socket the paste delivers.
                    sock = session_socket(w)
                    if sock:
                        os.unlink(sock)
                t0 = time.time()
                task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
                e = measure.wait_until("the task", lambda: first_with(fake.main_requests(), task["id"], "tail"), 120)
                wait_state(d, task["id"])
                ours.append(e["t"] - t0)
            finally:
                t.stop()
            # Until the daemon has the session gone, so the next run's is the only one.
            measure.wait_until("the session's end", lambda: all(
                s["activity"] != "idle" or s.get("state") == "ended" for s in d.call("GET", "/api/sessions")["sessions"]
            ) or True, 30)
            time.sleep(1.0)
    finally:
        methods(w)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env, claude = world("cfreshref")
    try:
        seen = w.dir / "start.json"
        hook = w.dir / "start.sh"
        hook.write_text(f"#!/bin/sh\n{{ cat; echo; echo \"$CLAUDE_CODE_MESSAGING_SOCKET\"; "
                        f"echo \"$CLAUDE_CODE_MESSAGING_TOKEN\"; }} > '{seen}.tmp' && mv '{seen}.tmp' '{seen}'\n")
        hook.chmod(0o755)
        settings = w.dir / "ref-settings.json"
        settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": str(hook)}]}]}}))
        for i in range(runs):
            seen.unlink(missing_ok=True)
            t = Tmux(w, f"cd '{w.web}' && exec '{claude}' --permission-mode manual --settings '{settings}'", env)
            try:
                measure.wait_until("a fresh idle TUI", lambda: claude_tui_idle(t) and seen.exists(), 120)
                time.sleep(3.0)
                marker = f"RAW-{i}-{os.getpid()}"
                if inbox:
                    payload, _, token = (seen.read_text().split("\n") + ["", "", ""])[:3]
                    sid = json.loads(payload)["session_id"]
                    sock = session_socket(w)
                    if not sock:
                        sys.exit("claude-inbox reference: Claude Code named no inbox socket")
                    lines = ""
                    if token:
                        lines += json.dumps({"type": "auth", "token": token}) + "\n"
                    lines += json.dumps({"type": "user", "session_id": sid,
                                         "message": {"role": "user", "content": marker}}) + "\n"
                    import socket as so
                    t0 = time.time()
                    c = so.socket(so.AF_UNIX, so.SOCK_STREAM)
                    c.connect(sock)
                    c.sendall(lines.encode())
                    c.close()
                else:
                    t0 = time.time()
                    t.paste(marker)
                e = measure.wait_until("the line", lambda: first_with(fake.main_requests(), marker, "tail"), 120)
                raw.append(e["t"] - t0)
            finally:
                t.stop()
            time.sleep(1.0)
    finally:
        fake.stop()
        w.done()
    return ours, raw


# ---- Codex CLI and Gemini CLI ------------------------------------------------------------


class AgentFake:
    def __init__(self, work: Path) -> None:
        self.log = work / "model.jsonl"
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests/agents/fake_model.py"), str(self.log)],
                                     stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline().decode().strip())

    def turns(self, kind: str) -> list[dict]:
        return [e for e in log_lines(self.log) if e.get("kind") == kind]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def agent_world(kind: str, tag: str) -> tuple[World, AgentFake, dict]:
    w = World(tag)
    fake = AgentFake(w.dir)
    if kind == "codex":
        if not CODEX.exists():
            sys.exit(f"no Codex CLI at {CODEX}: run the codex_gemini tests once")
        c = w.home / ".codex"
        c.mkdir(parents=True)
        (c / "config.toml").write_text(
            f'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "never"\n'
            f'sandbox_mode = "danger-full-access"\ncheck_for_update_on_startup = false\n\n'
            f'[analytics]\nenabled = false\n\n[features]\nplugins = false\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "http://127.0.0.1:{fake.port}/v1"\n'
            f'env_key = "FAKE_API_KEY"\nwire_api = "responses"\nrequest_max_retries = 0\n'
            f'stream_max_retries = 0\n\n[projects."{w.web}"]\ntrust_level = "trusted"\n')
    else:
        if not GEMINI.exists():
            sys.exit(f"no Gemini CLI at {GEMINI}: run the codex_gemini tests once")
        g = w.home / ".gemini"
        g.mkdir(parents=True)
        (g / "settings.json").write_text(json.dumps({
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "ide": {"enabled": False},
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "model": {"name": "gemini-2.5-flash"},
            "hooksConfig": {"enabled": True},
        }))
    env = {
        "PATH": f"{taskkeeper_bin().parent}:{CODEX.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(w.home),
        "CODEX_HOME": str(w.home / ".codex"),
        "LANG": "C.UTF-8",
        "TMPDIR": str(w.dir / "tmp"),
        "FAKE_API_KEY": "offline",
        "GEMINI_API_KEY": "offline",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{fake.port}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_BROWSER": "1",
    }
    return w, fake, env


def agent_cmd(kind: str, prompt: str) -> list[str]:
    if kind == "codex":
        # On both sides: ours is trusted by `connect`, the reference's hook is not.
        return [str(CODEX), "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", prompt]
    return ["node", str(GEMINI), "-p", prompt]


def cli_stop(kind: str, runs: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}stop")
    d = daemon_for(w, env, kind)
    try:
        env = connect(w, env, d, kind)
        for i in range(runs + 1):
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            run(agent_cmd(kind, f"hello-{i}."), env, w.web)
            wait_state(d, task["id"])
            turns = fake.turns(kind)
            e = first_with(turns, task["id"], "text")
            before = [t for t in turns if t["n"] < (e or {"n": 0})["n"]]
            if e is None or not before or f"hello-{i}." not in before[-1]["text"]:
                sys.exit(f"{kind}-stop: the task did not follow the turn's end:\n{json.dumps(turns)[-3000:]}")
            if i >= 1:
                ours.append(handover_gap(turns, task["id"], "text"))
    finally:
        methods(w)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}ref")
    try:
        hook, nxt = once_hook(w.dir, "stop")
        if kind == "codex":
            (w.home / ".codex/hooks.json").write_text(json.dumps(
                {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook, "timeout": 10}]}]}}))
            decision = "block"
        else:
            f = w.home / ".gemini/settings.json"
            s = json.loads(f.read_text())
            s["hooks"] = {"AfterAgent": [{"hooks": [{"type": "command", "command": hook, "timeout": 10000}]}]}
            f.write_text(json.dumps(s))
            decision = "deny"
        for i in range(runs + 1):
            marker = f"RAW-{i}-{os.getpid()}"
            nxt.write_text(json.dumps({"decision": decision, "reason": marker}))
            run(agent_cmd(kind, f"hello-r{i}"), env, w.web)
            gap = handover_gap(fake.turns(kind), marker, "text")
            if gap is None:
                sys.exit(f"{kind}-stop reference: the hook's reason never reached the model")
            if i >= 1:
                raw.append(gap)
    finally:
        fake.stop()
        w.done()
    return ours, raw


class UnixWebSocket:
    """Just enough WebSocket (RFC 6455) over a Unix socket for the reference: text frames,
    masked out, unmasked in. The standard library has no WebSocket client."""

    def __init__(self, path: str) -> None:
        import base64
        import socket as so
        self.s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(path)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.s.recv(1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            sys.exit(f"codex-app-server reference: no WebSocket on {path}: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise EOFError("the app server closed")
            out += chunk
        return out

    def send(self, message: dict) -> None:
        import struct
        data = json.dumps(message).encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def answer(self, id: int) -> dict:
        import struct
        while True:
            h = self._read(2)
            n = h[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            body = self._read(n)
            if h[0] & 0x0F == 1:
                m = json.loads(body)
                if m.get("id") == id:
                    return m

    def close(self) -> None:
        self.s.close()


def codex_tui_world(tag: str, taskkeeper: bool):
    """A Codex home, its app server and a TUI joined to it in tmux, after a warm-up turn."""
    w, fake, env = agent_world("codex", tag)
    env["TERM"] = "xterm-256color"
    d = None
    if taskkeeper:
        d = daemon_for(w, env, "codex")
        env = connect(w, env, d, "codex")
    server = subprocess.Popen([str(CODEX), "app-server", "--listen", "unix://"], env=env, cwd=w.web,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = w.home / ".codex/app-server-control/app-server-control.sock"
    measure.wait_until("the app server's socket", sock.exists, 60)
    t = Tmux(w, f"cd '{w.web}' && exec '{CODEX}' --remote unix://", env)
    measure.wait_until("the prompt box", lambda: "Ask Codex" in t.screen(), 120)
    time.sleep(1.0)
    t.paste("warm up")
    measure.wait_until("the warm-up turn", lambda: first_with(fake.turns("codex"), "warm up", "text"), 120)
    return w, fake, env, d, server, t, sock


def codex_tui_idle(t: Tmux) -> bool:
    s = t.screen()
    return "? for shortcuts" in s and "esc to interrupt" not in s


def codex_tui_app_server(runs: int, hooked_reference: bool = False) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    w, fake, env, d, server, t, _ = codex_tui_world("cxtui", True)
    try:
        for i in range(runs + 1):
            def idle() -> bool:
                ss = d.call("GET", "/api/sessions")["sessions"]
                return codex_tui_idle(t) and any(s["activity"] == "idle" for s in ss)
            measure.wait_until("an idle session", idle, 120)
            time.sleep(3.0)
            t0 = time.time()
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            e = measure.wait_until("the task", lambda: first_with(fake.turns("codex"), task["id"], "text"), 120)
            wait_state(d, task["id"])
            if i >= 1:
                ours.append(e["t"] - t0)
    finally:
        methods(w)
        t.stop()
        server.terminate()
        server.wait(timeout=10)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env, d, server, t, sock = codex_tui_world("cxtuiref", hooked_reference)
    try:
        rollouts = list((w.home / ".codex/sessions").rglob("rollout-*.jsonl"))
        threads = [f.stem[-36:] for f in rollouts]
        if not threads:
            sys.exit("codex-app-server reference: the TUI's thread wrote no rollout")
        for i in range(runs + 1):
            measure.wait_until("an idle TUI", lambda: codex_tui_idle(t), 120)
            time.sleep(3.0)
            marker = f"RAW-{i}-{os.getpid()}"
            t0 = time.time()
            c = UnixWebSocket(str(sock))
            c.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"clientInfo": {"name": "bench", "title": "bench", "version": "0"}}})
            c.answer(1)
            c.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            c.send({"jsonrpc": "2.0", "id": 2, "method": "turn/start",
                    "params": {"threadId": threads[0], "input": [{"type": "text", "text": marker}]}})
            started = c.answer(2)
            c.close()
            if "error" in started:
                sys.exit(f"codex-app-server reference: turn/start refused: {started}")
            e = measure.wait_until("the turn", lambda: first_with(fake.turns("codex"), marker, "text"), 120)
            if i >= 1:
                raw.append(e["t"] - t0)
    finally:
        t.stop()
        server.terminate()
        server.wait(timeout=10)
        if d:
            d.stop()
        fake.stop()
        w.done()
    return ours, raw


def cli_tui_idle(kind: str, t: Tmux) -> bool:
    s = t.screen()
    if kind == "codex":
        return "? for shortcuts" in s and "esc to interrupt" not in s
    return "Type your message" in s and "esc to cancel" not in s


def cli_tmux(kind: str, runs: int) -> tuple[list[float], list[float]]:
    """An idle Codex or Gemini TUI in tmux at a connected desk, after one turn: the tmux
    paste. Reference: the same paste done by this script into the same TUI without
    Taskkeeper, with the daemon's 0.15 s before Enter. Both wait 3 s of idleness before each
    submit."""
    tui = (f"exec '{CODEX}' --no-daemon --dangerously-bypass-hook-trust" if kind == "codex"
           else f"exec node '{GEMINI}'")
    ours: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}tmux")
    env = {**env, "TERM": "xterm-256color"}
    d = daemon_for(w, env, kind)
    t = None
    try:
        env = connect(w, env, d, kind)
        t = Tmux(w, f"cd '{w.web}' && {tui}", env)
        measure.wait_until("the prompt box", lambda: cli_tui_idle(kind, t), 120)
        time.sleep(1.0)
        t.paste("warm up")
        measure.wait_until("the warm-up turn", lambda: first_with(fake.turns(kind), "warm up", "text"), 120)
        for i in range(runs + 1):
            def idle() -> bool:
                ss = d.call("GET", "/api/sessions")["sessions"]
                return cli_tui_idle(kind, t) and any(s["activity"] == "idle" and s.get("tmuxPane") for s in ss)
            measure.wait_until("an idle session with its pane", idle, 120)
            if not any(s.get("pid") for s in d.call("GET", "/api/sessions")["sessions"]):
                # Taskkeeper pastes only into a pane whose owner it can check by the session's
                # pid (the hook helper finds it among its ancestors: session_process.rs).
                MISSES.append(f"{kind}-tmux: the session has a pane but no pid, so Taskkeeper never "
                              f"pastes into it: {json.dumps(d.call('GET', '/api/sessions'))[:600]}")
                print(MISSES[-1], file=sys.stderr, flush=True)
                break
            time.sleep(3.0)
            t0 = time.time()
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            e = measure.wait_until("the pasted task", lambda: first_with(fake.turns(kind), task["id"], "text"), 120)
            if not completed_or_missed(d, task["id"], f"{kind}-tmux run {i}"):
                continue
            if i >= 1:
                ours.append(e["t"] - t0)
    finally:
        methods(w)
        if t:
            t.stop()
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}tmuxref")
    env = {**env, "TERM": "xterm-256color"}
    t = None
    try:
        t = Tmux(w, f"cd '{w.web}' && {tui}", env)
        measure.wait_until("the prompt box", lambda: cli_tui_idle(kind, t), 120)
        time.sleep(1.0)
        for i in range(runs + 1):
            measure.wait_until("an idle TUI", lambda: cli_tui_idle(kind, t), 120)
            time.sleep(3.0)
            marker = f"RAW-{i}-{os.getpid()}"
            t0 = time.time()
            t.paste(marker, gap=0.15)  # the daemon's own gap, so only the delivery differs
            e = measure.wait_until("the pasted line", lambda: first_with(fake.turns(kind), marker, "text"), 120)
            if i >= 1:
                raw.append(e["t"] - t0)
    finally:
        if t:
            t.stop()
        fake.stop()
        w.done()
    return ours, raw


# ---- Headless Codex and Gemini sessions -------------------------------------------------


class Rpc:
    """The reference's own JSON-RPC client on an agent's stdio (newline-delimited), as the
    daemon's launched-session runner speaks it: it answers what the agent asks with an
    allowance, so no request waits."""

    def __init__(self, cmd: list[str], env: dict, cwd: Path) -> None:
        import queue
        import threading
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.messages.put(json.loads(line))
            except ValueError:
                pass

    def send(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> int:
        rid = self.next_id
        self.next_id += 1
        self.send({"id": rid, "method": method, "params": params})
        return rid

    def wait(self, what: str, check, timeout: float = 120) -> dict:
        import queue
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                m = self.messages.get(timeout=0.5)
            except queue.Empty:
                continue
            if "id" in m and "method" in m:
                if m["method"] == "session/request_permission":
                    option = next((o["optionId"] for o in m["params"].get("options", []) if o.get("kind") == "allow_once"), None)
                    self.send({"id": m["id"], "result": {"outcome": {"outcome": "selected", "optionId": option}}})
                else:
                    self.send({"id": m["id"], "result": {"decision": "accept"}})
            if check(m):
                return m
        sys.exit(f"timed out waiting for {what}")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def headless(kind: str, runs: int) -> tuple[list[float], list[float]]:
    """A session Taskkeeper launched at a desk (`codex app-server` / `gemini --acp`): from the
    task's submit, with the session idle, to the model's request carrying it. Reference: the
    same binary started by this script and written to directly (`turn/start` into its thread,
    `session/prompt`), with the same thread or session settings but Taskkeeper's MCP server."""
    program = CODEX if kind == "codex" else GEMINI
    ours: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}hl")
    env = {**env, ("TASKKEEPER_CODEX" if kind == "codex" else "TASKKEEPER_GEMINI"): str(program)}
    d = daemon_for(w, env, kind)
    try:
        session = d.call("POST", "/api/desks/web/launch", {})

        def idle() -> bool:
            for s in d.call("GET", "/api/sessions")["sessions"]:
                if s["id"] == session["id"]:
                    return s["activity"] == "idle" and not d.call("GET", "/api/tasks?state=open")["tasks"]
            return False

        for i in range(runs + 1):
            measure.wait_until("an idle session", idle, 120)
            t0 = time.time()
            task = d.call("POST", "/api/tasks", {"desk": "web", "text": f"BENCH-{i}"})
            e = measure.wait_until("the task at the model", lambda: first_with(fake.turns(kind), task["id"], "text"), 120)
            wait_state(d, task["id"])
            if i >= 1:  # the first waits for the handshake (Gemini's takes seconds)
                ours.append(e["t"] - t0)
        d.call("POST", f"/api/sessions/{session['id']}/stop", {})
    finally:
        methods(w)
        d.stop()
        fake.stop()
        w.done()
    raw: list[float] = []
    w, fake, env = agent_world(kind, f"{kind}hlref")
    try:
        if kind == "codex":
            c = Rpc([str(CODEX), "app-server"], env, w.web)
            c.request("initialize", {"clientInfo": {"name": "bench", "title": "bench", "version": "0"}})
            c.wait("initialize", lambda m: m.get("id") == 1)
            c.send({"method": "initialized", "params": {}})
            c.request("thread/start", {"cwd": str(w.web), "approvalPolicy": "untrusted"})
            thread = c.wait("thread/start", lambda m: m.get("id") == 2)["result"]["thread"]["id"]

            def prompt(text: str) -> None:
                c.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})

            def turn_over(m: dict) -> bool:
                return m.get("method") == "turn/completed"
        else:
            c = Rpc(["node", str(GEMINI), "--acp"], env, w.web)
            c.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
                "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
            c.wait("initialize", lambda m: m.get("id") == 1)
            c.request("session/new", {"cwd": str(w.web), "mcpServers": []})
            sid = c.wait("session/new", lambda m: m.get("id") == 2)["result"]["sessionId"]
            asked: list[int] = []

            def prompt(text: str) -> None:
                asked.append(c.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}))

            def turn_over(m: dict) -> bool:
                return m.get("id") == asked[-1] and "result" in m
        for i in range(runs + 1):
            marker = f"RAW-{i}-{os.getpid()}"
            t0 = time.time()
            prompt(marker)
            e = measure.wait_until("the prompt at the model", lambda: first_with(fake.turns(kind), marker, "text"), 120)
            c.wait("the turn's end", turn_over)
            if i >= 1:
                raw.append(e["t"] - t0)
        c.close()
    finally:
        fake.stop()
        w.done()
    return ours, raw


# ---- Not measured here, and why ------------------------------------------------------------
NOT_MEASURED = {
    "claude-stdin": "in bench/delivery/measure.py (the stdin of a launched session)",
}

WAYS = {
    "claude-stop": claude_stop,
    "claude-start": claude_start,
    "codex-stop": lambda n: cli_stop("codex", n),
    "gemini-stop": lambda n: cli_stop("gemini", n),
    "claude-waiter": claude_tmux,
    "claude-inbox": lambda n: claude_fresh(n, inbox=True),
    "claude-tmux": lambda n: claude_fresh(n, inbox=False),
    "codex-app-server": codex_tui_app_server,
    "codex-app-server-hooked": lambda n: codex_tui_app_server(n, hooked_reference=True),
    "codex-tmux": lambda n: cli_tmux("codex", n),
    "gemini-tmux": lambda n: cli_tmux("gemini", n),
    "codex-headless": lambda n: headless("codex", n),
    "gemini-headless": lambda n: headless("gemini", n),
}


def in_a_loopback_namespace() -> None:
    """Run this script again inside a network namespace with only loopback."""
    if os.environ.get(INSIDE):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    p = subprocess.run(["unshare", "-rn", "--", sys.executable, *sys.argv], env={**os.environ, INSIDE: "1"})
    sys.exit(p.returncode)


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", default=",".join(WAYS))
    args = ap.parse_args()
    in_a_loopback_namespace()
    print(f"daemon: {taskkeeper_bin()}", flush=True)
    print("| way in | runs | ours median (p90) ms | reference median (p90) ms | ours − reference | ratio | load before → after |")
    print("|---|---|---|---|---|---|---|", flush=True)
    for name in args.only.split(","):
        before = load()
        ours, raw = WAYS[name](args.runs)
        r = measure.summary("reference", raw)
        if not ours:  # the way in did not deliver: the reference alone, and the MISS says why
            print(f"| {name} ({METHODS_SEEN[-1] if METHODS_SEEN else ''}) | 0 | — | {r['median_ms']:.0f} ({r['p90_ms']:.0f}) "
                  f"| — | — | {before} → {load()} |", flush=True)
            continue
        o = measure.summary("ours", ours)
        print(f"| {name} ({METHODS_SEEN[-1] if METHODS_SEEN else ''}) | {o['n']} | {o['median_ms']:.0f} ({o['p90_ms']:.0f}) | {r['median_ms']:.0f} ({r['p90_ms']:.0f}) "
              f"| {o['median_ms'] - r['median_ms']:.0f} | {o['median_ms'] / r['median_ms']:.2f}× | {before} → {load()} |",
              flush=True)
    for m in MISSES:
        print(f"MISS {m}")
    for name, why in NOT_MEASURED.items():
        print(f"{name}: {why}")


if __name__ == "__main__":
    main()
