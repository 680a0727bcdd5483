#!/usr/bin/env bash
# Jacobi Forcing on stories260K, end to end: collect trajectories for 1,000 story openings with the base
# model, pack them (linear schedule + NC mask, and the ablations: CLLM, NC-IC mask, random and reverse
# schedules), train each variant the same way, and measure on 100 held-out openings: Jacobi and multiblock
# TPF at block 16, perplexity on TinyStories text, and how many greedy tokens still equal the base model's.
# Usage: bench/jacobi_forcing_stories.sh [WORKDIR] [STEPS] [LR]
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-stories}"
steps="${2:-750}"
lr="${3:-1e-3}"
base=../shared/models/stories260K/stories260K.gguf
text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
mkdir -p "$work"

[ -s "$work/traj.jsonl" ] || "$jf" collect -m "$base" --prompts bench/prompts/stories_train1000.jsonl --block 16 -n 128 \
  -t 1 -o "$work/traj.jsonl"
variants="jf:linear:nc:jacobi-forcing cllm:random:clean-context:cllm ncic:linear:nc-ic:jacobi-forcing random:random:nc:jacobi-forcing reverse:reverse:nc:jacobi-forcing"
for v in $variants; do
  IFS=: read -r name schedule mask objective <<<"$v"
  "$jf" pack --traj "$work/traj.jsonl" --schedule "$schedule" --window 16 --mask "$mask" --max-len 1024 -o "$work/packed_$name.jsonl"
  "$jf" train -m "$base" --objective "$objective" --data "$work/packed_$name.jsonl" --steps "$steps" --accum 4 --lr "$lr" \
    --min-lr 1e-4 --log-every 250 --seed 1 -o "$work/model_$name.gguf" 2>&1 | tee "$work/train_$name.log" | tail -1
done

evaluate() {  # name model
  "$jf" bench -m "$2" --prompts bench/prompts/stories_holdout100.jsonl -n 128 -t 1 \
    --decoders ar,jacobi:block=16:draft-policy=fixed,multiblock:block=16:draft-policy=fixed --json "$work/bench_$1.json" >/dev/null
  "$jf" perplexity -m "$2" -f "$text" --json >"$work/ppl_$1.json"
}
evaluate base "$base"
for v in $variants; do evaluate "${v%%:*}" "$work/model_${v%%:*}.gguf"; done

python3 bench/jacobi_forcing_table.py "$work" jacobi:block=16:draft-policy=fixed,multiblock:block=16:draft-policy=fixed "base=base model" \
  "jf=jacobi-forcing, linear, NC" "cllm=cllm (random, clean-context)" "ncic=jacobi-forcing, linear, NC-IC" \
  "random=jacobi-forcing, random, NC" "reverse=jacobi-forcing, reverse, NC"
