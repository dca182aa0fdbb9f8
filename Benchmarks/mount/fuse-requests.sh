#!/usr/bin/env bash
# Counts the FUSE requests a `tar -xf` into `ubiq daemon --mount` makes, by opcode and by the
# task that caused them (tar, or the daemon's own threads reading through the mount), during the
# tar and in the WAIT seconds after it (sync and the index catching up). Uses the kernel's
# fuse:fuse_request_send tracepoint (tracefs; run as root). Figures: docs/benchmarks.md.
#
#   Benchmarks/mount/fuse-requests.sh UBIQ TARBALL [BASE]      (WAIT=30 by default)
set -euo pipefail
UBIQ=$1 TARBALL=$2 BASE=${3:-/var/tmp/fuse-requests}
rm -rf "$BASE"; mkdir -p "$BASE/home/Ubiquity" "$BASE/run"; chmod 700 "$BASE/run"
export HOME=$BASE/home XDG_RUNTIME_DIR=$BASE/run XDG_STATE_HOME=$BASE/state XDG_DATA_HOME=$BASE/data XDG_CONFIG_HOME=$BASE/config
T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
[ -d "$T/events/fuse/fuse_request_send" ] || { echo "fuse-requests: this kernel has no fuse:fuse_request_send tracepoint" >&2; exit 1; }
"$UBIQ" daemon --local-server --local-server-port "${PORT:-18433}" --mount > "$BASE/daemon.log" 2>&1 &
daemon=$!
trap 'echo 0 > $T/tracing_on; echo 0 > $T/events/fuse/fuse_request_send/enable; kill -TERM $daemon 2>/dev/null; wait $daemon || true' EXIT
for _ in $(seq 1 1800); do
  grep -q "through FUSE" "$BASE/daemon.log" && grep -q "coordination service listening" "$BASE/daemon.log" \
    && grep -q " $HOME/Ubiquity fuse.ubiquity " /proc/mounts && break
  sleep 0.1
done
sleep 3
echo 0 > $T/tracing_on; echo > $T/trace; echo 16384 > $T/buffer_size_kb
echo 1 > $T/events/fuse/fuse_request_send/enable
mkdir -p "$HOME/Ubiquity/untar"
echo 1 > $T/tracing_on; tar -xf "$TARBALL" -C "$HOME/Ubiquity/untar"; echo 0 > $T/tracing_on
cat $T/trace > "$BASE/during.txt"; echo > $T/trace
echo 1 > $T/tracing_on; sleep "${WAIT:-30}"; echo 0 > $T/tracing_on
cat $T/trace > "$BASE/after.txt"; echo > $T/trace
for phase in during after; do
  echo "== requests $phase the tar (by opcode)"
  grep -o "(FUSE_[A-Z_]*)" "$BASE/$phase.txt" | sort | uniq -c | sort -rn
  echo "== by task (tar, or the daemon's own threads)"
  grep -v "^#" "$BASE/$phase.txt" | awk '{print $1}' | sed 's/-[0-9]*$//' | sort | uniq -c | sort -rn | head -5
done
