#!/usr/bin/env bash
# The device check: run on a lent GPU machine from the repository root with the bundle scripts/gpu_bundle.sh
# built here (carry gpu-bundle), within BUDGET seconds (default 480; a step that would start past it is skipped
# and reported). It lists the devices and times the GPU's read bandwidth; runs the kernel tests first (the
# tiles' row-position invariance, every member of the matrix-kernel family on the benchmarked weight types),
# then `jf tune --kernels` on the benchmark files (the kernels every later step runs), the decoders on the
# shipped models, then benchmarks jf beside llama.cpp's Vulkan build on the same files (random-weight files of
# real shapes made there with jf random: decode tokens/s, the cost of a forward by rows, a 512-token prompt),
# the rest of the Vulkan tests on the real driver, `jf tune` on the GPU, and the CPU at 1-16 threads; writes
# $OUT/report.md, log.txt and results.tar.gz (every step's output; or --out DIR). STEP_MAX caps one step
# (default 150 s). RESUME=1: a follow-up call on the still-warm machine runs only the steps not done before.
#   scripts/gpu_check.sh                 on the device machine (bundle in gpu-bundle/)
#   scripts/gpu_check.sh --local         every jf step here on lavapipe with small files and this build's
#                                        binaries (run by the tests, so a mistake never costs device time)
#   SHAPES=tiny:q8_0 TOKENS=8 scripts/gpu_check.sh   a device run's steps on the bundle, here on lavapipe
#   SKIP='tile*,test_vulkan_*' scripts/gpu_check.sh  steps whose names match a pattern skipped (the step
#                                        table names every step)
#   RESUME=1 BUDGET=150 scripts/gpu_check.sh   on the same warm device machine after a first call: the steps
#                                        its budget left out (the choices, files and driver cache kept)
# On the device (15 minutes a lease, a start ~1.5 of them): run(command="BUDGET=480 scripts/gpu_check.sh",
# carry=["gpu-bundle"], timeout_s=600), then at once (the machine stays warm 30 s) run(command="RESUME=1
# BUDGET=<device seconds left - 70> scripts/gpu_check.sh", same carry), then give_back;
# where `ldconfig -p | grep libvulkan` finds nothing, the bundle's loader is used; NVIDIA's ICD is looked for in
# the usual places (VK_DRIVER_FILES overrides).
set -uo pipefail
cd "$(dirname "$0")/.."
local=0
out="${OUT:-out/gpu-check}"
bundle=gpu-bundle
budget="${BUDGET:-}"
step_max="${STEP_MAX:-}"  # seconds one step may take, so that a slow one cannot starve the rest
while [ $# -gt 0 ]; do
  case "$1" in
    --local) local=1 ;;
    --out) out="$2"; shift ;;
    --bundle) bundle="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument '$1' (use --local, --out DIR, --bundle DIR)" >&2; exit 2 ;;
  esac
  shift
