#!/usr/bin/env bash
# Jacobi Forcing fine-tune of jf's default code model (after scripts/train_default_model.sh):
# trajectories of the AR model on 1,000 function openings from the Python standard library, packing with
# the linear schedule and NC mask, training, and Q8_0 export to models/.
# Usage: scripts/train_default_jf.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
jf=build/bin/jf
work="${1:-/tmp/jf-default}"
[ -s "$work/pycode-ar.gguf" ] || { echo "run scripts/train_default_model.sh first" >&2; exit 1; }

# Prompts: the signature (and the first docstring line, if any) of top-level functions, sorted, deterministic.
python3 - "$work/code_prompts.jsonl" <<'PY'
import json, pathlib, sys
out = []
for f in sorted(pathlib.Path("/usr/lib/python3.11").rglob("*.py")):
    try:
        lines = f.read_text(encoding="utf-8").split("\n")
    except (UnicodeDecodeError, OSError):
        continue
    for i, line in enumerate(lines):
        if line.startswith("def ") and line.rstrip().endswith(":"):
            p = line + "\n"
            if i + 1 < len(lines) and lines[i + 1].strip().startswith(('"""', "'''")):
                p += lines[i + 1] + "\n"
            out.append(p)
step = max(1, len(out) // 1000)
with open(sys.argv[1], "w") as fh:
    for p in out[::step][:1000]:
        fh.write(json.dumps({"prompt": p}) + "\n")
PY
"$jf" collect -m "$work/pycode-ar.gguf" --prompts "$work/code_prompts.jsonl" --block 16 -n 128 -o "$work/traj16.jsonl" 2>&1 | tail -1
"$jf" pack --traj "$work/traj16.jsonl" --schedule linear --window 16 --mask nc --max-len 1024 -o "$work/packed16.jsonl"
"$jf" train -m "$work/pycode-ar.gguf" --objective jacobi-forcing --data "$work/packed16.jsonl" --steps 1000 --accum 4 \
  --lr 1e-3 --min-lr 1e-4 --seed 1 --log-every 100 -o "$work/pycode-jf.gguf" 2>&1 | tee "$work/train-jf.log"
"$jf" convert -m "$work/pycode-jf.gguf" --type q8_0 -o models/pycode-jf-q8_0.gguf
