#!/usr/bin/env bash
# docs/GUIDE.md cannot rot: every ```sh block of the guide is extracted and run, in order, in one shell in
# an empty directory, with jf on PATH, MODEL set to stories260K and PORT to a free port (what the guide's
# ```shell block "Before you start" asks the reader to set; blocks with any other info string are not run).
# Any command that fails fails the test; then a few of the outputs are checked.
# Usage: guide_test.sh JF_BINARY SHARED_DIR
set -u
jf="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"  # absolute: the guide runs in another directory
shared="$2"
here="$(cd "$(dirname "$0")" && pwd)"
guide="$here/../docs/GUIDE.md"
model="$shared/models/stories260K/stories260K.gguf"
if [ ! -f "$model" ]; then
  if [ "${CI:-}" = "true" ]; then echo "FAIL: CI=true but $model is missing"; exit 1; fi
  echo "SKIPPED: $model not found (set JF_SHARED_DIR)"; exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

# The script: each block announced with its line in the guide; the first failing command stops the run and
# names its block. Whatever the guide left running in the background (the server) is stopped at the end.
awk '
  /^```sh[ \t]*$/ { inblock = 1; n++; printf "guide_block=\"%d (docs/GUIDE.md line %d)\"\necho \"=== block %s\"\n", n, NR + 1, n; next }
  /^```/ && inblock { inblock = 0; next }
  inblock { print }
  END { printf "guide_blocks=%d\n", n }
' "$guide" >"$tmp/blocks.sh"
blocks=$(grep -c '^guide_block=' "$tmp/blocks.sh")
if [ "$blocks" -lt 10 ]; then
  fail "only $blocks sh blocks found in $guide"
  exit 1
fi
{
  echo 'set -eo pipefail'
  echo 'trap "exit 143" TERM'
  echo 'trap '\''rc=$?; [ $rc -ne 0 ] && echo "GUIDE FAILED in block $guide_block: exit $rc"; kill $(jobs -p) 2>/dev/null || true; exit $rc'\'' EXIT'
  cat "$tmp/blocks.sh"
} >"$tmp/guide.sh"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$tmp/work" "$tmp/cache"
start=$(date +%s)
(
  cd "$tmp/work" &&
    PATH="$(cd "$(dirname "$jf")" && pwd):$PATH" MODEL="$model" PORT="$port" XDG_CACHE_HOME="$tmp/cache" \
      timeout 240 bash "$tmp/guide.sh"
) >"$tmp/log" 2>&1
rc=$?
seconds=$(($(date +%s) - start))
if [ "$rc" -ne 0 ]; then
  tail -40 "$tmp/log"
  fail "the guide's commands exited with $rc after $seconds s (log above)"
  exit 1
fi
ok "all $blocks sh blocks of docs/GUIDE.md ran in $seconds s"

w="$tmp/work"
grep -q "^same text$" "$tmp/log" && ok "lookahead printed ar's text" || fail "no 'same text' from the cmp of ar and lookahead"
grep -q "^same answer$" "$tmp/log" && ok "jf chat's second answer equals jf generate --messages" ||
  fail "no 'same answer' from the cmp of jf chat and jf generate --chat --messages"
grep -q "reused from the cache" "$w/chat.txt" && ok "jf chat's /stats reports the cache reuse" || fail "no /stats in chat.txt"
python3 - "$w/reply.json" <<'PY' && ok "the curl reply has choices with text and usage" || fail "curl reply: $(head -c 300 "$w/reply.json" 2>/dev/null)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["choices"] and r["choices"][0]["text"].strip(), r
assert r["usage"]["completion_tokens"] == 32, r["usage"]
PY
grep -q '^data: \[DONE\]' "$tmp/log" && ok "the streamed request ended with [DONE]" || fail "no streamed reply"
python3 - "$w/tuned.json" <<'PY' && ok "jf tune wrote a configuration" || fail "tuned.json"
import json, sys
j = json.load(open(sys.argv[1]))
assert "candidates" in j and j["candidates"], j.keys()
PY
for f in bench.svg cost.svg; do
  python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$w/$f" 2>/dev/null && ok "$f is well-formed SVG" ||
    fail "$f missing or not SVG"
done
for f in lookahead.html multiblock.html; do
  grep -q '<tr class="fwd">' "$w/$f" 2>/dev/null && ok "$f draws forwards" || fail "$f missing or empty"
done
[ -s "$w/my-jf.gguf" ] && grep -q "top-1 agreement" "$tmp/log" && ok "trained my-jf.gguf and jf eval reported on it" ||
  fail "training or eval output missing"
# jf eval of the fine-tune: multi-block TPF above the base's (every row sent: deterministic) and the model
# still close to its base on the held-out text.
if python3 - "$w/eval.txt" <<'PY' 2>/dev/null
import re, sys
t = open(sys.argv[1]).read()
gain = float(re.search(r"multiblock:block=8: [0-9.]+ \(base [0-9.]+, x([0-9.]+)\)", t).group(1))
agreement = float(re.search(r"held-out text \([0-9]+ tokens\): top-1 agreement ([0-9.]+)", t).group(1))
assert gain > 1.0 and agreement > 0.75, (gain, agreement)
PY
then ok "the fine-tune gains multiblock TPF and stays near its base: $(grep -E 'agreement|multiblock' "$w/eval.txt" | head -2 | tr '\n' ' ')"
else fail "jf eval of the fine-tune: $(cat "$w/eval.txt" 2>/dev/null)"; fi
# The guide's draft file for stories260K: found beside its model, the same text, more tokens per forward.
if [ -s "$w/stories.draft.gguf" ]; then
  g=(generate -m "$w/stories.gguf" -p "Once upon a time" -n 48 --decoder jacobi --block 8 --draft-policy fixed)
  "$jf" "${g[@]}" >"$w/with.txt" 2>"$w/with.err"
  "$jf" "${g[@]}" --no-draft >"$w/without.txt" 2>"$w/without.err"
  tpf() { grep -o "([0-9.]* tokens/forward)" "$1" | tr -dc '0-9.'; }
  if cmp -s "$w/with.txt" "$w/without.txt" && grep -q "found beside the model" "$w/with.err" &&
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$(tpf "$w/with.err")" "$(tpf "$w/without.err")"
  then ok "the guide's draft file: the same text, TPF $(tpf "$w/with.err") against $(tpf "$w/without.err")"
  else fail "the guide's draft file: $(cat "$w/with.err" "$w/without.err")"; fi
else fail "the guide wrote no stories.draft.gguf"; fi
[ "$fails" -eq 0 ] && exit 0 || exit 1
