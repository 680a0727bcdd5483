#!/usr/bin/env bash
# jf generate --trace/--viz, jf viz, jf bench --plot, jf tune, --config and --decoder auto through the CLI
# on stories260K; bad flags give one error line and a non-zero exit.
# Usage: tools_test.sh JF_BINARY SHARED_DIR
set -u
jf="$1"
shared="$2"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/cache"  # --decoder auto's cache: never the user's own
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

check_error() {  # name, expected exit code, command... (nothing on stdout, one error line on stderr)
  local name="$1" want="$2"
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "^jf: error: " "$tmp/err" || [ -s "$tmp/out" ]; then
    fail "$name: exit $rc (want $want), stderr: $(cat "$tmp/err")"
  else
    ok "$name: $(cat "$tmp/err")"
  fi
}

check_error "viz missing trace" 1 "$jf" viz --trace /nonexistent.json -o "$tmp/p.html"
echo '{"format":"nope"}' >"$tmp/bad.json"
check_error "viz bad trace" 1 "$jf" viz --trace "$tmp/bad.json" -o "$tmp/p.html"
check_error "viz without -o" 2 "$jf" viz --trace "$tmp/bad.json"
check_error "generate --trace into a missing directory" 1 "$jf" generate -m x --trace /nonexistent/dir/t.json
check_error "viz -o into a missing directory" 1 "$jf" viz --trace "$tmp/bad.json" -o /nonexistent/dir/p.html
check_error "bench --plot into a missing directory" 1 "$jf" bench -m x --prompts /dev/null --plot /nonexistent/dir/b.svg
check_error "tune -o into a missing directory" 1 "$jf" tune -m x -o /nonexistent/dir/c.json
check_error "generate missing config" 1 "$jf" generate -m x --config /nonexistent.json
check_error "generate bad config" 1 "$jf" generate -m x --config "$tmp/bad.json"

m="$shared/models/stories260K/stories260K.gguf"
if [ ! -f "$m" ]; then
  if [ "${CI:-}" = "true" ]; then fail "CI=true but $m is missing"; else echo "SKIPPED: $m not found"; fi
  [ "$fails" -eq 0 ] && exit 0 || exit 1
fi
check_error "tune bad budget" 1 "$jf" tune -m "$m" --budget 0
check_error "tune bad grid" 1 "$jf" tune -m "$m" --grid ar,jacobi:blok=2
check_error "auto with sampling" 1 "$jf" generate -m "$m" --decoder auto --temp 0.7

# ---- trace and trajectory page, for every decoder (rows as the parameters say: every role appears)
for d in ar "jacobi --block 6 --draft-policy fixed" "lookahead --W 4 --N 3 --G 4 --draft-policy fixed" pld \
    "multiblock --block 4 --K 3 --r 0.5 --draft-policy fixed" "sjd --temp 0.8"; do
  name=${d%% *}
  "$jf" generate -m "$m" -n 40 -p "Once upon a time" --json --decoder $d --trace "$tmp/$name.trace.json" \
    --viz "$tmp/$name.html" >"$tmp/$name.out" 2>/dev/null || { fail "generate --trace --decoder $d"; continue; }
  if python3 - "$tmp/$name.out" "$tmp/$name.trace.json" "$tmp/$name.html" "$name" <<'PY'
import json, sys
out = json.load(open(sys.argv[1])); tr = json.load(open(sys.argv[2])); html = open(sys.argv[3]).read(); name = sys.argv[4]
fw = tr["forwards"]
joined = [t for f in fw for t in f["committed"]]
assert joined == out["tokens"] == tr["output"], "committed tokens do not make the output"
assert len(fw) == out["n_forwards"], (len(fw), out["n_forwards"])
roles = {r[2] for f in fw for r in f["rows"]}
if name != "ar": assert roles & {"draft", "candidate"}, roles
if name == "lookahead": assert "window" in roles, roles
if name == "multiblock": assert "block" in roles, roles
assert html.count('<tr class="fwd">') == len(fw)
PY
  then ok "trace + page for $d"; else fail "trace + page for $d"; fi
done
"$jf" viz --trace "$tmp/lookahead.trace.json" -o "$tmp/viz.html" 2>/dev/null && cmp -s "$tmp/viz.html" "$tmp/lookahead.html" &&
  ok "jf viz draws the same page as generate --viz" || fail "jf viz"

# ---- bench --plot
echo '{"prompt": "Once upon a time"}' >"$tmp/p.jsonl"
echo '{"prompt": "The cat"}' >>"$tmp/p.jsonl"
if "$jf" bench -m "$m" --prompts "$tmp/p.jsonl" -n 24 --decoders ar,jacobi,pld --plot "$tmp/b.svg" >/dev/null 2>&1 &&
   python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); n = sum(1 for e in r.iter() if e.get("class") == "mark"); assert n == 3, n' "$tmp/b.svg"; then
  ok "bench --plot: well-formed SVG, one point per decoder"
else
  fail "bench --plot"
fi

# ---- tune with a tiny budget, then --config and --decoder auto
if "$jf" tune -m "$m" --budget 4 -n 24 -o "$tmp/cfg.json" --plot "$tmp/cost.svg" >"$tmp/tune.out" 2>"$tmp/tune.err"; then
  ok "tune: $(grep chosen "$tmp/tune.out")"
else
  fail "tune: $(cat "$tmp/tune.err")"
