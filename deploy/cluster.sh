#!/usr/bin/env bash
# Start, inspect and stop an N-node trustd cluster on 127.0.0.1.
#
#   deploy/cluster.sh start [N]   build trustd, start N nodes (default 3)
#   deploy/cluster.sh status      trustctl cluster status through node 1
#   deploy/cluster.sh stop        stop every node gracefully (SIGTERM: each
#                                 leaves the cluster), last node first
#
# Nodes talk to each other over mutual TLS with certificates of the
# cluster's own CA, made here with trustctl on first start ($dir/tls).
#
# Node i (1-based) listens on http 8180+i, ops 9180+i, gossip 7980+i,
# peer 8280+i and raft 8380+i (8181, 9181, 7981, 8281, 8381 for node 1): none
# collides with a quick-start node (8080, 9090, 7946, 8090, 8300). Set
# BASE_OFFSET to shift every port. State
# lives in ${CLUSTER_DIR:-./cluster-data}/node-i, logs in node-i.log.
set -euo pipefail

dir=${CLUSTER_DIR:-./cluster-data}
off=${BASE_OFFSET:-0}
bin="$dir/bin/trustd"
ctl="$dir/bin/trustctl"
repo=$(cd "$(dirname "$0")/.." && pwd)

port() { echo $(($1 + $2 + off)); }

start() {
  local n=${1:-3}
  mkdir -p "$dir/bin"
  (cd "$repo" && go build -o "$dir/bin/" ./cmd/trustd ./cmd/trustctl)
  bin=$(cd "$dir/bin" && pwd)/trustd
  local key=${TRUSTD_CLUSTER_KEY:-$(head -c 24 /dev/urandom | base64)}
  local token=${TRUSTD_ADMIN_TOKEN:-adm_$(head -c 24 /dev/urandom | base64 | tr -d '/+=')}
  [ -f "$dir/admin-token" ] && token=$(cat "$dir/admin-token")
  [ -f "$dir/cluster-key" ] && key=$(cat "$dir/cluster-key")
  printf '%s\n' "$token" >"$dir/admin-token"
  printf '%s\n' "$key" >"$dir/cluster-key"
  chmod 600 "$dir/admin-token" "$dir/cluster-key"
  [ -f "$dir/tls/cluster-ca.pem" ] || "$ctl" tls ca create --out-dir "$dir/tls" >/dev/null
  for i in $(seq 1 "$n"); do
    [ -f "$dir/tls/node-$i.pem" ] || "$ctl" tls cert create --node "node-$i" --out-dir "$dir/tls" >/dev/null
    local join=""
    [ "$i" -gt 1 ] && join="127.0.0.1:$(port 7980 1)"
    mkdir -p "$dir/node-$i"
    TRUSTD_ADMIN_TOKEN=$token TRUSTD_CLUSTER_KEY=$key "$bin" \
      --node-id "node-$i" --data-dir "$dir/node-$i" \
      --http-addr "127.0.0.1:$(port 8180 "$i")" --ops-addr "127.0.0.1:$(port 9180 "$i")" \
      --gossip-addr "127.0.0.1:$(port 7980 "$i")" --peer-addr "127.0.0.1:$(port 8280 "$i")" \
      --raft-addr "127.0.0.1:$(port 8380 "$i")" --join "$join" \
      --tls-ca "$dir/tls/cluster-ca.pem" --tls-cert "$dir/tls/node-$i.pem" --tls-key "$dir/tls/node-$i-key.pem" \
      >"$dir/node-$i.log" 2>&1 &
    echo $! >"$dir/node-$i.pid"
    # The founder must lead before others join; each joiner must be ready
    # before the next so Raft grows one voter at a time.
    for _ in $(seq 1 100); do
      curl -fs "http://127.0.0.1:$(port 9180 "$i")/readyz" >/dev/null 2>&1 && break
      sleep 0.2
    done
    echo "node-$i  api http://127.0.0.1:$(port 8180 "$i")  pid $(cat "$dir/node-$i.pid")"
  done
  echo "admin token in $dir/admin-token"
}

status() {
  "$ctl" --addr "http://127.0.0.1:$(port 8180 1)" --admin-token "$(cat "$dir/admin-token")" cluster status
}

stop() {
  for pidf in $(ls -r "$dir"/node-*.pid 2>/dev/null); do
    local pid
    pid=$(cat "$pidf")
    if kill -TERM "$pid" 2>/dev/null; then
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      echo "stopped $(basename "$pidf" .pid)"
    fi
    rm -f "$pidf"
  done
}

case "${1:-}" in
  start) start "${2:-3}" ;;
  status) status ;;
  stop) stop ;;
  *) echo "usage: $0 start [N] | status | stop" >&2; exit 2 ;;
esac
