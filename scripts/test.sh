#!/bin/sh
# The test command of the README: installs what is needed, builds, runs every ctest test.
#   scripts/test.sh            all tests
#   scripts/test.sh -L compat  only one label (extra arguments go to ctest)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
# A broken invariant (KILN_BUG, shared/core/bug.h) aborts every Kiln process the tests start.
export KILN_FATAL_BUGS=1
ctest --output-on-failure -j "$(nproc)" "$@"
