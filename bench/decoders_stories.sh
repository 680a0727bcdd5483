#!/usr/bin/env bash
# Decoder comparison on stories260K with the 50 story openings: a parameter sweep (1 thread) to find each
# strategy's best setting, then the best settings with 1 and 2 threads. Greedy, 128 new tokens.
# Usage: bench/decoders_stories.sh [JF_BINARY] [MODEL]
set -euo pipefail
jf="${1:-build/bin/jf}"
model="${2:-../shared/models/stories260K/stories260K.gguf}"
prompts="$(dirname "$0")/prompts/stories50.jsonl"
sweep="ar"
for n in 2 3 4 6 8; do sweep+=",jacobi:block=$n,jacobi:block=$n:window-mode=running"; done
for w in 1 2 3 4; do for g in 1 2 4; do sweep+=",lookahead:W=$w:N=2:G=$g,lookahead:W=$w:N=3:G=$g"; done; done
for d in 1 2 3 4 6 8; do sweep+=",pld:draft-max=$d,pld:draft-max=$d:ngram-max=2,pld:draft-max=$d:draft-policy=fixed,pld:draft-max=$d:ngram-max=2:draft-policy=fixed"; done
for n in 3 4 6; do for p in 0 4; do sweep+=",multiblock:block=$n:pool=$p,multiblock:block=$n:K=3:r=0.5:pool=$p"; done; done
echo "## sweep, 1 thread"
"$jf" bench -m "$model" --prompts "$prompts" -n 128 -t 1 --decoders "$sweep" --json /tmp/jf_sweep.json
best=$(python3 - <<'PY'
import json
s = json.load(open("/tmp/jf_sweep.json"))["summary"]
best = {}
for row in s:
    name = row["decoder"].split(":")[0]
    if name not in best or row["tps"] > best[name]["tps"]:
        best[name] = row
print(",".join(best[k]["decoder"] for k in ["ar", "jacobi", "lookahead", "pld", "multiblock"] if k in best))
PY
)
for t in 1 2; do
  echo; echo "## best settings, $t thread(s)"
  "$jf" bench -m "$model" --prompts "$prompts" -n 128 -t "$t" --decoders "$best"
done
