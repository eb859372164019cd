#!/usr/bin/env bash
# Streams end with their clients: the release daemon's memory while 1,000 clients in a row
# subscribe to one large open task (~900 KB of history), read the first event and hang up
# (crates/server/benches/stream_churn.rs). Prints a markdown table of VmRSS before, every
# 100 rounds and 1 s after, with the machine's load before and after.
#
#   bench/a2a/streams.sh [ROUNDS] [TASK_KB]      (default 1000 rounds, a 900 KB task)
#
# COMPARE_BIN=/path/to/another/taskkeeper adds a row for that binary, run the same way after
# ours (e.g. a release build of the commit before the fix, to show the old growth):
#
#   git archive ab1658b | tar -x -C /tmp/old && (cd /tmp/old && cargo build --release -p taskkeeper-cli)
#   cp "$CARGO_TARGET_DIR/release/taskkeeper" /tmp/taskkeeper-ab1658b   # ours is built over it next
#   COMPARE_BIN=/tmp/taskkeeper-ab1658b bench/a2a/streams.sh
#
# Loopback only; each daemon gets a fresh data directory and is stopped when its run ends.
set -euo pipefail

ROUNDS="${1:-1000}"
TASK_KB="${2:-900}"

cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR=never

echo "== building the daemon and the churn client (release)" >&2
cargo build --release -q -p taskkeeper-cli
TASKKEEPER="$CARGO_TARGET_DIR/release/taskkeeper"
CHURN="$(cargo bench -q -p taskkeeper-server --bench stream_churn --no-run --message-format=json |
	python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "stream_churn" and m.get("executable"):
        print(m["executable"])
')"
[ -x "$CHURN" ] || { echo "could not find the stream_churn bench binary" >&2; exit 1; }

args=(--rounds "$ROUNDS" --task-kb "$TASK_KB" --bin "$TASKKEEPER" --label "ours ($(git rev-parse --short HEAD))")
[ -n "${COMPARE_BIN:-}" ] && args+=(--bin "$COMPARE_BIN" --label "compare ($(basename "$COMPARE_BIN"))")

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
"$CHURN" "${args[@]}"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), Linux $(uname -r). Load average before/after: $LOAD_BEFORE / $LOAD_AFTER."
