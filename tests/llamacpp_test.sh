#!/usr/bin/env bash
# jf against llama.cpp on the same files (tests/llamacpp/interop.test.mjs): llama.cpp's prebuilt CPU libraries
# come from the node-llama-cpp npm package (scripts/install-llamacpp.sh); its quantizer and chat templates are
# driven by llamacpp_tool.
# Usage: llamacpp_test.sh JF_BINARY LLAMACPP_TOOL SHARED_DIR
set -euo pipefail
jf="$1"
tool="$2"
shared="$3"
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -e "$shared/models/stories260K/stories260K.gguf" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but $shared/models/stories260K is missing"; exit 1; fi
  echo "SKIPPED: ../shared/models/stories260K not found (set JF_SHARED_DIR)"; exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but llama.cpp's prebuilt libraries here are x86-64 only"; exit 1; fi
  echo "SKIPPED: llama.cpp's prebuilt libraries used here are x86-64 only"; exit 0
fi
eval "$("$here/../scripts/install-llamacpp.sh")"
mkdir -p test-output
export JF_BIN="$jf" JF_LLAMACPP_TOOL="$tool" JF_LIBLLAMA JF_SHARED="$shared" \
  JF_NODE_MODULES="$JF_LLAMACPP_MODULES" JF_TEST_OUTPUT="$PWD/test-output"
exec "$JF_LLAMACPP_NODE" --test --test-concurrency=1 "$here/llamacpp/interop.test.mjs"
