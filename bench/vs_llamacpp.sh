#!/usr/bin/env bash
# jf beside llama.cpp on the same GGUF file and machine, rounds alternating between the two engines so that
# a neighbour's load hits both: greedy decoding tokens/s (plain ar, 128 tokens, 2 threads) and the time of one
# forward of M = 1, 4, 8, 16 tokens after a 64-token context. llama.cpp is node-llama-cpp's prebuilt CPU build
# (scripts/install-llamacpp.sh; it picks the best variant for this CPU). Its decoding runs through node's
# bindings, which add a few ms per token; its forwards compute no logits, jf's compute them for every row.
#   bench/vs_llamacpp.sh [BUILD_DIR] [MODEL] [ROUNDS]   (defaults: build, /tmp/l1b-q4km.gguf made when missing, 3)
set -euo pipefail
build=${1:-build}
model=${2:-/tmp/l1b-q4km.gguf}
rounds=${3:-3}
bin=$build/bin
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"
require_tools vs_llamacpp jf forward_cost
ensure_l1b_q4km vs_llamacpp
eval "$("$here/../scripts/install-llamacpp.sh")"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "model: $model"
echo
echo "| round | engine | decode tokens/s | M=1 ms | M=4 ms | M=8 ms | M=16 ms |"
echo "|---|---|---|---|---|---|---|"
ratios=()
ceiling_ratios=()
for r in $(seq 1 "$rounds"); do
  jf_tps=$("$bin/jf" generate -m "$model" -p "Once upon a time" -n 128 --ignore-eos -t 2 --decoder ar --json 2>/dev/null |
           sed -n 's/.*"tps":\([0-9.eE+-]*\).*/\1/p')
  jf_ms=$("$bin/forward_cost" -m "$model" -t 2 --ms 1,4,8,16 --reps 5 --context 64 |
          awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { printf "%.1f ", $3 }')
  ll=$("$JF_LLAMACPP_NODE" "$here/llamacpp_speed.mjs" "$JF_LLAMACPP_MODULES" "$model" 2 128 1,4,8,16 5)
  ll_tps=$(sed -n 's/.*"decode_tps":\([0-9.eE+-]*\).*/\1/p' <<<"$ll")
  ll_ms=$(sed 's/.*"forward_ms":{//; s/}.*//' <<<"$ll" | tr ',' '\n' | awk -F: '{ printf "%.1f ", $2 }')
  printf "| %d | jf | %.1f | %s |\n" "$r" "$jf_tps" "$(sed 's/ $//; s/ / | /g' <<<"$jf_ms")"
  printf "| %d | llama.cpp | %.1f | %s |\n" "$r" "$ll_tps" "$(sed 's/ $//; s/ / | /g' <<<"$ll_ms")"
  ratios+=("$(awk -v a="$jf_tps" -v b="$ll_tps" 'BEGIN { printf "%.2f", a / b }')")
  # llama.cpp's decoding with no bindings overhead could reach at most 1000 / its M = 1 forward (no logits).
  ceiling=$(awk -v ms="${ll_ms%% *}" 'BEGIN { print 1000 / ms }')
  ceiling_ratios+=("$(awk -v a="$jf_tps" -v b="$ceiling" 'BEGIN { printf "%.2f", a / b }')")
done
echo
echo "decoding, jf / llama.cpp per round: ${ratios[*]} (issue 14's target: >= 1.5)"
echo "decoding, jf / (1000 / llama.cpp's M = 1 forward ms), its ceiling without the bindings: ${ceiling_ratios[*]}"
