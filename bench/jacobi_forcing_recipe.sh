#!/usr/bin/env bash
# The issue 16 recipe on stories260K: 10,000 templated story openings (disjoint from the 100 held out) ->
# trajectories at n = 16 with the base model -> packed (linear schedule fitted to each response, NC mask)
# -> one epoch per variant (reference consistency normalisation) -> Jacobi and multiblock TPF at n = 16 and jf eval
# against the base on held-out TinyStories text and the 100 held-out openings.
# Usage: bench/jacobi_forcing_recipe.sh WORKDIR [THREADS] VARIANT...
#   VARIANT = name:lr:ar_weight:extra flags (commas for spaces), e.g. "t1e4:1e-4:10:--teacher,BASE"
#   (the word BASE is replaced by the base model's path). "merge:NAME:ALPHA" merges base and NAME instead.
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="$1"
threads="$2"
shift 2
base=../shared/models/stories260K/stories260K.gguf
text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
holdout=bench/prompts/stories_holdout100.jsonl
mkdir -p "$work"
[ -s "$work/prompts10k.jsonl" ] || python3 bench/prompts/make_story_prompts_large.py "$work/prompts10k.jsonl" 10000
"$jf" collect -m "$base" --prompts "$work/prompts10k.jsonl" --block 16 -n 128 -t "$threads" -o "$work/traj.jsonl" 2>&1 | tail -1
[ -s "$work/packed.jsonl" ] || "$jf" pack --traj "$work/traj.jsonl" --schedule linear --window 16 --mask nc --max-len 1024 \
  -o "$work/packed.jsonl"
sequences=$(wc -l <"$work/packed.jsonl")

evaluate() {  # name model
  [ -s "$work/bench_$1.json" ] || "$jf" bench -m "$2" --prompts "$holdout" -n 128 -t "$threads" \
    --decoders ar,jacobi:block=16:draft-policy=fixed,multiblock:block=16:draft-policy=fixed --json "$work/bench_$1.json" >/dev/null
  [ -s "$work/eval_$1.json" ] || "$jf" eval -m "$2" --base "$base" --text "$text" --prompts "$holdout" -n 128 \
    -t "$threads" --json >"$work/eval_$1.json"
}
evaluate base "$base"
for v in "$@"; do
  IFS=: read -r name a b c <<<"$v"
  if [ "$name" = merge ]; then
    out="$work/model_${a}_a$b.gguf"
    [ -s "$out" ] || "$jf" merge --alpha "$b" "$base" "$work/model_$a.gguf" "$out"
    evaluate "${a}_a$b" "$out"
    continue
  fi
  extra=$(echo "${c:-}" | tr ',' ' ' | sed "s#BASE#$base#g")
  # One epoch: every packed sequence once, 4 per step.
  [ -s "$work/model_$name.gguf" ] || "$jf" train -m "$base" --objective jacobi-forcing --data "$work/packed.jsonl" \
    --steps $((sequences / 4)) --accum 4 --lr "$a" --min-lr "$(python3 -c "print($a / 10)")" --ar-weight "$b" $extra \
    --log-every 500 --seed 1 -t "$threads" -o "$work/model_$name.gguf" 2>&1 | tee "$work/train_$name.log" | tail -1
  evaluate "$name" "$work/model_$name.gguf"
done