done
# Steps write to a folder of their own; $OUT gets three files (a device call brings back at most 8): the report,
# the log and every step's output in results.tar.gz.
dest="$out"
mkdir -p "$dest"
out="$(mktemp -d)"
deliver() {
  cp "$out/report.md" "$out/log.txt" "$dest/" 2>/dev/null
  # (not the state: the driver's shader cache, NVIDIA's, held more than a device call brings back)
  tar -C "$out" --exclude=./state -czf "$dest/results.tar.gz" . 2>/dev/null
  rm -rf "$out"
}
trap deliver EXIT
# A device's minutes are scarce: 8 minutes, 150 s a step. The local rehearsal shares 2 cores with other tests:
# it may take longer, its steps are the same.
if [ "$local" = 1 ]; then budget="${budget:-2100}" step_max="${step_max:-500}"; else budget="${budget:-480}" step_max="${step_max:-150}"; fi
[ "$local" = 1 ] || bundle="$(cd "$bundle" && pwd)" || { echo "gpu_check.sh: no bundle at $bundle (scripts/gpu_bundle.sh)" >&2; exit 1; }
report="$out/report.md"
log="$out/log.txt"
: > "$log"
ms=1,2,4,8,16,32,64,128  # rows per forward for the cost curves
prefill=512
reps=10
long_context=4096  # attention's cost at a long context: the whole-row kernel against chunks (JF_VULKAN_ATTENTION)
if [ "$local" = 1 ]; then
  bin=build/bin
  models=models
  # lavapipe runs SJD's 32-row forwards of the image model at ~1 token/s: the rehearsal checks the step on the CPU
  image_captions=bench/prompts/emoji_heldout.txt image_args="--images 1 --blocks 32" image_device=cpu
  stories=../shared/models/stories260K/stories260K.gguf
  vocab=../shared/models/tokenizers/ggml-vocab-llama-spm.gguf
  text=../shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt
  shapes=(tiny:q4_k_m tiny:q8_0)  # jf random preset:type files to benchmark
  tokens=16                  # tokens per bench prompt
  threads=(1 2)
  ms=1,4,16 prefill=64 reps=2 tune_budget=5 tune_model=$stories clients=1,4 long_context=192
  sweep_shapes=(tiny:q4_k_m) sweep_args=(--members serial,split-wg64-o4-r8,split-wg128-o2-r4-pair,vec-wg32-o8-r4-dot --kernel-rows 1,4 --budget 20 --attention-context 192)
  # (a test or two a binary: the suite runs them all; here the steps only have to run)
  gtest_filter='*Stories260KEveryGreedyDecoderEqualsAr:*q8_0_K256*:*Presets/VulkanArch.BatchInvariantAndCloseToTheCpu/tiny'
  text_bytes=3000
