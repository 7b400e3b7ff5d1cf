#!/usr/bin/env bash
# HTTP load benchmark of kiln-server (docs/benchmarks.md, "kiln-server HTTP API").
#
# Starts a fresh kiln-server (build/server/kiln-server; this script builds nothing) on a
# temporary SQLite database, bound to a free port on 127.0.0.1, measures its idle memory,
# seeds BENCH_NODES (10,000) fake-hardware nodes, measures memory again, then drives it with
# wrk:
#   get-node        GET /v1/nodes/{uuid}                 (one node, keep-alive)
#   get-node-varied GET /v1/nodes/{uuid}                 (every node in turn, bench/node_uuids.lua)
#   get-node-no-ka  GET /v1/nodes/{uuid}                 (no Connection header: HTTP/1.1 default)
#   node-detail     GET /v1/nodes/detail?limit=100       (over the 10,000 nodes)
#   put-traits      PUT /v1/nodes/{uuid}/traits          (every node in turn, bench/put_traits.lua)
# and prints a summary table (requests/s, p50, p99, RSS), then stops the server.
# Every run also reports CPU accounting from /proc: kiln-server CPU time per request and the
# cores used by kiln-server, by wrk and by everything else (client and server share the
# machine, so "other" shows how much a concurrent workload disturbed the figures), plus the
# connections closed during the run (new TIME-WAIT sockets on the port: about 10 means the
# 10 connections were reused for every request).
#
# Environment:
#   BENCH_DURATION  seconds per measured wrk run (default 10)
#   BENCH_WARMUP    seconds of an unrecorded wrk run before each measured one (default 2; 0 = none)
#   BENCH_NODES     nodes to seed (default 10000)
#   BENCH_KEEP      1 = keep the temporary directory (server log, wrk outputs) and print its path
#   KILN_SERVER     the server binary (default build/server/kiln-server)
#   PYTHON          python used to seed (default /usr/bin/python3)
#
# Benchmarks are not tests: this is deliberately not registered with ctest.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SERVER=${KILN_SERVER:-$ROOT/build/server/kiln-server}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-2}
NODES=${BENCH_NODES:-10000}
PYTHON=${PYTHON:-/usr/bin/python3}
API_VERSION=1.78

# Targets (issue: 100x / 50x Ironic on this 2-core machine).
TARGET_GET_RPS=36000
TARGET_GET_P99_MS=5
TARGET_DETAIL_RPS=2500
TARGET_RSS_MIB=30

die() { echo "http_load.sh: $*" >&2; exit 1; }

[ -x "$SERVER" ] || die "$SERVER not found: build first (cd build && ninja)"
command -v wrk >/dev/null || die "wrk is not installed"
command -v curl >/dev/null || die "curl is not installed"
[ -x "$PYTHON" ] || die "$PYTHON not found (set PYTHON)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-http-bench.XXXXXX")
SERVER_PID=

cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- machine -------------------------------------------------------------------------------
echo "== machine"
echo "cpus:    $(nproc) ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo))"
echo "os:      $( . /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), kernel $(uname -r)"
echo "memory:  $(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
echo "wrk:     $(wrk --version 2>&1 | head -n1 | awk '{print $1, $2}')"
echo "kiln:    $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- server shared 2>/dev/null || echo ' (+ local changes)')"
echo "binary:  ${SERVER#"$ROOT/"} built $(date -u -r "$SERVER" '+%Y-%m-%d %H:%M:%S UTC')"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, before the run)"

# --- server --------------------------------------------------------------------------------
cat >"$WORK/kiln.conf" <<EOF
[DEFAULT]
enabled_hardware_types = fake-hardware

[api]
host_ip = 127.0.0.1
port = 0

[database]
connection = sqlite:///$WORK/kiln.sqlite
EOF

"$SERVER" --config-file "$WORK/kiln.conf" --port-file "$WORK/port" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  [ -s "$WORK/port" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "kiln-server exited"; }
  sleep 0.1
done
[ -s "$WORK/port" ] || die "kiln-server did not write its port file"
PORT=$(tr -d '[:space:]' <"$WORK/port")
BASE="http://127.0.0.1:$PORT"
echo
echo "== kiln-server pid $SERVER_PID on $BASE ($WORK)"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
time_wait() {  # sockets of this port in TIME-WAIT: one per connection closed recently
  ss -Htan state time-wait "( sport = :$PORT or dport = :$PORT )" 2>/dev/null | wc -l
}

sleep 1
RSS_IDLE=$(rss_kib)
echo "idle RSS after start: $(mib "$RSS_IDLE") MiB"

# --- seed ----------------------------------------------------------------------------------
"$PYTHON" "$HERE/seed_nodes.py" --port "$PORT" --count "$NODES" --out "$WORK/uuids.txt"
export KILN_BENCH_UUIDS="$WORK/uuids.txt"
UUID=$(head -n1 "$WORK/uuids.txt")
sleep 2
RSS_LOADED=$(rss_kib)
echo "idle RSS after loading $NODES nodes: $(mib "$RSS_LOADED") MiB"

