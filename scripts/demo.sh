#!/bin/sh
# The main job of the README: installs what is needed, builds, then provisions a virtual
# machine end to end and prints what happens: kiln-server on its embedded SQLite database
# drives a QEMU VM through a Redfish BMC emulator; the VM network-boots the agent ramdisk
# through iPXE, is cleaned, gets RAID-1 over two of its disks from a deploy template, has an
# image written and boots it from its disk. The end shows the time of each phase.
#   scripts/demo.sh            the virtual-node demo (about 2.5 minutes under TCG, once built)
#   scripts/demo.sh --server   only run kiln-server (127.0.0.1:6385, noauth, sample config)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ "${1:-}" = "--server" ]; then
  mkdir -p demo
  cd demo
  echo "kiln-server: try  baremetal --os-auth-type none --os-endpoint http://127.0.0.1:6385 driver list"
  exec ../build/server/kiln-server --config-file ../etc/kiln.conf.sample
fi
exec /usr/bin/python3 tests/e2e/e2e_provision_test.py --demo \
  --server build/server/kiln-server --agent build/agent/kiln-agent
