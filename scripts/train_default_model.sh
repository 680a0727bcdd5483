#!/usr/bin/env bash
# Reproduces jf's default models from scratch on the Python standard library sources:
#   1. a byte-level BPE tokenizer (4,096 tokens),
#   2. a small Llama-architecture code model trained with `jf train --objective ar`,
#   3. (separately, scripts/train_default_jf.sh) its Jacobi Forcing fine-tune.
# Usage: scripts/train_default_model.sh [WORKDIR]   (logs and intermediate files go to WORKDIR)
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-default}"
mkdir -p "$work"
corpus=/usr/lib/python3.11
[ -d "$corpus" ] || { echo "needs the Python 3.11 standard library at $corpus" >&2; exit 1; }

"$jf" tokenizer-train --corpus "$corpus" --ext .py --vocab 4096 -o "$work/pycode-tokenizer.gguf" 2>&1 | tee "$work/tokenizer.log"
"$jf" train --objective ar --tokenizer-from "$work/pycode-tokenizer.gguf" \
  --init dim=192,layers=6,heads=6,kv-heads=2,ffn=512,ctx=1024 \
  --corpus "$corpus" --ext .py --seq-len 256 --steps 3000 --accum 8 --lr 2e-3 --min-lr 1e-4 --warmup 0.02 \
  --clip 1 --seed 1 --save-every 500 --log-every 50 -o "$work/pycode-ar.gguf" 2>&1 | tee "$work/train-ar.log"
"$jf" convert -m "$work/pycode-ar.gguf" --type q8_0 -o models/pycode-ar-q8_0.gguf
