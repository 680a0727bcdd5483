#!/usr/bin/env bash
# Data-parallel training: `mpirun -np 2 jf train --accum A` must write the same bytes as one process with
# --accum 2A. Usage: mpi_test.sh JF_BINARY SHARED_DIR
set -u
jf="$1"; shared="$2"
model="$shared/models/stories260K/stories260K.gguf"
if ! command -v mpirun >/dev/null; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but mpirun is missing"; exit 1; fi
  echo "SKIPPED: mpirun not installed"; exit 0
fi
if [ ! -e "$model" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but $model is missing"; exit 1; fi
  echo "SKIPPED: $model not found"; exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '{"prompt": "Once upon a time, there was a little dog."}\n{"prompt": "Lily found a red ball in the park."}\n{"prompt": "Tom and Sam went to the sea."}\n' > "$tmp/p.jsonl"
"$jf" collect -m "$model" --prompts "$tmp/p.jsonl" --block 8 -n 48 -o "$tmp/t.jsonl" 2>/dev/null &&
  "$jf" pack --traj "$tmp/t.jsonl" -o "$tmp/packed.jsonl" --window 4 2>/dev/null || { echo "FAIL: collect/pack"; exit 1; }
common=(train -m "$model" --data "$tmp/packed.jsonl" --steps 4 --lr 1e-3 -t 1 --log-every 100)
"$jf" "${common[@]}" --accum 4 -o "$tmp/one.gguf" 2>/dev/null || { echo "FAIL: single-process run"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 "$jf" "${common[@]}" --accum 2 -o "$tmp/two.gguf" >/dev/null 2>"$tmp/mpi.err" || { echo "FAIL: mpirun"; cat "$tmp/mpi.err"; exit 1; }
if cmp -s "$tmp/one.gguf" "$tmp/two.gguf" && cmp -s "$tmp/one.gguf.ckpt.gguf" "$tmp/two.gguf.ckpt.gguf"; then
  echo "ok: 2 processes x 2 micro-batches == 1 process x 4 micro-batches, byte for byte"
else
  echo "FAIL: weights differ between mpirun -np 2 and a single process"; exit 1
fi
