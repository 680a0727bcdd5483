#!/usr/bin/env bash
# Regenerates docs/IMAGES.md's pictures and measurements into docs/img/images/: grids of held-out and training
# captions (ar beside SJD-PAC with the repeat guess, the same seeds), the gallery page, and jf image-bench's
# tables and charts. Needs scripts/image_data.sh's output (for the held-out perplexity).
# Usage: scripts/image_results.sh [DATADIR]   (default /tmp/jf-image-model/data; ~10 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-/tmp/jf-image-model/data}"
out=docs/img/images
jf=build/bin/jf
mkdir -p "$out"
pac=sjd:block=32:draft-policy=fixed:pac-continue=1:pac-tree=3x4:pac-guess=1
head -12 bench/prompts/emoji_heldout.txt > /tmp/jf-heldout12.txt
printf '%s\n' "dog face" "green heart" "grinning face" "rainbow" "penguin" "slice of pizza" "ghost" "fire" \
  "alien monster" "christmas tree" "tiger face" "earth globe americas" > /tmp/jf-train12.txt
"$jf" imagine --captions /tmp/jf-heldout12.txt --decoder "ar,$pac" --samples 2 --scale 4 -o "$out/heldout-grid.png"
"$jf" imagine --captions /tmp/jf-train12.txt --decoder "ar,$pac" --samples 2 --scale 4 -o "$out/train-grid.png"
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
