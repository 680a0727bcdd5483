#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ASan/UBSan) in build-fuzz/ and fuzzes the GGUF parser.
# Usage: scripts/fuzz.sh [SECONDS]   (default 600). Crashes are written to build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJF_FUZZ=ON -DJF_NATIVE=OFF \
  -DJF_BUILD_TESTS=OFF -DJF_BUILD_BENCH=OFF -DJF_SANITIZE=ON >/dev/null
cmake --build build-fuzz --target fuzz_gguf -j "${JF_JOBS:-2}"
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/crashes
# Seeds: every GGUF in ../shared (truncated to 64 KiB so mutations reach the metadata) and the unit
# tests' writer output.
for f in ../shared/models/*/*.gguf; do [ -e "$f" ] && head -c 65536 "$f" > "$corpus/$(basename "$f").seed"; done
build-fuzz/bin/fuzz_gguf "$corpus" -max_total_time="$secs" -max_len=131072 -artifact_prefix=build-fuzz/crashes/ \
  -print_final_stats=1 -timeout=10 -rss_limit_mb=4096
