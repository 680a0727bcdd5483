#!/usr/bin/env bash
# Regenerates docs/IMAGES.md's pictures and measurements into docs/img/images/: labelled grids of held-out and
# training captions (ar beside SJD-PAC with the repeat guess, the same seeds), the gallery page, and jf
# image-bench's tables and charts; the guided and two-style models' grids where scripts/train_image_model.sh
# made them. Needs scripts/image_data.sh's output (for the held-out perplexity).
# Usage: scripts/image_results.sh [DATADIR]   (default /tmp/jf-image-model/data; ~15 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-/tmp/jf-image-model/data}"
out=docs/img/images
jf=build/bin/jf
mkdir -p "$out"
pac=sjd:block=32:draft-policy=fixed:pac-continue=1:pac-tree=3x4:pac-guess=1
awk 'NR % 4 == 1' bench/prompts/emoji_heldout.txt > /tmp/jf-heldout24.txt  # every fourth held-out caption
printf '%s\n' "dog face" "green heart" "grinning face" "rainbow" "penguin" "slice of pizza" "ghost" "fire" \
  "alien monster" "christmas tree" "tiger face" "earth globe americas" > /tmp/jf-train12.txt
"$jf" imagine --captions /tmp/jf-heldout24.txt --decoder "ar,$pac" --samples 2 --scale 4 -o "$out/heldout-grid.svg"
"$jf" imagine --captions /tmp/jf-train12.txt --decoder "ar,$pac" --samples 2 --scale 4 -o "$out/train-grid.svg"
"$jf" imagine "dog face" "rainbow" "grinning face" --decoder "ar,$pac" --viz "$out/gallery.html" -o /tmp/jf-gallery.png
"$jf" image-bench --data "$data" --images 32 --blocks 32 64 --locality-images 16 -o "$out" | tee "$out/image-bench.md"
# Guidance (docs/IMAGES.md "Classifier-free guidance"), where scripts/train_image_model.sh --guidance made its model.
cfg_model="$(dirname "$data")/emoji16-cfg-q8_0.gguf"
if [ -f "$cfg_model" ]; then
  printf '%s\n' "dog face" "green heart" "grinning face" "rainbow" "penguin" "fire" > /tmp/jf-train6.txt
  for s in 1 1.5 3; do
    "$jf" imagine -m "$cfg_model" --captions /tmp/jf-train6.txt --decoder ar --samples 4 --cfg "$s" --scale 3 -o "$out/guidance-cfg$s.png"
  done
fi
# Two art styles (docs/IMAGES.md "Two pictures a caption"), where scripts/train_image_model.sh --styles made it.
styles_model="$(dirname "$data")/emoji16-styles-q8_0.gguf"
if [ -f "$styles_model" ]; then
  cat /tmp/jf-train12.txt /tmp/jf-heldout24.txt > /tmp/jf-styles36.txt
  "$jf" imagine -m "$styles_model" --captions /tmp/jf-styles36.txt --decoder ar --samples 4 --top-k 16 --scale 4 -o "$out/styles-grid.svg"
  for s in 2 3; do
    "$jf" imagine -m "$styles_model" --captions /tmp/jf-train12.txt --decoder ar --samples 4 --top-k 16 --cfg "$s" --scale 4 \
      -o "$out/styles-cfg$s.svg"
  done
  "$jf" image-bench -m "$styles_model" --data "$data" --images 1 --blocks 32 --locality-images 0 --decoders sjd:block=32 \
    | tee "$out/styles-bench.md"
fi
# Captions made of known words (docs/IMAGES.md), where scripts/train_image_model.sh --known made its model: 12
# training captions ("cat face" for "dog face", held out there), then every fourth held-out caption.
known_model="$(dirname "$data")/emoji16-known-q8_0.gguf"
if [ -f "$known_model" ]; then
  sed 's/^dog face$/cat face/' /tmp/jf-train12.txt > /tmp/jf-known-train12.txt
  awk 'NR % 4 == 1' "$(dirname "$data")/known/heldout_captions.txt" | cat /tmp/jf-known-train12.txt - > /tmp/jf-known36.txt
  "$jf" imagine -m "$known_model" --captions /tmp/jf-known36.txt --decoder ar --samples 4 --top-k 16 --scale 4 -o "$out/known-grid.svg"
  "$jf" image-bench -m "$known_model" --data "$(dirname "$data")/known" --images 1 --blocks 32 --locality-images 0 \
    --decoders sjd:block=32 | tee "$out/known-bench.md"
fi
