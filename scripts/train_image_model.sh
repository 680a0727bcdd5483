#!/usr/bin/env bash
# jf's text-to-image model (docs/IMAGES.md): a Llama-architecture model trained from scratch by `jf train
# --objective ar` on the emoji corpus of scripts/image_data.sh (a caption, "<image 16x16>", 256 colour tokens),
# 6 layers, dim 256, 5.1M parameters, in two cosine runs (1,200 steps from scratch, then 1,100 more from its
# weights: ~23 passes over the 480k-token corpus); then quantized to Q8_0 into models/emoji16-q8_0.gguf.
# --guidance: then 1,200 more steps on the corpus with every fifth image also shown without its caption (what
# classifier-free guidance needs: `jf imagine --cfg`), into WORKDIR/emoji16-cfg-q8_0.gguf (docs/IMAGES.md).
# --styles: then, from models/emoji16-q8_0.gguf, 3,200 steps of 16 whole documents (--whole-docs) on Noto's and
# Twemoji's pictures (two a training caption, in the same vocabulary), every eighth also without its caption:
# ~13 passes over 1.07M tokens, ~85 min, into WORKDIR/emoji16-styles-q8_0.gguf (docs/IMAGES.md).
# --words: instead, a model from scratch in a word-level caption vocabulary (`jf image-data --whole-words`: each
# word one token wherever it stands), on both art styles, whole documents, every eighth picture also without its
# caption, weight decay 0.1: 2,600 steps of 16 documents, 10 passes, ~75 min, into WORKDIR/emoji16-words-q8_0.gguf
# (docs/IMAGES.md "Word-level captions").
# --known: as --words, but the held-out captions are ones made of words training captions use (`jf image-data
# --heldout-known-words --heldout-every 8`: "blue heart" beside "green heart" and "blue book"), and each training
# picture comes four times, moved by half a pixel (`--shifts 4`): 2,600 steps, ~75 min, into
# WORKDIR/emoji16-known-q8_0.gguf (docs/IMAGES.md "Captions made of known words").
# Resumable: run it again after an interruption and it continues from the last checkpoint (every 100 steps).
# Usage: scripts/train_image_model.sh [WORKDIR] [--guidance] [--styles] [--words] [--known]
#   (~90 min on 2 cores, + ~40, + ~85; --words or --known alone ~75)
set -euo pipefail
cd "$(dirname "$0")/.."
work=/tmp/jf-image-model
guidance=0
styles=0
words=0
known=0
for arg in "$@"; do
  case "$arg" in
    --guidance) guidance=1 ;;
    --styles) styles=1 ;;
    --words) words=1 ;;
    --known) known=1 ;;
    -*) echo "usage: scripts/train_image_model.sh [WORKDIR] [--guidance] [--styles] [--words] [--known]" >&2; exit 2 ;;
    *) work="$arg" ;;
  esac
done
mkdir -p "$work"
jf=build/bin/jf
common=(--objective ar --ext .txt --doc-sep '\n' --seq-len 512 --clip 1 --save-every 100 --log-every 20)
captioned=(--corpus "$work/data/train.txt" --seed 1 --accum 8)
stage() {  # stage NAME ARGS...: one training run, resumed from its checkpoint when there is one
  local name="$1"
  shift
  grep -q "wrote $work/$name.gguf (" "$work/$name.log" 2>/dev/null && return 0  # finished before
  local resume=()
  [ -f "$work/$name.gguf.ckpt.gguf" ] && resume=(--resume "$work/$name.gguf.ckpt.gguf")
  "$jf" train "${common[@]}" "$@" "${resume[@]}" -o "$work/$name.gguf" 2>&1 | tee -a "$work/$name.log"
}
drop_captions() {  # drop_captions IN OUT N: every line, then every Nth again without its caption ("<image 16x16>..." after BOS)
  awk -v n="$3" '{ print } NR % n == 0 { s = $0; sub(/^[^<]*/, "", s); drop[++k] = s } END { for (i = 1; i <= k; i++) print drop[i] }' \
    "$1" > "$2"
}
word_model() {  # word_model NAME SEED [jf image-data options]: a word-level caption model from scratch
  local name="$1" seed="$2"
  shift 2
  scripts/image_data.sh "$work/$name" --twitter --whole-words --text-vocab 2048 "$@"
  drop_captions "$work/$name/train.txt" "$work/$name/train_cfg.txt" 8
  stage "emoji16-$name" --corpus "$work/$name/train_cfg.txt" --whole-docs --tokenizer-from "$work/$name/vocab.gguf" \
    --init dim=256,layers=6,heads=8,kv-heads=4,ffn=768,ctx=512 --seed "$seed" --accum 16 --steps 2600 --lr 1.5e-3 \
    --min-lr 5e-5 --warmup 0.03 --weight-decay 0.1
  "$jf" convert -m "$work/emoji16-$name.gguf" --type q8_0 -o "$work/emoji16-$name-q8_0.gguf"
  "$jf" image-bench -m "$work/emoji16-$name-q8_0.gguf" --data "$work/$name" --images 1 --blocks 32 --locality-images 0 \
    2>/dev/null | grep -A1 "Held-out" || true
}
if [ "$words" = 1 ] || [ "$known" = 1 ]; then
  [ "$words" = 1 ] && word_model words 4
  [ "$known" = 1 ] && word_model known 5 --heldout-known-words --heldout-every 8 --shifts 4
  exit 0
fi
scripts/image_data.sh "$work/data"
stage emoji16 "${captioned[@]}" --tokenizer-from "$work/data/vocab.gguf" --init dim=256,layers=6,heads=8,kv-heads=4,ffn=768,ctx=512 \
  --steps 1200 --lr 1.5e-3 --min-lr 1e-4 --warmup 0.03
stage emoji16-more "${captioned[@]}" -m "$work/emoji16.gguf" --steps 1100 --lr 1e-3 --min-lr 2e-5 --warmup 0.02
"$jf" convert -m "$work/emoji16-more.gguf" --type q8_0 -o models/emoji16-q8_0.gguf
if [ "$guidance" = 1 ]; then
  drop_captions "$work/data/train.txt" "$work/data/train_cfg.txt" 5
  stage emoji16-cfg -m "$work/emoji16-more.gguf" --corpus "$work/data/train_cfg.txt" --seed 2 --accum 8 --steps 1200 --lr 8e-4 \
    --min-lr 2e-5 --warmup 0.02
  "$jf" convert -m "$work/emoji16-cfg.gguf" --type q8_0 -o "$work/emoji16-cfg-q8_0.gguf"
fi
if [ "$styles" = 1 ]; then
  scripts/image_data.sh "$work/styles" --twitter --vocab-from "$work/data/vocab.gguf"
  drop_captions "$work/styles/train.txt" "$work/styles/train_cfg.txt" 8
  stage emoji16-styles -m models/emoji16-q8_0.gguf --corpus "$work/styles/train_cfg.txt" --whole-docs --accum 16 \
    --seed 3 --steps 3200 --lr 8e-4 --min-lr 2e-5 --warmup 0.02
  "$jf" convert -m "$work/emoji16-styles.gguf" --type q8_0 -o "$work/emoji16-styles-q8_0.gguf"
fi
"$jf" image-bench --data "$work/data" --images 1 --blocks 32 --locality-images 0 2>/dev/null | grep -A1 "Held-out" || true
