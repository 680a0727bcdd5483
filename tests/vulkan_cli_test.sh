#!/usr/bin/env bash
# The Vulkan backend through the jf command line, as a user meets it: `jf devices`, --device on generate,
# bench, perplexity and serve (same text as the CPU, 100% identical decoders), and one-line errors for a
# bad device, a missing device and --device auto's fallback; the device's charts (tune --plot-beside, bench --plot). Runs on lavapipe; never skipped when CI=true.
# Usage: vulkan_cli_test.sh JF_BINARY SHARED_DIR
set -euo pipefail
jf="$1"
shared="$2"
model="$shared/models/stories260K/stories260K.gguf"
if [ ! -e "$model" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but $model is missing"; exit 1; fi
  echo "SKIPPED: ../shared/models/stories260K not found"; exit 0
fi
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

"$jf" devices > "$work/devices.txt"
grep -q "^vulkan:0" "$work/devices.txt" || {
  cat "$work/devices.txt"
  [ "${CI:-}" = "true" ] && fail "CI=true but jf devices lists no Vulkan device (mesa-vulkan-drivers?)"
  echo "SKIPPED: no Vulkan device"; exit 0
}
grep -q "^auto " "$work/devices.txt" || fail "jf devices does not say what auto picks"
dev="vulkan:${JF_TEST_VULKAN_DEVICE:-0}"

# The same text on the device as on the CPU.
gen=(generate -m "$model" -p "Once upon a time" -n 40)
"$jf" "${gen[@]}" --device cpu > "$work/cpu.txt" 2>/dev/null
"$jf" "${gen[@]}" --device "$dev" > "$work/gpu.txt" 2>/dev/null
cmp -s "$work/cpu.txt" "$work/gpu.txt" || fail "generate --device $dev differs from the CPU: $(cat "$work/gpu.txt")"

# bench on the device: every decoder identical to ar, the device's time per forward reported.
printf '{"prompt": "Once upon a time"}\n{"prompt": "The cat sat"}\n' > "$work/prompts.jsonl"
"$jf" bench -m "$model" --device "$dev" --prompts "$work/prompts.jsonl" -n 32 \
  --decoders ar,jacobi:block=8:draft-policy=fixed,lookahead,pld:draft-policy=fixed,multiblock:block=8 > "$work/bench.txt" 2>/dev/null
grep -q "^device vulkan" "$work/bench.txt" || fail "bench does not name the device"
grep -q "device ms/forward" "$work/bench.txt" || fail "bench prints no device time"
grep -q "f16 KV cache" "$work/bench.txt" || fail "--kv-type auto did not give the device's f16 cache: $(head -3 "$work/bench.txt")"
[ "$(grep -c '| 100% |' "$work/bench.txt")" = 5 ] || { cat "$work/bench.txt"; fail "a decoder's output differed from ar on the device"; }

# The device's cost curve beside the CPU's (tune --plot-beside), and speedup against TPF (bench --plot).
"$jf" tune -m "$model" --device "$dev" --budget 4 -n 16 --limit 1 --no-cache --plot "$work/cost.svg" --plot-beside cpu \
  > "$work/tune.txt" 2>"$work/tune.err" || fail "tune --plot-beside cpu: $(tail -1 "$work/tune.err")"
grep -q "^cpu, time(M) / time(1) at context" "$work/tune.txt" || fail "tune --plot-beside printed no CPU curve"
python3 - "$work/cost.svg" <<'PY' || fail "tune --plot-beside: not two curves of 10 points"
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
marks = [e for e in r.iter() if e.get("class") == "mark"]
assert len(marks) == 20, len(marks)
assert any("vulkan" in "".join(e.itertext()) or "llvmpipe" in "".join(e.itertext()) for e in r.iter("{http://www.w3.org/2000/svg}text")), "no device in the legend"
PY
"$jf" bench -m "$model" --device "$dev" --prompts "$work/prompts.jsonl" -n 16 --decoders ar,jacobi:block=8 \
  --plot "$work/speed.svg" > /dev/null 2>&1 || fail "bench --plot on the device"
grep -q "llvmpipe\|vulkan" "$work/speed.svg" || fail "bench --plot's title does not name the device"

# perplexity on the device.
head -c 4000 "$shared/data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt" > "$work/text.txt"
"$jf" perplexity -m "$model" --device "$dev" -f "$work/text.txt" --window 128 > "$work/ppl.txt" 2>/dev/null ||
  fail "perplexity --device $dev failed"

# Errors: one line, non-zero exit.
expect_error() {  # expect_error PATTERN COMMAND...
  local pattern="$1"; shift
  if "$@" > /dev/null 2> "$work/err.txt"; then fail "'$*' succeeded"; fi
  grep -q "$pattern" "$work/err.txt" || fail "'$*' said: $(cat "$work/err.txt")"
  [ "$(wc -l < "$work/err.txt")" = 1 ] || fail "'$*' printed more than one line: $(cat "$work/err.txt")"
}
expect_error "unknown device 'gpu'" "$jf" "${gen[@]}" --device gpu
expect_error "no device 9" "$jf" "${gen[@]}" --device vulkan:9
# No driver: the loader finds no device; auto falls back to the CPU and says so.
expect_error "no Vulkan device" env VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json "$jf" "${gen[@]}" --device vulkan
env VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json "$jf" "${gen[@]}" --device auto > "$work/auto.txt" 2> "$work/auto.err" ||
  fail "--device auto without a device failed: $(cat "$work/auto.err")"
grep -q "running on the CPU" "$work/auto.err" || fail "--device auto did not say it fell back: $(cat "$work/auto.err")"
cmp -s "$work/cpu.txt" "$work/auto.txt" || fail "--device auto's CPU fallback gave another text"

# The server on the device: each of several concurrent requests (batched into shared forwards) answers as
# generate does; a device error inside a batch fails those requests with 500 and the server goes on serving.
start_server() {  # start_server [ENV=VALUE...]: sets $server and $port
  env "$@" "$jf" serve -m "$model" --device "$dev" --port 0 -P 4 --no-calibrate > "$work/serve.out" 2> "$work/serve.err" &
  server=$!
  port=""
  for _ in $(seq 150); do
    port="$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/serve.err")"
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  fail "jf serve --device $dev did not start: $(cat "$work/serve.err")"
}
stop_server() { kill "$server"; wait "$server" 2>/dev/null || true; }
complete() {  # complete PROMPT OUT: the HTTP status; the body in OUT
  curl -s -o "$2" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"prompt\": \"$1\", \"max_tokens\": 40, \"temperature\": 0}"
}
same_text() {  # same_text RESPONSE PROMPT: the completion is what jf generate writes after the prompt
  "$jf" generate -m "$model" -p "$2" -n 40 --device cpu > "$work/want.txt" 2>/dev/null
  python3 - "$1" "$work/want.txt" "$2" <<'PY'
import json, sys
text = json.load(open(sys.argv[1]))["choices"][0]["text"]
want = open(sys.argv[2]).read().rstrip("\n")
sys.exit(0 if want == sys.argv[3] + text.rstrip("\n") or want.endswith(text.rstrip("\n")) else 1)
PY
}
start_server
prompts=("Once upon a time" "The cat sat on the mat" "Lily and Ben went to the park" "A little bird")
for i in 0 1 2 3; do complete "${prompts[$i]}" "$work/c$i.json" > "$work/s$i" & done
wait $(jobs -p | grep -v "^$server$") 2>/dev/null || true
for i in 0 1 2 3; do
  [ "$(cat "$work/s$i")" = 200 ] || fail "request $i: status $(cat "$work/s$i"): $(cat "$work/c$i.json")"
  same_text "$work/c$i.json" "${prompts[$i]}" || fail "the server's text for '${prompts[$i]}' differs from generate's"