# Sanity: each benchmarked request succeeds before it is measured.
check() {  # expected-status method url [body]
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -X "$2" \
    -H "X-OpenStack-Ironic-API-Version: $API_VERSION" -H 'Content-Type: application/json' \
    ${4:+--data "$4"} "$3")
  [ "$code" = "$1" ] || die "$2 $3 returned $code, expected $1"
}
check 200 GET "$BASE/v1/nodes/$UUID"
check 200 GET "$BASE/v1/nodes/detail?limit=100"
check 204 PUT "$BASE/v1/nodes/$UUID/traits" '{"traits": ["CUSTOM_BENCH_A"]}'
TOTAL=$(curl -s -H "X-OpenStack-Ironic-API-Version: $API_VERSION" "$BASE/v1/nodes?limit=1000&fields=uuid" |
  "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)["nodes"]))')
[ "$TOTAL" -ge "$((NODES < 1000 ? NODES : 1000))" ] || die "node list returned $TOTAL nodes"

# --- wrk -----------------------------------------------------------------------------------
KA=(-H 'Connection: keep-alive')
VER=(-H "X-OpenStack-Ironic-API-Version: $API_VERSION")
SUMMARY="$WORK/summary.tsv"
: >"$SUMMARY"

# The printed command, shell-quoted, with the script path relative to the repository.
show_cmd() {
  local out="" a
  for a in "$@"; do
    a=${a//"$ROOT/"/}
    if [[ $a =~ ^[A-Za-z0-9_./:=@%+-]+$ ]]; then out+="$a "; else out+="'$a' "; fi
  done
  echo "${out% }"
}

# to_ms "123.45us" -> 0.123
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
    printf "%.3f", n }'
}

cpu_stat() {  # "busy total" jiffies of the whole machine (/proc/stat)
  awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat
}
pid_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CLK_TCK=$(getconf CLK_TCK)
TIME_CMD=()
[ -x /usr/bin/time ] && TIME_CMD=(/usr/bin/time -f '%U %S' -o)

run() {  # name url [extra wrk args...]
  local name=$1 url=$2
  shift 2
  local cmd=(wrk -t2 -c10 "-d${DURATION}s" "$@" --latency "$url")
  if [ "$WARMUP" -gt 0 ]; then
    wrk -t2 -c10 "-d${WARMUP}s" "$@" "$url" >/dev/null
  fi
  echo
  echo "== $name"
  echo "\$ $(show_cmd "${cmd[@]}")"
  local tw0 tw1 st0 st1 m0 m1
  tw0=$(time_wait)
  st0=$(pid_ticks "$SERVER_PID")
  m0=$(cpu_stat)
  if [ ${#TIME_CMD[@]} -gt 0 ]; then
    "${TIME_CMD[@]}" "$WORK/$name.time" "${cmd[@]}" >"$WORK/$name.txt"
  else
    "${cmd[@]}" >"$WORK/$name.txt"
    echo "0 0" >"$WORK/$name.time"
  fi
  m1=$(cpu_stat)
  st1=$(pid_ticks "$SERVER_PID")
  tw1=$(time_wait)
  cat "$WORK/$name.txt"
  local rps p50 p99 non2xx errors closed requests secs cpu
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/$name.txt")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$WORK/$name.txt")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$WORK/$name.txt")")
  non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$WORK/$name.txt")
  errors=$(awk -F'[ ,]+' '/Socket errors:/ {print $4 + $6 + $8 + $10}' "$WORK/$name.txt")
  requests=$(awk '/ requests in / {print $1}' "$WORK/$name.txt")
  secs=$(awk '/ requests in / {v = $4; sub(/s,?$/, "", v); print v}' "$WORK/$name.txt")
  closed=$((tw1 - tw0 < 0 ? 0 : tw1 - tw0))
  # CPU accounting: server and wrk CPU per request, and where the machine's cores went.
  cpu=$(awk -v s0="$st0" -v s1="$st1" -v hz="$CLK_TCK" -v n="$requests" -v secs="$secs" \
    -v m0="$m0" -v m1="$m1" -v ncpu="$(nproc)" -v wt="$(cat "$WORK/$name.time" | tail -n1)" 'BEGIN {
      split(m0, a, " "); split(m1, b, " "); split(wt, w, " ")
      srv = (s1 - s0) / hz; wrk = w[1] + w[2]
      busy = (b[2] > a[2]) ? (b[1] - a[1]) / (b[2] - a[2]) * ncpu : 0
      printf "%.1f %.1f %.2f %.2f %.2f", srv / n * 1e6, wrk / n * 1e6, srv / secs, wrk / secs,
        busy - srv / secs - wrk / secs }')
  read -r srv_us wrk_us srv_cores wrk_cores other_cores <<<"$cpu"
  echo "connections closed during the run (new TIME-WAIT sockets): $closed"
  echo "CPU: kiln-server ${srv_us} us/request (${srv_cores} cores), wrk ${wrk_us} us/request" \
    "(${wrk_cores} cores), other processes ${other_cores} cores"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rps" "$p50" "$p99" \
    "${non2xx:-0}" "${errors:-0}" "$closed" "$(rss_kib)" "$srv_us" "$srv_cores" "$wrk_cores" \
    "$other_cores" >>"$SUMMARY"
}

