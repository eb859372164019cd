#!/usr/bin/env python3
"""Measures the tray app: time from launch to tray ready, and resident memory and CPU when
idle with the window hidden and then shown.

    cd ui && npm ci && npm run build && cd ..
    cargo build --release -p taskkeeper-app
    python3 bench/app/measure.py [--runs 5] [--idle 30] [--app PATH]

The app runs on a private Xvfb display and D-Bus session bus (packages xvfb, dbus), with a
fresh data directory, HOME and port, so nothing of the user's is touched; the bus activates
nothing, like CI's. Memory and CPU count the app and every process it started (WebKit's web
and network processes). RSS counts shared pages once per process, so the sum overstates;
PSS (proportional set size, from /proc/PID/smaps_rollup) shares them out and is the fairer
total. CPU is the processes' user+system time over the window, as a share of one core.

"Launch to tray ready" is timed twice: by this script from just before it starts the process
until the log says `tray ready` (polled every 5 ms, so it includes the wait for the log writer),
and by the app itself from `main` to the tray's creation (`startup_ms` in that line). The app
makes no web page until its window is opened (window.rs), so the hidden sample is of an app
whose window was never made; the window is then shown with a second launch, and `page loaded`
is the time from that launch to the page's first render report. The time from the tray menu's
Open to the first painted frame, and the weight once the window was hidden again, are measured
by the app's test binary, which can play a StatusNotifierItem host (tests/it/window.rs,
`bench_the_hidden_weight_and_the_open_from_the_tray_menu`). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")


def default_app() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "taskkeeper-app"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir={tmp}</listen>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class Desktop:
    """A private X display and session bus."""

    def __init__(self, scratch: Path):
        self.xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1024x768x24"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.display = ":" + self.xvfb.stdout.readline().decode().strip()
        services = scratch / "dbus-services"
        services.mkdir()
        config = scratch / "bus.xml"
        config.write_text(BUS_CONFIG.format(tmp=scratch, services=services))
        self.bus_daemon = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.bus = self.bus_daemon.stdout.readline().decode().strip()

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY",)}
        env.update(DISPLAY=self.display, DBUS_SESSION_BUS_ADDRESS=self.bus, GDK_BACKEND="x11",
                   NO_AT_BRIDGE="1")
        env.update(extra)
        return env

    def close(self) -> None:
        for p in (self.bus_daemon, self.xvfb):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def descendants(pid: int) -> list[int]:
    """The pid and every process below it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_ticks(pids: list[int]) -> dict[str, int]:
    """User+system clock ticks so far, by process name."""
    by_name: dict[str, int] = {}
    for p in pids:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        name = stat.split("(", 1)[1].rsplit(")", 1)[0]
        fields = stat.rsplit(")", 1)[1].split()
        by_name[name] = by_name.get(name, 0) + int(fields[11]) + int(fields[12])  # utime, stime
    return by_name


def memory_kib(pids: list[int]) -> tuple[int, int, dict[str, int]]:
    """(RSS sum, PSS sum, RSS by process name)."""
    rss = pss = 0
    by_name: dict[str, int] = {}
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            name = Path(f"/proc/{p}/comm").read_text().strip()
        except OSError:
            continue
        r = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        rss += r
        pss += int(re.search(r"^Pss:\s+(\d+)", rollup, re.M).group(1))
        by_name[name] = by_name.get(name, 0) + r
    return rss, pss, by_name


def sample(pid: int, seconds: float) -> dict:
    pids = descendants(pid)
    before, t0 = cpu_ticks(pids), time.monotonic()
    time.sleep(seconds)
    pids = descendants(pid)
    after, t1 = cpu_ticks(pids), time.monotonic()
    rss, pss, by_name = memory_kib(pids)
    cpu = {k: 100.0 * (v - before.get(k, 0)) / TICKS / (t1 - t0) for k, v in after.items()}
    return {"cpu": sum(cpu.values()), "cpu_by_name": cpu, "rss": rss, "pss": pss,
            "by_name": by_name, "procs": len(pids)}


