#!/usr/bin/env bash
# Issue 7's first-run figure: time from the README's main command (`scripts/run`) on a machine with
# the build cached, in a fresh home, until a file put in ~/Ubiquity is uploaded (`ubiq status`
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
  export HOME="$sandbox/home" XDG_DATA_HOME="$sandbox/data" XDG_STATE_HOME="$sandbox/state" \
         XDG_CONFIG_HOME="$sandbox/config" XDG_RUNTIME_DIR="$sandbox/run"
  mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  start=$(date +%s.%N)
  scripts/run --local-server-port 0 >"$sandbox/run.log" 2>&1 &
  pid=$!
  until grep -q "coordination service listening" "$sandbox/run.log" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$sandbox/run.log" >&2; exit 1; }
    sleep 0.02
  done
  echo "hello" > "$HOME/Ubiquity/hello.txt"
  until "$ubiq" status "$HOME/Ubiquity/hello.txt" --json 2>/dev/null | grep -Eq '"sync" *: *"uploaded"'; do sleep 0.02; done
  end=$(date +%s.%N)
  times+=("$(echo "$end - $start" | bc)")
  echo "run $i: ${times[-1]} s"
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$sandbox"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " s over " NR " runs"}'
