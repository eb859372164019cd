#!/usr/bin/env bash
# The hook helper benchmark, side by side: `taskkeeper hook` (what Claude Code runs for every
# hook event, so once per tool call) against `curl` posting the same payload to the same
# endpoint of the same daemon. Per-call wall time, measured by hyperfine; the helper must not
# be slower than curl.
#
#   bench/hook/run.sh [RUNS] [ROUNDS]      (default 100 runs per command per round, 6 rounds)
#
# A release daemon (`taskkeeper serve`, its durable store at synchronous=FULL) runs on a free
# port of 127.0.0.1 with a fresh data directory; session s-1 is attached once (SessionStart),
# then each payload is timed:
#
#   PostToolUse  the hot path (after every tool call): one session edge, one store write
#   Stop         a turn ends with nothing to hand over: an edge, a write, a handover check
#   refused      a payload the daemon answers 400 without touching the store: the client's
#                own cost (start-up, connect, request, answer) stands out
#
# Rounds alternate which command goes first, so drift in the machine's load hits both; the
# times of all rounds are pooled. Prints a markdown table (mean ± σ, min, median, ratios
# ours/curl) and the load average; the raw hyperfine JSON stays in the work directory it names.
#
# Both commands send the same headers: the helper's X-Taskkeeper-* headers come from the
# session's environment (TMUX, CLAUDE_PID, ...), which is cleared here. One extra row runs the
# helper as a session does, reading the token from the data directory's file instead of
# TASKKEEPER_TOKEN.
#
# BUSY=N keeps N CPU-bound shell loops running while it times (a loaded machine on purpose:
# a helper runs while the agent, its tools and builds compete for the cores).
#
# COMPARE_BIN=/path/to/another/taskkeeper adds a row "other" per payload running that binary's
# helper in the same runs (e.g. a build of the previous commit, to measure a change).
#
# Needs: cargo, curl, python3, hyperfine (installed with apt-get when missing).
set -euo pipefail

RUNS="${1:-100}"
ROUNDS="${2:-6}"
WARMUP=30

cd "$(dirname "$0")/../.."
ROOT="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR=never

say() { echo "== $*" >&2; }

if ! command -v hyperfine >/dev/null; then
	say "installing hyperfine (apt)"
	SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends hyperfine
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/hook-bench.XXXXXX")"
DAEMON=""
BUSY_PIDS=()
cleanup() {
	for pid in "${BUSY_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	if [ -n "$DAEMON" ]; then
		kill "$DAEMON" 2>/dev/null || true
		wait "$DAEMON" 2>/dev/null || true
	fi
	rm -rf "$WORK/data"
}
trap cleanup EXIT

say "building taskkeeper (release)"
cargo build --release -q -p taskkeeper-cli
TK="$CARGO_TARGET_DIR/release/taskkeeper"

TOKEN="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
URL="http://127.0.0.1:$PORT"

say "starting taskkeeper serve on 127.0.0.1:$PORT"
TASKKEEPER_TOKEN="$TOKEN" "$TK" serve --port "$PORT" --data-dir "$WORK/data" >"$WORK/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 200); do
	curl -fsS -o /dev/null "$URL/healthz" 2>/dev/null && break
	sleep 0.1
done
curl -fsS -o /dev/null "$URL/healthz" || { cat "$WORK/daemon.log" >&2; exit 1; }

# ---- payloads (as Claude Code writes them to the hook's stdin) ------------------------------
PROJECT="$WORK/project"
mkdir -p "$PROJECT"
python3 - "$WORK" "$PROJECT" <<'EOF'
import json, sys
work, cwd = sys.argv[1:]
base = {"session_id": "s-1", "transcript_path": f"{cwd}/.claude/s-1.jsonl", "cwd": cwd,
        "permission_mode": "default"}
listing = "\n".join(f"-rw-r--r-- 1 dev dev {1000 + i * 37:6d} Nov 30 12:00 src/module_{i}.rs"
                    for i in range(24))
