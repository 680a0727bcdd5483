#!/usr/bin/env bash
# Builds jf and runs the whole test suite (tests needing ../shared skip visibly when it is absent,
# and fail instead when CI=true).
set -euo pipefail
cd "$(dirname "$0")"
scripts/build.sh
cd build
ctest --output-on-failure -j "${JF_JOBS:-2}" "$@"
