#!/usr/bin/env bash
# Builds jf and generates text with the default model. Arguments are passed to `jf generate`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/build.sh
model="${JF_MODEL:-../shared/models/stories260K/stories260K.gguf}"
if [ ! -e "$model" ]; then
  echo "jf: default model '$model' not found; run with JF_MODEL=/path/to/model.gguf ./run.sh" >&2
  exit 1
fi
exec build/bin/jf generate -m "$model" -p "Once upon a time" -n 200 "$@"
