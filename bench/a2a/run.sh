#!/usr/bin/env bash
# The A2A server benchmark, side by side: Taskkeeper's daemon (release build, its durable
# SQLite store at synchronous=FULL) against the A2A reference server (a2a-sdk with its SQLite
# task store, bench/a2a/reference_server.py), both on 127.0.0.1 on this machine, driven by the
# same load generator (crates/server/benches/a2a_load.rs) in one run.
#
#   bench/a2a/run.sh [SECONDS_PER_CELL]      (default 5; plus 1 s of warm-up per cell)
#   FILE_BYTES=65536 bench/a2a/run.sh        (also SendMessage with a file part of that size)
#   TASKKEEPER_BIN=/path/to/taskkeeper bench/a2a/run.sh   (that build of the daemon instead of
#                                            this tree's, e.g. a copy of the one before a change)
#   A2A_LOAD_BIN=/path/to/a2a_load ...       (a load generator built before; with both set,
#                                            nothing is built)
#   TLS=1 bench/a2a/run.sh [SECONDS_PER_CELL] (the network listener over TLS beside plain
#                                            loopback, one daemon, as an asker; no reference;
#                                            the report is bench/a2a/tls_report.py's)
#
# Cells: v1.0 GetTask (of one existing task) and SendMessage with returnImmediately: true (a
# fresh messageId per call), each over JSON-RPC and over HTTP+JSON, at 1 and 16 keep-alive
# connections, and ours over gRPC too (the reference server is not run over gRPC). Prints a markdown table with
# throughput, p50/p99 and the ratios ours/reference; the raw lines stay in the work directory
# it names. Loopback only; every server it starts is stopped on exit.
#
# Needs: cargo, python3 with venv, and PyPI the first time (the SDK goes into a venv cached
# under the Cargo target directory, keyed by its version).
set -euo pipefail

SECONDS_PER_CELL="${1:-5}"
FILE_BYTES="${FILE_BYTES:-0}"
WARMUP=1
A2A_SDK=1.3.0
UVICORN=0.54.0

cd "$(dirname "$0")/../.."
ROOT="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
export CARGO_TERM_COLOR=never

WORK="$(mktemp -d "${TMPDIR:-/tmp}/a2a-bench.XXXXXX")"
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	# Keep the results; drop the databases.
	rm -rf "$WORK/ours-data" "$WORK"/reference.db*
}
trap cleanup EXIT

say() { echo "== $*" >&2; }

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- builds -------------------------------------------------------------------------------
if [ -z "${TASKKEEPER_BIN:-}" ]; then
	say "building the daemon (release)"
	cargo build --release -q -p taskkeeper-cli
fi
TASKKEEPER="${TASKKEEPER_BIN:-$CARGO_TARGET_DIR/release/taskkeeper}"
LOAD="${A2A_LOAD_BIN:-}"
[ -n "$LOAD" ] || LOAD="$(cargo bench -q -p taskkeeper-server --bench a2a_load --no-run --message-format=json |
	python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "a2a_load" and m.get("executable"):
        print(m["executable"])
')"
[ -x "$LOAD" ] || { echo "could not find the a2a_load bench binary" >&2; exit 1; }

