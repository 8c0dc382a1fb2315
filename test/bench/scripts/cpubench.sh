#!/usr/bin/env bash
# cpubench.sh BIN BENCH N: CPU time (user+sys) per op of Go benchmark BENCH in
# test binary BIN (built with `go test -c`), with the setup cost removed by
# subtracting a 1-op run. Wall-clock ns/op moves with machine load; CPU per
# op much less. Prints: BENCH <cpu-ns/op> <B/op> <allocs/op>.
set -euo pipefail
BIN=$1 B=$2 N=$3
out=$(mktemp); trap 'rm -f "$out"' EXIT
cpu() { /usr/bin/time -f "%U %S" "$BIN" -test.run '^$' -test.bench "^$B\$" -test.benchtime "${1}x" -test.benchmem 2>&1 >"$out" | tail -1 | awk '{print $1+$2}'; }
c1=$(cpu 1); cN=$(cpu "$N")
allocs=$(grep -o '[0-9.]* B/op.*' "$out" | head -1)
echo "$B $(awk -v a="$cN" -v b="$c1" -v n="$N" 'BEGIN{printf "%.0f", (a-b)*1e9/(n-1)}') cpu-ns/op  $allocs"
