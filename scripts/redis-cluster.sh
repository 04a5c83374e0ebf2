#!/usr/bin/env bash
# A local Redis Cluster for utxostore's Redis engine: its tests, benchmarks
# and CI. Idempotent: every command may be run again.
#
#   scripts/redis-cluster.sh start    install redis-server if missing, start the
#                                     nodes that are not running, create the
#                                     cluster if it is new, wait for
#                                     cluster_state:ok; last line of stdout:
#                                     the node addresses, comma-separated
#   scripts/redis-cluster.sh single   the same for one non-cluster node on
#                                     port base+10; last line: its address
#   scripts/redis-cluster.sh status   print the state; exit 0 only when every
#                                     cluster node is up and the cluster is ok
#   scripts/redis-cluster.sh stop     shut every node down, remove the data
#
# Environment (defaults in brackets):
#   REDIS_CLUSTER_BASE_PORT [7100]   nodes listen on base .. base+n-1, loopback
#   REDIS_CLUSTER_DIR [/tmp/utxostore-redis-cluster]   data, logs, configs
#   MASTERS [3]  REPLICAS [1]        replicas per master
#   REDIS_APPENDFSYNC [everysec]     AOF fsync policy: always|everysec|no
#   REDIS_NODE_TIMEOUT [2000]        cluster-node-timeout in ms: how long a
#                                    dead master goes unnoticed before its
#                                    replica is promoted (Redis' default is
#                                    15000; short here so failover tests run fast)
#   REDIS_WAIT_SECONDS [60]          how long start waits for cluster_state:ok
#
# Restarting a killed node is also `start`: the node comes back with its
# nodes.conf and rejoins the cluster (as a replica if it was failed over).
set -euo pipefail

BASE_PORT=${REDIS_CLUSTER_BASE_PORT:-7100}
DIR=${REDIS_CLUSTER_DIR:-/tmp/utxostore-redis-cluster}
MASTERS=${MASTERS:-3}
REPLICAS=${REPLICAS:-1}
APPENDFSYNC=${REDIS_APPENDFSYNC:-everysec}
NODE_TIMEOUT=${REDIS_NODE_TIMEOUT:-2000}
WAIT_SECONDS=${REDIS_WAIT_SECONDS:-60}
HOST=127.0.0.1
NODES=$((MASTERS * (1 + REPLICAS)))
SINGLE_PORT=$((BASE_PORT + 10))

log() { echo "redis-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

ports() { seq "$BASE_PORT" $((BASE_PORT + NODES - 1)); }

addresses() {
  local out="" p
  for p in $(ports); do out="${out:+$out,}$HOST:$p"; done
  echo "$out"
}

cli() { local port=$1; shift; redis-cli -h "$HOST" -p "$port" "$@"; }

running() { cli "$1" ping 2>/dev/null | grep -q PONG; }

ensure_installed() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  log "redis-server not found; installing Debian's redis-server"
  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server) >&2 ||
    die "could not install redis-server with apt-get"
  command -v redis-server >/dev/null 2>&1 || die "redis-server still not on PATH after installing"
}

# start_node PORT CLUSTER(yes|no): write the node's config (once) and start it
# unless it answers already.
start_node() {
  local port=$1 cluster=$2 dir="$DIR/$1"
  running "$port" && return 0
  mkdir -p "$dir"
  cat >"$dir/redis.conf" <<EOF
bind $HOST
port $port
protected-mode no
daemonize yes
dir $dir
pidfile $dir/redis.pid
logfile $dir/redis.log
appendonly yes
appendfsync $APPENDFSYNC
save ""
maxmemory-policy noeviction
cluster-enabled $cluster
cluster-config-file nodes.conf
cluster-node-timeout $NODE_TIMEOUT
EOF
  if [ "$cluster" = no ]; then
    sed -i '/^cluster-/d' "$dir/redis.conf"
  fi
  redis-server "$dir/redis.conf" >&2 || die "redis-server on port $port did not start; see $dir/redis.log"
  local deadline=$((SECONDS + 20))
  until running "$port"; do
    [ $SECONDS -lt $deadline ] || die "node on port $port does not answer; see $dir/redis.log"
    sleep 0.1
  done
}