else
  [ -x "$bundle/bin/jf" ] || [ ! -e "$bundle/jf.tar.xz" ] || tar -C "$bundle" -xJf "$bundle/jf.tar.xz"
  bin="$bundle/bin"
  models="$bundle/models"
  image_captions="$bundle/models/emoji_heldout.txt" image_args="--images 8" image_device=
  stories="$bundle/models/stories260K/stories260K.gguf"
  vocab="$bundle/models/ggml-vocab-llama-spm.gguf"
  text="$bundle/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt"
  read -r -a shapes <<< "${SHAPES:-llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q3_k_m llama-8b:iq4_xs llama-1b:q8_0 llama-1b:f16}"
  tokens="${TOKENS:-64}"
  threads=(1 2 4 8 16)
  tune_budget=40 tune_model="$models/pycode-ar-q8_0.gguf" clients=1,8,32
  read -r -a sweep_shapes <<< "${SWEEP_SHAPES:-llama-1b:q4_k_m llama-8b:q4_k_m llama-8b:q3_k_m llama-8b:iq4_xs llama-1b:q8_0}"
  sweep_args=(--budget "${SWEEP_BUDGET:-30}")
  gtest_filter="${GTEST_FILTER:-*}"
  text_bytes=20000
  # A device image without the Vulkan loader or GL dispatch libraries gets Debian's (as root, into /).
  if ! ldconfig -p | grep -q libvulkan.so.1 && [ "$(id -u)" = 0 ] && ls "$bundle"/debs/*.deb > /dev/null 2>&1; then
    for f in "$bundle"/debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # NVIDIA's Vulkan driver where the machine has it but the loader does not find it by itself.
  for icd in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do
    if [ -e "$icd" ] && [ -z "${VK_DRIVER_FILES:-}" ]; then export VK_DRIVER_FILES="$icd"; fi
  done
  # llama.cpp's Vulkan build, unpacked where llamacpp_bench looks for it ($ORIGIN/../llama).
  if [ -e "$bundle/llama-vulkan.tar.xz" ] && [ ! -d "$bundle/llama" ]; then
    mkdir -p "$bundle/llama" && tar -C "$bundle/llama" -xJf "$bundle/llama-vulkan.tar.xz"
  fi
  export JF_LLAMACPP_LIBS="$bundle/llama"
fi
jf="$bin/jf"
[ -x "$jf" ] || { echo "gpu_check.sh: $jf not found (build it, or scripts/gpu_bundle.sh for a device run)" >&2; exit 1; }
step() { echo "== $* ($SECONDS s)" | tee -a "$log"; }
failures=0
: > "$out/steps.md"
IFS=',' read -r -a skip_patterns <<< "${SKIP:-}"
# What outlives a call on the device machine while it stays warm (CHECK_STATE): the kernels' choices and the
# driver's compiled shaders (cache/), the random-weight files (work/) and the steps done (done.txt), so that a
# follow-up call with RESUME=1 runs only the steps the first call's budget left out. Local runs keep nothing
# (unless CHECK_STATE names a folder).
state="${CHECK_STATE:-/tmp/jf-gpu-check}"
[ "$local" = 1 ] && state="${CHECK_STATE:-$out/state}"
[ "${RESUME:-0}" = 1 ] || rm -rf "$state/work" "$state/done.txt"
mkdir -p "$state/work" "$state/cache"
touch "$state/done.txt"
run() {  # run NAME COMMAND...: logged and timed; a failure is counted, a step past the budget or in SKIP skipped
  local name="$1"; shift
  local t0=$SECONDS pattern earlier
  # (RESUME: a step an earlier call ran is not run again, its result kept; the two cheap first steps always run)
  earlier=$(awk -F'\t' -v n="$name" '$1 == n {print $2}' "$state/done.txt")
  if [ -n "$earlier" ] && [ "$name" != "jf devices" ] && [ "$name" != "read bandwidth" ]; then
    echo "| $name | done in an earlier call ($earlier) | |" >> "$out/steps.md"
    [ "$earlier" = ok ]
    return
  fi
  for pattern in "${skip_patterns[@]}"; do
    # (a pattern, not a string: SKIP's globs match step names; the devices step always runs, later ones need it)
    # shellcheck disable=SC2053
    if [[ "$name" != "jf devices" && "$name" == $pattern ]]; then echo "| $name | skipped (SKIP) | |" >> "$out/steps.md"; return 1; fi
  done
  if [ "$SECONDS" -ge "$budget" ]; then echo "| $name | skipped (budget of $budget s spent) | |" >> "$out/steps.md"; return 1; fi
  echo "-- $name" >> "$log"
  local limit=$((budget - SECONDS + 30))
  [ "$limit" -gt "$step_max" ] && limit=$step_max
  if timeout "$limit" "$@" >> "$log" 2>&1; then
    echo "| $name | ok | $((SECONDS - t0)) s |" >> "$out/steps.md"
    printf '%s\tok\n' "$name" >> "$state/done.txt"
  else
    local rc=$?
    echo "| $name | FAILED ($rc) | $((SECONDS - t0)) s |" >> "$out/steps.md"
    printf '%s\tFAILED (%s)\n' "$name" "$rc" >> "$state/done.txt"
    failures=$((failures + 1))
    return 1
  fi
}

step "devices"
{
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
} > "$out/machine.txt" 2>&1
run "jf devices" sh -c "'$jf' devices > '$out/devices.txt' 2>&1"
cat "$out/devices.txt" >> "$log"
device=$(awk '/^auto/{print $2}' "$out/devices.txt")
if [ "$local" = 1 ] || [ "${device#vulkan}" = "$device" ]; then  # lavapipe (never auto's pick) when no GPU
  device="vulkan:$(awk '/^vulkan:/{sub("vulkan:", "", $1); print $1; exit}' "$out/devices.txt")"
fi
if [ "$device" = "vulkan:" ]; then  # what a rerun needs to find the driver
  { echo "gpu_check.sh: no Vulkan device"; cat "$out/machine.txt" "$out/devices.txt"; ls -l /usr/share/vulkan/icd.d /etc/vulkan/icd.d \
      /usr/local/nvidia/share/vulkan/icd.d /usr/local/nvidia/lib64 2>&1 | head -60; ldconfig -p | grep -i -E 'vulkan|nvidia|GLX|EGL'; } |
    tee -a "$log" > "$report"
  exit 1
fi
gpu=1  # llama.cpp's Vulkan build skips software devices: its GPU steps need a real GPU
grep -A1 "^$device " "$out/devices.txt" | grep -q "CPU (software)" && gpu=0
export JF_TEST_VULKAN_DEVICE="${device#vulkan:}"
run "read bandwidth" sh -c "'$jf' devices --bandwidth $device | tail -1 > '$out/bandwidth.txt'"
bandwidth=$(awk '{for (i = 1; i < NF; i++) if ($(i + 1) == "GB/s") print $i}' "$out/bandwidth.txt" 2>/dev/null)
bandwidth=${bandwidth:-1000}
# one dispatch reading a product's bytes once, by loads a thread: the floor each matrix kernel is judged against
run "read probe" sh -c "'$jf' devices --read-probe $device | sed -n '/one-shot reads/,\$p' > '$out/read_probe.txt'"
# the fp16 tiles on the device's matrix units where it has them (JF_VULKAN_MATMUL; lavapipe: the same tiles
# with FMAs, so --local runs the step)
units=""
grep -A3 "^$device " "$out/devices.txt" | grep -q "fp16 matrix units" && units=matrix-units
[ "$local" = 1 ] && [ -z "$units" ] && units=tiles
peak=60000  # GFLOP/s: the roofline's compute side, about an H100/H200's fp32 rate without tensor cores

export JF_SHARED="$bundle" JF_MODELS_DIR="$(cd "$models" && pwd)"
[ "$local" = 1 ] && export JF_SHARED="$PWD/../shared"
# The kernels' choices go with the results (and every later step reads them). On the device they are kept
# outside the call's folders ($state), so a follow-up call on the warm machine finds them. Here lavapipe's
# compiled shaders stay in the user's own cache, which the tests fill (a cold cache compiles every kernel again,
# ~9x slower on 2 cores: the rehearsal took 1,230 s that way).
[ "$local" = 1 ] && export MESA_SHADER_CACHE_DIR="${MESA_SHADER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}}"
export XDG_CACHE_HOME="$state/cache"
step "kernel tests on $device"
# The tiles' row-position invariance, then every family member on the weight types the benchmarks run, a step
# a type (what the sweep may choose is checked before its speed is believed).
read -r -a family_types <<< "${FAMILY_TYPES:-q4_k q6_k q8_0 q3_k iq4_xs}"
[ "$local" = 1 ] && family_types=(q4_k)
run "tile position" "$bin/test_vulkan_kernels" --gtest_filter='*TilePosition*' --gtest_brief=1
kernel_filter='*TilePosition*'
for type in "${family_types[@]}"; do
  run "family $type" "$bin/test_vulkan_kernels" --gtest_filter="*MatmulFamily*/${type}_K*" --gtest_brief=1
  kernel_filter="$kernel_filter:*MatmulFamily*/${type}_K*"
