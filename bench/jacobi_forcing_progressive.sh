#!/usr/bin/env bash
# Progressive Jacobi Forcing rounds on stories260K (DESIGN.md §3): each round re-collects trajectories with
# the model of the previous round, packs them (linear schedule, NC mask) and trains on them. After every
# round it measures Jacobi and multiblock TPF on 100 held-out openings at block 16 and 32, and held-out
# perplexity on TinyStories text.
#   round 1: base model, trajectories at n=16, STEPS1 steps at lr 2e-3
#   round 2: round-1 model, trajectories at n=16, 1,000 steps at lr 1e-3
#   round 3: round-2 model, trajectories at n=32, 1,000 steps at lr 1e-3
#   round 4: round-3 model, trajectories at n=32, 2,000 steps at lr 1e-3
# Usage: bench/jacobi_forcing_progressive.sh [WORKDIR] [THREADS] [STEPS1] [AR_WEIGHT]
# Every step is skipped when its output exists, so an interrupted run resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-progressive}"
threads="${2:-2}"
steps1="${3:-2000}"
ar_weight="${4:-10}"  # weight of the AR term (jf train --ar-weight; 10 is its default)
base=../shared/models/stories260K/stories260K.gguf
text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
mkdir -p "$work"

round() {  # name from_model block steps lr
  local name=$1 from=$2 block=$3 steps=$4 lr=$5
  [ -s "$work/$name.gguf" ] && return
  "$jf" collect -m "$from" --prompts bench/prompts/stories_train1000.jsonl --block "$block" -n 128 -t "$threads" \
    -o "$work/traj_$name.jsonl"
  "$jf" pack --traj "$work/traj_$name.jsonl" --schedule linear --window "$block" --mask nc --max-len 1024 \
    -o "$work/packed_$name.jsonl"
  "$jf" train -m "$from" --objective jacobi-forcing --data "$work/packed_$name.jsonl" --steps "$steps" --accum 4 \
    --lr "$lr" --min-lr 1e-4 --ar-weight "$ar_weight" --log-every 250 --seed 1 -t "$threads" -o "$work/$name.gguf" 2>&1 | tee "$work/train_$name.log" | tail -1
}

evaluate() {  # name model
  [ -s "$work/ppl_$1.json" ] && return
  "$jf" bench -m "$2" --prompts bench/prompts/stories_holdout100.jsonl -n 128 -t 1 \
    --decoders ar,jacobi:block=16:draft-policy=fixed,jacobi:block=32:draft-policy=fixed,multiblock:block=16:draft-policy=fixed --json "$work/bench_$1.json" >/dev/null
  "$jf" perplexity -m "$2" -f "$text" --json >"$work/ppl_$1.json"
}

evaluate base "$base"
round round1 "$base" 16 "$steps1" 2e-3
evaluate round1 "$work/round1.gguf"
round round2 "$work/round1.gguf" 16 1000 1e-3
evaluate round2 "$work/round2.gguf"
round round3 "$work/round2.gguf" 32 1000 1e-3
evaluate round3 "$work/round3.gguf"
round round4 "$work/round3.gguf" 32 2000 1e-3
evaluate round4 "$work/round4.gguf"

python3 bench/jacobi_forcing_table.py "$work" jacobi:block=16:draft-policy=fixed,jacobi:block=32:draft-policy=fixed,multiblock:block=16:draft-policy=fixed \
  base round1 round2 round3 round4
