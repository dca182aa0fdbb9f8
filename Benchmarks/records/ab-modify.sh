#!/bin/bash
# A/B of records/modify throughput between two `ubiq` builds on SQLite, alternated, with GRDB's
# plain-table insert (the embedded limit) beside each round (docs/benchmarks.md, issue 26).
#
# Usage: Benchmarks/records/ab-modify.sh OLD_UBIQ NEW_UBIQ [RECORDS (20000)] [ROUNDS (3)]
# Needs a release UbiquityBench (`swift build -c release --product UbiquityBench`).
set -euo pipefail
old=$1 new=$2 records=${3:-20000} rounds=${4:-3}
bench=$(cd "$(dirname "$0")/../.." && pwd)/.build/release/UbiquityBench
for round in $(seq "$rounds"); do
  for label in old new; do
    ubiq=$old; [ "$label" = new ] && ubiq=$new
    dir=$(mktemp -d /var/tmp/ab-modify.XXXXXX)
    api=$("$ubiq" admin --data "$dir/store" container add iCloud.bench 2>/dev/null | tail -1)
    web=$("$ubiq" admin --data "$dir/store" user add bench 2>/dev/null | tail -1)
    "$ubiq" serve --data "$dir/store" --port 0 --ready-file "$dir/ready" --log-level warning --rate-limit 0 > "$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 200); do [ -s "$dir/ready" ] && break; sleep 0.05; done
    echo "round $round $label $("$bench" records-load --url "$(cat "$dir/ready")" --api "$api" --web "$web" --records "$records" --batch 200 --clients 4 --database private | tail -1)"
    kill "$server"; wait "$server" 2>/dev/null || true
    rm -rf "$dir"
  done
  echo "round $round baseline $("$bench" records-baseline --rows "$records" --batch 200 --file /var/tmp/ab-modify-baseline.sqlite | tail -1)"
  rm -f /var/tmp/ab-modify-baseline.sqlite*
done
