#!/usr/bin/env bash
# FastCoT evaluation on a chain-of-thought arithmetic task (issue 15; docs/BENCHMARKS.md "FastCoT").
#   bench/cot_arith/run.sh [WORKDIR]          # data + tokenizer + AR training (~10 min, 2 cores) + evaluation
#   SKIP_TRAIN=1 bench/cot_arith/run.sh DIR   # evaluate DIR/cot-ar.gguf again
# Answer accuracy against forwards for: AR to EOS; FastCoT (running-window Jacobi for B forwards, then the
# window's approximate tokens and the trigger "\nThe answer is", then the answer); AR truncated at the same B
# forwards (fastcot with a window of 1: no approximate tokens).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jf="${JF:-$here/../../build/bin/jf}"
work="${1:-/tmp/jf-cot-arith}"
budgets="${BUDGETS:-8 16 24 32 40}"
window="${WINDOW:-8}"
threads="${THREADS:-2}"
mkdir -p "$work"

if [ "${SKIP_TRAIN:-0}" != 1 ]; then
  python3 "$here/make_cot_arith.py" -o "$work"
  "$jf" tokenizer-train --corpus "$work/train.txt" --ext "" --vocab 300 -o "$work/cot-vocab.gguf"
  "$jf" train --tokenizer-from "$work/cot-vocab.gguf" --init dim=128,layers=4,heads=4,kv-heads=4,ffn=384,ctx=256 \
    --objective ar --corpus "$work/train.txt" --doc-sep '\n\n' --seq-len 256 --steps 5000 --accum 8 \
    --lr 2e-3 --min-lr 1e-4 --log-every 250 -t "$threads" -o "$work/cot-ar.gguf"
fi

decoders="ar"
for b in $budgets; do decoders="$decoders,fastcot:block=$window:fastcot-iters=$b,fastcot:block=1:fastcot-iters=$b"; done
"$jf" bench -m "$work/cot-ar.gguf" --prompts "$work/test.jsonl" --format gsm8k -n 128 -t "$threads" \
  --answer-trigger $'\nThe answer is' --decoders "$decoders" --json "$work/fastcot.json" | tee "$work/fastcot.md"
