#!/usr/bin/env bash
# Starts the service, waits for it, creates a demo concert, prints a dev token and curl lines that walk
# the queue, then stays in the foreground until Ctrl-C.
set -euo pipefail
BIN=$1 ADDR=$2
"$BIN" serve &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid' INT TERM EXIT
for _ in $(seq 1 100); do curl -fsS "$ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$ADDR/readyz" >/dev/null || { echo "the service did not become ready" >&2; exit 1; }
concert=$(curl -fsS -X POST "$ADDR/admin/v1/concerts" -H "Authorization: Bearer $ADMIN_TOKEN" \
  -H 'Content-Type: application/json' -d '{"title":"IU 2026","venue":"KSPO Dome",
  "schedules":["2026-12-24T10:00:00Z","2026-12-25T10:00:00Z"],
  "sections":[{"name":"VIP","price":165000,"seats":100},{"name":"R","price":143000,"seats":400}]}')
id=$(sed -E 's/^\{"id":"([a-z0-9]+)".*/\1/' <<<"$concert")
token=$("$BIN" token --user demo-fan --ttl 24h)
cat <<MSG

ticketrush is running at $ADDR (demo concert $id)
fan page, signed in as demo-fan: $ADDR/#token=$token   operator console: $ADDR/admin (token \$ADMIN_TOKEN)
dev token for user demo-fan:
  export TOKEN=$token

walk the queue:
  curl -s -X POST $ADDR/v1/concerts/$id/queue -H "Authorization: Bearer \$TOKEN"
  curl -s $ADDR/v1/queue -H "Authorization: Bearer \$TOKEN" -H "X-Queue-Token: <token from the join>"
  curl -s -X DELETE $ADDR/v1/queue -H "Authorization: Bearer \$TOKEN" -H "X-Queue-Token: <token from the join>"

Ctrl-C stops it.
MSG
wait $pid