payloads = {
    "session-start": {**base, "hook_event_name": "SessionStart", "source": "startup"},
    "post-tool-use": {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "ls -l src", "description": "List the sources"},
                      "tool_response": {"stdout": listing, "stderr": "", "interrupted": False,
                                        "isImage": False},
                      "tool_use_id": "toolu_01ABCDEFGHJKMNPQRSTVWXYZ"},
    "stop": {**base, "hook_event_name": "Stop", "stop_hook_active": False,
             "last_assistant_message": "The listing is in; next I will write the probe.",
             "background_tasks": []},
    "refused": {**base, "hook_event_name": "NoSuchEvent"},
}
for name, body in payloads.items():
    with open(f"{work}/{name}.json", "w") as f:
        json.dump(body, f)
EOF

# The same environment for both: where the daemon is, the token, and none of the session's
# variables (so the helper sends no X-Taskkeeper-* headers that curl does not).
unset TMUX TMUX_PANE CLAUDE_PID CLAUDE_CODE_MESSAGING_SOCKET CLAUDE_CONFIG_DIR TASKKEEPER_DESK \
	TASKKEEPER_DATA_DIR
export TASKKEEPER_URL="$URL" TASKKEEPER_TOKEN="$TOKEN"
# The token file a session's helper reads (the daemon itself was given the token).
mkdir -p "$WORK/tokendir"
(umask 077 && printf '%s\n' "$TOKEN" >"$WORK/tokendir/token")

CURL="curl -s -X POST -H 'Authorization: Bearer $TOKEN' -H 'Content-Type: application/json'"

status() { # payload -> HTTP status
	eval "$CURL" -o /dev/null -w '%{http_code}' --data-binary "@$WORK/$1.json" "$URL/hooks/claude-code"
}
say "attaching session s-1 and checking the answers"
[ "$(status session-start)" = 200 ] || { echo "SessionStart was not answered 200" >&2; exit 1; }
[ "$(status post-tool-use)" = 200 ] || { echo "PostToolUse was not answered 200" >&2; exit 1; }
[ "$(status stop)" = 200 ] || { echo "Stop was not answered 200" >&2; exit 1; }
[ "$(status refused)" = 400 ] || { echo "the refused payload was not answered 400" >&2; exit 1; }
# The helper reaches the daemon (SessionStart prints the session note), with either token.
"$TK" hook <"$WORK/session-start.json" | grep -q additionalContext ||
	{ echo "taskkeeper hook got no answer from the daemon" >&2; exit 1; }
env -u TASKKEEPER_TOKEN TASKKEEPER_DATA_DIR="$WORK/tokendir" "$TK" hook <"$WORK/session-start.json" |
	grep -q additionalContext || { echo "taskkeeper hook could not use the token file" >&2; exit 1; }

# ---- timing -------------------------------------------------------------------------------
# Every command runs as `sh -c 'exec …'` without hyperfine's own shell (-N): the stdin
# redirect needs a shell, and hyperfine's correction for its shell's start-up is itself noisy
# on a loaded machine (it made minimums meaningless). The same one dash start is in every row,
# and a baseline row (`sh -c 'exec /bin/true'`) shows how much: the "net" ratio subtracts it.
for _ in $(seq "${BUSY:-0}"); do
	sh -c 'while :; do :; done' &
	BUSY_PIDS+=($!)
done
LOADS=()
for round in $(seq "$ROUNDS"); do
	for payload in post-tool-use stop refused; do
		ours=(-n ours "sh -c \"exec $TK hook < $WORK/$payload.json\"")
		curl=(-n curl "sh -c \"exec $CURL --data-binary @$WORK/$payload.json $URL/hooks/claude-code\"")
		extra=()
		if [ -n "${COMPARE_BIN:-}" ]; then
			extra+=(-n other "sh -c \"exec $COMPARE_BIN hook < $WORK/$payload.json\"")
		fi
		if [ "$payload" = post-tool-use ]; then
			extra+=(-n ours-token-file
				"sh -c \"unset TASKKEEPER_TOKEN; TASKKEEPER_DATA_DIR=$WORK/tokendir exec $TK hook < $WORK/$payload.json\"")
		fi
		if [ $((round % 2)) = 1 ]; then order=("${ours[@]}" "${curl[@]}"); else order=("${curl[@]}" "${ours[@]}"); fi
		LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
		say "round $round/$ROUNDS: $payload"
		hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" \
			--export-json "$WORK/r$round-$payload.json" "${order[@]}" "${extra[@]}" \
			-n baseline "sh -c \"exec /bin/true\"" >/dev/null
	done
