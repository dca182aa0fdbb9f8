#!/usr/bin/env bash
# Asset figures of issue 28 for the S3 backend: a SIZE_MIB upload and download through the asset
# routes over an PackBlobStore, against `aws s3 cp` (PyPI awscli) of the same file to and from the
# same S3 server (moto's, started here by scripts/s3), interleaved round by round; peak memory of
# the server; bytes sent when one byte of the file changed.
#   swift build -c release --product assets-bench
#   Benchmarks/assets/run-s3.sh [SIZE_MIB] [WORKDIR] [ROUNDS]
set -euo pipefail
SIZE_MIB=${1:-1024}
WORK=${2:-/tmp/assets-bench-s3}
ROUNDS=${3:-3}
SIZE=$((SIZE_MIB << 20))
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT="$HERE/../.."
BIN="${ASSETS_BENCH:-$ROOT/.build/release/assets-bench}"
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
command -v aws >/dev/null || python3 -m pip install --quiet awscli >&2
mkdir -p "$WORK"
SRC="$WORK/src.bin"
[ -f "$SRC" ] && [ "$(stat -c %s "$SRC")" = $SIZE ] || head -c $SIZE /dev/urandom > "$SRC"
cat "$SRC" > /dev/null

wall() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
rss() { grep "Maximum resident" "$1" | awk '{print $6}'; }
json() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" "$2" | tr -d '"'; }

S3DIR="$WORK/moto"
start_moto() { S3URL=$("$ROOT/scripts/s3" start "$S3DIR"); }
stop_moto() { "$ROOT/scripts/s3" stop "$S3DIR" >/dev/null 2>&1 || true; }
start_server() {  # a fresh bucket on a fresh S3 server: nothing to deduplicate against
    stop_moto; start_moto
    /usr/bin/time -v "$BIN" serve --s3-endpoint "$S3URL" --bucket "bench-$RANDOM$RANDOM" --port 0 --key "$KEY" > "$WORK/server.out" 2> "$WORK/server.time" &
    SERVER=$!
    for _ in $(seq 100); do grep -q listening "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
    URL="http://127.0.0.1:$(sed -n 's/.*"listening":\([0-9]*\).*/\1/p' "$WORK/server.out")"
}
stop_server() { kill -INT "$(pgrep -P $SERVER)" 2>/dev/null || true; wait $SERVER || true; }
trap 'stop_moto' EXIT

for round in $(seq "$ROUNDS"); do
    start_server
    aws --endpoint-url "$S3URL" s3 mb s3://peer >/dev/null
    awsup=$(wall aws --endpoint-url "$S3URL" s3 cp "$SRC" s3://peer/src.bin)
    rm -f "$WORK/aws.bin"
    awsdown=$(wall aws --endpoint-url "$S3URL" s3 cp s3://peer/src.bin "$WORK/aws.bin")
    aws --endpoint-url "$S3URL" s3 rm s3://peer/src.bin >/dev/null
    rm -f "$WORK/aws.bin"
    "$BIN" upload --server "$URL" --key "$KEY" --file "$SRC" --no-dedup > "$WORK/up.json"
    rm -f "$WORK/down.bin"
    "$BIN" download --server "$URL" --key "$KEY" --checksum "$(json fileChecksum "$WORK/up.json")" --size $SIZE \
        --out "$WORK/down.bin" --no-sync > "$WORK/down.json"
    cmp "$SRC" "$WORK/down.bin"
    up=$(json seconds "$WORK/up.json"); down=$(json seconds "$WORK/down.json")
    echo "round $round: aws s3 cp up ${awsup}s down ${awsdown}s | ubiquity up ${up}s down ${down}s" \
         "| ratio up $(awk "BEGIN{printf \"%.2f\", $awsup / $up}") down $(awk "BEGIN{printf \"%.2f\", $awsdown / $down}") (download identical)"
    if [ "$round" = "$ROUNDS" ]; then
        cp "$SRC" "$WORK/edited.bin"
        printf '\x42' | dd of="$WORK/edited.bin" bs=1 seek=$((SIZE / 2)) conv=notrunc status=none
        "$BIN" upload --server "$URL" --key "$KEY" --file "$WORK/edited.bin" --previous "$SRC" > "$WORK/one.json"
        echo "one byte changed: $(cat "$WORK/one.json")"
    fi
    stop_server
    echo "server peak rss: $(rss "$WORK/server.time") KB"
done
rm -rf "$WORK/down.bin" "$WORK/edited.bin"
