#!/usr/bin/env bash
# stories260K's draft file (docs/TRAINING.md "Draft trees"): a draft layer and its chain for
# ../shared/models/stories260K/stories260K.gguf, trained on the frozen model, written as
# models/stories260K.draft.gguf (give it with --draft; the model lives in ../shared).
#   openings: the stories frontier's 2,000 training openings (bench/prompts/make_story_prompts_large.py)
#   round 1:   the draft layer and head on the model's own Jacobi trajectories (bench/draft_head.sh DRAFT_LAYER=1)
#   rounds 2-3: the chain's first two steps end to end (CHAIN=2 CHAIN_ROWS=3), from the layer at lr 1e-3
#   rounds 4-8: one step more a round, every step end to end (CHAIN=3..7, CHAIN_ROWS=CHAIN+1), marked for depth 7
#   then the draft tensors are split off (jf convert --split-draft) and checked against the model.
# Each round is judged on the 100 held-out openings (WORKDIR/eval_*.json): Jacobi 1.52 -> 2.53 tokens a
# forward (x2.44 the base's). About 35 minutes with one thread; interrupted, it goes on where it stopped.
# Usage: scripts/train_stories_draft.sh [WORKDIR] [OUT] [THREADS]   (JF=path/to/jf to run another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/jf-stories-draft}"
out="${2:-models/stories260K.draft.gguf}"
threads="${3:-1}"
base=../shared/models/stories260K/stories260K.gguf
[ -s "$base" ] || { echo "train_stories_draft.sh: $base not found (../shared beside the repository)" >&2; exit 1; }
export JF="${JF:-build/bin/jf}" STORIES=1 DRAFT_LAYER=1
[ -x "$JF" ] || scripts/build.sh
mkdir -p "$work"
[ -s "$work/prompts.jsonl" ] || python3 bench/prompts/make_story_prompts_large.py "$work/prompts.jsonl" 2000
ROUNDS=1 bench/draft_head.sh "$base" "$base" "$work/prompts.jsonl" "$work" layer "$threads"
CHAIN=2 CHAIN_ROWS=3 ROUNDS=2 FIRST_LR=1e-3 bench/draft_head.sh "$work/layer.gguf" "$base" "$work/prompts.jsonl" "$work" chain "$threads"
from="$work/chain-r2.gguf"
for c in 3 4 5 6 7; do
  CHAIN=$c CHAIN_ROWS=$((c + 1)) ROUNDS=1 FIRST_LR=1e-3 bench/draft_head.sh "$from" "$base" "$work/prompts.jsonl" "$work" "chain$c" "$threads"
  from="$work/chain$c.gguf"
done
"$JF" convert -m "$from" -t "$threads" -o "$work/split-base.gguf" --split-draft "$work/split.draft.gguf"
"$JF" inspect -m "$base" --draft "$work/split.draft.gguf" | grep "draft"  # refused unless it fits the model
cp "$work/split.draft.gguf" "$out.tmp" && mv "$out.tmp" "$out"
echo "wrote $out"