done
stop_server
start_server JF_VULKAN_FAULT=0:2  # the first forward and its retry alone fail
[ "$(complete "Once upon a time" "$work/bad.json")" = 500 ] || fail "a device error did not give 500: $(cat "$work/bad.json")"
grep -q "device error" "$work/bad.json" || fail "the 500 does not say what failed: $(cat "$work/bad.json")"
[ "$(complete "Once upon a time" "$work/good.json")" = 200 ] || fail "the server did not recover: $(cat "$work/good.json")"
same_text "$work/good.json" "Once upon a time" || fail "after a device error the server's text differs from generate's"
stop_server

# jf tune --kernels: members timed on the model's shapes, each shape's choice kept in the cache for the device,
# the deeper twin of a fastest member timed after it, attention's kernels timed at a context and one kept, named
# by jf devices, and the same text generated with them; bad member names and flags refused in one line.
export XDG_CACHE_HOME="$work/cache"
"$jf" tune --kernels -m "$model" --device "$dev" --members serial,split-wg64-o2-r4,split-wg128-o1-r8-pair,split-wg64-o2-r4-sg,split-wg64-o2-r4-d2-sg \
  --kernel-rows 1,4 --attention-context 100 > "$work/kernels.txt" 2>&1 || { cat "$work/kernels.txt"; fail "jf tune --kernels failed"; }