done
LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
# And start-up alone: the same binaries printing their version (no shell at all).
say "start-up alone"
hyperfine -N --style none --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/startup.json" \
	-n ours "$TK --version" -n curl "curl --version" >/dev/null

# ---- report -------------------------------------------------------------------------------
python3 - "$WORK" "$RUNS" "$ROUNDS" "$WARMUP" "${LOADS[*]}" "$(curl --version | head -1 | cut -d' ' -f1-2)" "${BUSY:-0}" <<'EOF'
import glob, json, os, platform, statistics, sys
work, runs, rounds, warmup, loads, curl, busy = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")

def pooled(pattern):
    times = {}
    for path in sorted(glob.glob(f"{work}/{pattern}")):
        for r in json.load(open(path))["results"]:
            times.setdefault(r["command"], []).extend(r["times"])
    return times

def stats(ts):
    ms = [t * 1000 for t in ts]
    return {"mean": statistics.fmean(ms), "sd": statistics.stdev(ms), "min": min(ms),
            "median": statistics.median(ms)}

print(f"Machine: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}; the daemon, the client "
      f"and other engineers' builds share them. Load average (1 min) before each hyperfine run: {loads}."
      + (f" {busy} CPU-bound loops (BUSY={busy}) ran throughout." if busy != "0" else ""))
print(f"{rounds} rounds × {runs} runs per command after {warmup} warm-up runs, rounds alternating "
      f"which command goes first, times pooled; {curl}. Every row includes one `sh -c 'exec …'` "
      f"(the stdin redirect); *net* subtracts the baseline row's median (`sh -c 'exec /bin/true'`).")
print()
print("| payload | command | mean ± σ (ms) | min (ms) | median (ms) | ours/curl mean | ours/curl median | ours/curl min | ours/curl median, net |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
slower = []
names = {"post-tool-use": "PostToolUse", "stop": "Stop", "refused": "refused (400, no store)"}
base_all = []
for payload in ("post-tool-use", "stop", "refused"):
    t = pooled(f"r*-{payload}.json")
    base_all += t["baseline"]
    b = stats(t["baseline"])["median"]
    c = stats(t["curl"])
    for cmd in ("curl", "ours", "ours-token-file", "other"):
        if cmd not in t:
            continue
        s = stats(t[cmd])
        if cmd == "curl":
            ratio = " | | | "
        else:
            net = (s["median"] - b) / (c["median"] - b)
            ratio = (f"**{s['mean'] / c['mean']:.2f}** | {s['median'] / c['median']:.2f} | "
                     f"{s['min'] / c['min']:.2f} | {net:.2f}")
            if cmd != "other" and (s["mean"] > c["mean"] or s["median"] > c["median"]):
                slower.append(f"{payload} {cmd}")
        print(f"| {names[payload]} | {cmd} | {s['mean']:.2f} ± {s['sd']:.2f} | {s['min']:.2f} | "
              f"{s['median']:.2f} | {ratio} |")
b = stats(base_all)
print(f"| baseline | `sh -c 'exec /bin/true'` | {b['mean']:.2f} ± {b['sd']:.2f} | {b['min']:.2f} | {b['median']:.2f} | | | | |")
t = pooled("startup.json")
o, c = stats(t["ours"]), stats(t["curl"])
print(f"| start-up only, no shell | `curl --version` | {c['mean']:.2f} ± {c['sd']:.2f} | {c['min']:.2f} | {c['median']:.2f} | | | | |")
print(f"| start-up only, no shell | `taskkeeper --version` | {o['mean']:.2f} ± {o['sd']:.2f} | {o['min']:.2f} | {o['median']:.2f} | "
      f"**{o['mean'] / c['mean']:.2f}** | {o['median'] / c['median']:.2f} | {o['min'] / c['min']:.2f} | |")
print()
print(f"raw results: {work}")
if slower:
    print("slower than curl: " + ", ".join(slower), file=sys.stderr)
sys.exit(1 if slower else 0)
EOF
