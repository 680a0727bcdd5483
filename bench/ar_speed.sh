#!/usr/bin/env bash
# AR decoding speed on stories260K: 256 tokens, 1 and 2 threads, median of REPS runs each, all in one
# invocation (this machine is shared and noisy: compare numbers from the same run only).
# Usage: bench/ar_speed.sh [JF_BINARY] [MODEL] [REPS]
set -euo pipefail
jf="${1:-build/bin/jf}"
model="${2:-../shared/models/stories260K/stories260K.gguf}"
reps="${3:-9}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "| threads | kernels | median tok/s | min | max |"
echo "|---|---|---|---|---|"
for isa in avx512 avx2 scalar; do
  for t in 1 2; do
    vals=()
    for _ in $(seq "$reps"); do
      # Parse after the run: a JSON reader started in the same pipeline would compete for the CPU.
      JF_ISA=$isa "$jf" generate -m "$model" -n 256 --ignore-eos -t "$t" --json >"$tmp" 2>/dev/null
      used=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"])' "$tmp")
      [ "$used" = "$isa" ] || continue  # this CPU lacks the instruction set
      vals+=("$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["tps"]))' "$tmp")")
    done
    [ ${#vals[@]} -gt 0 ] || { echo "| $t | $isa | (not supported by this CPU) | | |"; continue; }
    sorted=$(printf '%s\n' "${vals[@]}" | sort -n)
    med=$(echo "$sorted" | sed -n "$(( (reps + 1) / 2 ))p")
    echo "| $t | $isa | $med | $(echo "$sorted" | head -1) | $(echo "$sorted" | tail -1) |"
  done
done
