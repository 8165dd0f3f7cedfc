#!/bin/bash
# Two builds' durable writes, interleaved: each round starts each build on a fresh data directory
# (alternating which goes first) and drives it with wrk, 32 connections for 5 s after a 1 s warm-up,
# every request sending the token. Needs wrk. Loopback only.
#   bash bench/ab-builds.sh OLD/dist/main.js NEW/dist/main.js [rounds=8] [create|patch]
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-8} SCENARIO=${4:-create}
HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=$HERE/wrk/$([ "$SCENARIO" = patch ] && echo patch-configuration || echo create-session).lua
PORT=${PORT:-18111}
export TOK=assessd-bench-token-0123456789abcdef

run() { # label main.js
  local dir; dir=$(mktemp -d)
  ASSESSD_TOKEN=$TOK node "$2" --port "$PORT" --data-dir "$dir" > "$dir.log" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/debug/health" > /dev/null && break; sleep 0.05; done
  wrk -t2 -c32 -d1s -s "$SCRIPT" "http://127.0.0.1:$PORT" > /dev/null
  local out; out=$(wrk -t2 -c32 -d5s -s "$SCRIPT" "http://127.0.0.1:$PORT")
  kill "$pid"; wait "$pid" 2> /dev/null || true
  rm -rf "$dir" "$dir.log"
  if grep -q Non-2xx <<< "$out"; then echo "$1: answers other than 2xx" >&2; exit 1; fi
  echo "$1 $(awk '/Requests\/sec/ {print $2}' <<< "$out")"
}

results=$(for round in $(seq "$ROUNDS"); do
  if (( round % 2 )); then run old "$OLD"; run new "$NEW"; else run new "$NEW"; run old "$OLD"; fi
done | tee /dev/stderr)
for build in old new; do
  awk -v b="$build" '$1 == b { print $2 }' <<< "$results" | sort -n | awk -v b="$build" '{ a[NR] = $1 } END {
    printf "%s median %.0f req/s (%.0f-%.0f, %d runs)\n", b, (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR], NR }'
done
