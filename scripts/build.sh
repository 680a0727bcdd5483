#!/usr/bin/env bash
# Configures and builds jf into build/ (Release, optimised for this CPU). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "${JF_JOBS:-2}"
