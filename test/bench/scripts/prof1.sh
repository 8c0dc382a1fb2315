#!/usr/bin/env bash
# prof1.sh [SCENARIO] [RATE] [OUT]: one trustd node under trustbench load
# (closed loop when RATE is 0) for 14 s, with an 8 s CPU profile taken from
# its ops listener in the middle. Run from a directory holding the trustd
# and trustbench binaries (go build ./cmd/trustd ./test/bench/cmd/trustbench).
# Writes OUT.bench (trustbench's report) and OUT.pprof (go tool pprof).
set -euo pipefail
SC=${1:-ratelimit} RATE=${2:-0} OUT=${3:-prof1}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
TOK=adm_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
TRUSTD_ADMIN_TOKEN=$TOK ./trustd --node-id p1 --data-dir "$dir" --http-addr 127.0.0.1:28181 --ops-addr 127.0.0.1:28182 \
  --gossip-addr 127.0.0.1:28183 --peer-addr 127.0.0.1:28184 --raft-addr 127.0.0.1:28185 --log-level warn \
  --ingress-ip-rate 0 --ingress-credential-rate 0 >"$dir/log" 2>&1 &
PID=$!
for _ in $(seq 100); do curl -fs http://127.0.0.1:28182/readyz >/dev/null && break; sleep 0.2; done
./trustbench --target http://127.0.0.1:28181 --admin-token "$TOK" --scenario "$SC" --rate "$RATE" --duration 14s \
  --warmup 1s --server-pid "$PID" >"$OUT.bench" 2>&1 &
B=$!
sleep 4
curl -s "http://127.0.0.1:28182/debug/pprof/profile?seconds=8" >"$OUT.pprof"
wait "$B"
kill "$PID"; wait "$PID" || true
tail -4 "$OUT.bench"
