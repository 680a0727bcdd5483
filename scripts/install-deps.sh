#!/usr/bin/env bash
# Installs the Debian packages jf needs to build and test, when they are missing. Safe to rerun.
set -euo pipefail
packages=(g++ cmake make pkg-config libvulkan-dev glslc spirv-tools mesa-vulkan-drivers libgtest-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libopenmpi-dev openmpi-bin libboost-dev haproxy libedit-dev libpng-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
exec "$(dirname "$0")/apt-install.sh" "missing Debian packages" "${missing[@]}"
