#!/usr/bin/env bash
# The text-to-image corpus: Google's Noto emoji (npm's emoji-datasource-google, Apache-2.0; 1,911 emoji with
# their names) fetched once into ~/.cache/jf, then `jf image-data`: 16x16 images, a 256-colour palette,
# captions as text; every 20th emoji held out.
# Usage: scripts/image_data.sh [OUTDIR]   (default /tmp/jf-emoji16; ~80 MB download the first time, then ~5 s)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/jf-emoji16}"
version=16.0.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/jf"
pkg="$cache/emoji-datasource-google-$version"
if [ ! -f "$pkg/emoji.json" ]; then
  command -v npm > /dev/null || { echo "image_data.sh: needs npm (Debian: apt-get install npm)" >&2; exit 1; }
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/emoji.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "emoji-datasource-google@$version" > /dev/null)
  tar xzf "$tmp/emoji-datasource-google-$version.tgz" -C "$tmp" --exclude='package/img/google/sheets*'
  rm -rf "$pkg" && mv "$tmp/package" "$pkg"
fi
[ -x build/bin/jf ] || scripts/build.sh
build/bin/jf image-data --emoji "$pkg" -o "$out"
