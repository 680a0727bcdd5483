#!/usr/bin/env bash
# Prints the HAProxy configuration for jf serve replicas.
# Usage: deploy/haproxy-config.sh BIND REPLICA... (BIND e.g. :8080; a replica is HOST:PORT)
# Example: deploy/haproxy-config.sh :8080 10.0.0.11:8080 10.0.0.12:8080 > haproxy.cfg; haproxy -f haproxy.cfg
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BIND HOST:PORT..." >&2; exit 2; }
bind="$1"
shift
sed -e "s|@BIND@|$bind|" "$(dirname "$0")/haproxy.cfg.in"
i=0
for replica in "$@"; do
  i=$((i + 1))
  echo "    server jf$i $replica"
done
