#!/usr/bin/env bash
# jf's text-to-image model (docs/IMAGES.md): a Llama-architecture model trained from scratch by `jf train
# --objective ar` on the emoji corpus of scripts/image_data.sh (a caption, "<image 16x16>", 256 colour tokens),
# 6 layers, dim 256, 5.1M parameters, in two cosine runs (1,200 steps from scratch, then 1,100 more from its
# weights: ~23 passes over the 480k-token corpus); then quantized to Q8_0 into models/emoji16-q8_0.gguf.
# Resumable: run it again after an interruption and it continues from the last checkpoint (every 100 steps).
# Usage: scripts/train_image_model.sh [WORKDIR]   (~90 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/jf-image-model}"
mkdir -p "$work"
scripts/image_data.sh "$work/data"
jf=build/bin/jf
common=(--objective ar --corpus "$work/data/train.txt" --ext .txt --doc-sep '\n' --seq-len 512 --accum 8 --clip 1 --seed 1
        --save-every 100 --log-every 20)
stage() {  # stage NAME ARGS...: one training run, resumed from its checkpoint when there is one
  local name="$1"
  shift
  grep -q "wrote $work/$name.gguf (" "$work/$name.log" 2>/dev/null && return 0  # finished before
  local resume=()
  [ -f "$work/$name.gguf.ckpt.gguf" ] && resume=(--resume "$work/$name.gguf.ckpt.gguf")
  "$jf" train "${common[@]}" "$@" "${resume[@]}" -o "$work/$name.gguf" 2>&1 | tee -a "$work/$name.log"
}
stage emoji16 --tokenizer-from "$work/data/vocab.gguf" --init dim=256,layers=6,heads=8,kv-heads=4,ffn=768,ctx=512 \
  --steps 1200 --lr 1.5e-3 --min-lr 1e-4 --warmup 0.03
stage emoji16-more -m "$work/emoji16.gguf" --steps 1100 --lr 1e-3 --min-lr 2e-5 --warmup 0.02
"$jf" convert -m "$work/emoji16-more.gguf" --type q8_0 -o models/emoji16-q8_0.gguf
"$jf" image-bench --data "$work/data" --images 1 --blocks 32 --locality-images 0 2>/dev/null | grep -A1 "Held-out" || true
