#!/usr/bin/env bash
# The long runs CI keeps only a share of: the kill -9 durability test at 1,000 kill points
# (CI runs 50) and every fuzz property at 20,000 cases (CI runs 200, the settings parser
# 2,000). Anyone can run it; it stops by itself.
#
#   bench/soak/run.sh [KILL_POINTS] [FUZZ_CASES]     (default 1000 and 20000)
#
# The kill test: a real `taskkeeper serve` takes writes from several clients and is killed
# with SIGKILL at random moments; after each restart every acknowledged write must be there
# (TASKKEEPER_KILL_SEED=N replays a run; the seed is printed). The fuzz properties: the
# JSON-RPC decoder, the hook intake, MCP tool inputs (crates/server/tests/it/fuzz.rs) and the
# settings parser (crates/core/tests/it/settings.rs): no panic, no 5xx, refusals in the
# protocol's shape.
set -euo pipefail
cd "$(dirname "$0")/../.."
points="${1:-1000}"
cases="${2:-20000}"
echo "load: $(cat /proc/loadavg)"
TASKKEEPER_KILL_POINTS="$points" cargo nextest run -p taskkeeper-cli --run-ignored only \
    -E 'test(acknowledged_writes_survive_kill_9_soak)' --no-capture
TASKKEEPER_FUZZ_CASES="$cases" cargo nextest run -p taskkeeper-server -p taskkeeper-core \
    -E 'test(/fuzz::|settings::any_key/)'
echo "load: $(cat /proc/loadavg)"