done
# Deeper members (more loads in flight) give their depth-1 twins' bits: the sweep may choose one.
run "deeper members" "$bin/test_vulkan_kernels" --gtest_filter='*DeeperMembers*' --gtest_brief=1
kernel_filter="$kernel_filter:*DeeperMembers*"
# Q8_0's qmm members (integer sums; on int8 matrix units where the device has them) give each other's bits at
# every row count: the matrix units' integer products checked against the scalar ones.
run "qmm members" "$bin/test_vulkan_kernels" --gtest_filter='*QmmMembers*' --gtest_brief=1
kernel_filter="$kernel_filter:*QmmMembers*"
# Chunked attention (a GPU's default) folds a row's chunks in the last workgroup to finish, trusting the driver
# with memory made visible across workgroups of one dispatch: its bits checked before a benchmark runs it.
run "chunked attention" "$bin/test_vulkan_attention" --gtest_filter='*ChunksGiveTheSameBits*' --gtest_brief=1

step "kernel sweep on $device"
work="$state/work"
make_file() {  # make_file SHAPE:TYPE: a random-weight file of that shape in $work (once)
  local file="$work/$1.gguf"
  [ -e "$file" ] || run "jf random $1" "$jf" random --preset "${1%%:*}" --type "${1#*:}" --fast --vocab-from "$vocab" -o "$file"
}
for entry in "${sweep_shapes[@]}"; do
  make_file "$entry" || continue
  run "kernel sweep $entry" sh -c "'$jf' tune --kernels -m '$work/$entry.gguf' --device $device ${sweep_args[*]} > '$out/kernels_${entry/:/_}.txt' 2>&1"