cluster_state_ok() { cli "$1" cluster info 2>/dev/null | tr -d '\r' | grep -q '^cluster_state:ok$'; }

slots_assigned() {
  cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_slots_assigned://p'
}

# create_cluster: redis-cli's creator needs three masters; smaller variants
# (MASTERS=1 for benchmarks) are assembled by hand with the same commands it
# would send.
create_cluster() {
  local p all=()
  for p in $(ports); do all+=("$HOST:$p"); done
  if [ "$MASTERS" -ge 3 ]; then
    redis-cli --cluster create "${all[@]}" --cluster-replicas "$REPLICAS" --cluster-yes >&2 ||
      die "redis-cli --cluster create failed"
    return
  fi
  local per=$((16384 / MASTERS)) m start end
  for ((m = 0; m < MASTERS; m++)); do
    start=$((m * per)); end=$(((m + 1) * per - 1))
    [ $m -eq $((MASTERS - 1)) ] && end=16383
    cli $((BASE_PORT + m)) cluster addslotsrange "$start" "$end" >/dev/null
  done
  for p in $(ports); do cli "$p" cluster meet "$HOST" "$BASE_PORT" >/dev/null; done
  local r id deadline
  for ((r = 0; r < MASTERS * REPLICAS; r++)); do
    m=$((r % MASTERS)); p=$((BASE_PORT + MASTERS + r))
    id=$(cli $((BASE_PORT + m)) cluster myid | tr -d '\r')
    deadline=$((SECONDS + 20))
    until cli "$p" cluster replicate "$id" 2>/dev/null | grep -q OK; do
      [ $SECONDS -lt $deadline ] || die "node $p cannot replicate $id"
      sleep 0.2
    done
  done
}

wait_ok() {
  local deadline=$((SECONDS + WAIT_SECONDS)) p pending
  while :; do
    pending=""
    for p in $(ports); do cluster_state_ok "$p" || pending="$pending $p"; done
    [ -z "$pending" ] && return 0
    [ $SECONDS -lt $deadline ] || die "cluster_state is not ok after ${WAIT_SECONDS}s on ports:$pending"
    sleep 0.2
  done
}

cmd_start() {
  ensure_installed
  mkdir -p "$DIR"
  local p
  for p in $(ports); do start_node "$p" yes; done
  if [ "$(slots_assigned "$BASE_PORT")" = 0 ]; then
    log "creating a cluster of $MASTERS masters with $REPLICAS replicas each"
    create_cluster
  fi
  wait_ok
  addresses
}

cmd_single() {
  ensure_installed
  mkdir -p "$DIR"
  start_node "$SINGLE_PORT" no
  echo "$HOST:$SINGLE_PORT"
}

cmd_status() {
  command -v redis-cli >/dev/null 2>&1 || { echo "redis-cli not installed"; return 1; }
  local p ok=0 role state
  for p in $(ports); do
    if running "$p"; then
      role=$(cli "$p" role 2>/dev/null | head -n 1 | tr -d '\r')
      state=$(cli "$p" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p')
      echo "$HOST:$p up role=$role cluster_state=$state"
      [ "$state" = ok ] || ok=1
    else
      echo "$HOST:$p down"
      ok=1
    fi
  done
  if running "$SINGLE_PORT"; then echo "$HOST:$SINGLE_PORT up (single)"; fi
  [ $ok -eq 0 ] && addresses
  return $ok
}

cmd_stop() {
  local p
  if command -v redis-cli >/dev/null 2>&1; then
    for p in $(ports) "$SINGLE_PORT"; do
      running "$p" && cli "$p" shutdown nosave >/dev/null 2>&1 || true
    done
    local deadline=$((SECONDS + 20))
    for p in $(ports) "$SINGLE_PORT"; do
      while running "$p"; do
        [ $SECONDS -lt $deadline ] || die "node on port $p does not shut down"
        sleep 0.1
      done
    done
  fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start) cmd_start ;;
  single) cmd_single ;;
  status) cmd_status ;;
  stop) cmd_stop ;;
  *) echo "usage: $0 start|single|status|stop" >&2; exit 2 ;;
esac