grep -q "^[1-9][0-9]* deeper members timed" "$work/kernels.txt" || { cat "$work/kernels.txt"; fail "tune --kernels timed no deeper member"; }
grep -q "^device warmed before each matrix: .* GB/s" "$work/kernels.txt" || { cat "$work/kernels.txt"; fail "tune --kernels did not warm the device"; }
grep -q "attention at a context of 100 tokens" "$work/kernels.txt" || { cat "$work/kernels.txt"; fail "tune --kernels timed no attention"; }
grep -q '"attention"' "$work/cache/jf/vulkan-kernels/"*.json || fail "tune --kernels kept no attention choice"
"$jf" devices | grep -q "attention: .*chosen by jf tune --kernels" || { "$jf" devices; fail "jf devices does not name the attention choice"; }
grep -q "512 x 64 f32 chosen" "$work/kernels.txt" || { cat "$work/kernels.txt"; fail "tune --kernels printed no choice for the output head"; }
ls "$work/cache/jf/vulkan-kernels/"*.json > /dev/null 2>&1 || fail "tune --kernels kept no choices"
"$jf" devices | grep -q "matrix kernels: tuned for 5 matrix shapes" || { "$jf" devices; fail "jf devices does not name the tuned kernels"; }
"$jf" "${gen[@]}" --device "$dev" > "$work/tuned.txt" 2>/dev/null
cmp -s "$work/cpu.txt" "$work/tuned.txt" || fail "generate with the tuned kernels differs from the CPU"
# Q8_0's qmm members give each other's bits, so they compete as one candidate: alone on the list they win, the
# fastest of them at each row count kept as twins by rows, and the text generated with them is the text of one
# qmm member forced on every Q8_0 matrix.
"$jf" convert -m "$model" --type q8_0 -o "$work/q8.gguf" > /dev/null 2>&1 || fail "jf convert --type q8_0 failed"
"$jf" tune --kernels -m "$work/q8.gguf" --device "$dev" --members qmm-o16-r16,qmm-o32-r16 --kernel-rows 1,4 --attention-context 0 \
  > "$work/qmm.txt" 2>&1 || { cat "$work/qmm.txt"; fail "jf tune --kernels with qmm members failed"; }
grep -q "by rows (the same bits): M<=1 qmm-o" "$work/qmm.txt" || { cat "$work/qmm.txt"; fail "tune --kernels kept no qmm twins by rows"; }
grep -q '"by_rows"' "$work/cache/jf/vulkan-kernels/"*.json || fail "the kernel choices keep no twins by rows"
"$jf" generate -m "$work/q8.gguf" -p "Once upon a time" -n 40 --device "$dev" > "$work/qmm_tuned.txt" 2>/dev/null
JF_VULKAN_KERNELS=qmm-o32-r16 "$jf" generate -m "$work/q8.gguf" -p "Once upon a time" -n 40 --device "$dev" > "$work/qmm_forced.txt" 2>/dev/null
[ -s "$work/qmm_tuned.txt" ] && cmp -s "$work/qmm_tuned.txt" "$work/qmm_forced.txt" || fail "the qmm twins by rows generate other text than one qmm member"
for bad in "--kernels --members split-wg64-o3-r8" "--kernels --kernel-rows 4,0" "--members serial" "--kernels --device cpu" \
  "--kernels --attention-context -1"; do
  # shellcheck disable=SC2086
  if "$jf" tune -m "$model" --device "$dev" $bad > "$work/bad.txt" 2>&1; then fail "jf tune $bad was accepted"; fi
  [ "$(wc -l < "$work/bad.txt")" -le 2 ] || { cat "$work/bad.txt"; fail "jf tune $bad: not a short error"; }
done
unset XDG_CACHE_HOME
echo "vulkan cli: all checks passed"
