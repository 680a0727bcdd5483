#!/usr/bin/env bash
# Installs what the server and web page tests need from Debian when missing: Node.js and npm (the test
# runner and the openai / playwright-core npm packages) and Chromium (the headless browser).
set -euo pipefail
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
command -v chromium >/dev/null || missing+=(chromium)
exec "$(dirname "$0")/apt-install.sh" "Debian packages for the server tests" ${missing[@]+"${missing[@]}"}
