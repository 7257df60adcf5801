#!/usr/bin/env bash
# Makes Redis and Postgres answer at REDIS_URL and DATABASE_URL (loopback), installing and starting
# whatever is missing, with data under .data/ (ignored by git). Creates the service's database.
# Used by `make run`, `make test` and `make services`; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="$PWD/.data"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/ticketrush?sslmode=disable}"

hostport() { # URL -> "host port"
  local rest=${1#*://}; rest=${rest#*@}; rest=${rest%%/*}; rest=${rest%%\?*}
  echo "${rest%:*} ${rest##*:}"
}
read -r REDIS_HOST REDIS_PORT <<<"$(hostport "$REDIS_URL")"
read -r PG_HOST PG_PORT <<<"$(hostport "$DATABASE_URL")"
PG_DB=${DATABASE_URL##*/}; PG_DB=${PG_DB%%\?*}

say() { printf 'services: %s\n' "$*" >&2; }
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

install() { scripts/install.sh "$@"; } # packages...

wait_for() { # name host port
  for _ in $(seq 1 100); do answers "$2" "$3" && return 0; sleep 0.1; done
  say "$1 did not start on $2:$3; see its log under $DATA"; exit 1
}

# Redis: append-only with fsync every second and noeviction (docs/durability.md: a crash loses at most
# about a second, and Redis never drops a key to make room), and hashes and sorted sets of more than 32
# entries kept as tables (docs/scaleout.md, "Settings"; config.RedisServerArgs).
if answers "$REDIS_HOST" "$REDIS_PORT"; then
  say "redis answers on $REDIS_HOST:$REDIS_PORT"
else
  command -v redis-server >/dev/null || install redis-server
  mkdir -p "$DATA/redis"
  say "starting redis-server on $REDIS_HOST:$REDIS_PORT (data in $DATA/redis)"
  redis-server --daemonize yes --bind "$REDIS_HOST" --port "$REDIS_PORT" --dir "$DATA/redis" \
    --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --save "" \
    --hash-max-listpack-entries 32 --zset-max-listpack-entries 32 \
    --logfile "$DATA/redis/redis.log" --pidfile "$DATA/redis/redis.pid"
  wait_for redis "$REDIS_HOST" "$REDIS_PORT"
fi

[ -z "${REDIS_CLUSTER:-}" ] || scripts/cluster.sh >/dev/null # a local Redis Cluster too (scripts/cluster.sh)
# Postgres: a cluster of our own under .data/postgres with trust auth on loopback.
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
if answers "$PG_HOST" "$PG_PORT"; then
  say "postgres answers on $PG_HOST:$PG_PORT"
else
  [ -n "$PGBIN" ] || { install postgresql; PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1); }
  PGDATA="$DATA/postgres"
  as_pg=()
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home /var/lib/postgresql postgres
    as_pg=(runuser -u postgres --)
  fi
  mkdir -p "$PGDATA"
  [ "$(id -u)" -eq 0 ] && chown postgres "$PGDATA" && chmod 700 "$PGDATA"
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    say "initialising a Postgres cluster in $PGDATA"
    "${as_pg[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  say "starting postgres on $PG_HOST:$PG_PORT"
  "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/postgres.log" -w \
    -o "-c listen_addresses=$PG_HOST -p $PG_PORT -k /tmp -c max_connections=300" start >/dev/null
  wait_for postgres "$PG_HOST" "$PG_PORT"
fi

# The database itself.
if command -v psql >/dev/null; then
  psql_() { psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -tAc "$1"; }
elif [ -n "$PGBIN" ]; then
  psql_() { "$PGBIN/psql" -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -tAc "$1"; }
fi
if [ "$(psql_ "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != "1" ]; then
  say "creating database $PG_DB"
  psql_ "CREATE DATABASE \"$PG_DB\"" >/dev/null
fi