fi
# Not a terminal: plain progress lines with rate and ETA.
grep -q "^jf tune: [0-9]*/[0-9]*  [0-9.]*/s  ETA " "$tmp/tune.err" && ok "tune: plain progress lines" ||
  fail "tune progress lines: $(head -3 "$tmp/tune.err")"
python3 - "$tmp/cfg.json" "$tmp/cost.svg" <<'PY' && ok "tune config and cost plot" || fail "tune config / cost plot"
import json, sys, xml.etree.ElementTree as E
c = json.load(open(sys.argv[1]))
assert c["format"] == "jf-tune-1" and c["decoder"], c
chosen = [x for x in c["candidates"] if x["spec"] == c["decoder"]]
assert chosen and chosen[0]["rows_per_forward"] <= 3.0, chosen  # a tiny model: ar or a cheap drafter
r = E.parse(sys.argv[2]).getroot()
n = sum(1 for e in r.iter() if e.get("class") == "mark")
assert n == len(c["cost"]["contexts"]) * len(c["cost"]["rows"]), n
PY
"$jf" generate -m "$m" -n 40 -p "Once upon a time" --no-echo >"$tmp/ar.txt" 2>/dev/null
"$jf" generate -m "$m" -n 40 -p "Once upon a time" --no-echo --config "$tmp/cfg.json" >"$tmp/cfg.txt" 2>/dev/null &&
  cmp -s "$tmp/ar.txt" "$tmp/cfg.txt" && ok "generate --config == ar" || fail "generate --config"
"$jf" generate -m "$m" -n 40 -p "Once upon a time" --no-echo --decoder auto >"$tmp/auto.txt" 2>"$tmp/auto.err" &&
  cmp -s "$tmp/ar.txt" "$tmp/auto.txt" && grep -q "tuned for this model" "$tmp/auto.err" &&
  ok "--decoder auto uses the cached tuning" || fail "--decoder auto (cached): $(cat "$tmp/auto.err")"
rm -rf "$tmp/cache"
"$jf" generate -m "$m" -n 40 -p "Once upon a time" --no-echo --decoder auto >"$tmp/auto.txt" 2>"$tmp/auto.err" &&
  cmp -s "$tmp/ar.txt" "$tmp/auto.txt" && grep -q "cost-curve rule" "$tmp/auto.err" &&
  ok "--decoder auto without a tuning: $(cat "$tmp/auto.err")" || fail "--decoder auto (rule): $(cat "$tmp/auto.err")"
"$jf" bench -m "$m" --prompts "$tmp/p.jsonl" -n 24 --decoders ar --config "$tmp/cfg.json" >"$tmp/bench.out" 2>/dev/null &&
  grep -q "| $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["decoder"])' "$tmp/cfg.json") |" "$tmp/bench.out" &&
  ok "bench --config runs the tuned decoder" || fail "bench --config"

# ---- jf tokenize: the ids generation uses, pieces, JSONL batches, and a vocabulary-only file
"$jf" tokenize -m "$m" -p "Once upon a time" --ids >"$tmp/ids.txt" 2>"$tmp/tok.err" &&
  "$jf" generate -m "$m" -p "Once upon a time" -n 0 --json 2>/dev/null |
  python3 -c 'import json, sys; ids = json.load(open(sys.argv[1])); g = json.loads(sys.stdin.read().strip().splitlines()[-1]); assert ids == g["prompt_tokens"] and ids[0] == 1, (ids, g)' "$tmp/ids.txt" &&
  ok "tokenize --ids == generate's prompt_tokens" || fail "tokenize --ids: $(cat "$tmp/tok.err")"
"$jf" tokenize -m "$m" -p "Once upon" --no-bos >"$tmp/pieces.txt" 2>/dev/null &&
  [ "$(cat "$tmp/pieces.txt")" = "$(printf '    403  " Once"\n    407  " upon"')" ] &&
  ok "tokenize: an id and a quoted piece per line" || fail "tokenize pieces: $(cat "$tmp/pieces.txt")"
printf '"a b"\n"\\n\\u00e9"\n' >"$tmp/t.jsonl"
"$jf" tokenize -m "$m" --jsonl -f "$tmp/t.jsonl" >"$tmp/t.out" 2>/dev/null && [ "$(wc -l <"$tmp/t.out")" -eq 2 ] &&
  python3 -c 'import json, sys; assert all(isinstance(json.loads(l), list) for l in open(sys.argv[1])), "not arrays"' "$tmp/t.out" &&
  ok "tokenize --jsonl: a JSON array per line" || fail "tokenize --jsonl: $(cat "$tmp/t.out")"
vocab="$shared/models/tokenizers/ggml-vocab-gpt-2.gguf"
"$jf" tokenize -m "$vocab" -p "Hello world" --ids 2>/dev/null | grep -qx '\[15496,995\]' &&
  ok "tokenize a vocabulary-only GGUF" || fail "tokenize a vocabulary-only GGUF"
echo '"ok"' >"$tmp/t2.jsonl"
echo 'not json' >>"$tmp/t2.jsonl"
check_error "tokenize --jsonl with a line that is not a JSON string" 1 "$jf" tokenize -m "$m" --jsonl -f "$tmp/t2.jsonl"
check_error "tokenize --jsonl without -f" 1 "$jf" tokenize -m "$m" --jsonl -p x
check_error "tokenize a missing model" 1 "$jf" tokenize -m /nonexistent.gguf -p x
check_error "tokenize a file without a tokenizer" 1 "$jf" tokenize -m "$tmp/p.jsonl" -p x

[ "$fails" -eq 0 ] && echo "all tools checks passed" || { echo "$fails tools checks failed"; exit 1; }
