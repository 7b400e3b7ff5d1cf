#!/bin/sh
# The test command of the README: installs what is needed, builds, runs every ctest test.
#   scripts/test.sh            all tests
#   scripts/test.sh -L compat  only one label (extra arguments go to ctest)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
