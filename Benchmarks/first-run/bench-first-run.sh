#!/usr/bin/env bash
# Issue 7's first-run figure: time from the README's main command (`scripts/run`) on a machine with
# the build cached, with fresh user state, until a file put in ~/Ubiquity is uploaded (`ubiq status`
# says so). Runs N times (default 5) and prints each time and the median.
#   Benchmarks/first-run/bench-first-run.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-5}"
swift build -c release --product ubiq >/dev/null 2>&1   # the cached build the figure assumes
ubiq="$PWD/.build/release/ubiq"
times=()
for i in $(seq "$runs"); do
  sandbox="$(mktemp -d /var/tmp/ubq-first-run.XXXXXX)"
  # A fresh user state (account, server data, index, sockets) in XDG folders and a fresh synced
  # folder; HOME stays, because "the build cached" includes SwiftPM's caches there (compiled
  # manifests; a fresh HOME recompiles every package manifest, 20-60 s here). scripts/run links
  # ~/.local/bin/ubiq to this checkout's build.
  export XDG_DATA_HOME="$sandbox/data" XDG_STATE_HOME="$sandbox/state" \
         XDG_CONFIG_HOME="$sandbox/config" XDG_RUNTIME_DIR="$sandbox/run"
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  folder="$sandbox/Ubiquity"
  start=$(date +%s.%N)
  scripts/run --local-server-port 0 --folder "$folder" >"$sandbox/run.log" 2>&1 &
  pid=$!
  until grep -q "coordination service listening" "$sandbox/run.log" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$sandbox/run.log" >&2; exit 1; }
    sleep 0.02
  done
  ready=$(date +%s.%N)
  echo "hello" > "$folder/hello.txt"
  until "$ubiq" status "$folder/hello.txt" --json 2>/dev/null | grep -Eq '"sync" *: *"uploaded"'; do sleep 0.02; done
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
  echo "run $i: ${times[-1]} s (daemon ready after $(echo "$ready - $start" | bc) s; the file uploaded $(echo "$end - $ready" | bc) s later)"
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$sandbox"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " s over " NR " runs"}'
