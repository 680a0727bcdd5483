#!/usr/bin/env bash
# Installs the Debian packages jf needs to build and test, when they are missing. Safe to rerun.
set -euo pipefail
packages=(g++ cmake make pkg-config libgtest-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libopenmpi-dev openmpi-bin libcpp-httplib-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "jf: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "jf: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
  { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
