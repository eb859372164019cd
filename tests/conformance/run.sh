#!/usr/bin/env bash
# The official A2A conformance kit (shared/tools/a2a-tck beside the clone, unchanged) against a real
# `taskkeeper serve --conformance`, as `make test-conformance` runs it:
#
#   v1.0, every level, JSON-RPC and HTTP+JSON   gates: the runner exits 1 on a MUST failure
#   v0.3 --category mandatory (JSON-RPC)        gates: must pass whole
#   v0.3 --category capabilities                reported only: its failures are the https-only
#                                               push webhooks the v0.3 kit uses, which a
#                                               loopback kit cannot serve (TESTING.md)
#
#   v1.0, every level, gRPC                     gates the same way, but for STREAM-SUB-001 (below)
#
# STREAM-SUB-001 over gRPC is a defect of the kit's gRPC test, not of the requirement: the test
# subscribes to a task it has just put in INPUT_REQUIRED, checks the first event (a Task: that
# part holds) and then drains the stream to its end. The spec closes a subscription at a terminal
# state only, and the reference SDK's server keeps it open too, so the drain lasts until the kit's
# gRPC deadline (30 s, fixed in the kit), which is also pytest's per-test timeout: the test is
# timed out before its deadline ends the stream. Over JSON-RPC and HTTP+JSON the same test
# passes, since the kit's SSE read timeout (2 s) ends the drain. Our own test of the requirement
# over gRPC is `grpc::a_subscription_begins_with_the_task_and_stays_open_while_it_waits_on_its_asker`.
# Any other MUST failure over gRPC fails the run.
#
# The server gets a free port and a throwaway data directory; the owner allows loopback push
# targets through the CLI (the kit's webhook receiver is on localhost). The kit's cache
# (A2A_TCK_CACHE) lives outside the clone, beside the Cargo target directory, so a warm run
# only pays for the tests. Needs the Python package registry on the first run.
# TASKKEEPER_BIN: the CLI to serve with (default: the debug build in the target directory).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
# The kit sits beside the clone (CI: the same place), or where A2A_TCK_DIR says.
kit=${A2A_TCK_DIR:-$(dirname "$repo")/shared/tools/a2a-tck}/run.sh
[ -x "$kit" ] || { echo "the conformance kit is not at $kit (shared/tools/a2a-tck beside the clone, or set A2A_TCK_DIR)" >&2; exit 2; }
target=${CARGO_TARGET_DIR:-$repo/target}
bin=${TASKKEEPER_BIN:-$target/debug/taskkeeper}
[ -x "$bin" ] || { echo "no taskkeeper CLI at $bin; build it first (cargo build -p taskkeeper-cli)" >&2; exit 2; }
export A2A_TCK_CACHE=${A2A_TCK_CACHE:-$(dirname "$target")/a2a-tck-cache}

scratch=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --conformance --port "$port" --data-dir "$scratch/data" >"$scratch/serve.log" 2>&1 &
server=$!
base=http://127.0.0.1:$port
for _ in $(seq 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$scratch/serve.log" >&2; echo "taskkeeper serve exited" >&2; exit 1; }
  sleep 0.1
done
curl -fsS "$base/healthz" >/dev/null || { cat "$scratch/serve.log" >&2; echo "taskkeeper serve did not answer /healthz" >&2; exit 1; }
TASKKEEPER_URL=$base TASKKEEPER_DATA_DIR=$scratch/data "$bin" settings set push.allow_loopback_targets true >/dev/null

url=$base/a2a/tck
# A cold cache: the runner unpacks and installs each kit line, then exits 127 (its reinstall
# calls the pip of the virtualenv it has just moved). Installing with `--help` first costs
# nothing warm and leaves the real runs below a warm cache.
for line in v1.0 v0.3; do "$kit" "$line" "$url" --help >/dev/null 2>&1 || true; done
failed=0
echo "== v1.0, all levels ($url)"
"$kit" v1.0 "$url" --transport jsonrpc,http_json || failed=1
echo "== v1.0, all levels, gRPC"
"$kit" v1.0 "$url" --transport grpc | tee "$scratch/grpc.out" || {
  # The runner printed one `  MUST ID FAIL…` line per failed MUST; only the kit's gRPC
  # subscription defect (above) may be among them.
  others=$(grep -E '^  MUST [A-Z0-9-]+ FAIL' "$scratch/grpc.out" | grep -v 'known kit defect' | grep -v '^  MUST STREAM-SUB-001 FAIL' || true)
  if [ -n "$others" ] || ! grep -q '^MUST: ' "$scratch/grpc.out"; then
    failed=1
  else
    echo "(STREAM-SUB-001 over gRPC: the kit's drain outlasts its own timeout; see this script's header)"
  fi
}
echo "== v0.3 mandatory"
"$kit" v0.3 "$url" --category mandatory || failed=1
echo "== v0.3 capabilities (reported, does not gate)"
"$kit" v0.3 "$url" --category capabilities || true
if [ "$failed" != 0 ]; then
  cp "$scratch/serve.log" "$target/conformance-serve.log" 2>/dev/null || true
  echo "FAIL: the conformance kit found a MUST failure (v1.0) or a v0.3 mandatory failure; the server's log: $target/conformance-serve.log" >&2
  exit 1
fi
echo "the conformance kit passed"
