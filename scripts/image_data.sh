#!/usr/bin/env bash
# The text-to-image corpus: Google's Noto emoji (npm's emoji-datasource-google, Apache-2.0) and Twitter's Twemoji
# (npm's emoji-datasource-twitter, CC-BY 4.0), 1,911 emoji each with their names, fetched once into ~/.cache/jf;
# then `jf image-data`: 16x16 images, a 256-colour palette, captions as text; every 20th emoji held out (Noto's
# picture of it).
# Usage: scripts/image_data.sh [OUTDIR] [--twitter] [jf image-data options, e.g. --vocab-from VOCAB.gguf]
#   default OUTDIR /tmp/jf-emoji16; Noto only unless --twitter (both styles: two pictures a training caption).
#   ~80 MB (+60 MB with --twitter) downloaded the first time, then ~5 s.
set -euo pipefail
cd "$(dirname "$0")/.."
out=/tmp/jf-emoji16
sets=(google)
extra=()
if [ $# -gt 0 ] && [[ "$1" != -* ]]; then out="$1"; shift; fi
while [ $# -gt 0 ]; do
  case "$1" in
    --twitter) sets+=(twitter) ;;
    *) extra+=("$1") ;;
  esac
  shift
done
version=16.0.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/jf"
emoji=()
for set in "${sets[@]}"; do
  pkg="$cache/emoji-datasource-$set-$version"
  [ -f "$pkg/emoji.json" ] ||
    scripts/npm_unpack.sh "emoji-datasource-$set@$version" "$pkg" package --exclude="package/img/$set/sheets*"
  emoji+=(--emoji "$pkg")
done
[ -x build/bin/jf ] || scripts/build.sh
build/bin/jf image-data "${emoji[@]}" -o "$out" "${extra[@]}"
