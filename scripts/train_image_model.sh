#!/usr/bin/env bash
# jf's text-to-image model (docs/IMAGES.md): a Llama-architecture model trained from scratch by `jf train
# --objective ar` on the emoji corpus of scripts/image_data.sh (a caption, "<image 16x16>", 256 colour tokens),
# 6 layers, dim 256, 5.0M parameters; then quantized to Q8_0 into models/emoji16-q8_0.gguf.
# Resumable: run it again after an interruption and it continues from the last checkpoint (every 100 steps).
# Usage: scripts/train_image_model.sh [WORKDIR]   (~40 min on 2 cores: 1,200 steps x 8 x 512 tokens, ~10 passes)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/jf-image-model}"
mkdir -p "$work"
scripts/image_data.sh "$work/data"
jf=build/bin/jf
resume=()
[ -f "$work/emoji16.gguf.ckpt.gguf" ] && resume=(--resume "$work/emoji16.gguf.ckpt.gguf")
"$jf" train --objective ar --tokenizer-from "$work/data/vocab.gguf" \
  --init dim=256,layers=6,heads=8,kv-heads=4,ffn=768,ctx=512 \
  --corpus "$work/data/train.txt" --ext .txt --doc-sep '\n' --seq-len 512 \
  --steps 1200 --accum 8 --lr 1.5e-3 --min-lr 1e-4 --warmup 0.03 --clip 1 --seed 1 \
  --save-every 100 --log-every 20 "${resume[@]}" -o "$work/emoji16.gguf" 2>&1 | tee -a "$work/train.log"
"$jf" convert -m "$work/emoji16.gguf" --type q8_0 -o models/emoji16-q8_0.gguf
"$jf" perplexity -m models/emoji16-q8_0.gguf -f "$work/data/heldout.txt" 2>&1 | tail -2 || true
