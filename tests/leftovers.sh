#!/usr/bin/env bash
# Fails when a process that `make test` started is still running: every process of the run
# inherits TASKKEEPER_TEST_RUN (the Makefile exports it), so one that carries it and is not
# this script or one of its ancestors (make, its shell) was left behind by a test — a
# daemon, a tmux server, an sshd, a browser. Lists each with its command line.
set -euo pipefail
run=${TASKKEEPER_TEST_RUN:?run by make test, which exports TASKKEEPER_TEST_RUN}
ancestors=" "
pid=$$
while [ "$pid" -gt 1 ]; do
  ancestors+="$pid "
  pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null || echo 1)
done
left=0
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  case "$ancestors" in *" $pid "*) continue ;; esac
  [ "$(awk '{print $3}' "$dir/stat" 2>/dev/null)" != Z ] || continue
  if { tr '\0' '\n' <"$dir/environ"; } 2>/dev/null | grep -qx "TASKKEEPER_TEST_RUN=$run"; then
    echo "left running: $pid $({ tr '\0' ' ' <"$dir/cmdline"; } 2>/dev/null | cut -c1-200)"
    left=1
  fi
done
[ "$left" = 0 ] && echo "no process of this test run is left running"
exit "$left"
