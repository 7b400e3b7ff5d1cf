#!/bin/sh
# Writes the packaged /etc/kiln/kiln.conf to stdout: etc/kiln.conf.sample with the settings of
# an installed kiln-server (the database under /var/lib/kiln, the agent images of the
# kiln-agent-ramdisk package). Fails when a line it replaces is no longer in the sample, so
# that the sample and the package cannot drift apart unnoticed.
#   kiln-conf.sh etc/kiln.conf.sample > kiln.conf
set -eu
sample=$1
replace() {  # replace LINE NEW: the one line that equals LINE becomes NEW
  if [ "$(grep -cxF -- "$1" "$text")" != 1 ]; then
    echo "kiln-conf.sh: '$1' is not exactly once in $sample" >&2
    exit 1
  fi
  awk -v old="$1" -v new="$2" '$0 == old { print new; next } { print }' "$text" > "$text.new"
  mv "$text.new" "$text"
}
text=$(mktemp)
trap 'rm -f "$text" "$text.new"' EXIT
cp "$sample" "$text"
replace "#   kiln-server --config-file /etc/kiln/kiln.conf" \
  "#   kiln-server --config-file /etc/kiln/kiln.conf
# Installed by the kiln-server package: the settings below that are not commented out differ
# from kiln-server's built-in defaults (docs/operations.md)."
# fake-hardware is for trying Kiln out (the sample's demo), not for a server's fleet.
replace "enabled_hardware_types = fake-hardware, ipmi, redfish, manual-management" \
  "enabled_hardware_types = ipmi, redfish, manual-management"
replace "connection = sqlite:///kiln.sqlite" "connection = sqlite:////var/lib/kiln/kiln.sqlite"
replace "#backup_interval = 0" "backup_interval = 86400"
replace "#deploy_kernel =" "deploy_kernel = /usr/share/kiln/agent/kiln-agent.kernel"
replace "#deploy_ramdisk =" "deploy_ramdisk = /usr/share/kiln/agent/kiln-agent.initramfs"
replace "#file_url_allowed_paths = /var/lib/kiln/images" \
  "file_url_allowed_paths = /var/lib/kiln/images, /usr/share/kiln/agent"
cat "$text"
