#!/usr/bin/env bash
# The default code model's draft file (docs/TRAINING.md "A draft file"): a draft layer and its chain for
# models/pycode-ar-q8_0.gguf, trained on the frozen model, written as models/pycode-ar-q8_0.draft.gguf (found
# beside the model by itself; the model file stays a plain GGUF that llama.cpp loads).
#   openings: 7,200 function openings (8 lines of context) from the training corpus (scripts/code_prompts.py)
#   round 1: the draft layer and head on the model's own Jacobi trajectories (bench/draft_head.sh DRAFT_LAYER=1)
#   rounds 2-3: the layer's chain, marked for depth 2, each round on the trajectories the model collects with
#               its previous draft (CHAIN=2, lr 1e-3), training its first step
#   round 4:    both steps of the chain end to end (CHAIN_ROWS=3: a third pass of the layer)
#   round 5:    a third step, all three end to end (CHAIN=3, CHAIN_ROWS=4)
#   round 6:    a fourth step, all four end to end (CHAIN=4, CHAIN_ROWS=5)
#   round 7:    a fifth step, all five end to end (CHAIN=5, CHAIN_ROWS=6), marked for depth 5
#   then the draft tensors are split off (jf convert --split-draft) and checked against the model.
# Each round is judged on held-out code by jf eval (WORKDIR/eval_*.json). About 15-25 minutes a round with two
# threads on a 2-core machine. Interrupted, it goes on where it stopped when run again (finished files kept).
# Usage: scripts/train_default_draft.sh [WORKDIR] [OUT]   (JF=path/to/jf to run another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/jf-draft}"
out="${2:-models/pycode-ar-q8_0.draft.gguf}"
base=models/pycode-ar-q8_0.gguf
export JF="${JF:-build/bin/jf}"
[ -x "$JF" ] || scripts/build.sh
source scripts/pycode_corpus.sh
mkdir -p "$work"
[ -s "$work/prompts.jsonl" ] ||
  python3 scripts/code_prompts.py --count "${PROMPTS:-7200}" --context 8 -o "$work/prompts.jsonl" "${pycode_corpus[@]}"
ROUNDS=1 DRAFT_LAYER=1 bench/draft_head.sh "$base" "$base" "$work/prompts.jsonl" "$work" layer
CHAIN=2 ROUNDS=2 FIRST_LR=1e-3 DRAFT_LAYER=1 bench/draft_head.sh "$work/layer.gguf" "$base" "$work/prompts.jsonl" "$work" chain
CHAIN=2 CHAIN_ROWS=3 ROUNDS=1 FIRST_LR=1e-3 DRAFT_LAYER=1 bench/draft_head.sh "$work/chain-r2.gguf" "$base" "$work/prompts.jsonl" "$work" chain2e
CHAIN=3 CHAIN_ROWS=4 ROUNDS=1 FIRST_LR=1e-3 DRAFT_LAYER=1 bench/draft_head.sh "$work/chain2e.gguf" "$base" "$work/prompts.jsonl" "$work" chain3e
CHAIN=4 CHAIN_ROWS=5 ROUNDS=1 FIRST_LR=1e-3 DRAFT_LAYER=1 bench/draft_head.sh "$work/chain3e.gguf" "$base" "$work/prompts.jsonl" "$work" chain4e
CHAIN=5 CHAIN_ROWS=6 ROUNDS=1 FIRST_LR=1e-3 DRAFT_LAYER=1 bench/draft_head.sh "$work/chain4e.gguf" "$base" "$work/prompts.jsonl" "$work" chain5e
"$JF" convert -m "$work/chain5e.gguf" -o "$work/split-base.gguf" --split-draft "$work/split.draft.gguf"
"$JF" inspect -m "$base" --draft "$work/split.draft.gguf" | grep "draft"  # refused unless it fits the model
cp "$work/split.draft.gguf" "$out.tmp" && mv "$out.tmp" "$out"
echo "wrote $out"
