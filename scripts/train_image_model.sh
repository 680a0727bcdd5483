#!/usr/bin/env bash
# jf's text-to-image model (docs/IMAGES.md): a Llama-architecture model trained from scratch by `jf train
# --objective ar`, 6 layers, dim 256, 5.1M parameters, into models/emoji16-q8_0.gguf. A document is a caption,
# "<image 16x16>", then 256 colour tokens (scripts/image_data.sh).
#   1. Noto's pictures (one a caption): two cosine runs, 1,200 steps from scratch and 1,100 more (~23 passes over
#      the 480k-token corpus, ~90 min), quantized to Q8_0 (WORKDIR/emoji16-google-q8_0.gguf).
#   2. Noto's and Twemoji's pictures (two a caption, so the words must carry what the pictures share), in the same
#      vocabulary; every sequence one whole document, trained from its caption as at inference; every eighth
#      picture also shown without its caption (what classifier-free guidance, `jf imagine --cfg`, needs):
#      3,200 steps of 16 documents (~13 passes over 1.07M tokens, ~85 min).
# Resumable: run it again after an interruption and it continues from the last checkpoint (every 100 steps).
# Usage: scripts/train_image_model.sh [WORKDIR]   (~3 h on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
work=/tmp/jf-image-model
for arg in "$@"; do
  case "$arg" in
    -*) echo "usage: scripts/train_image_model.sh [WORKDIR]" >&2; exit 2 ;;
    *) work="$arg" ;;
  esac
done
mkdir -p "$work"
jf=build/bin/jf
common=(--objective ar --ext .txt --doc-sep '\n' --seq-len 512 --clip 1 --save-every 100 --log-every 20)
stage() {  # stage NAME ARGS...: one training run, resumed from its checkpoint when there is one
  local name="$1"
  shift
  grep -q "wrote $work/$name.gguf (" "$work/$name.log" 2>/dev/null && return 0  # finished before
  local resume=()
  [ -f "$work/$name.gguf.ckpt.gguf" ] && resume=(--resume "$work/$name.gguf.ckpt.gguf")
  "$jf" train "${common[@]}" "$@" "${resume[@]}" -o "$work/$name.gguf" 2>&1 | tee -a "$work/$name.log"
}
scripts/image_data.sh "$work/data"
if [ ! -f "$work/emoji16-google-q8_0.gguf" ]; then
  captioned=(--corpus "$work/data/train.txt" --seed 1 --accum 8)
  stage emoji16 "${captioned[@]}" --tokenizer-from "$work/data/vocab.gguf" --init dim=256,layers=6,heads=8,kv-heads=4,ffn=768,ctx=512 \
    --steps 1200 --lr 1.5e-3 --min-lr 1e-4 --warmup 0.03
  stage emoji16-more "${captioned[@]}" -m "$work/emoji16.gguf" --steps 1100 --lr 1e-3 --min-lr 2e-5 --warmup 0.02
  "$jf" convert -m "$work/emoji16-more.gguf" --type q8_0 -o "$work/emoji16-google-q8_0.gguf.tmp"
  mv "$work/emoji16-google-q8_0.gguf.tmp" "$work/emoji16-google-q8_0.gguf"
fi
scripts/image_data.sh "$work/styles" --twitter --vocab-from "$work/data/vocab.gguf"
# Every eighth picture again, its caption dropped ("<image 16x16>..." after BOS): the unconditional model.
awk '{ print } NR % 8 == 0 { s = $0; sub(/^[^<]*/, "", s); drop[++n] = s } END { for (i = 1; i <= n; i++) print drop[i] }' \
  "$work/styles/train.txt" > "$work/styles/train_cfg.txt"
stage emoji16-styles -m "$work/emoji16-google-q8_0.gguf" --corpus "$work/styles/train_cfg.txt" --whole-docs --accum 16 \
  --seed 3 --steps 3200 --lr 8e-4 --min-lr 2e-5 --warmup 0.02
"$jf" convert -m "$work/emoji16-styles.gguf" --type q8_0 -o models/emoji16-q8_0.gguf
"$jf" image-bench --data "$work/data" --images 1 --blocks 32 --locality-images 0 2>/dev/null | grep -A1 "Held-out" || true
