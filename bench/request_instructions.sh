#!/usr/bin/env bash
# Instructions per request of kiln-server, counted by valgrind's callgrind (docs/benchmarks.md,
# "Instructions per request"). Unlike requests per second these counts do not depend on what
# else the machine is doing, so two builds can be compared on a busy machine.
#
# Seeds BENCH_NODES (10,000) fake-hardware nodes with a normal kiln-server, then, for each
# measured request, starts kiln-server under callgrind on a copy of that database (one HTTP
# thread), sends the request N times over one keep-alive connection and reports the
# instructions spent inside Pistache's Transport::handleIncoming (parsing, the handler, SQLite,
# rendering and the write to the socket) divided by N. Start-up and the periodic tasks are
# not counted.
#
#   bench/request_instructions.sh [SERVER_BINARY]
#   BENCH_CONSOLE=1 bench/request_instructions.sh   also the web console's fleet page requests
#
# Benchmarks are not tests: this is deliberately not registered with ctest.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SERVER=${1:-${KILN_SERVER:-$ROOT/build/server/kiln-server}}
NODES=${BENCH_NODES:-10000}
PYTHON=${PYTHON:-/usr/bin/python3}

die() { echo "request_instructions.sh: $*" >&2; exit 1; }
[ -x "$SERVER" ] || die "$SERVER not found: build first"
command -v valgrind >/dev/null || die "valgrind is not installed"
command -v callgrind_annotate >/dev/null || die "callgrind_annotate is not installed"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-instr-bench.XXXXXX")
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

config() {  # dir -> kiln.conf in dir using dir/kiln.sqlite
  cat >"$1/kiln.conf" <<EOF
[DEFAULT]
enabled_hardware_types = fake-hardware
[api]
host_ip = 127.0.0.1
port = 0
api_workers = 1
[database]
connection = sqlite:///$1/kiln.sqlite
EOF
}

wait_port() {  # file pid
  for _ in $(seq 600); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || die "kiln-server exited"
    sleep 0.1
  done
  die "kiln-server did not write its port file"
}

# --- seed once ----------------------------------------------------------------------------
mkdir "$WORK/seed"
config "$WORK/seed"
"$SERVER" --config-file "$WORK/seed/kiln.conf" --port-file "$WORK/seed/port" >"$WORK/seed/log" 2>&1 &
PID=$!
wait_port "$WORK/seed/port" "$PID"
"$PYTHON" "$HERE/seed_nodes.py" --port "$(cat "$WORK/seed/port")" --count "$NODES" --out "$WORK/uuids.txt" >/dev/null
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
UUID=$(head -n1 "$WORK/uuids.txt")

# --- one callgrind run per request ----------------------------------------------------------
REQUESTS="$WORK/requests.py"
cat >"$REQUESTS" <<'EOF'
import http.client, sys
port, path, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
version = sys.argv[4] if len(sys.argv) > 4 else "1.78"
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(count):
    c.request("GET", path, headers={"X-OpenStack-Ironic-API-Version": version,
                                    "Connection": "keep-alive"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{path}: HTTP {r.status}")
EOF

measure() {  # label path count [version]
  local dir
  dir=$(mktemp -d "$WORK/run.XXXXXX")
  cp "$WORK/seed/kiln.sqlite"* "$dir/"
  config "$dir"
  valgrind --tool=callgrind --collect-atstart=no \
    '--toggle-collect=Pistache::Tcp::Transport::handleIncoming*' \
    --callgrind-out-file="$dir/callgrind.out" \
    "$SERVER" --config-file "$dir/kiln.conf" --port-file "$dir/port" >"$dir/log" 2>&1 &
  PID=$!
  wait_port "$dir/port" "$PID"
  "$PYTHON" "$REQUESTS" "$(cat "$dir/port")" "$2" "$3" "${4:-1.78}"
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  local total
  total=$(callgrind_annotate "$dir/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}')
  printf '%-34s %12d instructions/request (%d requests)\n' "$1" "$((total / $3))" "$3"
}

echo "kiln-server: ${SERVER#"$ROOT/"} ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)), $NODES nodes"
measure "GET /v1/nodes/{uuid}" "/v1/nodes/$UUID" 1000
measure "GET /v1/nodes/detail?limit=100" "/v1/nodes/detail?limit=100" 50
if [ -n "${BENCH_CONSOLE:-}" ]; then
  # What the web console's fleet page asks every 5 s (console/src/pages/fleet.tsx).
  fields=uuid,name,provision_state,target_provision_state,power_state,maintenance,maintenance_reason,fault,resource_class,traits,conductor,owner,clean_step,deploy_step,service_step,driver_internal_info
  measure "GET /v1/fleet" "/v1/fleet" 20 1.115
  measure "GET /v1/nodes?fields=(fleet page)" "/v1/nodes?fields=$fields&limit=50&sort_key=name" 50 1.115
fi