run get-node "$BASE/v1/nodes/$UUID" "${KA[@]}" "${VER[@]}"
run get-node-varied "$BASE/v1/nodes/$UUID" "${KA[@]}" "${VER[@]}" -s "$HERE/node_uuids.lua"
run get-node-no-ka "$BASE/v1/nodes/$UUID" "${VER[@]}"
run node-detail "$BASE/v1/nodes/detail?limit=100" "${KA[@]}" "${VER[@]}"
run put-traits "$BASE/v1/nodes/$UUID/traits" "${KA[@]}" "${VER[@]}" -s "$HERE/put_traits.lua"

sleep 2
RSS_AFTER=$(rss_kib)
RSS_PEAK=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")

# --- summary -------------------------------------------------------------------------------
field() { awk -F'\t' -v n="$1" -v c="$2" '$1 == n {print $c}' "$SUMMARY"; }
verdict() { if awk "BEGIN {exit !($1)}"; then echo PASS; else echo MISS; fi; }

echo
echo "== summary ($(nproc) CPUs, wrk -t2 -c10 -d${DURATION}s, $NODES nodes)"
printf '%-16s %11s %8s %8s %7s %6s %6s %7s | %9s %6s %6s %6s\n' run requests/s p50_ms p99_ms \
  non-2xx errors closed RSS_MiB srv_us/req srv_c wrk_c other_c
while IFS=$'\t' read -r name rps p50 p99 non2xx errors closed rss srv_us srv_c wrk_c other_c; do
  printf '%-16s %11s %8s %8s %7s %6s %6s %7s | %9s %6s %6s %6s\n' "$name" "$rps" "$p50" "$p99" \
    "$non2xx" "$errors" "$closed" "$(mib "$rss")" "$srv_us" "$srv_c" "$wrk_c" "$other_c"
done <"$SUMMARY"
echo "(closed: connections closed during the run; srv_us/req: kiln-server CPU time per request;"
echo " srv_c / wrk_c / other_c: cores used by kiln-server / wrk / everything else during the run)"
echo
printf '%-40s %9s MiB\n' "RSS idle after start" "$(mib "$RSS_IDLE")"
printf '%-40s %9s MiB\n' "RSS idle after loading $NODES nodes" "$(mib "$RSS_LOADED")"
printf '%-40s %9s MiB\n' "RSS idle after the wrk runs" "$(mib "$RSS_AFTER")"
printf '%-40s %9s MiB\n' "peak RSS (VmHWM)" "$(mib "$RSS_PEAK")"

GET_RPS=$(field get-node 2)
GET_P99=$(field get-node 4)
NOKA_RPS=$(field get-node-no-ka 2)
DETAIL_RPS=$(field node-detail 2)
echo
echo "== targets"
printf '%-48s %-28s %s\n' "GET /v1/nodes/{uuid} >= $TARGET_GET_RPS req/s" "$GET_RPS req/s" \
  "$(verdict "$GET_RPS >= $TARGET_GET_RPS")"
printf '%-48s %-28s %s\n' "GET /v1/nodes/{uuid} p99 < $TARGET_GET_P99_MS ms" "$GET_P99 ms" \
  "$(verdict "$GET_P99 < $TARGET_GET_P99_MS")"
printf '%-48s %-28s %s\n' "GET /v1/nodes/detail?limit=100 >= $TARGET_DETAIL_RPS req/s" \
  "$DETAIL_RPS req/s" "$(verdict "$DETAIL_RPS >= $TARGET_DETAIL_RPS")"
printf '%-48s %-28s %s\n' "idle RSS after start < $TARGET_RSS_MIB MiB" "$(mib "$RSS_IDLE") MiB" \
  "$(verdict "$RSS_IDLE < $TARGET_RSS_MIB * 1024")"
printf '%-48s %-28s %s\n' "idle RSS with $NODES nodes < $TARGET_RSS_MIB MiB" \
  "$(mib "$RSS_LOADED") MiB" "$(verdict "$RSS_LOADED < $TARGET_RSS_MIB * 1024")"
printf '%-48s %-28s %s\n' "no Connection header: rate vs keep-alive" \
  "$NOKA_RPS vs $GET_RPS req/s" \
  "$(awk -v a="$NOKA_RPS" -v b="$GET_RPS" 'BEGIN {printf "%.0f%%", 100 * a / b}')"
