#!/usr/bin/env bash
# The .deb as a user installs it (issue 17's proof): `dpkg -i` the package `make package`
# built, both commands answer from /usr/bin, `connect claude-code` into a throwaway HOME
# writes only commands that resolve to the installed binary, the hook helper run through
# that very command reaches a daemon started from the installed `taskkeeper serve` (and the
# MCP headers helper through the shell, as Claude Code runs it), then `dpkg -r` leaves
# nothing on the PATH. Run by `make test-package` (which builds the package first); needs
# root or sudo. It refuses to run where the package is already installed, so it never
# removes a real installation.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=${CARGO_TARGET_DIR:-$PWD/target}
deb=$(ls -t "$target"/dist/bundle/deb/*.deb 2>/dev/null | head -1 || true)
[ -n "$deb" ] || { echo "no .deb in $target/dist/bundle/deb; run \`make package\` first" >&2; exit 1; }
sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
# The PATH a fresh login has, so nothing from a build or ~/.cargo/bin stands in.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

started=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - started )) s)"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

pkg=$(dpkg-deb -f "$deb" Package)
version=$(dpkg-deb -f "$deb" Version)
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
  fail "$pkg is already installed here; this test installs and removes it, so it leaves yours alone (dpkg -r $pkg first)"
fi
for cmd in taskkeeper taskkeeper-app; do
  if found=$(command -v "$cmd"); then fail "another $cmd is on the PATH ($found); remove it first"; fi
done

scratch=$(mktemp -d)
installed=
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  if [ -n "$installed" ]; then $sudo dpkg -r "$pkg" >/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

step "dpkg -i $(basename "$deb") ($(du -h "$deb" | cut -f1))"
$sudo dpkg -i "$deb" >/dev/null
installed=1

step "both commands answer from /usr/bin, both on the PATH"
[ "$(command -v taskkeeper)" = /usr/bin/taskkeeper ] || fail "taskkeeper is not /usr/bin/taskkeeper on the PATH"
[ "$(command -v taskkeeper-app)" = /usr/bin/taskkeeper-app ] || fail "taskkeeper-app is not on the PATH"
got=$(/usr/bin/taskkeeper --version)
[ "$got" = "taskkeeper $version" ] || fail "taskkeeper --version said: $got"
# No display needed to ask the app its version.
got=$(env -u DISPLAY -u WAYLAND_DISPLAY /usr/bin/taskkeeper-app --version)
[ "$got" = "taskkeeper-app $version" ] || fail "taskkeeper-app --version said: $got"
/usr/bin/taskkeeper-app --help | grep -q 'taskkeeper --help' || fail "taskkeeper-app --help does not point at taskkeeper"
[ -f /usr/share/taskkeeper/ui/index.html ] || fail "the web UI is not in /usr/share/taskkeeper/ui"

home=$scratch/home
mkdir -p "$home/work"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
as_user() { env HOME="$home" TASKKEEPER_URL="$url" "$@"; }

step "connect claude-code into a throwaway HOME"
as_user taskkeeper connect claude-code
# Every command the settings name: each hook's, and the headers helper's first word.
commands=$(python3 - "$home" <<'EOF'
import json, shlex, sys
home = sys.argv[1]
settings = json.load(open(f"{home}/.claude/settings.json"))
config = json.load(open(f"{home}/.claude.json"))
seen = set()
for groups in settings["hooks"].values():
    for group in groups:
        for hook in group["hooks"]:
            seen.add(hook["command"])
seen.add(shlex.split(config["mcpServers"]["taskkeeper"]["headersHelper"])[0])
print("\n".join(sorted(seen)))
EOF
)
[ -n "$commands" ] || fail "connect wrote no commands"
while read -r cmd; do
  resolved=$(command -v "$cmd") || fail "\`$cmd\` (written by connect) does not resolve"
  [ "$(readlink -f "$resolved")" = /usr/bin/taskkeeper ] || fail "\`$cmd\` resolves to $resolved, not the installed binary"
  echo "   \`$cmd\` -> /usr/bin/taskkeeper"
done <<<"$commands"

step "taskkeeper serve --ui from the package"
# Not through as_user: a shell function in the background is a subshell, so `$!` would be
# that subshell and killing it would leave the daemon serving. `env` execs the daemon, so
# `$!` is the daemon itself.
env HOME="$home" TASKKEEPER_URL="$url" taskkeeper serve --port "$port" --ui \
  >"$scratch/serve.out" 2>"$scratch/serve.err" &
daemon=$!
for _ in $(seq 300); do
  grep -q "listening on $url" "$scratch/serve.out" 2>/dev/null && break
  kill -0 "$daemon" 2>/dev/null || fail "serve exited: $(cat "$scratch/serve.err")"
  sleep 0.1
done
grep -q "listening on $url" "$scratch/serve.out" || fail "serve did not start: $(cat "$scratch/serve.err")"
python3 -c "import sys, urllib.request; sys.exit(0 if b'<html' in urllib.request.urlopen('$url/ui/').read() else 1)" \
  || fail "the packaged UI is not served at $url/ui/"
as_user taskkeeper connect claude-code --check

step "the hook helper through the command connect wrote"
hook=$(python3 -c "import json; h = json.load(open('$home/.claude/settings.json'))['hooks']['SessionStart'][0]['hooks'][0]; print(h['command'], *h['args'])")
payload='{"session_id": "pkg-1", "hook_event_name": "SessionStart", "cwd": "'"$home/work"'", "source": "startup"}'
out=$(echo "$payload" | as_user $hook)
echo "$out" | grep -q '«Taskkeeper» This session works at desk' || fail "the hook helper answered: $out"
as_user taskkeeper status | grep -q 'pkg-1' || fail "the daemon does not know session pkg-1"
helper=$(python3 -c "import json; print(json.load(open('$home/.claude.json'))['mcpServers']['taskkeeper']['headersHelper'])")
as_user sh -c "$helper" | grep -q '"Authorization":"Bearer ' || fail "the MCP headers helper (\`$helper\`) gave no header"

kill "$daemon"
wait "$daemon" || true
for exe in /proc/[0-9]*/exe; do
  [ "$(readlink "$exe" 2>/dev/null)" != /usr/bin/taskkeeper ] \
    || fail "the installed taskkeeper still runs as process ${exe//[^0-9]/} after the daemon was stopped"
done
daemon=

step "dpkg -r $pkg"
$sudo dpkg -r "$pkg" >/dev/null
installed=
for cmd in taskkeeper taskkeeper-app; do
  if found=$(command -v "$cmd"); then fail "$cmd is still on the PATH ($found) after dpkg -r"; fi
done
for path in /usr/bin/taskkeeper /usr/bin/taskkeeper-app /usr/share/taskkeeper; do
  [ ! -e "$path" ] || fail "$path is left after dpkg -r"
done
step "PASS"
