#!/usr/bin/env bash
# `make idlecost`: what a catalog costs while nobody buys (issue 17, "Idle cost"). Starts a private
# redis-server and a fresh Postgres database, runs the real binary with every role, creates CONCERTS
# concerts through the admin API (every tenth with a sale opening tomorrow), waits SETTLE seconds, then
# measures over WINDOW seconds: Redis commands a second (delta of INFO total_commands_processed, which
# counts the commands scripts run too) and the CPU of the service and of Redis (utime+stime from
# /proc/<pid>/stat), as a share of one core. Prints one line; everything it started is stopped and dropped.
# usage: scripts/idlecost.sh BIN   (env: CONCERTS=500 SETTLE=75 WINDOW=10 PGURL=postgres://postgres@127.0.0.1:5432)
set -euo pipefail
BIN=${1:?usage: scripts/idlecost.sh BIN}
CONCERTS=${CONCERTS:-500} SETTLE=${SETTLE:-75} WINDOW=${WINDOW:-10}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
say() { printf 'idlecost: %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

dir=$(mktemp -d)
rport=$(free_port) hport=$(free_port)
db="idlecost_$$_$RANDOM"
rpid="" spid=""
cleanup() {
  [ -z "$spid" ] || { kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; }
  [ -z "$rpid" ] || { kill "$rpid" 2>/dev/null || true; wait "$rpid" 2>/dev/null || true; }
  psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

redis-server --port "$rport" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly yes --appendfsync everysec \
  --maxmemory-policy noeviction >"$dir/redis.log" 2>&1 &
rpid=$!
psql -q "$PGURL/postgres" -c "CREATE DATABASE $db" >/dev/null
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.1; done

admin=$(head -c 32 /dev/urandom | base64 | tr -dc A-Za-z0-9 | head -c 40)
secret() { head -c 48 /dev/urandom | base64 | tr -dc A-Za-z0-9 | head -c 48; }
REDIS_URL="redis://127.0.0.1:$rport/0" DATABASE_URL="$PGURL/$db?sslmode=disable" HTTP_ADDR="127.0.0.1:$hport" \
  ADMIN_TOKEN="$admin" JWT_SECRET="$(secret)" QUEUE_TOKEN_SECRET="$(secret)" \
  "$BIN" serve >"$dir/service.log" 2>&1 &
spid=$!
for _ in $(seq 300); do
  curl -fsS "http://127.0.0.1:$hport/readyz" >/dev/null 2>&1 && break
  kill -0 "$spid" 2>/dev/null || { say "the service exited:"; tail -20 "$dir/service.log" >&2; exit 1; }
  sleep 0.1
done

say "creating $CONCERTS concerts"
opens=$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)
for i in $(seq "$CONCERTS"); do
  sale=""
  [ $((i % 10)) -ne 0 ] || sale=",\"sale\":{\"opensAt\":\"$opens\"}"
  printf '{"title":"Idle %d","venue":"Hall","schedules":["2030-01-01T10:00:00Z"],"sections":[{"name":"A","price":100,"seats":50}]%s}' "$i" "$sale"
  echo
done | while read -r body; do
  curl -fsS -o /dev/null -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' \
    -d "$body" "http://127.0.0.1:$hport/admin/v1/concerts"
done
say "settling for ${SETTLE}s"
sleep "$SETTLE"

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
cmds() { redis-cli -p "$rport" info stats | tr -d '\r' | awk -F: '/^total_commands_processed:/ {print $2}'; }
tck=$(getconf CLK_TCK)
c0=$(cmds) s0=$(cpu "$spid") r0=$(cpu "$rpid") t0=$(date +%s.%N)
sleep "$WINDOW"
c1=$(cmds) s1=$(cpu "$spid") r1=$(cpu "$rpid") t1=$(date +%s.%N)
awk -v c="$((c1 - c0 - 1))" -v s="$((s1 - s0))" -v r="$((r1 - r0))" -v t0="$t0" -v t1="$t1" -v tck="$tck" \
  -v n="$CONCERTS" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
  dt = t1 - t0
  printf "concerts=%d window=%.1fs redis_commands_per_s=%.0f service_cpu=%.1f%% redis_cpu=%.1f%% loadavg=%s\n",
    n, dt, c / dt, 100 * s / tck / dt, 100 * r / tck / dt, la }'
