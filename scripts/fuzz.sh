#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ASan/UBSan) in build-fuzz/ and fuzzes the GGUF parser, or the
# grammar parser and the JSON Schema converter.
# Usage: scripts/fuzz.sh [SECONDS] [gguf|grammar]   (default 600 gguf). Crashes are written to build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
target="${2:-gguf}"
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJF_FUZZ=ON -DJF_NATIVE=OFF \
  -DJF_BUILD_TESTS=OFF -DJF_BUILD_BENCH=OFF -DJF_SANITIZE=ON >/dev/null
cmake --build build-fuzz --target "fuzz_$target" -j "${JF_JOBS:-2}"
corpus=build-fuzz/corpus-$target
mkdir -p "$corpus" build-fuzz/crashes
if [ "$target" = grammar ]; then
  # Seeds: the GBNF and JSON schemas in the tests.
  grep -ho 'R"(.*' tests/test_grammar.cpp tests/test_json_schema.cpp | head -200 | nl -ba | while read -r n line; do
    printf '%s' "${line#R\"(}" > "$corpus/seed-$n"
  done
  exec build-fuzz/bin/fuzz_grammar "$corpus" -max_total_time="$secs" -max_len=4096 -artifact_prefix=build-fuzz/crashes/ \
    -print_final_stats=1 -timeout=10 -rss_limit_mb=4096
fi
# Seeds: every GGUF in ../shared (truncated to 64 KiB so mutations reach the metadata) and the unit
# tests' writer output.
for f in ../shared/models/*/*.gguf; do [ -e "$f" ] && head -c 65536 "$f" > "$corpus/$(basename "$f").seed"; done
build-fuzz/bin/fuzz_gguf "$corpus" -max_total_time="$secs" -max_len=131072 -artifact_prefix=build-fuzz/crashes/ \
  -print_final_stats=1 -timeout=10 -rss_limit_mb=4096
