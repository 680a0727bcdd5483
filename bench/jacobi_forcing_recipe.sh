#!/usr/bin/env bash
# Jacobi Forcing recipes side by side, judged on held-out data only (docs/TRAINING.md "The frontier").
#   stories: stories260K; 2,000 templated story openings (disjoint from the 100 held out); held-out text:
#            the TinyStories validation sample; held-out prompts: bench/prompts/stories_holdout100.jsonl.
#   code:    jf's default code model (models/pycode-ar-q8_0.gguf); 2,400 function openings of its training
#            corpus; held-out text and 100 openings: the packages it never saw (scripts/pycode_corpus.sh).
# Data: trajectories of the base at n = 16 (128 tokens) -> packed (linear schedule fitted to each response, NC,
# looping responses dropped) per distinct set of pack flags; a corpus of the base's own samples (temperature 1,
# 256 tokens each, jf sample; SAMPLES_COUNT samples, default 2,000 for stories and 12,000 for code).
# PROMPT_COUNT sets how many training openings a new WORKDIR gets (default 2,000 stories, 2,400 code).
# Each variant trains one epoch (every packed sequence once; the step count follows its --accum) and is
# judged by jf eval against the base (WORKDIR/eval_NAME.json); `jf frontier` draws them.
# Usage: bench/jacobi_forcing_recipe.sh stories|code WORKDIR THREADS VARIANT...
#   VARIANT = name:lr:ar_weight:train flags[:pack flags[:FROM[@BLOCK]]]   (commas for spaces; BASE is the base
#             model, SAMPLES the sampled corpus as --corpus/--doc-sep), e.g.
#             "k2:3e-4:1:--teacher,BASE,--consistency-rows,2,SAMPLES,--text-weight,4:--context-noise-cap,0.5"
#             FROM: a progressive round, trained from variant FROM on trajectories that FROM's model collects
#             at n = BLOCK (default 16); BASE stays the original base.
#   "merge:NAME:ALPHA" merges the base with variant NAME; "model:NAME:PATH" judges a model file as it is.
#   Runs use seed 1; "--seed,N" in a variant's train flags (and its pack flags) gives another draw.
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
which="$1"
work="$2"
threads="$3"
shift 3
mkdir -p "$work"
case "$which" in
  stories)
    base=../shared/models/stories260K/stories260K.gguf
    text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
    holdout=bench/prompts/stories_holdout100.jsonl
    text_flags=()
    samples_count="${SAMPLES_COUNT:-2000}"
    [ -s "$work/prompts.jsonl" ] || python3 bench/prompts/make_story_prompts_large.py "$work/prompts.jsonl" "${PROMPT_COUNT:-2000}"
    ;;
  code)
    base=models/pycode-ar-q8_0.gguf
    source scripts/pycode_corpus.sh
    [ ${#pycode_heldout[@]} -gt 0 ] || { echo "no held-out Python packages ($pycode_heldout_names) under $pycode_site" >&2; exit 1; }
    text="$work/heldout.py.txt"
    holdout="$work/heldout_prompts.jsonl"
    text_flags=(--max-text-tokens 30000 --window 512)
    samples_count="${SAMPLES_COUNT:-12000}"
    [ -s "$text" ] || find "${pycode_heldout[@]}" -name '*.py' | sort | xargs cat >"$text"
    [ -s "$holdout" ] || python3 scripts/code_prompts.py --count 100 --context 8 -o "$holdout" "${pycode_heldout[@]}"
    [ -s "$work/prompts.jsonl" ] ||
      python3 scripts/code_prompts.py --count "${PROMPT_COUNT:-2400}" --context 8 -o "$work/prompts.jsonl" "${pycode_corpus[@]}"
    ;;
  *) echo "first argument: stories or code" >&2; exit 2 ;;
esac

"$jf" collect -m "$base" --prompts "$work/prompts.jsonl" --block 16 -n 128 -t "$threads" -o "$work/traj.jsonl" 2>&1 | tail -1
mkdir -p "$work/samples"
[ -s "$work/samples/samples.txt" ] || "$jf" sample -m "$base" --prompts "$work/prompts.jsonl" --count "$samples_count" -n 256 \
  --temp 1 --seed 1 -t "$threads" -o "$work/samples/samples.txt"

packed() {  # trajectories block pack-flags (commas for spaces) -> the packed file, made once per distinct input
  local key file
  key=$(echo "$(basename "$1" .jsonl)_${3:-default}" | tr -c 'A-Za-z0-9.\n' '_')
  file="$work/packed_$key.jsonl"
  [ -s "$file" ] || "$jf" pack --traj "$1" --schedule linear --window "$2" --mask nc --max-len 1024 \
    $(echo "${3:-}" | tr ',' ' ') -o "$file" >&2
  echo "$file"
}

evaluate() {  # name model
  [ -s "$work/eval_$1.json" ] || "$jf" eval -m "$2" --base "$base" --text "$text" "${text_flags[@]}" --prompts "$holdout" \
    -n 128 -t "$threads" --json >"$work/eval_$1.json"
}

evaluate base "$base"
for v in "$@"; do
  IFS=: read -r name a b c d e <<<"$v"
  if [ "$name" = merge ]; then
    out="$work/model_${a}_a$b.gguf"
    [ -s "$out" ] || "$jf" merge --alpha "$b" "$base" "$work/model_$a.gguf" "$out"
    evaluate "${a}_a$b" "$out"
    continue
  fi
  if [ "$name" = model ]; then
    evaluate "$a" "$b"
    continue
  fi
  start="$base" traj="$work/traj.jsonl" block=16
  if [ -n "${e:-}" ]; then  # a progressive round
    from="${e%@*}"
    [ "$from" = "$e" ] || block="${e#*@}"
    start="$work/model_$from.gguf" traj="$work/traj_${from}_$block.jsonl"
    "$jf" collect -m "$start" --prompts "$work/prompts.jsonl" --block "$block" -n 128 -t "$threads" -o "$traj" 2>&1 | tail -1
  fi
  data=$(packed "$traj" "$block" "${d:-}")
  extra=$(echo "${c:-}" | tr ',' ' ' | sed "s#BASE#$base#g; s#SAMPLES#--corpus $work/samples --doc-sep \\\\n\\\\n\\\\n#g")
  accum=$(echo "$extra" | sed -n 's/.*--accum \([0-9]*\).*/\1/p')
  [ -n "$accum" ] || { accum=4; extra="$extra --accum 4"; }
  [ -s "$work/model_$name.gguf" ] || "$jf" train -m "$start" --objective jacobi-forcing --data "$data" \
    --steps $(($(wc -l <"$data") / accum)) --lr "$a" --min-lr "$(python3 -c "print($a / 10)")" --ar-weight "$b" --seed 1 \
    $extra --log-every 50 -t "$threads" -o "$work/model_$name.gguf" >"$work/train_$name.log" 2>&1
  tail -1 "$work/train_$name.log"
  evaluate "$name" "$work/model_$name.gguf"
done