# ---- TLS: the network listener beside plain loopback ---------------------------------------
# One daemon with `--listen 127.0.0.1:PORT` (its self-signed certificate, TLS 1.3), the same
# asker's token on both listeners (a new asker per desk, each with its open tasks bounded as
# on loopback), the numbers per minute and the open tasks raised out of the way. Cells: GetTask
# and SendMessage over JSON-RPC at 1 and 16 keep-alive connections on each listener, and
# GetTask at one connection with a new connection per call (`--fresh`: a full handshake each,
# no resumption), which is what a handshake costs.
if [ "${TLS:-0}" = 1 ]; then
	TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
	PORT="$(free_port)"
	NET_PORT="$(free_port)"
	say "starting taskkeeper serve on 127.0.0.1:$PORT, its network listener on 127.0.0.1:$NET_PORT"
	TASKKEEPER_TOKEN="$TOKEN" "$TASKKEEPER" serve --port "$PORT" --data-dir "$WORK/ours-data" \
		--listen "127.0.0.1:$NET_PORT" >"$WORK/ours.log" 2>&1 &
	PID=$!
	PIDS+=($PID)
	for _ in $(seq 200); do
		grep -q "^listening on http://127.0.0.1:$PORT" "$WORK/ours.log" && break
		sleep 0.1
	done
	grep -q "^listening on" "$WORK/ours.log" || { cat "$WORK/ours.log" >&2; exit 1; }
	owner() { curl -fsS -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' "$@"; }
	owner -o /dev/null -X PUT -d '{"network.requests_per_minute":"10000000","network.streams_per_minute":"10000000","limits.open_tasks_per_asker":"100000"}' \
		"http://127.0.0.1:$PORT/api/settings"
	asker() {
		owner -d "{\"name\":\"$1\"}" "http://127.0.0.1:$PORT/api/askers" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
	}
	CA="$WORK/ours-data/network-cert.pem"
	RESULTS="$WORK/results.jsonl"
	: >"$RESULTS"
	LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
	CLK_TCK="$(getconf CLK_TCK)"
	tls_cell() { # label url method connections [extra args]
		local label="$1" url="$2" method="$3" conns="$4"
		shift 4
		say "$label $method c=$conns $*"
		local before after line
		before="$(awk '{print $14 + $15}' "/proc/$PID/stat")"
		line="$(timeout $((SECONDS_PER_CELL + WARMUP + 60)) "$LOAD" --label "$label" --url "$url" \
			--method "$method" --connections "$conns" --seconds "$SECONDS_PER_CELL" --warmup "$WARMUP" \
			--token "$ASKER" --ca "$CA" "$@")"
		after="$(awk '{print $14 + $15}' "/proc/$PID/stat")"
		echo "${line%\}},\"serverCpuMs\":$(((after - before) * 1000 / CLK_TCK))}" >>"$RESULTS"
	}
	for method in get send; do
		for conns in 1 16; do
			desk="tls-$method-$conns"
			owner -o /dev/null -d "{\"name\":\"$desk\",\"dir\":\"/tmp\",\"agent\":\"generic\"}" \
				"http://127.0.0.1:$PORT/api/desks"
			ASKER="$(asker "$desk")"
			tls_cell plain "http://127.0.0.1:$PORT/a2a/$desk" "$method" "$conns"
			tls_cell tls "https://127.0.0.1:$NET_PORT/a2a/$desk" "$method" "$conns"
		done
	done
	owner -o /dev/null -d '{"name":"tls-fresh","dir":"/tmp","agent":"generic"}' "http://127.0.0.1:$PORT/api/desks"
	ASKER="$(asker tls-fresh)"
	tls_cell plain-fresh "http://127.0.0.1:$PORT/a2a/tls-fresh" get 1 --fresh
	tls_cell tls-fresh "https://127.0.0.1:$NET_PORT/a2a/tls-fresh" get 1 --fresh
	LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
	python3 "$ROOT/bench/a2a/tls_report.py" "$RESULTS" "$SECONDS_PER_CELL" "$LOAD_BEFORE" "$LOAD_AFTER"
	exit $?
fi

# ---- the reference SDK --------------------------------------------------------------------
VENV="$CARGO_TARGET_DIR/a2a-bench/venv-a2a-sdk-$A2A_SDK-uvicorn-$UVICORN"
if [ ! -f "$VENV/.installed" ]; then
	say "installing a2a-sdk[http-server,sqlite]==$A2A_SDK and uvicorn[standard]==$UVICORN into $VENV"
	# Built under a temporary name and moved into place, so a broken install never looks ready.
	rm -rf "$VENV.building"
	mkdir -p "$(dirname "$VENV")"
	python3 -m venv "$VENV.building"
	"$VENV.building/bin/python" -m pip install -q --disable-pip-version-check --no-input \
		"a2a-sdk[http-server,sqlite]==$A2A_SDK" "uvicorn[standard]==$UVICORN"
	touch "$VENV.building/.installed"
	rm -rf "$VENV"
	mv "$VENV.building" "$VENV"
fi
PY="$VENV/bin/python"

# ---- servers ------------------------------------------------------------------------------
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
OURS_PORT="$(free_port)"
REF_PORT="$(free_port)"

say "starting taskkeeper serve on 127.0.0.1:$OURS_PORT"
TASKKEEPER_TOKEN="$TOKEN" "$TASKKEEPER" serve --port "$OURS_PORT" --data-dir "$WORK/ours-data" \
	>"$WORK/ours.log" 2>&1 &
OURS_PID=$!
PIDS+=($OURS_PID)
for _ in $(seq 200); do
	grep -q "^listening on http://127.0.0.1:$OURS_PORT" "$WORK/ours.log" && break
	sleep 0.1
done
grep -q "^listening on" "$WORK/ours.log" || { cat "$WORK/ours.log" >&2; exit 1; }

say "starting the reference server on 127.0.0.1:$REF_PORT"
"$PY" "$ROOT/bench/a2a/reference_server.py" --port "$REF_PORT" --db "$WORK/reference.db" \
	>"$WORK/reference.log" 2>&1 &
REF_PID=$!
PIDS+=($REF_PID)
for _ in $(seq 300); do
	curl -fsS -o /dev/null "http://127.0.0.1:$REF_PORT/.well-known/agent-card.json" 2>/dev/null && break
	sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$REF_PORT/.well-known/agent-card.json" ||
	{ cat "$WORK/reference.log" >&2; exit 1; }

# Each cell gets its own desk: a desk works on one task at a time and queues the rest, so
# sends pile up in its queue; a fresh desk per cell keeps one cell from loading the next.
add_desk() {
	curl -fsS -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$1\",\"dir\":\"/tmp\",\"agent\":\"generic\"}" "http://127.0.0.1:$OURS_PORT/api/desks"
}

# ---- cells --------------------------------------------------------------------------------
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
# A server's CPU time (user + system, all threads) in clock ticks, from /proc. On a machine
# shared with other work, throughput and latency move with the neighbours; CPU time per call
# moves much less, so the report shows both.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CLK_TCK="$(getconf CLK_TCK)"
cell() { # label pid url method binding connections [token]
	local method="$4" file=0
	# send-file: a send with a file part of FILE_BYTES bytes.
	[ "$method" = send-file ] && method=send file="$FILE_BYTES"
	local args=(--label "$1" --url "$3" --method "$method" --binding "$5" --connections "$6"
		--seconds "$SECONDS_PER_CELL" --warmup "$WARMUP" --file-bytes "$file")
	[ -n "${7:-}" ] && args+=(--token "$7")
	say "$1 $4 $5 c=$6"
	local before after line
	before="$(cpu_ticks "$2")"
	line="$(timeout $((SECONDS_PER_CELL + WARMUP + 60)) "$LOAD" "${args[@]}")"
	after="$(cpu_ticks "$2")"
	# The load generator's JSON line, plus the server's CPU milliseconds over the same cell.
	echo "${line%\}},\"serverCpuMs\":$(((after - before) * 1000 / CLK_TCK))}" >>"$RESULTS"
}
METHODS="get send"
[ "$FILE_BYTES" -gt 0 ] && METHODS="get send send-file"
for method in $METHODS; do
	for binding in jsonrpc http+json grpc; do
		# gRPC carries no file part in the load generator, and the reference server here
		# speaks JSON-RPC and HTTP+JSON only: its gRPC cells are ours alone.
		[ "$binding" = grpc ] && [ "$method" = send-file ] && continue
		for conns in 1 16; do
			desk="bench-$method-${binding//+/-}-$conns"
			add_desk "$desk"
			# Ours first, then the reference, cell by cell: any drift in the machine hits both.
			cell ours "$OURS_PID" "http://127.0.0.1:$OURS_PORT/a2a/$desk" "$method" "$binding" "$conns" "$TOKEN"
			[ "$binding" = grpc ] && continue
			cell reference "$REF_PID" "http://127.0.0.1:$REF_PORT/" "$method" "$binding" "$conns"
		done
	done
done
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report -------------------------------------------------------------------------------
python3 - "$RESULTS" "$SECONDS_PER_CELL" "$LOAD_BEFORE" "$LOAD_AFTER" "$A2A_SDK" "$UVICORN" <<'EOF'
import json, os, platform, sys

path, secs, load_before, load_after, sdk, uvicorn = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
cells = {(r["label"], r["method"], r.get("binding", "JSONRPC"), r["connections"]): r for r in rows}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")

def ms(us):
    return f"{us / 1000:.2f}"

def cpu_per_call(x):
    return x["serverCpuMs"] * 1000 / x["calls"] if x.get("calls") else 0.0

print(f"Machine: {os.cpu_count()} cores ({cpu}), Linux {platform.release()}; "
      f"client and both servers share them. Load average before/after: {load_before} / {load_after}.")
print(f"{secs} s per cell after 1 s of warm-up; reference: a2a-sdk {sdk}, uvicorn[standard] {uvicorn}, one process.")
print()
print("| workload | binding | conns | ours req/s | p50 ms | p99 ms | CPU µs/call | reference req/s | p50 ms | p99 ms | CPU µs/call | **ours/reference req/s** | p50 ref/ours | CPU/call ref/ours |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
missing = False
notes = []
methods = ["GetTask", "SendMessage"]
if any(m == "SendMessage+file" for (_, m, _, _) in cells):
    methods.append("SendMessage+file")
for method, binding, c in [(m, b, c) for m in methods
                          for b in ("JSONRPC", "HTTP+JSON", "GRPC") for c in (1, 16)]:
    o, r = cells.get(("ours", method, binding, c)), cells.get(("reference", method, binding, c))
    if binding == "GRPC" and method != "SendMessage+file":
        # Ours alone: the reference is not run over gRPC.
        if not o:
            missing = True
            continue
        if o["errors"]:
            first = " ".join(str(o["firstError"]).split())[:200]
            notes.append(f"ours {method} GRPC c={c}: {o['errors']} failed calls (warm-up included); first: {first}")
        print(f"| {method} | {binding} | {c} | {o['rps']:,.0f} | {ms(o['p50Us'])} | {ms(o['p99Us'])} | "
              f"{cpu_per_call(o):,.0f} | — | — | — | — | — | — | — |")
        continue
    if not o or not r:
        missing = True
        continue
    # Failed calls are part of the result (the reference's SQLite store can answer
    # "database is locked" under concurrent writes): counted and shown, never timed.
    for x in (o, r):
        if x["errors"]:
            first = " ".join(str(x["firstError"]).split())[:200]
            notes.append(f"{x['label']} {method} {binding} c={c}: {x['errors']} failed calls (warm-up included); first: {first}")
    ratio = o["rps"] / r["rps"] if r["rps"] else float("inf")
    p50 = r["p50Us"] / o["p50Us"] if o["p50Us"] else float("inf")
    o_cpu, r_cpu = cpu_per_call(o), cpu_per_call(r)
    cpu = r_cpu / o_cpu if o_cpu else float("inf")
    print(f"| {method} | {binding} | {c} | {o['rps']:,.0f} | {ms(o['p50Us'])} | {ms(o['p99Us'])} | {o_cpu:,.0f} | "
          f"{r['rps']:,.0f} | {ms(r['p50Us'])} | {ms(r['p99Us'])} | {r_cpu:,.0f} | "
          f"**{ratio:.1f}×** | {p50:.1f}× | {cpu:.1f}× |")
if notes:
    print()
    for n in notes:
        print(f"- {n}")
print()
print(f"raw results: {path}")
sys.exit(1 if missing else 0)
EOF
