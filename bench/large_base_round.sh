#!/usr/bin/env bash
# One round of the default recipe (scripts/train_default_jf.sh) on 2,400 openings for the 29.4M-parameter base
# of scripts/train_large_base.sh, once per learning rate: the larger base's points beside the 6.8M base's lr
# sweep on 2,400 openings (docs/TRAINING.md "A larger base").
#   openings: the 2,400 of the frontier table, which are every third of the recipe's 7,200 (jf collect --shard 0/3)
#   KL text: 1,500 samples of the base at temperature 1 (~350k tokens; one epoch reads ~310k of them)
#   trajectories by the base's Q8_0 copy; training f32 weights with bf16 products; judged by
#   scripts/eval_default_model.sh (Q8_0 export against the base's Q8_0) -> OUTDIR/eval-lr<LR>.jsonl
# Usage: bench/large_base_round.sh LARGE_WORKDIR OUTDIR LR...   (~25 min per LR on 2 cores with AVX512-BF16)
# Interrupted, it goes on where it stopped (finished files kept, training resumes from its checkpoint).
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
large="$1"
out="$2"
shift 2
base="$large/pycode-ar.gguf"
base_q8="$large/pycode-ar-q8_0.gguf"
[ -s "$base" ] || { echo "no base at $base: run scripts/train_large_base.sh $large first" >&2; exit 1; }
source scripts/pycode_corpus.sh
source scripts/jf_recipe.sh
mkdir -p "$out/samples"
[ -s "$base_q8" ] || "$jf" convert -m "$base" --type q8_0 -o "$base_q8"
[ -s "$large/train_prompts.jsonl" ] ||
  python3 scripts/code_prompts.py --count 7200 --context 8 -o "$large/train_prompts.jsonl" "${pycode_corpus[@]}"
[ -s "$out/samples/samples.txt" ] || "$jf" sample -m "$base_q8" --prompts "$large/train_prompts.jsonl" --count 1500 -n 256 \
  --temp 1 --seed 1 -o "$out/samples/samples.txt"
"$jf" collect -m "$base_q8" --prompts "$large/train_prompts.jsonl" --block 16 -n 128 --shard 0/3 -o "$out/traj.jsonl" 2>&1 | tail -1
[ -s "$out/packed.jsonl" ] || "$jf" pack --traj "$out/traj.jsonl" "${jf_recipe_pack_flags[@]}" -o "$out/packed.jsonl"
steps=$(($(wc -l <"$out/packed.jsonl") / 4))
for lr in "$@"; do
  model="$out/jf-lr$lr.gguf"
  if [ ! -s "$model" ]; then
    resume=()
    [ -s "$model.ckpt.gguf" ] && resume=(--resume "$model.ckpt.gguf")
    "$jf" train -m "$base" "${jf_recipe_train_flags[@]}" --teacher "$base" --data "$out/packed.jsonl" --steps "$steps" \
      --corpus "$out/samples" --lr "$lr" --min-lr "$(python3 -c "print($lr / 10)")" --matmul bf16 \
      -o "$model" "${resume[@]}" 2>&1 | tee -a "$out/train-lr$lr.log"
  fi
  [ -s "$out/jf-lr$lr-q8_0.gguf" ] || "$jf" convert -m "$model" --type q8_0 -o "$out/jf-lr$lr-q8_0.gguf"
  if [ ! -s "$out/eval-lr$lr.jsonl" ]; then
    scripts/eval_default_model.sh "$out/jf-lr$lr-q8_0.gguf" "$base_q8" "$large" >"$out/eval-lr$lr.jsonl.tmp"
    mv "$out/eval-lr$lr.jsonl.tmp" "$out/eval-lr$lr.jsonl"
  fi
  cat "$out/eval-lr$lr.jsonl"
done
