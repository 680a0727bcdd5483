#!/usr/bin/env bash
# A draft head for a code model (docs/TRAINING.md "A draft head"): the model's Jacobi trajectories on the
# training openings (n = 16, 128 tokens), packed with the clean-context mask, one epoch of
# `jf train --objective draft-head` (the first noisy row after each mismatch, per-block normalisation, lr 3e-3
# cosine to 3e-4, bf16 products); then a second round on the trajectories the model with its head collects (its
# own drafts), from that head at lr 1e-3. Each round is judged by jf eval against BASE on the held-out packages,
# as the frontier table's variants are: WORKDIR/eval_NAME.json and eval_NAME-r2.json.
#   bench/draft_head.sh MODEL BASE OPENINGS.jsonl WORKDIR NAME [THREADS]
# DRAFT_LAYER=1 puts a draft layer under the head (`jf train --draft-layer`); STORIES=1 judges a stories model
# as the stories frontier (OPENINGS: `bench/jacobi_forcing_recipe.sh stories`'s 2,000 training openings);
# ROUNDS=N runs N rounds (default 2), each from the last at lr 1e-3: eval_NAME-rN.json. CHAIN=N (with DRAFT_LAYER=1)
# trains the layer's chain too (`jf train --draft-chain N`, the first two noisy rows after each mismatch: its
# first step; CHAIN_ROWS=N+1 trains all N steps end to end);
# FIRST_LR sets the first round's learning rate (default 3e-3).
# e.g. the base alone:       bench/draft_head.sh models/pycode-ar-q8_0.gguf models/pycode-ar-q8_0.gguf /tmp/jfc3/prompts.jsonl /tmp/dh base
#      the shipped fine-tune: bench/draft_head.sh models/pycode-jf-q8_0.gguf models/pycode-ar-q8_0.gguf /tmp/jfc3/prompts.jsonl /tmp/dh shipped
#      a draft layer:         DRAFT_LAYER=1 bench/draft_head.sh models/pycode-ar-q8_0.gguf models/pycode-ar-q8_0.gguf /tmp/jfc3/prompts.jsonl /tmp/dh layer
# (OPENINGS: the frontier's 7,200 training openings, `PROMPT_COUNT=7200 bench/jacobi_forcing_recipe.sh code`.)
# About 10 minutes a round for 7,200 openings with two threads on machine A.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 5 ] || { sed -n 2,16p "$0" >&2; exit 2; }
model="$1" base="$2" openings="$3" work="$4" name="$5" threads="${6:-2}"
jf="${JF:-build/bin/jf}"
mkdir -p "$work"
text_flags=(--max-text-tokens 30000 --window 512)
if [ "${STORIES:-0}" = 1 ]; then  # judged as the stories frontier: the TinyStories validation sample, 100 openings
  text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
  holdout=bench/prompts/stories_holdout100.jsonl
  text_flags=()
else
  source scripts/pycode_corpus.sh
  [ ${#pycode_heldout[@]} -gt 0 ] || { echo "no held-out Python packages ($pycode_heldout_names) under $pycode_site" >&2; exit 1; }
  text="$work/heldout.py.txt"
  holdout="$work/heldout_prompts.jsonl"
  [ -s "$text" ] || find "${pycode_heldout[@]}" -name '*.py' | sort | xargs cat >"$text"
  [ -s "$holdout" ] || python3 scripts/code_prompts.py --count 100 --context 8 -o "$holdout" "${pycode_heldout[@]}"
fi

round() {  # START OUT LR: trajectories of START (with its head, if it has one), packed, one epoch into OUT
  local start="$1" out="$2" lr="$3"
  local traj="$out.traj.jsonl" packed="$out.packed.jsonl"
  [ -s "$packed" ] || "$jf" collect -m "$start" --prompts "$openings" --block 16 -n 128 -t "$threads" -o "$traj" 2>&1 | tail -1
  [ -s "$packed" ] || "$jf" pack --traj "$traj" --schedule linear --window 16 --mask clean-context --max-len 1024 \
    --max-repeat4 1 -o "$packed" 2>&1 | tail -1
  local layer=() rows=1
  [ "${DRAFT_LAYER:-0}" = 1 ] && layer=(--draft-layer)
  [ "${CHAIN:-0}" -gt 0 ] && layer+=(--draft-chain "$CHAIN") && rows="${CHAIN_ROWS:-2}"
  [ -s "$out" ] || "$jf" train -m "$start" --objective draft-head "${layer[@]}" --data "$packed" --steps $(($(wc -l <"$packed") / 4)) \
    --accum 4 --lr "$lr" --min-lr "$(python3 -c "print($lr / 10)")" --consistency-rows $rows --consistency-norm per-block \
    --matmul bf16 --log-every 100 -t "$threads" -o "$out" >"$out.log" 2>&1
  tail -2 "$out.log"
}
evaluate() {  # MODEL NAME
  [ -s "$work/eval_$2.json" ] || "$jf" eval -m "$1" --base "$base" --text "$text" "${text_flags[@]}" \
    --prompts "$holdout" -n 128 -t "$threads" --json >"$work/eval_$2.json"
  python3 - "$work/eval_$2.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
t, g = j["text"], j["greedy"]
print("%s: agreement %.3f, KL %.3f, perplexity x%.3f, %s, repeated 4-grams %.3f (base %.3f)" % (
    sys.argv[1], t["top1_agreement"], t["kl_base_model"], t["perplexity_ratio"],
    ", ".join("%s %.2f (x%.2f)" % (d["decoder"], d["tpf_model"], d["tpf_ratio"]) for d in j["decoders"]),
    g["repeat4_model"], g["repeat4_base"]))
PY
}

round "$model" "$work/$name.gguf" "${FIRST_LR:-3e-3}"
evaluate "$work/$name.gguf" "$name"
previous="$work/$name.gguf"
for ((r = 2; r <= ${ROUNDS:-2}; r++)); do
  round "$previous" "$work/$name-r$r.gguf" 1e-3
  evaluate "$work/$name-r$r.gguf" "$name-r$r"
  previous="$work/$name-r$r.gguf"
done
