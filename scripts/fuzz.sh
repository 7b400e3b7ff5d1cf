#!/bin/sh
# Kiln's fuzzing (docs/fuzzing.md): libFuzzer targets built with clang-16, AddressSanitizer and
# UBSan in their own build tree.
#   scripts/fuzz.sh TARGET [SECONDS]     the long run (default 3600 s; 0 = until interrupted) on
#                                        every core; keeps its corpus, prints the crashes found
#   scripts/fuzz.sh list                 the targets
#   scripts/fuzz.sh build                configure (once) and build the fuzzing tree
#   scripts/fuzz.sh check TARGET SECS    a short run from the checked-in corpus (ctest runs it)
#   scripts/fuzz.sh replay TARGET        runs every regression and seed input once (ctest too)
#   scripts/fuzz.sh merge TARGET         adds the run's corpus inputs that reach new code to
#                                        tests/fuzz/corpus/TARGET (review before committing)
#   scripts/fuzz.sh coverage TARGET      the line coverage of the run's corpus (llvm-cov report)
# Environment: KILN_FUZZ_BUILD_DIR (default build/fuzz), KILN_FUZZ_JOBS (default: cores),
# KILN_FUZZ_SEED (check: default 1), KILN_FUZZ_CXX (default clang++-16).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${KILN_FUZZ_BUILD_DIR:-$src/build/fuzz}
targets="json_body json_patch ini_config agent_tool_output agent_answers http_request url small_parsers node_event_params agent_log dnsmasq_config web_console"

# Temporary files of the targets (the fake agent's disk, the pxe tftp root) on tmpfs if we can.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

known() {
  for t in $targets; do [ "$t" = "$1" ] && return 0; done
  echo "fuzz.sh: unknown target '$1' (one of: $targets)" >&2
  exit 2
}

build() {
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER="${KILN_FUZZ_CXX:-clang++-16}" \
      -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF -DKILN_AGENT_STATIC=OFF
  fi
  cmake --build "$dir" --target kiln_fuzzers
}

binary() { echo "$dir/tests/fuzz/fuzz_$1"; }

# Options every run shares: a dictionary when the target has one, bounded time and memory per
# input.
common_options() {
  set -- "-timeout=30" "-rss_limit_mb=4096" "-print_final_stats=1"
  if [ -f "$src/tests/fuzz/dict/$target.dict" ]; then
    set -- "$@" "-dict=$src/tests/fuzz/dict/$target.dict"
  fi
  echo "$@"
}

report_crashes() {
  found=$(find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' -o -name 'slow-unit-*' \) 2>/dev/null | sort)
  [ -n "$found" ] || return 0
  echo
  echo "fuzz.sh: $target found inputs that fail. Reproduce one with"
  echo "  $(binary "$target") FILE"
  echo "fix the code, then keep the input as a regression test (docs/fuzzing.md):"
  echo "  cp FILE $src/tests/fuzz/regressions/$target/<what-it-was>"
  echo "$found" | sed 's/^/  /'
  return 1
}

[ $# -ge 1 ] || usage
command=$1
shift
case "$command" in
  list)
    for t in $targets; do echo "$t"; done
    ;;
  build)
    build
    ;;
  check)
    [ $# -eq 2 ] || usage
    target=$1
    known "$target"
    bin=$(binary "$target")
    work="$dir/check/$target"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    status=0
    # shellcheck disable=SC2046
    "$bin" $(common_options) -seed="${KILN_FUZZ_SEED:-1}" -max_total_time="$2" \
      -artifact_prefix="$work/artifacts/" "$work/corpus" "$src/tests/fuzz/corpus/$target" \
      2>"$work/log" || status=$?
    grep -E '^(INFO: Seed|#[0-9]+ *DONE|stat::|Done [0-9]+ runs)' "$work/log" || true
    if [ "$status" -ne 0 ] || ! report_crashes "$work/artifacts"; then
      tail -n 80 "$work/log"
      report_crashes "$work/artifacts" || true
      exit 1
    fi
    ;;
  replay)
    [ $# -eq 1 ] || usage
    target=$1
    known "$target"
    files=$(find "$src/tests/fuzz/regressions/$target" "$src/tests/fuzz/corpus/$target" \
      -type f 2>/dev/null | sort)
    if [ -z "$files" ]; then
      echo "fuzz.sh: no inputs for $target"
      exit 0
    fi
    echo "$files" | wc -l | sed "s/\$/ inputs of $target/"
    # shellcheck disable=SC2086
    echo "$files" | xargs "$(binary "$target")" -timeout=30 -rss_limit_mb=4096 >"$dir/replay-$target.log" 2>&1 || {
      tail -n 80 "$dir/replay-$target.log"
      exit 1
    }
    ;;
  merge)
    [ $# -eq 1 ] || usage
    target=$1
    known "$target"
    mkdir -p "$src/tests/fuzz/corpus/$target"
    "$(binary "$target")" -merge=1 -max_len=65536 "$src/tests/fuzz/corpus/$target" "$dir/corpus/$target"
    ;;
  coverage)
    [ $# -eq 1 ] || usage
    target=$1
    known "$target"
    if ! command -v llvm-profdata-16 >/dev/null || ! command -v llvm-cov-16 >/dev/null; then
      echo "fuzz.sh: coverage needs llvm-profdata-16 and llvm-cov-16 (apt-get install llvm-16)" >&2
      exit 2
    fi
    covdir="$dir/coverage/$target"
    rm -rf "$covdir"
    mkdir -p "$covdir"
    cov="$dir/coverage-build"
    if [ ! -f "$cov/build.ninja" ]; then
      cmake -S "$src" -B "$cov" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER="${KILN_FUZZ_CXX:-clang++-16}" \
        -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF -DKILN_AGENT_STATIC=OFF \
        -DCMAKE_CXX_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
        -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate"
    fi
    cmake --build "$cov" --target "fuzz_$target"
    find "$dir/corpus/$target" "$src/tests/fuzz/corpus/$target" "$src/tests/fuzz/regressions/$target" \
      -type f 2>/dev/null >"$covdir/inputs" || true
    LLVM_PROFILE_FILE="$covdir/%p.profraw" xargs "$cov/tests/fuzz/fuzz_$target" -runs=0 \
      <"$covdir/inputs" >"$covdir/log" 2>&1 || true
    llvm-profdata-16 merge -sparse "$covdir"/*.profraw -o "$covdir/merged.profdata"
    llvm-cov-16 report "$cov/tests/fuzz/fuzz_$target" -instr-profile="$covdir/merged.profdata" \
      -ignore-filename-regex='/usr/|tests/' | tail -n 40
    ;;
  -h|--help|help)
    usage
    ;;
  *)
    target=$command
    known "$target"
    seconds=${1:-3600}
    build
    jobs=${KILN_FUZZ_JOBS:-$(nproc)}
    corpus="$dir/corpus/$target"
    crashes="$dir/crashes/$target"
    mkdir -p "$corpus" "$crashes"
    echo "fuzz.sh: $target for ${seconds}s in $jobs processes; corpus $corpus, crashes $crashes"
    status=0
    # -fork keeps fuzzing after a crash (each one is saved under $crashes).
    # shellcheck disable=SC2046
    "$(binary "$target")" $(common_options) -max_total_time="$seconds" -fork="$jobs" \
      -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -artifact_prefix="$crashes/" \
      "$corpus" "$src/tests/fuzz/corpus/$target" || status=$?
    report_crashes "$crashes" || exit 1
    exit "$status"
    ;;
esac
