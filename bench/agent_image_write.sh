#!/usr/bin/env bash
# Image write benchmark of kiln-agent (docs/benchmarks.md, "Agent image write").
#
# Compares `kiln-agent write-image` (download + sha256 + O_DIRECT write + fdatasync) with the
# shell baseline `curl URL | dd of=DEV bs=4M oflag=direct`, writing a 512 MiB incompressible
# image served by `python3 -m http.server` on 127.0.0.1 to a loop device backed by a file in
# /var/tmp, BENCH_RUNS (3) runs each, interleaved. Also times `dd if=FILE of=DEV bs=4M
# oflag=direct` (no network: the device's write ceiling) and `curl -o /dev/null` (the download
# ceiling), and measures the agent's maximum RSS
# writing a 128 MiB and a 1 GiB image (flat memory: the pipeline holds 8 x 4 MiB buffers).
#
# Usage: sudo bench/agent_image_write.sh [path/to/kiln-agent]   (default build/agent/kiln-agent;
# this script builds nothing). Needs root (losetup), curl, python3 and /usr/bin/time.
#
# Safety: it only ever writes to loop devices it created over its own files in /var/tmp, and
# detaches them on exit (trap).
#
# Environment:
#   BENCH_RUNS      runs per variant (default 3)
#   BENCH_DIRECT_LOOP  1 = attach the loop device with --direct-io=on (default 1: writes reach
#                   the backing disk instead of the page cache, so every variant pays the same
#                   I/O; 0 = buffered loop device)
#   BENCH_KEEP      1 = keep the temporary directory and print its path
#
# Benchmarks are not tests: this is deliberately not registered with ctest.
set -euo pipefail

AGENT=${1:-build/agent/kiln-agent}
RUNS=${BENCH_RUNS:-3}
DIRECT_LOOP=${BENCH_DIRECT_LOOP:-1}
IMAGE_MIB=512
TARGET_MIB=600

if [[ $(id -u) -ne 0 ]]; then
  echo "needs root (losetup)" >&2
  exit 1
fi
[[ -x $AGENT ]] || { echo "no kiln-agent at $AGENT" >&2; exit 1; }
AGENT=$(readlink -f "$AGENT")

WORK=$(mktemp -d /var/tmp/kiln-bench-image.XXXXXX)
LOOPS=()
SERVER_PID=
cleanup() {
  [[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null || true
  for loop in "${LOOPS[@]}"; do losetup -d "$loop" || echo "could not detach $loop" >&2; done
  if [[ ${BENCH_KEEP:-0} == 1 ]]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap "exit 130" INT TERM

# attach FILE: sets ATTACHED=/dev/loopN and remembers it for the trap. Not called in a
# command substitution (a subshell would lose the LOOPS entry and leak the device).
attach() {
  local opts=(--find --show)
  [[ $DIRECT_LOOP == 1 ]] && opts+=(--direct-io=on)
  ATTACHED=$(losetup "${opts[@]}" "$1")
  case $ATTACHED in /dev/loop[0-9]*) ;; *) echo "unexpected loop device '$ATTACHED'" >&2; exit 1 ;; esac
  LOOPS+=("$ATTACHED")
}

mkdir -p "$WORK/www"
echo "creating a ${IMAGE_MIB} MiB incompressible image ..." >&2
head -c $((IMAGE_MIB * 1024 * 1024)) /dev/urandom >"$WORK/www/image.raw"
head -c $((128 * 1024 * 1024)) /dev/urandom >"$WORK/www/image128.raw"
head -c $((1024 * 1024 * 1024)) /dev/urandom >"$WORK/www/image1g.raw"
SHA=$(sha256sum "$WORK/www/image.raw" | cut -d' ' -f1)
SHA128=$(sha256sum "$WORK/www/image128.raw" | cut -d' ' -f1)
SHA1G=$(sha256sum "$WORK/www/image1g.raw" | cut -d' ' -f1)

truncate -s ${TARGET_MIB}M "$WORK/target.img"
truncate -s 1100M "$WORK/target-big.img"
attach "$WORK/target.img"
LOOP=$ATTACHED
attach "$WORK/target-big.img"
LOOP_BIG=$ATTACHED
echo "loop devices: $LOOP (${TARGET_MIB} MiB), $LOOP_BIG (1100 MiB)" >&2

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$WORK/www" && exec python3 -m http.server --bind 127.0.0.1 "$PORT" >"$WORK/http.log" 2>&1) &
SERVER_PID=$!
URL=http://127.0.0.1:$PORT
for _ in $(seq 50); do curl -sf -o /dev/null -I "$URL/image.raw" && break; sleep 0.1; done

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mib_s() { awk -v b="$1" -v s="$2" 'BEGIN {printf "%.0f", b / 1048576 / s}'; }

BYTES=$((IMAGE_MIB * 1024 * 1024))
: >"$WORK/curl_dd.txt" >"$WORK/agent.txt" >"$WORK/agent_rate.txt" >"$WORK/dd_file.txt" \
  >"$WORK/curl_null.txt"
for run in $(seq "$RUNS"); do
  # (a) the shell baseline
  t0=$(now)
  curl -s "$URL/image.raw" | dd of="$LOOP" bs=4M oflag=direct status=none
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/curl_dd.txt"
  cmp -n $BYTES "$WORK/www/image.raw" "$LOOP" || { echo "curl|dd wrote wrong bytes" >&2; exit 1; }

  # (b) kiln-agent
  t0=$(now)
  out=$("$AGENT" write-image --url "$URL/image.raw" --device "$LOOP" --checksum "sha256:$SHA" \
          2>"$WORK/agent-$run.log")
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/agent.txt"
  echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])' >>"$WORK/agent_rate.txt"
  cmp -n $BYTES "$WORK/www/image.raw" "$LOOP" || { echo "kiln-agent wrote wrong bytes" >&2; exit 1; }

  # (c) the device's write ceiling: dd from the local file, no network
  t0=$(now)
  dd if="$WORK/www/image.raw" of="$LOOP" bs=4M oflag=direct status=none
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/dd_file.txt"
  # (d) the download ceiling: curl to /dev/null, nothing written
  t0=$(now)
  curl -s -o /dev/null "$URL/image.raw"
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/curl_null.txt"
  echo "run $run: curl|dd $(tail -1 "$WORK/curl_dd.txt" | cut -c1-6) s, kiln-agent $(tail -1 "$WORK/agent.txt" | cut -c1-6) s, dd from file $(tail -1 "$WORK/dd_file.txt" | cut -c1-6) s" >&2
