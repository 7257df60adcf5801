#!/usr/bin/env bash
# Makes a local Redis Cluster answer: 3 masters and 3 replicas on ports BASE..BASE+5 (CLUSTER_PORT,
# default 7000; CLUSTER_MASTERS=6 makes 6 masters and 6 replicas on BASE..BASE+11), append-only, cluster-node-timeout 2000 ms (CLUSTER_NODE_TIMEOUT), a replica's full sync
# held back 5 s (CLUSTER_SYNC_DELAY, repl-diskless-sync-delay), cluster-require-full-coverage no, data,
# logs and pidfiles under .data/cluster/<port>/ (CLUSTER_DIR to put them elsewhere). Safe to run again:
# a healthy cluster is reused, stopped nodes are started again and rejoin from their nodes.conf.
# Prints the REDIS_URL of the cluster on stdout. CLUSTER_SYNCED=0 returns once every slot is served,
# without waiting for the replicas' first sync (a cluster just formed, as a test of that moment needs it).
# CLUSTER_HOSTS="127.0.0.31 ... 127.0.0.36" puts each node on a loopback address of its own, which it also
# sends from (bind-source-addr), so that a test can cut the links between nodes (docs/faults.md,
# "Partitions"). Used by `make cluster`, `make test` and `scripts/services.sh` when REDIS_CLUSTER=1.
#   scripts/cluster.sh          start or reuse
#   scripts/cluster.sh stop     stop the nodes this script started (by their pidfiles)
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${CLUSTER_PORT:-7000}
MASTERS=${CLUSTER_MASTERS:-3}
NODES=$((2 * MASTERS))
read -r -a HOSTS <<<"${CLUSTER_HOSTS:-$(printf '127.0.0.1 %.0s' $(seq "$NODES"))}"
[ "${#HOSTS[@]}" = "$NODES" ] || { printf 'cluster: CLUSTER_HOSTS needs %d addresses\n' "$NODES" >&2; exit 2; }
DIR=${CLUSTER_DIR:-$PWD/.data/cluster}
PORTS=$(seq "$BASE" $((BASE + NODES - 1)))

say() { printf 'cluster: %s\n' "$*" >&2; }
host() { echo "${HOSTS[$(($1 - BASE))]}"; } # port -> the node's address
answers() { (exec 3<>"/dev/tcp/$(host "$1")/$1") 2>/dev/null; }
cli() { redis-cli -h "$(host "$1")" -p "$1" "${@:2}"; }

if [ "${1:-}" = stop ]; then
  for p in $PORTS; do
    f="$DIR/$p/redis.pid"
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # Only the node's own redis-server (a node killed by a test left its pidfile; its pid may be reused).
    if grep -q redis "/proc/$pid/comm" 2>/dev/null && kill "$pid" 2>/dev/null; then # wait for its ports
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      say "stopped node $p"
    fi
    rm -f "$f"
  done
  exit 0
fi

install() { scripts/install.sh "$@"; } # packages...
command -v redis-server >/dev/null || install redis-server
command -v redis-cli >/dev/null || install redis-tools

url() {
  local u="redis://$(host "$BASE"):$BASE" sep="?"
  for p in $PORTS; do [ "$p" = "$BASE" ] && continue; u="$u${sep}addr=$(host "$p"):$p"; sep="&"; done
  echo "$u"
}

healthy() { # the cluster formed with its masters, all slots served, every replica in sync with its master
  local info p
  info=$(cli "$BASE" cluster info 2>/dev/null) || return 1
  grep -q "^cluster_state:ok" <<<"$info" && grep -q "^cluster_known_nodes:$NODES" <<<"$info" &&
    grep -q "^cluster_slots_ok:16384" <<<"$info" && grep -q "^cluster_size:$MASTERS" <<<"$info" || return 1
  [ "${CLUSTER_SYNCED:-1}" = 0 ] && return 0
  for p in $PORTS; do
    info=$(cli "$p" info replication 2>/dev/null) || return 1
    grep -q '^role:slave' <<<"$info" || continue
    grep -q '^master_link_status:up' <<<"$info" && ! grep -q '^master_sync_in_progress:1' <<<"$info" || return 1
  done
}

started=0
for p in $PORTS; do
  answers "$p" && continue
  mkdir -p "$DIR/$p"
  redis-server --daemonize yes --bind "$(host "$p")" --bind-source-addr "$(host "$p")" --protected-mode no --port "$p" --dir "$DIR/$p" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "${CLUSTER_NODE_TIMEOUT:-2000}" \
    --cluster-require-full-coverage no --cluster-replica-validity-factor 0 \
    --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --save "" \
    --repl-diskless-sync-delay "${CLUSTER_SYNC_DELAY:-5}" \
    --hash-max-listpack-entries 32 --zset-max-listpack-entries 32 \
    --logfile "$DIR/$p/redis.log" --pidfile "$DIR/$p/redis.pid"
  started=$((started + 1))
done
for p in $PORTS; do
  for _ in $(seq 1 100); do answers "$p" && break; sleep 0.1; done
  answers "$p" || { say "node $p did not start; see $DIR/$p/redis.log"; exit 1; }
done
[ "$started" -gt 0 ] && say "started $started node(s) under $DIR"
for p in $PORTS; do # a node started again answers LOADING until it has read its append-only file
  for _ in $(seq 1 600); do [ "$(cli "$p" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
done

if ! grep -q "^cluster_known_nodes:$NODES" <<<"$(cli "$BASE" cluster info)"; then
  nodes=()
  for p in $PORTS; do nodes+=("$(host "$p"):$p"); done
  # A node that is not empty (left over from a half-made cluster) would make --cluster create refuse.
  for p in $PORTS; do
    if [ "$(cli "$p" cluster info | grep -c '^cluster_known_nodes:1')" = 1 ] && [ "$(cli "$p" dbsize)" != 0 ]; then
      say "node $p holds keys but is in no cluster; empty $DIR/$p or stop it"; exit 1
    fi
  done
  say "creating the cluster: $MASTERS masters, $MASTERS replicas"
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 ||
    { cat "$DIR/create.log" >&2; exit 1; }
fi
for _ in $(seq 1 300); do healthy && break; sleep 0.1; done
healthy || { say "cluster on $(host "$BASE"):$BASE is not healthy:"; cli "$BASE" cluster info >&2; cli "$BASE" cluster nodes >&2; exit 1; }
say "cluster answers on ${HOSTS[0]}:$BASE-$((BASE + NODES - 1))"
url
