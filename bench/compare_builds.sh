#!/usr/bin/env bash
# forward_cost of two builds on one model, alternating runs (a shared, noisy machine drifts between runs),
# then per M the fastest of the runs' medians for each build and their ratio.
#   bench/compare_builds.sh BEFORE_BIN AFTER_BIN MODEL.gguf ROUNDS [forward_cost options...]
# e.g. bench/compare_builds.sh /tmp/main-build/bin/forward_cost build/bin/forward_cost l1b-q6k.gguf 3 -t 2 --reps 5 --ms 1,2,4,8,16
set -euo pipefail
before=$1 after=$2 model=$3 rounds=$4
shift 4
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    echo "round $r $side: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$bin" -m "$model" "$@" >"$out/$side.$r"
  done
done
grep -h "bandwidth bound" "$out/after.1"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| M | before ms | after ms | after / before |"
echo "|---|---|---|---|"
# Table rows of forward_cost: | M | ms/forward | ...; per build and M the fastest run.
for side in before after; do
  cat "$out"/$side.* | awk -F'|' -v s=$side '$2 ~ /^ *[0-9]+ *$/ { m = $2 + 0; t = $3 + 0; if (!(m in best) || t < best[m]) best[m] = t }
    END { for (m in best) print m, s, best[m] }'
done | sort -n -k1,1 | awk '{ t[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
  END { for (i = 0; i < n; i++) { m = order[i]
        printf "| %d | %.2f | %.2f | %.2f |\n", m, t[m, "before"], t[m, "after"], t[m, "after"] / t[m, "before"] } }'
echo
echo "raw runs: $out" >&2
