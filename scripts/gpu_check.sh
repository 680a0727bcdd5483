#!/usr/bin/env bash
# The device check: run on a lent GPU machine from the repository root with the bundle scripts/gpu_bundle.sh
# built here (carry gpu-bundle), in at most ~8 minutes. It lists the devices, runs the Vulkan tests on the
# real driver, then benchmarks jf on the GPU (llama-1b-shaped files made there with jf random; decode and the
# cost of a forward by rows), and writes $OUT/report.md (or --out DIR).
#   scripts/gpu_check.sh                 on the device machine (bundle in gpu-bundle/)
#   scripts/gpu_check.sh --local         every step here on lavapipe with small files and this build's
#                                        binaries (run by the tests, so a mistake never costs device time)
#   SHAPES=tiny:q8_0 TOKENS=8 scripts/gpu_check.sh   a device run's steps on the bundle, here on lavapipe
# On the device: BUNDLE carried, e.g. run(command="scripts/gpu_check.sh", carry=["gpu-bundle"], timeout_s=540);
# where `ldconfig -p | grep libvulkan` finds nothing, the bundle's loader is used; NVIDIA's ICD is looked for in
# the usual places (VK_DRIVER_FILES overrides).
set -uo pipefail
cd "$(dirname "$0")/.."
local=0
out="${OUT:-out/gpu-check}"
bundle=gpu-bundle
while [ $# -gt 0 ]; do
  case "$1" in
    --local) local=1 ;;
    --out) out="$2"; shift ;;
    --bundle) bundle="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument '$1' (use --local, --out DIR, --bundle DIR)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
report="$out/report.md"
log="$out/log.txt"
: > "$log"
if [ "$local" = 1 ]; then
  bin=build/bin
  models=models
  stories=../shared/models/stories260K/stories260K.gguf
  vocab=../shared/models/tokenizers/ggml-vocab-llama-spm.gguf
  text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
  shapes=(tiny:q4_k_m tiny:q8_0)  # jf random preset:type files to benchmark
  tokens=16                  # tokens per bench prompt
  gtest_filter='*Stories260K*:*q8_0_K256*:*Presets/VulkanArch.BatchInvariantAndCloseToTheCpu/tiny'
else
  bin="$bundle/bin"
  models="$bundle/models"
  stories="$bundle/models/stories260K/stories260K.gguf"
  vocab="$bundle/models/ggml-vocab-llama-spm.gguf"
  text="$bundle/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt"
  # (a llama-1b Q4_K_M takes the reference quantizer ~3 min on one core; an 8B one would not fit the check)
  read -r -a shapes <<< "${SHAPES:-llama-1b:q8_0 llama-1b:q4_k_m llama-8b:q8_0}"
  tokens="${TOKENS:-64}"
  gtest_filter='*'
  export LD_LIBRARY_PATH="$PWD/$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # NVIDIA's Vulkan driver where the machine has it but the loader does not find it by itself.
  for icd in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
    if [ -e "$icd" ] && [ -z "${VK_DRIVER_FILES:-}" ]; then export VK_DRIVER_FILES="$icd"; fi
  done
fi
jf="$bin/jf"
[ -x "$jf" ] || { echo "gpu_check.sh: $jf not found (build it, or scripts/gpu_bundle.sh for a device run)" >&2; exit 1; }
step() { echo "== $*" | tee -a "$log"; }
failures=0
run() {  # run NAME COMMAND...: logged; a failure is counted and reported, the check goes on
  local name="$1"; shift
  local t0=$SECONDS
  if "$@" >> "$log" 2>&1; then echo "| $name | ok | $((SECONDS - t0)) s |" >> "$out/steps.md"
  else echo "| $name | FAILED ($?) | $((SECONDS - t0)) s |" >> "$out/steps.md"; failures=$((failures + 1)); fi
}
: > "$out/steps.md"

step "devices"
"$jf" devices > "$out/devices.txt" 2>&1
cat "$out/devices.txt" >> "$log"
device=$(awk '/^auto/{print $2}' "$out/devices.txt")
if [ "$local" = 1 ] || [ "${device#vulkan}" = "$device" ]; then  # lavapipe (never auto's pick) when no GPU
  device="vulkan:$(awk '/^vulkan:/{sub("vulkan:", "", $1); print $1; exit}' "$out/devices.txt")"
fi
[ "$device" = "vulkan:" ] && { echo "gpu_check.sh: no Vulkan device" | tee -a "$log"; exit 1; }
export JF_TEST_VULKAN_DEVICE="${device#vulkan:}"

step "tests on $device"
export JF_SHARED="$PWD/${bundle}" JF_MODELS_DIR="$PWD/$models"
[ "$local" = 1 ] && export JF_SHARED="$PWD/../shared"
for t in test_vulkan_kernels test_vulkan_ops test_vulkan_forward test_vulkan_decoders; do
  run "$t" "$bin/$t" --gtest_filter="$gtest_filter" --gtest_brief=1
done

step "benchmarks on $device"
bench_table() {  # bench_table FILE: the decoders table of a jf bench run
  grep '^|' "$1" || true
}
printf '{"prompt": "def quicksort(items):"}\n{"prompt": "class Stack:\\n    def __init__(self):"}\n' > "$out/prompts.jsonl"
run "bench code model" sh -c "'$jf' bench -m '$models/pycode-ar-q8_0.gguf' --device $device --prompts '$out/prompts.jsonl' -n $tokens \
  --decoders ar,jacobi:block=16:draft-policy=fixed,multiblock:block=16:draft-policy=fixed,lookahead,pld > '$out/bench_code.txt'"
work="$(mktemp -d)"
for entry in "${shapes[@]}"; do
  shape="${entry%%:*}" type="${entry#*:}" file="$work/$entry.gguf"
  run "jf random $shape $type" "$jf" random --preset "$shape" --type "$type" --vocab-from "$vocab" -o "$file"
  run "bench $shape $type" sh -c "'$jf' bench -m '$file' --device $device --prompts '$out/prompts.jsonl' -n 32 --decoders ar \
    --row-cost measure > '$out/bench_${shape}_${type}.txt'"
  rm -f "$file"
done
head -c 20000 "$text" > "$out/text.txt"
run "perplexity stories260K" sh -c "'$jf' perplexity -m '$stories' --device $device -f '$out/text.txt' --window 256 > '$out/ppl_gpu.txt' \
  && '$jf' perplexity -m '$stories' --device cpu -f '$out/text.txt' --window 256 > '$out/ppl_cpu.txt'"
rm -rf "$work"

{
  echo "# jf device check"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $( [ "$local" = 1 ] && echo 'local run on lavapipe' || echo 'device run'), device $device"
  echo
  echo '```'
  cat "$out/devices.txt"
  echo '```'
  echo
  echo "| step | result | time |"
  echo "|---|---|---|"
  cat "$out/steps.md"
  for f in "$out"/bench_*.txt; do
    [ -e "$f" ] || continue
    echo
    echo "## $(basename "$f" .txt)"
    echo
    head -3 "$f" | grep -v '^$' || true
    echo
    bench_table "$f"
    grep "time(m) / time(1)" "$f" || true
  done
  echo
  echo "## perplexity (stories260K)"
  echo
  echo "device: $(tail -1 "$out/ppl_gpu.txt" 2>/dev/null)"
  echo "cpu: $(tail -1 "$out/ppl_cpu.txt" 2>/dev/null)"
} > "$report"
echo "gpu_check: $failures failed steps; report in $report"
[ "$failures" = 0 ]
