#!/bin/sh
# The main job of the README: installs what is needed, builds, and runs kiln-server on its
# embedded SQLite database with the sample configuration (127.0.0.1:6385, noauth).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p demo
cd demo
echo "kiln-server: try  baremetal --os-auth-type none --os-endpoint http://127.0.0.1:6385 driver list"
exec ../build/server/kiln-server --config-file ../etc/kiln.conf.sample
