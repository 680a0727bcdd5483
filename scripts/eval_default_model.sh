#!/usr/bin/env bash
# Judges a fine-tune of the default code model against its AR base on Python it never saw (the held-out
# packages of scripts/pycode_corpus.sh, read if present): teacher-forced agreement, KL and perplexities on the
# held-out sources, greedy continuations of 100 held-out function openings (jf eval), and Jacobi /
# multiblock tokens per forward on 40 of them (jf bench), and how often the model loops when sampled as ./run.sh
# samples (scripts/demo_loops.py on the 100 openings).
# Usage: scripts/eval_default_model.sh MODEL.gguf BASE.gguf [WORKDIR]   (prints JSON lines; ~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
model="$1"
base="$2"
work="${3:-/tmp/jf-default}"
mkdir -p "$work"
source scripts/pycode_corpus.sh
[ ${#pycode_heldout[@]} -gt 0 ] || { echo "no held-out Python packages ($pycode_heldout_names) under $pycode_site" >&2; exit 1; }
[ -s "$work/heldout.py.txt" ] || find "${pycode_heldout[@]}" -name '*.py' | sort | xargs cat >"$work/heldout.py.txt"
[ -s "$work/heldout_prompts.jsonl" ] ||
  python3 scripts/code_prompts.py --count 100 --context 8 -o "$work/heldout_prompts.jsonl" "${pycode_heldout[@]}"
"$jf" eval -m "$model" --base "$base" --text "$work/heldout.py.txt" --max-text-tokens 60000 --window 512 \
  --prompts "$work/heldout_prompts.jsonl" -n 128 --json
"$jf" bench -m "$model" --prompts "$work/heldout_prompts.jsonl" --limit 40 -n 128 \
  --decoders ar,jacobi:block=16:draft-policy=fixed,multiblock:block=16:draft-policy=fixed --json "$work/bench-$(basename "$model" .gguf).json" >/dev/null
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps({s['decoder']: round(s['tpf'],3) for s in j['summary']}))" \
  "$work/bench-$(basename "$model" .gguf).json"
python3 scripts/demo_loops.py "$jf" "$model" "$work/heldout_prompts.jsonl"