def wait_log(log: Path, needle: str, timeout: float, proc: subprocess.Popen) -> float:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if log.exists() and needle in log.read_text(errors="replace"):
            return time.monotonic()
        if proc.poll() is not None:
            sys.exit(f"the app exited ({proc.returncode}) before {needle!r}")
        time.sleep(0.005)
    sys.exit(f"timed out waiting for {needle!r} in {log}")


def run_once(app: Path, idle: float, measure_idle: bool) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="taskkeeper-bench-"))
    desktop = Desktop(scratch)
    data = scratch / "data"
    env = desktop.env({"TASKKEEPER_DATA_DIR": str(data), "TASKKEEPER_PORT": str(free_port()),
                       "TASKKEEPER_TOKEN": "bench-token", "HOME": str(scratch / "home")})
    log = data / "taskkeeper.log"
    result: dict = {}
    try:
        t0 = time.monotonic()
        proc = subprocess.Popen([str(app)], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result["tray_ready_s"] = wait_log(log, "tray ready", 60, proc) - t0
        line = next(l for l in log.read_text().splitlines() if "tray ready" in l)
        m = re.search(r"startup_ms=(\d+)", line)
        result["in_app_ms"] = int(m.group(1)) if m else None
        if measure_idle:
            time.sleep(10)  # let start-up work settle
            result["hidden"] = sample(proc.pid, idle)
            # A second launch shows the running instance's window (single instance).
            t1 = time.monotonic()
            subprocess.run([str(app)], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
            wait_log(log, "window shown", 10, proc)
            result["page_loaded_s"] = wait_log(log, "ui rendered", 60, proc) - t1
            time.sleep(10)
            result["shown"] = sample(proc.pid, idle)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        desktop.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", type=Path, default=default_app())
    parser.add_argument("--runs", type=int, default=5, help="launches timed")
    parser.add_argument("--idle", type=float, default=30, help="seconds per idle sample")
    args = parser.parse_args()
    if not args.app.exists():
        sys.exit(f"{args.app} is missing: cargo build --release -p taskkeeper-app")

    runs = [run_once(args.app, args.idle, measure_idle=(i == 0)) for i in range(args.runs)]
    tray = [r["tray_ready_s"] * 1000 for r in runs]
    page = [r["page_loaded_s"] * 1000 for r in runs if "page_loaded_s" in r]
    inapp = [r["in_app_ms"] for r in runs if r["in_app_ms"] is not None]
    print(f"app: {args.app} ({args.app.stat().st_size / 1e6:.1f} MB)")
    print(f"\n| launch to | median | min | max | runs |\n|---|---|---|---|---|")
    print(f"| tray ready (seen by the script) | {statistics.median(tray):.0f} ms | {min(tray):.0f} ms "
          f"| {max(tray):.0f} ms | {len(tray)} |")
    if inapp:
        print(f"| tray ready (the app's own `startup_ms`) | {statistics.median(inapp):.0f} ms "
              f"| {min(inapp)} ms | {max(inapp)} ms | {len(inapp)} |")
    print(f"| second launch to the page's first render (window made then) | {statistics.median(page):.0f} ms "
          f"| {min(page):.0f} ms | {max(page):.0f} ms | {len(page)} |")
    print(f"\n| idle ({args.idle:.0f} s) | RSS, all processes | PSS, all processes | app process RSS "
          f"| CPU (share of one core) | processes |\n|---|---|---|---|---|---|")
    for state in ("hidden", "shown"):
        s = runs[0][state]
        app_rss = s["by_name"].get(args.app.name[:15], 0)
        print(f"| window {state} | {s['rss'] / 1024:.0f} MiB | {s['pss'] / 1024:.0f} MiB "
              f"| {app_rss / 1024:.0f} MiB | {s['cpu']:.2f} % | {s['procs']} |")
    for state in ("hidden", "shown"):
        s = runs[0][state]
        print(f"\nwindow {state}, by process:", ", ".join(
            f"{k} {v / 1024:.0f} MiB RSS {s['cpu_by_name'].get(k, 0):.2f} % CPU"
            for k, v in sorted(s["by_name"].items())))


if __name__ == "__main__":
    main()
