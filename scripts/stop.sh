#!/usr/bin/env bash
# `make stop`: stops what `make run`, `make services` and scripts/cluster.sh started, and nothing else:
# exactly the processes whose pids are recorded in pidfiles under .data/ (ticketrush.pid, redis.pid,
# postgres' postmaster.pid, the cluster nodes'), each only while that pid is still a ticketrush,
# redis-server or postgres process. The service goes first (it drains its write-behind into Postgres),
# then the stores; each is waited for.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'stop: %s\n' "$*" >&2; }
stopped=0

stop_all() { # pidfiles...
  local f pid comm sig i
  local pids=() files=()
  for f in "$@"; do
    pid=$(head -n1 "$f" 2>/dev/null | tr -dc 0-9)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
      say "$f: no such process ${pid:-(empty file)}; removing the stale pidfile"
      rm -f "$f"
      continue
    fi
    comm=$(cat "/proc/$pid/comm" 2>/dev/null || ps -o comm= -p "$pid" || true)
    case "$comm" in
      redis-server | postgres | ticketrush) ;;
      *) say "$f: pid $pid is now '$comm', not what the set-up started: left alone"; continue ;;
    esac
    sig=TERM
    [ "${f##*/}" = postmaster.pid ] && sig=INT # postgres: fast shutdown (TERM waits for every client)
    say "stopping $comm (pid $pid, from $f)"
    kill -s "$sig" "$pid"
    pids+=("$pid") files+=("$f")
  done
  for i in "${!pids[@]}"; do
    for _ in $(seq 1 300); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.05; done
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      say "pid ${pids[$i]} is still running after 15 s"
      exit 1
    fi
    rm -f "${files[$i]}" # redis and postgres remove their own; the service's stays otherwise
    stopped=$((stopped + 1))
  done
}

[ -d .data ] || { say "nothing to stop: there is no .data/"; exit 0; }
mapfile -t service < <(find .data -name 'ticketrush*.pid' | sort)
mapfile -t stores < <(find .data -name '*.pid' ! -name 'ticketrush*.pid' | sort)
stop_all "${service[@]}"
stop_all "${stores[@]}"
if [ "$stopped" -eq 0 ]; then say "nothing to stop: no live pid under .data/"; else say "stopped $stopped process(es)"; fi
