#!/usr/bin/env bash
# Jacobi Forcing fine-tune of jf's default code model (after scripts/train_default_model.sh), with the recipe
# that keeps the model (docs/TRAINING.md "jf's default models"):
#   prompts: 2,400 function openings (8 lines of context) from the training corpus (scripts/code_prompts.py)
#   -> trajectories of the AR model at n = 16, 128 tokens -> pack (linear schedule fitted to each response, NC)
#   -> one epoch: 4 packed sequences + 1 sequence of real corpus text per step, the AR model as frozen teacher
#      (its distribution is the target on the clean stream and on the real text, weight 4), AR weight 1,
#      per-block consistency -> Q8_0 export WORKDIR/OUT_NAME-q8_0.gguf (models/pycode-jf-q8_0.gguf is a copy).
# Usage: scripts/train_default_jf.sh [WORKDIR] [TEXT_WEIGHT] [LR] [OUT_NAME]   (~15 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-default}"
text_weight="${2:-4}"
lr="${3:-1e-3}"
name="${4:-pycode-jf}"
[ -s "$work/pycode-ar.gguf" ] || { echo "run scripts/train_default_model.sh first" >&2; exit 1; }
source scripts/pycode_corpus.sh

[ -s "$work/train_prompts.jsonl" ] ||
  python3 scripts/code_prompts.py --count 2400 --context 8 -o "$work/train_prompts.jsonl" "${pycode_corpus[@]}"
"$jf" collect -m "$work/pycode-ar.gguf" --prompts "$work/train_prompts.jsonl" --block 16 -n 128 -o "$work/traj16.jsonl" 2>&1 | tail -1
[ -s "$work/packed16.jsonl" ] ||
  "$jf" pack --traj "$work/traj16.jsonl" --schedule linear --window 16 --mask nc --max-len 1024 -o "$work/packed16.jsonl"
steps=$(($(wc -l <"$work/packed16.jsonl") / 4))
"$jf" train -m "$work/pycode-ar.gguf" --objective jacobi-forcing --data "$work/packed16.jsonl" --steps "$steps" --accum 4 \
  --teacher "$work/pycode-ar.gguf" --ar-weight 1 --consistency-norm per-block \
  --corpus "${pycode_corpus[@]}" --ext .py --seq-len 512 --text-accum 1 --text-weight "$text_weight" \
  --lr "$lr" --min-lr "$(python3 -c "print($lr / 10)")" --seed 1 --log-every 50 -o "$work/$name.gguf" 2>&1 |
  tee "$work/train-$name.log"
"$jf" convert -m "$work/$name.gguf" --type q8_0 -o "$work/$name-q8_0.gguf"
