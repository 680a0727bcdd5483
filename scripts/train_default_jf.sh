#!/usr/bin/env bash
# Jacobi Forcing fine-tune of jf's default code model with the recipe that keeps the model
# (docs/TRAINING.md "The recipe"):
#   prompts: 7,200 function openings (8 lines of context) from the training corpus (scripts/code_prompts.py)
#   -> trajectories of the AR model at n = 16, 128 tokens -> pack (linear schedule fitted to each response,
#      NC, noisy context blocks above 50% noise seen clean; looping responses kept: the AR model's greedy code
#      repeats itself in most of them, median repeated-4-gram share 0.74)
#   -> KL text: 12,000 of the AR model's own samples at temperature 1 (256 tokens each, ~2.8M tokens)
#   -> one epoch: 4 packed sequences + 1 sequence of 512 sampled tokens per step, the AR model as frozen
#      teacher (its distribution is the target on the clean stream, on the noisy rows and on the sampled
#      text, weight 4), consistency on the first 2 rows after each block's first mismatch, AR weight 1,
#      per-block consistency, lr LR cosine to LR/10
#   -> ROUNDS progressive rounds: each collects its trajectories with the previous round's model and trains
#      from it (the teacher stays the AR model) -> Q8_0 export WORKDIR/OUT_NAME-q8_0.gguf
#      (models/pycode-jf-q8_0.gguf is a copy).
# Usage: scripts/train_default_jf.sh [WORKDIR] [LR] [ROUNDS] [OUT_NAME]   (~1 h a round with 1 thread)
# Interrupted, it goes on where it stopped when run again: finished files are kept, trajectories are
# collected from the first missing prompt, a round's training resumes from its last checkpoint (every 100
# steps).
# MATMUL=bf16 runs the rounds with bfloat16 products (jf train --matmul; 1.5-2x faster where the CPU has
# AVX512-BF16; the shipped model was trained with the default, f32).
# DATA_TYPE=q8_0 writes the samples and the trajectories with a copy of the model in that type (2-2.5x faster
# for a large base; the teacher and the training stay f32; the shipped model's data came from f32).
# PROMPTS=N sets the number of openings (default 7200, as the shipped model; 2400 takes a third of the time
# and gains less per forward at the same quality, docs/TRAINING.md "What each option does").
# The AR model is WORKDIR/pycode-ar.gguf (scripts/train_default_model.sh), else models/pycode-ar-q8_0.gguf.
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-default}"
lr="${2:-3e-4}"
rounds="${3:-2}"
name="${4:-pycode-jf}"
mkdir -p "$work/samples"
base="$work/pycode-ar.gguf"
[ -s "$base" ] || base=models/pycode-ar-q8_0.gguf
source scripts/pycode_corpus.sh
source scripts/jf_recipe.sh

# The model that writes data for training from $1: $1 itself, or its DATA_TYPE copy.
data_model() {
  if [ -z "${DATA_TYPE:-}" ]; then
    echo "$1"
    return
  fi
  local copy
  copy="$work/$(basename "$1" .gguf)-$DATA_TYPE.gguf"
  [ -s "$copy" ] || "$jf" convert -m "$1" --type "$DATA_TYPE" -o "$copy" >&2
  echo "$copy"
}

[ -s "$work/train_prompts.jsonl" ] ||
  python3 scripts/code_prompts.py --count "${PROMPTS:-7200}" --context 8 -o "$work/train_prompts.jsonl" "${pycode_corpus[@]}"
[ -s "$work/samples/samples.txt" ] || "$jf" sample -m "$(data_model "$base")" --prompts "$work/train_prompts.jsonl" --count 12000 -n 256 \
  --temp 1 --seed 1 -o "$work/samples/samples.txt"

# Round r trains from round r-1's model (round 0: the AR model) on trajectories that model collects.
from="$base"
for r in $(seq 1 "$rounds"); do
  out="$work/$name-round$r.gguf"
  if [ ! -s "$out" ]; then
    "$jf" collect -m "$(data_model "$from")" --prompts "$work/train_prompts.jsonl" --block 16 -n 128 -o "$work/traj-round$r.jsonl" 2>&1 | tail -1
    [ -s "$work/packed-round$r.jsonl" ] ||
      "$jf" pack --traj "$work/traj-round$r.jsonl" "${jf_recipe_pack_flags[@]}" -o "$work/packed-round$r.jsonl"
    steps=$(($(wc -l <"$work/packed-round$r.jsonl") / 4))
    resume=()  # an interrupted round goes on from its last checkpoint
    [ -s "$out.ckpt.gguf" ] && resume=(--resume "$out.ckpt.gguf")
    "$jf" train -m "$from" "${jf_recipe_train_flags[@]}" --teacher "$base" --data "$work/packed-round$r.jsonl" --steps "$steps" \
      --corpus "$work/samples" --lr "$lr" --min-lr "$(python3 -c "print($lr / 10)")" --matmul "${MATMUL:-f32}" \
      -o "$out" "${resume[@]}" 2>&1 |
      tee -a "$work/train-$name-round$r.log"
  fi
  from="$out"
done
"$jf" convert -m "$from" --type q8_0 -o "$work/$name-q8_0.gguf"