done
run "kernel sweep $(basename "$tune_model" .gguf)" sh -c "'$jf' tune --kernels -m '$tune_model' --device $device ${sweep_args[*]} \
  > '$out/kernels_$(basename "$tune_model" .gguf).txt' 2>&1"
cp "$XDG_CACHE_HOME"/jf/vulkan-kernels/*.json "$out/" 2>/dev/null

step "benchmarks on $device"
printf '{"prompt": "def quicksort(items):"}\n{"prompt": "class Stack:\\n    def __init__(self):"}\n' > "$out/prompts.jsonl"
decoders=ar,jacobi:block=16,multiblock:block=16,lookahead,pld
# the small models first (seconds each): the decoders' and SJD-PAC's speed where rows are nearly free
run "decoders code model" sh -c "'$jf' bench -m '$models/pycode-ar-q8_0.gguf' --device $device --prompts '$out/prompts.jsonl' \
  -n $tokens --decoders $decoders,jacobi:block=16:draft-policy=fixed,jacobi:tree=16,jacobi:tree=64 --plot '$out/decoders_code.svg' > '$out/decoders_code.txt'"
run "decoders stories260K" sh -c "'$jf' bench -m '$stories' --device $device --prompts '$out/prompts.jsonl' -n $tokens \
  --decoders $decoders --plot '$out/decoders_stories.svg' > '$out/decoders_stories.txt'"
# text-to-image: SJD and SJD-PAC's step compression and wall-clock speedup where rows are (nearly) free
run "images SJD-PAC" sh -c "'$jf' image-bench -m '$models/emoji16-q8_0.gguf' --device ${image_device:-$device} \
  --captions '$image_captions' $image_args --locality-images 0 -o '$out/images' > '$out/images.txt'"
# jf imagine's default (priced: does the pricing send the tree where rows are free?)
run "images priced" sh -c "'$jf' image-bench -m '$models/emoji16-q8_0.gguf' --device ${image_device:-$device} \
  --captions '$image_captions' $image_args --locality-images 0 --decoders sjd:block=32:pac-continue=1:pac-tree=3x4:pac-guess=32 \
  > '$out/images_priced.txt'"
for entry in "${shapes[@]}"; do
  shape="${entry%%:*}" type="${entry#*:}" file="$work/$entry.gguf"
  make_file "$entry" || continue
  run "forward cost $shape $type" sh -c "'$bin/forward_cost' -m '$file' --device $device --ms $ms --reps $reps --context 64 \
    --bandwidth $bandwidth --peak $peak --prefill $prefill > '$out/cost_${shape}_${type}.txt'"
  # where a forward's device time goes, kernel by kernel (JF_VULKAN_PROFILE: a timestamp after each dispatch)
  { [ "$entry" = "${shapes[0]}" ] || [ "$entry" = "${shapes[1]:-}" ]; } && run "profile $shape $type" sh -c "JF_VULKAN_PROFILE=1 \
    '$bin/forward_cost' -m '$file' --device $device --ms 1,16,64 --reps 3 --context 64 --prefill $prefill \
    > '$out/profile_${shape}_${type}.txt'"
  [ "$entry" = "${shapes[0]}" ] && run "forward cost $shape $type, recorded every time" sh -c "JF_VULKAN_REPLAY=0 '$bin/forward_cost' \
    -m '$file' --device $device --ms 1,16 --reps $reps --context 64 > '$out/cost_${shape}_${type}_no_replay.txt'"
  # attention at a long context: a workgroup per row and query head over all its slots, or chunks of slots
  # with a key-value head's query group together (flash-decoding), and 4 rows a workgroup sharing their reads
  # (split-64-r4: what a draft's 16 rows cost at a long context): which one the device is faster with
  if [ "$entry" = "${shapes[0]}" ]; then
    for attention in whole split-256 split-1024 split-64-r4; do
      run "attention $attention, $shape $type, context $long_context" sh -c "JF_VULKAN_ATTENTION=$attention '$bin/forward_cost' \
        -m '$file' --device $device --ms 1,16 --reps $reps --context $long_context > '$out/attention_${attention}_${shape}_${type}.txt'"
    done
  fi
  # the tiles on matrix units for the first shape (llama-1b Q4_K_M): rows up to the knee, the prompt and one row,
  # each beside the FMA kernels' above (the 8B's took 165 s of the 2026-11-30 run to say the same: slower)
  if [ -n "$units" ] && [ "$entry" = "${shapes[0]}" ]; then
    run "forward cost $shape $type, $units" sh -c "JF_VULKAN_MATMUL=$units '$bin/forward_cost' -m '$file' --device $device --ms $ms \
      --reps $reps --context 64 --bandwidth $bandwidth --peak 900000 --prefill $prefill > '$out/cost_${shape}_${type}_$units.txt'"
    # 64 rows a tiles workgroup: the weights read once for a 64-row forward (which the rows' cost shows)
    run "forward cost $shape $type, $units, 64-row tiles" sh -c "JF_VULKAN_MATMUL=$units JF_VULKAN_TILE_ROWS=64 '$bin/forward_cost' \
      -m '$file' --device $device --ms $ms --reps $reps --context 64 --bandwidth $bandwidth --peak 900000 --prefill $prefill \
      > '$out/cost_${shape}_${type}_${units}_64rows.txt'"
  fi
  run "decode $shape $type" sh -c "'$jf' bench -m '$file' --device $device --prompts '$out/prompts.jsonl' -n $tokens \
    --ignore-eos --decoders ar > '$out/decode_${shape}_${type}.txt'"
  [ "$gpu" = 1 ] && [ -x "$bin/llamacpp_bench" ] &&
    run "llama.cpp $shape $type" sh -c "'$bin/llamacpp_bench' '$file' 999 16 $tokens $ms $reps $prefill > '$out/llama_${shape}_${type}.json'"
  # (the first shape's file stays for the CPU at scale; a file whose steps the budget may have cut, for RESUME)
  [ "$entry" = "${shapes[0]}" ] || [ "$SECONDS" -ge "$budget" ] || rm -f "$file"
done
# The rest of the tests on the real driver, after the benchmarks: on a GPU the family test compiles every member
# for each of 16 weight types (the first step checked the benchmarked types), which can outlast a device call.
step "tests on $device"
for t in test_vulkan_kernels test_vulkan_ops test_vulkan_forward test_vulkan_tree test_vulkan_attention test_vulkan_tiles test_vulkan_decoders; do
  filter="$gtest_filter"
  [ "$t" = test_vulkan_kernels ] && filter="$filter-$kernel_filter"  # (those ran first)
  [ "$t" = test_vulkan_attention ] && filter="$filter-*ChunksGiveTheSameBits*"
  run "$t" "$bin/$t" --gtest_filter="$filter" --gtest_brief=1
done
run "tune $(basename "$tune_model" .gguf)" sh -c "'$jf' tune -m '$tune_model' --device $device --budget $tune_budget -n 24 --no-cache --no-kernels --plot '$out/tune.svg' \
  -o '$out/tune.json' > '$out/tune.txt'"
# the tuned choice (--config) beside the other configurations tune timed, in one run: auto within 3% of the best?
if [ -s "$out/tune.json" ]; then
  timed=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["candidates"]; t = sorted((x for x in c if x["verified"] and x["spec"] != "ar"), key=lambda x: -x["measured_tps"]); print(",".join(["ar"] + [x["spec"] for x in t[:3]]))' "$out/tune.json")
  run "tuned against fixed" sh -c "'$jf' bench -m '$tune_model' --device $device --prompts '$out/prompts.jsonl' -n $tokens \
    --config '$out/tune.json' --decoders $timed > '$out/decoders_tuned.txt'"
fi
# the server: concurrent clients batched into shared device forwards, each answer generate's
[ -e "$work/${shapes[0]}.gguf" ] && run "server clients ${shapes[0]}" sh -c "python3 bench/serve_clients.py --jf '$jf' \
  --model '$work/${shapes[0]}.gguf' --device $device --clients $clients --n 32 --requests 2 > '$out/decoders_server.txt'"
# the first shape's cost curve on the device beside the CPU's, each relative to its own one row
[ -e "$work/${shapes[0]}.gguf" ] && run "cost beside the CPU ${shapes[0]}" sh -c "'$jf' tune -m '$work/${shapes[0]}.gguf' \
  --device $device --budget $tune_budget -n 8 --limit 1 --no-cache --no-kernels --plot '$out/cost_beside_cpu.svg' --plot-beside cpu \
  > '$out/cost_beside_cpu.txt'"
head -c "$text_bytes" "$text" > "$out/text.txt"
run "perplexity stories260K" sh -c "'$jf' perplexity -m '$stories' --device $device -f '$out/text.txt' --window 256 > '$out/ppl_gpu.txt' \
  && '$jf' perplexity -m '$stories' --device cpu -f '$out/text.txt' --window 256 > '$out/ppl_cpu.txt'"
cpu_file="$work/${shapes[0]}.gguf" cpu_shape="${shapes[0]}"
printf '{"prompt": "def quicksort(items):"}\n' > "$out/prompt1.jsonl"
if [ -e "$cpu_file" ]; then
  for t in "${threads[@]}"; do
    run "cpu jf -t $t $cpu_shape" sh -c "'$jf' bench -m '$cpu_file' --device cpu -t $t --prompts '$out/prompt1.jsonl' -n 16 \
      --ignore-eos --decoders ar > '$out/cpu_jf_t$t.txt'"
    [ -x "$bin/llamacpp_bench" ] &&
      run "cpu llama.cpp -t $t $cpu_shape" sh -c "'$bin/llamacpp_bench' '$cpu_file' 0 $t 16 1 3 0 > '$out/cpu_llama_t$t.json'"
  done
fi

{
  echo "# jf device check"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $( [ "$local" = 1 ] && echo 'local run on lavapipe' || echo 'device run'), device $device"
  echo
  echo '```'
  cat "$out/machine.txt" "$out/devices.txt"
  cat "$out/bandwidth.txt" 2>/dev/null
  echo '```'
  echo
  echo "| step | result | time |"
  echo "|---|---|---|"
  cat "$out/steps.md"
  if [ -e "$out/cost_beside_cpu.txt" ]; then
    echo
    echo "## cost by rows, the device beside the CPU"
    echo
    grep "time(M) / time(1)" "$out/cost_beside_cpu.txt"
  fi
  for f in "$out"/read_probe.txt "$out"/kernels_*.txt "$out"/cost_*.txt "$out"/profile_*.txt "$out"/decode_*.txt "$out"/decoders_*.txt "$out"/images*.txt "$out"/tune.txt "$out"/cpu_jf_*.txt; do
    [ -e "$f" ] && [ "$f" != "$out/cost_beside_cpu.txt" ] || continue
    echo
    echo "## $(basename "$f" .txt)"
    echo
    lines=40
    indented='^  '
    case "$f" in *profile_*) lines=160 ;; *kernels_*) lines=200 indented='^$' ;; esac  # (the sweep's indented rows kept: members, what they compiled to)
    grep -v '^$' "$f" | grep -v "$indented" | head -$lines
  done
  for f in "$out"/llama_*.json "$out"/cpu_llama_*.json; do
    [ -e "$f" ] || continue
    echo
    echo "## $(basename "$f" .json) (llama.cpp)"
    echo
    cat "$f"
  done
  echo
  echo "## perplexity (stories260K)"
  echo
  echo "device: $(tail -1 "$out/ppl_gpu.txt" 2>/dev/null)"
  echo "cpu: $(tail -1 "$out/ppl_cpu.txt" 2>/dev/null)"
} > "$report"
echo "gpu_check: $failures failed steps; report in $dest/report.md"
[ "$failures" = 0 ]
