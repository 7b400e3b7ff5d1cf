#!/bin/sh
# Makes the README's pictures of the web console, docs/images/console-fleet.png and
# docs/images/console-node.png (1280x800), from the browser tests' fixture (tests/ui/ui_fixture.py:
# a kiln-server with fake-hardware nodes; as root, kiln-agent deploying agent-node on a loop
# device, caught mid-write). Needs a build with the console (BUILD, default build) and chromium.
#   scripts/console-screenshots.sh
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
agent=""
[ "$(id -u)" = 0 ] || agent="--no-agent"
exec python3 tests/ui/ui_fixture.py --server "$BUILD/server/kiln-server" --agent "$BUILD/agent/kiln-agent" \
  --console-dir "$BUILD/console/dist" --script tests/ui/readme_screenshots.mjs \
  --artifacts "$BUILD/tests/ui/artifacts/readme-screenshots" $agent
