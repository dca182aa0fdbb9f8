#!/usr/bin/env bash
# Asset figures of issue 5: 1 GiB upload/download on loopback against cp (and against `split`
# into 64 KiB files, the floor of a one-file-per-chunk store), peak memory of both processes,
# bytes sent for a re-upload and for a one-byte change. Rounds are interleaved so every
# contender sees the same disk state (write-back of earlier rounds slows everyone alike).
#   swift build -c release --product assets-bench
#   Benchmarks/assets/run.sh [SIZE_MIB] [WORKDIR] [ROUNDS]
#   SERVE_FLAGS=--packs Benchmarks/assets/run.sh …    # the pack-file store (PackBlobStore over FolderObjects)
set -euo pipefail
SIZE_MIB=${1:-1024}
WORK=${2:-/tmp/assets-bench}
ROUNDS=${3:-3}
SIZE=$((SIZE_MIB << 20))
HERE=$(cd "$(dirname "$0")" && pwd)
BIN="$HERE/../../.build/release/assets-bench"
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$WORK"
SRC="$WORK/src.bin"
[ -f "$SRC" ] && [ "$(stat -c %s "$SRC")" = $SIZE ] || head -c $SIZE /dev/urandom > "$SRC"
cat "$SRC" > /dev/null
rm -rf "$WORK/store" "$WORK/old"; mkdir -p "$WORK/old"

wall() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
rss() { grep "Maximum resident" "$1" | awk '{print $6}'; }
json() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$2" | tr -d '"'; }
fresh_store() { [ -d "$WORK/store" ] && mv "$WORK/store" "$WORK/old/$RANDOM$RANDOM"; mkdir -p "$WORK/store"/{chunks,manifests,uploads,tmp}; }

start_server() {  # $1: extra flags
    fresh_store
    /usr/bin/time -v "$BIN" serve --dir "$WORK/store" --port 0 --key "$KEY" $1 ${SERVE_FLAGS:-} > "$WORK/server.out" 2> "$WORK/server.time" &
    SERVER=$!
    for _ in $(seq 100); do grep -q listening "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
    URL="http://127.0.0.1:$(sed -n 's/.*"listening":\([0-9]*\).*/\1/p' "$WORK/server.out")"
}
stop_server() { kill -INT "$(pgrep -P $SERVER)" 2>/dev/null || true; wait $SERVER || true; }

for mode in --no-sync ""; do
    echo "== store ${mode:-with sync before commit (durable)}, client downloads ${mode:+not }fsynced"
    start_server "$mode"
    for round in $(seq "$ROUNDS"); do
        rm -rf "$WORK/cp.bin" "$WORK/split"; mkdir "$WORK/split"
        if [ -z "$mode" ]; then cpt=$(wall sh -c "cp '$SRC' '$WORK/cp.bin' && sync"); label="cp+sync"
        else cpt=$(wall cp "$SRC" "$WORK/cp.bin"); label="cp"; fi
        st=$(wall split -b 64k "$SRC" "$WORK/split/x")
        rm -rf "$WORK/cp.bin" "$WORK/split"
        fresh_store
        /usr/bin/time -v "$BIN" upload --server "$URL" --key "$KEY" --file "$SRC" --no-dedup > "$WORK/up.json" 2> "$WORK/up.time"
        rm -f "$WORK/down.bin"
        /usr/bin/time -v "$BIN" download --server "$URL" --key "$KEY" --checksum "$(json fileChecksum "$WORK/up.json")" --size $SIZE \
            --out "$WORK/down.bin" $mode > "$WORK/down.json" 2> "$WORK/down.time"
        echo "round $round: $label ${cpt}s | split-64k ${st}s | upload $(json seconds "$WORK/up.json")s (client rss $(rss "$WORK/up.time") KB)" \
             "| download $(json seconds "$WORK/down.json")s (client rss $(rss "$WORK/down.time") KB)"
    done
    cmp "$SRC" "$WORK/down.bin" && echo "download identical"
    /usr/bin/time -v "$BIN" upload --server "$URL" --key "$KEY" --file "$SRC" > "$WORK/re.json" 2> "$WORK/re.time"
    echo "re-upload, same content: $(cat "$WORK/re.json") client rss $(rss "$WORK/re.time") KB"
    cp "$SRC" "$WORK/edited.bin"
    printf '\x42' | dd of="$WORK/edited.bin" bs=1 seek=$((SIZE / 2)) conv=notrunc status=none
    /usr/bin/time -v "$BIN" upload --server "$URL" --key "$KEY" --file "$WORK/edited.bin" --previous "$SRC" > "$WORK/one.json" 2> "$WORK/one.time"
    echo "one byte changed: $(cat "$WORK/one.json") client rss $(rss "$WORK/one.time") KB"
    fresh_store
    /usr/bin/time -v "$BIN" upload --server "$URL" --key "$KEY" --file "$SRC" > "$WORK/fresh.json" 2> "$WORK/fresh.time"
    echo "new content with deduplication on (scan, then stream): $(cat "$WORK/fresh.json")"
    stop_server
    echo "server peak rss: $(rss "$WORK/server.time") KB"
done
rm -rf "$WORK/down.bin" "$WORK/edited.bin" "$WORK/old" "$WORK/store"
