#!/usr/bin/env bash
# HTTP tests of the real `jf serve` (tests/serve/*.test.mjs) with Node's test runner and the official
# `openai` npm client, and the web page in headless Chromium driven by `playwright-core`; the npm packages
# are installed into a cache directory on first use.
# Usage: serve_test.sh JF_BINARY SHARED_DIR
set -euo pipefail
jf="$1"
shared="$2"
here="$(cd "$(dirname "$0")" && pwd)"
model="$shared/models/stories260K/stories260K.gguf"
if [ ! -e "$model" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but $model is missing"; exit 1; fi
  echo "SKIPPED: ../shared/models/stories260K not found (set JF_SHARED_DIR)"; exit 0
fi
"$here/../scripts/install-web-test-deps.sh"
cache="${JF_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jf-node}"
# One install names every package the tests use: an install with --no-save removes the packages it does not name.
if [ ! -e "$cache/node_modules/openai/package.json" ] || [ ! -e "$cache/node_modules/playwright-core/package.json" ] ||
   [ ! -e "$cache/node_modules/ajv/package.json" ] || [ ! -e "$cache/node_modules/json-schema-test-suite/package.json" ]; then
  mkdir -p "$cache"
  echo "installing the openai, playwright-core, ajv and json-schema-test-suite npm packages into $cache"
  (cd "$cache" && npm install --no-audit --no-fund --silent --no-save openai@5 playwright-core@1 ajv@8 json-schema-test-suite@0.0.10 >/dev/null)
fi
mkdir -p test-output
export JF_BIN="$jf" JF_MODEL="$model" JF_NODE_MODULES="$cache/node_modules" JF_TEST_OUTPUT="$PWD/test-output"
files=("$here"/serve/*.test.mjs)
[ -n "${JF_SERVE_TESTS:-}" ] && files=("$here/serve/$JF_SERVE_TESTS")
exec node --test --test-concurrency=1 "${files[@]}"