done

CURL_DD=$(median <"$WORK/curl_dd.txt")
AGENT_T=$(median <"$WORK/agent.txt")
AGENT_IN=$(median <"$WORK/agent_rate.txt")
DD_FILE=$(median <"$WORK/dd_file.txt")
CURL_NULL=$(median <"$WORK/curl_null.txt")

rss() {  # rss IMAGE SHA DEVICE -> max RSS in KiB
  /usr/bin/time -v "$AGENT" write-image --url "$URL/$1" --device "$3" --checksum "sha256:$2" \
    2>&1 >/dev/null | awk -F: '/Maximum resident set size/ {gsub(/ /, "", $2); print $2}'
}
RSS128=$(rss image128.raw "$SHA128" "$LOOP_BIG")
RSS1G=$(rss image1g.raw "$SHA1G" "$LOOP_BIG")
cmp -n $((1024 * 1024 * 1024)) "$WORK/www/image1g.raw" "$LOOP_BIG" || { echo "1 GiB write wrong" >&2; exit 1; }

echo
echo "kiln-agent image write, ${IMAGE_MIB} MiB incompressible image, median of $RUNS runs"
echo "(loop device over /var/tmp, direct-io=$DIRECT_LOOP; $(nproc) CPUs)"
printf '%-44s %8s %8s\n' "variant" "seconds" "MiB/s"
printf '%-44s %8.2f %8s\n' "curl | dd bs=4M oflag=direct" "$CURL_DD" "$(mib_s $BYTES "$CURL_DD")"
printf '%-44s %8.2f %8s\n' "kiln-agent write-image (process wall time)" "$AGENT_T" "$(mib_s $BYTES "$AGENT_T")"
printf '%-44s %8.2f %8s\n' "kiln-agent write-image (its own 'seconds')" "$AGENT_IN" "$(mib_s $BYTES "$AGENT_IN")"
printf '%-44s %8.2f %8s\n' "dd if=FILE bs=4M oflag=direct (no network)" "$DD_FILE" "$(mib_s $BYTES "$DD_FILE")"
printf '%-44s %8.2f %8s\n' "curl -o /dev/null (download only)" "$CURL_NULL" "$(mib_s $BYTES "$CURL_NULL")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ratio kiln-agent / curl|dd: $(awk -v a="$AGENT_T" -v b="$CURL_DD" 'BEGIN {printf "%.2f", a / b}') (target <= 1.5)"
echo "agent write throughput vs dd's: $(awk -v a="$AGENT_T" -v b="$CURL_DD" 'BEGIN {printf "%.0f%%", 100 * b / a}') of curl|dd, $(awk -v a="$AGENT_T" -v b="$DD_FILE" 'BEGIN {printf "%.0f%%", 100 * b / a}') of dd from file"
echo "kiln-agent max RSS: 128 MiB image ${RSS128} KiB, 1 GiB image ${RSS1G} KiB"
