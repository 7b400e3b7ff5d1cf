#!/bin/sh
# Builds Kiln's Debian packages from this checkout with Debian's own tools (debhelper through
# dpkg-buildpackage), into OUTDIR:
#   kiln-server_<version>_amd64.deb        the server, the web console, /etc/kiln/kiln.conf,
#                                          the systemd unit
#   kiln-agent-ramdisk_<version>_all.deb   the agent kernel and initramfs (/usr/share/kiln/agent)
# and the .changes and .buildinfo files that describe them (lintian OUTDIR/*.changes).
#
#   scripts/package.sh [--build-dir DIR] [--ramdisk-dir DIR] OUTDIR
#
#   --build-dir DIR    package what the CMake build tree DIR holds (configured and built, as
#                      scripts/build.sh leaves ./build) instead of building in the package's
#                      own tree with Debian's build flags
#   --ramdisk-dir DIR  take the agent ramdisk from DIR (image-build/build-ramdisk.sh's OUTDIR)
#                      instead of building it
#
# The version comes from `git describe`: a tag vX.Y.Z gives X.Y.Z, and X.Y.Z+N.gHASH N commits
# after it; without a tag, <project version>~gitN.gHASH (N = commits in HEAD's history), which
# sorts before the release X.Y.Z. Uncommitted changes add "+dirty". The files packaged are the
# working tree's (tracked and new files, not ignored ones). Two runs on the same checkout (and
# the same build tree) give the same bytes: file times come from SOURCE_DATE_EPOCH, the date of
# HEAD's commit. Packaging files: scripts/debian/ (copied to debian/ in a copy of the tree).
set -eu

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

build_dir=""
ramdisk_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || usage; build_dir=$(realpath "$2"); shift 2 ;;
    --ramdisk-dir) [ $# -ge 2 ] || usage; ramdisk_dir=$(realpath "$2"); shift 2 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage
mkdir -p "$1"
outdir=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)

if [ -n "$build_dir" ] && [ ! -f "$build_dir/CMakeCache.txt" ]; then
  echo "package.sh: $build_dir is not a configured CMake build tree" >&2
  exit 1
fi
if [ -n "$ramdisk_dir" ]; then
  for f in kiln-agent.kernel kiln-agent.initramfs kiln-agent.manifest; do
    [ -f "$ramdisk_dir/$f" ] || { echo "package.sh: $ramdisk_dir/$f is missing" >&2; exit 1; }
  done
fi

# --- Version ------------------------------------------------------------------------------
project_version=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
if described=$(git -C "$repo" describe --tags --match 'v[0-9]*' --abbrev=12 2>/dev/null); then
  version=$(echo "${described#v}" | sed 's/-\([0-9]*\)-g\([0-9a-f]*\)$/+\1.g\2/')
else
  count=$(git -C "$repo" rev-list --count HEAD)
  version="$project_version~git$count.g$(git -C "$repo" describe --always --abbrev=12)"
fi
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  version="$version+dirty"
fi
date=$(git -C "$repo" log -1 --format=%cD HEAD)

# --- A copy of the tree with debian/ ------------------------------------------------------
work="$outdir/.kiln-package"
src="$work/kiln-$version"
rm -rf "$work"
mkdir -p "$src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 sh -c 'for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh |
  cpio -0 -pdm --quiet "$src")
cp -a "$repo/scripts/debian" "$src/debian"
# Every file of the copy dated at HEAD's commit: the packages do not depend on when the
# checkout's files were written (dpkg-deb only clamps times newer than SOURCE_DATE_EPOCH).
find "$src" -exec touch -h -d "@$(git -C "$repo" log -1 --format=%ct HEAD)" {} +
{
  echo "kiln ($version) bookworm; urgency=medium"
  echo
  echo "  * Built from $(git -C "$repo" describe --always --dirty --abbrev=12) by scripts/package.sh."
  echo
  echo " -- Kiln developers <kiln-dev@lists.example.org>  $date"
} > "$src/debian/changelog"

# --- Build --------------------------------------------------------------------------------
echo "package.sh: building kiln $version in $src" >&2
(
  cd "$src"
  export KILN_PREBUILT_DIR="$build_dir" KILN_PREBUILT_RAMDISK="$ramdisk_dir"
  dpkg-buildpackage -b -us -uc --no-sign >&2
)
for f in "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo; do
  mv -f "$f" "$outdir/"
done
rm -rf "$work"
ls "$outdir"/*_"$version"_*.deb
