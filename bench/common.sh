# Sourced by the benchmark scripts that measure the llama-1b-shaped Q4_K_M file: checks the tools they run and
# makes the model when it is missing. Needs $bin (the build's bin directory) and $model set.
#   require_tools SCRIPT_NAME TOOL...
#   ensure_l1b_q4km SCRIPT_NAME
require_tools() {
  local name="$1"
  shift
  for tool in "$@"; do
    [ -x "$bin/$tool" ] || { echo "$name: $bin/$tool not found (build first: scripts/build.sh)" >&2; exit 1; }
  done
}

ensure_l1b_q4km() {
  [ -f "$model" ] && return
  local vocab=../shared/models/tokenizers/ggml-vocab-llama-spm.gguf
  [ -f "$vocab" ] || { echo "$1: $model missing and $vocab not found to make it" >&2; exit 1; }
  "$bin/jf" random --preset llama-1b --type q4_k_m --vocab-from "$vocab" -o "$model" >&2
}
