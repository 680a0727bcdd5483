#!/usr/bin/env bash
# Installs the given Debian packages (as root, or through sudo), refreshing the package lists only when a
# first attempt fails. Usage: apt-install.sh WHY PACKAGE...
set -euo pipefail
why="$1"
shift
[ $# -eq 0 ] && exit 0
echo "jf: installing $why: $*" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "jf: need root (or sudo) to install: $*" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
  { $sudo apt-get update -qq && $sudo apt-get install -y --no-install-recommends "$@"; }
