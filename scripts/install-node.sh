#!/usr/bin/env bash
# Installs Node.js and npm from Debian when `node` is missing (the server and web page tests need them).
set -euo pipefail
command -v node >/dev/null && command -v npm >/dev/null && exit 0
echo "jf: installing Node.js and npm (Debian packages nodejs, npm)" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "jf: need root (or sudo) to install nodejs npm" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends nodejs npm >/dev/null 2>&1 ||
  { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends nodejs npm; }
