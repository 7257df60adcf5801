#!/usr/bin/env bash
# Runs one k6 scenario against the service at ADDR, then the invariant check (loadtest/check). Fails
# when k6's thresholds or the invariant check fail. Used by `make loadtest`.
#
# When nothing answers at ADDR it starts BIN serve there in the background (stopped at the end) on a
# Redis database and a Postgres database of the load tests' own, LOADTEST_REDIS_URL and
# LOADTEST_DATABASE_URL: a service sharing Redis with other instances that use other databases (tests,
# `make run`) would share the wallet streams with their write-behind workers, which would then record
# some of this run's money in their databases. When a service already answers, the check reads the
# Redis and Postgres of REDIS_URL and DATABASE_URL.
#
# usage: loadtest/run.sh SCENARIO BIN ADDR K6
#   SCENARIO  onsale | poll-storm | hot-seat
#   PROFILE   short (default) | full, from the environment; K6_FLAGS adds flags to `k6 run`
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=$1 BIN=$2 ADDR=$3 K6=$4
GO=${GO:-go}
OUT=loadtest/out
mkdir -p "$OUT"
say() { printf 'loadtest: %s\n' "$*" >&2; }

[ -f "loadtest/$SCENARIO.js" ] || { say "no scenario loadtest/$SCENARIO.js (onsale, poll-storm, hot-seat)"; exit 2; }
"$GO" build -o bin/loadtest-check ./loadtest/check

# progress prints, every 5 s while k6 runs (-q keeps k6 itself quiet), what the service has done since the
# run began, from its /metrics: requests, joins, admissions, holds, payments.
metric_sum() { # METRICS-TEXT NAME: the sum of NAME over its series
  awk -v m="$2" 'index($1, m) == 1 && (length($1) == length(m) || substr($1, length(m) + 1, 1) == "{") { s += $2 }
    END { printf "%d", s }' <<<"$1"
}
progress() {
  local start=$SECONDS base now line m
  base=$(curl -fsS --max-time 2 "$ADDR/metrics" 2>/dev/null || true)
  while sleep 5; do
    if ! now=$(curl -fsS --max-time 2 "$ADDR/metrics" 2>/dev/null); then
      say "$((SECONDS - start))s: /metrics does not answer"
      continue
    fi
    line="$((SECONDS - start))s:"
    for m in http_requests queue_joined queue_admitted holds payments; do
      line+=" ${m#queue_} $(($(metric_sum "$now" "ticketrush_${m}_total") - $(metric_sum "$base" "ticketrush_${m}_total")))"
    done
    say "$line"
  done
}

pid="" progress_pid=""
stop() {
  if [ -n "$progress_pid" ]; then
    kill "$progress_pid" 2>/dev/null || true
    wait "$progress_pid" 2>/dev/null || true
  fi
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
}
trap stop EXIT
if curl -fsS "$ADDR/readyz" >/dev/null 2>&1; then
  say "using the service that answers at $ADDR"
else
  export REDIS_URL=${LOADTEST_REDIS_URL:-redis://127.0.0.1:6379/15}
  export DATABASE_URL=${LOADTEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/ticketrush_loadtest?sslmode=disable}
  scripts/services.sh # creates the database when missing
  say "nothing answers at $ADDR: starting $BIN serve on $REDIS_URL and ${DATABASE_URL%%\?*} (log in $OUT/service.log)"
  HTTP_ADDR=${ADDR#http://} "$BIN" serve >"$OUT/service.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do curl -fsS "$ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS "$ADDR/readyz" >/dev/null || { say "the service did not become ready; see $OUT/service.log"; exit 1; }
fi

summary="$OUT/$SCENARIO-summary.json"
rm -f "$summary"
say "k6 run loadtest/$SCENARIO.js (PROFILE=${PROFILE:-short}); progress every 5 s, counted since the start"
progress &
progress_pid=$!
set +e
BASE_URL="$ADDR" "$K6" run -q ${K6_FLAGS:-} --summary-export "$summary" "loadtest/$SCENARIO.js"
k6rc=$?
kill "$progress_pid" 2>/dev/null
wait "$progress_pid" 2>/dev/null
progress_pid=""
checkrc=1
if [ -s "$summary" ]; then
  echo
  bin/loadtest-check -summary "$summary" -ticketrush "$BIN"
  checkrc=$?
else
  say "k6 wrote no summary: nothing to check"
fi
set -e

if [ "$k6rc" -ne 0 ] || [ "$checkrc" -ne 0 ]; then
  say "FAILED: k6 exit $k6rc ($([ "$k6rc" -eq 99 ] && echo 'thresholds crossed' || echo 'see above')), invariant check exit $checkrc"
  exit 1
fi
say "passed: thresholds held and the invariants hold"
