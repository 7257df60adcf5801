#!/usr/bin/env bash
# `make run`: starts the service (its pid in .data/run/ticketrush.pid, so that `make stop` can stop it;
# its log in .data/run/ticketrush.log), waits for it, makes sure the demo concert exists (reused on
# every run) and prints how to walk one fan from join to receipt, then stays until Ctrl-C or `make stop`.
# Refuses to start a second time: one service per address.
# usage: scripts/run.sh [--check] BIN ADDR   (--check: only refuse when one runs, before the set-up)
set -euo pipefail
cd "$(dirname "$0")/.."
check=""
[ "$1" = --check ] && { check=1; shift; }
BIN=$1 ADDR=$2
RUN=.data/run
PIDFILE=$RUN/ticketrush.pid
say() { printf 'run: %s\n' "$*" >&2; }
hostport=${ADDR#*://}
host=${hostport%:*} port=${hostport##*:}

mkdir -p "$RUN"
if [ -f "$PIDFILE" ]; then
  old=$(head -n1 "$PIDFILE" | tr -dc 0-9)
  if [ -n "$old" ] && kill -0 "$old" 2>/dev/null && [ "$(cat "/proc/$old/comm" 2>/dev/null)" = ticketrush ]; then
    say "ticketrush is already running at $(cat "$RUN/ticketrush.addr" 2>/dev/null || echo "$ADDR") (pid $old, started by make run; log in $RUN/ticketrush.log)."
    say "make stop stops it (and the Redis and Postgres the set-up started); Ctrl-C in its terminal stops only the service."
    exit 1
  fi
  rm -f "$PIDFILE" # left by a service that is gone
fi
if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
  say "something not started by make run already listens on $host:$port; stop it, or run on another address: make run HTTP_ADDR=127.0.0.1:8081"
  exit 1
fi
[ -z "$check" ] || exit 0

"$BIN" serve >"$RUN/ticketrush.log" 2>&1 &
pid=$!
echo "$pid" >"$PIDFILE"
echo "$ADDR" >"$RUN/ticketrush.addr"
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  [ "$(cat "$PIDFILE" 2>/dev/null)" = "$pid" ] && rm -f "$PIDFILE" "$RUN/ticketrush.addr"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The service listens once Redis and Postgres answer and the migrations ran; `demo --setup` then checks
# /readyz itself (no curl needed on a fresh machine).
listening=""
for _ in $(seq 1 300); do
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null && { listening=1; break; }
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
echo
if [ -z "$listening" ] || ! "$BIN" demo --setup --addr "$ADDR"; then
  say "the service did not become ready; the end of its log ($RUN/ticketrush.log):"
  tail -n 20 "$RUN/ticketrush.log" >&2
  exit 1
fi
token=$("$BIN" token --user demo-fan --ttl 24h)
cat <<MSG

fan page, signed in as demo-fan: $ADDR/#token=$token
operator console: $ADDR/admin (admin token: the ADMIN_TOKEN of the environment; make run's is in the Makefile)
the service logs to $RUN/ticketrush.log (tail -f it to watch the sale: a line every 5 s per concert
with news, with its joins, admissions, holds, payments and the fans waiting and active, and a line per
operator action).
Ctrl-C stops the service; make stop (from another shell) stops it and the Redis and Postgres the set-up
started.
MSG
wait "$pid"
