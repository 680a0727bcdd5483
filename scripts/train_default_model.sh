#!/usr/bin/env bash
# Reproduces jf's default AR code model from scratch:
#   1. a byte-level BPE tokenizer (4,096 tokens) trained on the Python 3.11 standard library,
#   2. a Llama-architecture code model (6 layers, dim 256, 6.8M parameters) trained with `jf train --objective ar`
#      on the standard library and the Debian-installed packages (scripts/pycode_corpus.sh; oauthlib and
#      PyYAML held out for evaluation),
#   3. (separately, scripts/train_default_jf.sh) its Jacobi Forcing fine-tune.
# Usage: scripts/train_default_model.sh [WORKDIR]   (logs and intermediate files go to WORKDIR; ~90 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-default}"
mkdir -p "$work"
source scripts/pycode_corpus.sh
[ -d "$pycode_stdlib" ] || { echo "needs the Python 3.11 standard library at $pycode_stdlib" >&2; exit 1; }

"$jf" tokenizer-train --corpus "$pycode_stdlib" --ext .py --vocab 4096 -o "$work/pycode-tokenizer.gguf" 2>&1 | tee "$work/tokenizer.log"
# 4,000 steps x 8 sequences x 512 tokens = 16.4M tokens, ~1.9 passes over the 8.9M-token corpus.
"$jf" train --objective ar --tokenizer-from "$work/pycode-tokenizer.gguf" \
  --init dim=256,layers=6,heads=4,kv-heads=2,ffn=768,ctx=1024 \
  --corpus "${pycode_corpus[@]}" --ext .py --seq-len 512 --steps 4000 --accum 8 --lr 1.5e-3 --min-lr 1e-4 --warmup 0.02 \
  --clip 1 --seed 1 --save-every 400 --log-every 50 -o "$work/pycode-ar.gguf" 2>&1 | tee "$work/train-ar.log"
"$jf" convert -m "$work/pycode-ar.gguf" --type q8_0 -o models/pycode-ar-q8_0.gguf
