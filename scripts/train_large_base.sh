#!/usr/bin/env bash
# The largest code model the default model's file limit (~32 MB) allows, and its Jacobi Forcing fine-tune,
# end to end (docs/TRAINING.md "The targets"):
#   1. pre-train dim 512, 8 layers, heads 8/4, FFN 1,536 (29.4M parameters, 31.4 MB in Q8_0) on the default
#      model's corpus, with its tokenizer and schedule (4,000 steps x 8 x 512 tokens), bf16 products;
#   2. judge it against the shipped 6.8M-parameter base on the held-out packages (eval-base.jsonl);
#   3. scripts/train_default_jf.sh on it: the shipped recipe, two rounds, bf16 products, samples and
#      trajectories written by Q8_0 copies;
#   4. judge the fine-tune against its base (eval-jf.jsonl).
# Usage: scripts/train_large_base.sh [WORKDIR]   (~7 h on 2 cores with AVX512-BF16)
# Interrupted, it goes on where it stopped when run again (checkpoints every 100 steps, finished files kept).
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-large}"
mkdir -p "$work"
source scripts/pycode_corpus.sh
base="$work/pycode-ar.gguf"

# Writes the JSON lines of scripts/eval_default_model.sh MODEL BASE to OUT, atomically, unless OUT exists.
judge() {
  [ -s "$3" ] && return
  scripts/eval_default_model.sh "$1" "$2" "$work" >"$3.tmp"
  mv "$3.tmp" "$3"
}

if [ ! -s "$base" ]; then
  resume=()
  [ -s "$base.ckpt.gguf" ] && resume=(--resume "$base.ckpt.gguf")
  "$jf" train --objective ar --tokenizer-from models/pycode-ar-q8_0.gguf \
    --init dim=512,layers=8,heads=8,kv-heads=4,ffn=1536,ctx=1024 \
    --corpus "${pycode_corpus[@]}" --ext .py --seq-len 512 --steps 4000 --accum 8 --lr 1e-3 --min-lr 1e-4 --warmup 0.02 \
    --clip 1 --matmul bf16 --seed 1 --save-every 100 --log-every 50 -o "$base" "${resume[@]}" 2>&1 |
    tee -a "$work/train-ar.log"
fi
[ -s "$work/pycode-ar-q8_0.gguf" ] || "$jf" convert -m "$base" --type q8_0 -o "$work/pycode-ar-q8_0.gguf"
judge "$work/pycode-ar-q8_0.gguf" models/pycode-ar-q8_0.gguf "$work/eval-base.jsonl"
DATA_TYPE=q8_0 MATMUL=bf16 scripts/train_default_jf.sh "$work" 3e-4 2 pycode-jf
judge "$work/pycode-jf-q8_0.gguf" "$work/pycode-ar-q8_0.gguf" "$work/eval-jf.jsonl"
cat "$work/eval-base.jsonl" "$work/eval-jf.jsonl"
