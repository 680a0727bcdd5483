#!/usr/bin/env bash
# Text-to-image commands: jf image-data on a synthetic emoji package, jf imagine and jf image-bench on the
# shipped model (models/emoji16-q8_0.gguf), and one-line errors for bad input.
# Usage: image_cli_test.sh JF_BINARY
set -u
jf="$1"
model="$(dirname "$0")/../models/emoji16-q8_0.gguf"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok   $1"; }
fail() { echo "FAIL $1"; fails=$((fails + 1)); }

check_error() {  # name, command... (exit 1, nothing on stdout, one "jf: error:" line on stderr)
  local name="$1"
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 1 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "^jf: error: " "$tmp/err" || [ -s "$tmp/out" ]; then
    fail "$name: exit $rc, stderr: $(cat "$tmp/err")"
  else
    ok "$name: $(cat "$tmp/err")"
  fi
}

# A synthetic emoji package: 24 images of 64x64 (a coloured disc, or a square, on transparency) with names;
# and a second art style of the same emoji ("twitter": the discs and squares swapped).
for style in google twitter; do
python3 - "$tmp/emoji-$style" "$style" <<'PY'
import json, os, struct, sys, zlib
root, style = sys.argv[1], sys.argv[2]
os.makedirs(f"{root}/img/{style}/64")
def png(path, pixels):
    raw = b"".join(b"\0" + bytes(row) for row in pixels)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 6, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
colours = {"red": (220, 30, 30), "green": (30, 200, 60), "blue": (30, 60, 220), "yellow": (250, 210, 40)}
entries = []
for i, (name, c) in enumerate(sorted(colours.items()) * 6):
    disc = (i % 2 == 0) == (style == "google")
    rows = []
    for y in range(64):
        row = []
        for x in range(64):
            inside = (x - 32) ** 2 + (y - 32) ** 2 < 400 if disc else 16 <= x < 48 and 16 <= y < 48
            row += list(c) + [255] if inside else [0, 0, 0, 0]
        rows.append(row)
    png(f"{root}/img/{style}/64/e{i}.png", rows)
    shape = "CIRCLE" if i % 2 == 0 else "SQUARE"
    entries.append({"name": f"{name.upper()} {shape} {i}", "image": f"e{i}.png", f"has_img_{style}": True, "sort_order": i})
entries.append({"name": "NO PICTURE", "image": "missing.png", f"has_img_{style}": False, "sort_order": 99})
json.dump(entries, open(root + "/emoji.json", "w"))
PY
done
mv "$tmp/emoji-google" "$tmp/emoji"
if "$jf" image-data --emoji "$tmp/emoji" -o "$tmp/data" --colours 8 --text-vocab 300 --heldout-every 6 2>"$tmp/err" &&
   python3 - "$tmp/data" <<'PY'
import re, sys
d = sys.argv[1]
train = open(d + "/train.txt").read().splitlines()
held = open(d + "/heldout.txt").read().splitlines()
assert len(train) == 20 and len(held) == 4, (len(train), len(held))
for line in train + held:
    m = re.fullmatch(r"([a-z0-9 ]+)<image 16x16>((?:<#[0-9a-f]{6}>){256})", line)
    assert m, line[:80]
    assert len(set(re.findall(r"<#[0-9a-f]{6}>", m.group(2)))) >= 2, "an image of one colour"
# the corner pixel is the white background, the centre the disc's or square's colour
red = [l for l in train if l.startswith("red")][0]
px = re.findall(r"<#([0-9a-f]{6})>", red)
assert px[0] == "ffffff" or int(px[0][:2], 16) > 240, px[0]
assert int(px[8 * 16 + 8][:2], 16) > 180 and int(px[8 * 16 + 8][2:4], 16) < 90, px[8 * 16 + 8]
assert open(d + "/heldout_tokenized.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
PY
then ok "image-data: 20 training and 4 held-out documents of 256 colour tokens, colours where they belong"
else fail "image-data: $(cat "$tmp/err")"; fi

# Two art styles in the first run's vocabulary: each training caption twice (the second style's picture of it
# after the first's), the held-out captions and their pictures those of the first style alone.
if "$jf" image-data --emoji "$tmp/emoji" --emoji "$tmp/emoji-twitter" --vocab-from "$tmp/data/vocab.gguf" -o "$tmp/data2" \
     --heldout-every 6 2>"$tmp/err" &&
   cmp -s "$tmp/data/heldout.txt" "$tmp/data2/heldout.txt" && python3 - "$tmp/data" "$tmp/data2" <<'PY'
import re, sys
one = open(sys.argv[1] + "/train.txt").read().splitlines()
two = open(sys.argv[2] + "/train.txt").read().splitlines()
assert len(two) == 40 and two[:20] == one, len(two)
caption = lambda l: l.split("<image")[0]
assert [caption(l) for l in two[20:]] == [caption(l) for l in one], "the second style's captions"
for a, b in zip(one, two[20:]):
    pa, pb = re.findall(r"<#[0-9a-f]{6}>", a), re.findall(r"<#[0-9a-f]{6}>", b)
    assert pa[8 * 16 + 8] == pb[8 * 16 + 8], "the same colour at the centre"
    assert pa[4 * 16 + 4] != pb[4 * 16 + 4], "a disc and a square differ at the corner of the square"
PY
then ok "image-data: two art styles, 40 training documents in the first vocabulary, the same 4 held out"
else fail "image-data: two art styles: $(cat "$tmp/err")"; fi
# A word-level caption vocabulary: each word the same tokens at a caption's start and after a space (a token of
# its own), where the ordinary BPE (the first run's) spells "red" and " red" differently.
ids() { "$jf" tokenize -m "$1" -p "$2" --no-bos --ids 2>/dev/null; }
same_words() {  # VOCAB: "red circle" is "red", " ", "circle"; "circle red" is "circle", " ", "red"
  local v="$1" red circle space
  red=$(ids "$v" red | tr -d '[]'); circle=$(ids "$v" circle | tr -d '[]'); space=$(ids "$v" " " | tr -d '[]')
  [ "$(ids "$v" "red circle")" = "[$red,$space,$circle]" ] && [ "$(ids "$v" "circle red")" = "[$circle,$space,$red]" ]
}
if "$jf" image-data --emoji "$tmp/emoji" -o "$tmp/words" --colours 8 --text-vocab 300 --whole-words --heldout-every 6 2>"$tmp/err" &&
   same_words "$tmp/words/vocab.gguf" && ! same_words "$tmp/data/vocab.gguf" &&
   [ "$(ids "$tmp/words/vocab.gguf" red | tr -cd ',' | wc -c)" = 0 ]
then ok "image-data --whole-words: a word is one token wherever it stands, a space its own"
else fail "image-data --whole-words: $(cat "$tmp/err") red=$(ids "$tmp/words/vocab.gguf" "circle red")"; fi
# Held out among captions made of words other captions use, and each training picture three times (moved by
# half a pixel): "red circle" is held out only while another caption has "red" and another "circle"; "odd N"
# never is (no other caption has "N").
mkdir -p "$tmp/known" && ln -s "$tmp/emoji/img" "$tmp/known/img"
python3 - "$tmp/emoji/emoji.json" "$tmp/known/emoji.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
for i, x in enumerate(e[:24]):
    x["name"] = x["name"].rsplit(" ", 1)[0] if i < 16 else f"odd {i}"
json.dump(e, open(sys.argv[2], "w"))
PY
if "$jf" image-data --emoji "$tmp/known" -o "$tmp/known-data" --colours 8 --text-vocab 300 --heldout-known-words --heldout-every 3 \
     --shifts 3 2>"$tmp/err" && python3 - "$tmp/known-data" <<'PY'
import re, sys
d = sys.argv[1]
train = open(d + "/train.txt").read().splitlines()
held = open(d + "/heldout_captions.txt").read().splitlines()
caption = lambda l: l.split("<image")[0]
assert len(held) == 5 and not any(h.startswith("odd") for h in held), held
words = {w for l in train for w in caption(l).split()}
assert all(w in words for h in held for w in h.split()), held
assert len(train) == 3 * 19, len(train)
originals, copies = train[:19], train[19:]
assert sorted(caption(l) for l in copies) == sorted(caption(l) for l in originals * 2)
pixels = lambda l: re.findall(r"<#[0-9a-f]{6}>", l)
assert sum(pixels(a) != pixels(b) for a in originals for b in copies if caption(a) == caption(b)) > 0, "no copy moved"
PY
then ok "image-data --heldout-known-words --shifts 3: 5 held out of known words, each training picture three times"
else fail "image-data --heldout-known-words: $(cat "$tmp/err")"; fi
if "$jf" image-data --emoji "$tmp/emoji" -o "$tmp/d6" --vocab-from "$tmp/data/vocab.gguf" --whole-words >"$tmp/out" 2>"$tmp/err"
then fail "image-data: --vocab-from with --whole-words accepted"
else ok "image-data: --vocab-from refuses the options it would ignore: $(cat "$tmp/err")"; fi
check_error "image-data: --vocab-from a text model" "$jf" image-data --emoji "$tmp/emoji" -o "$tmp/d4" \
  --vocab-from "$(dirname "$0")/../models/pycode-ar-q8_0.gguf"
check_error "image-data: --vocab-from another image size" "$jf" image-data --emoji "$tmp/emoji" -o "$tmp/d5" \
  --vocab-from "$tmp/data/vocab.gguf" --size 8
"$jf" inspect -m "$tmp/data/vocab.gguf" >/dev/null 2>&1 || true

check_error "image-data: missing package" "$jf" image-data --emoji "$tmp/nothing" -o "$tmp/d2"
echo '[{"name":"X","image":"x.png","has_img_google":true}]' > "$tmp/emoji/emoji.json.bad" && mkdir -p "$tmp/bad/img/google/64" &&
  cp "$tmp/emoji/emoji.json.bad" "$tmp/bad/emoji.json" && echo "not a png" > "$tmp/bad/img/google/64/x.png"
check_error "image-data: a malformed PNG" "$jf" image-data --emoji "$tmp/bad" -o "$tmp/d3"
check_error "imagine: a text model" "$jf" imagine -m "$(dirname "$0")/../models/pycode-ar-q8_0.gguf" "red heart" -o "$tmp/x.png"
check_error "imagine: no caption" "$jf" imagine -m "$model" -o "$tmp/x.png"
check_error "imagine: greedy" "$jf" imagine -m "$model" "red heart" --temp 0 -o "$tmp/x.png"
check_error "imagine: output directory missing" "$jf" imagine -m "$model" "red heart" -o "$tmp/no/x.png"
check_error "imagine: bad decoder" "$jf" imagine -m "$model" "red heart" --decoder sjd:pac-tree=3 -o "$tmp/x.png"
check_error "imagine: caption longer than the context" "$jf" imagine -m "$model" "$(printf 'red heart %.0s' {1..400})" -o "$tmp/x.png"

# Two captions x two decoders (ar beside SJD-PAC, the same seeds): a grid of 2 rows and 2 columns at scale 4
# (64-pixel tiles, 4-pixel gaps), and a gallery page with every pixel of the four images on its forward map.
if "$jf" imagine -m "$model" "red heart" "dog face" --decoder ar,sjd:block=32:draft-policy=fixed:pac-continue=1:pac-tree=3x4 \
     --scale 4 -t 2 -o "$tmp/grid.png" --viz "$tmp/gallery.html" 2>"$tmp/err" &&
   python3 - "$tmp" <<'PY'
import re, struct, sys
d = sys.argv[1]
head = open(d + "/grid.png", "rb").read(24)
w, h = struct.unpack(">II", head[16:24])
assert (w, h) == (4 + 2 * 68, 4 + 2 * 68), (w, h)
page = open(d + "/gallery.html").read()
assert page.count('class="px"') == 4 * 256, page.count('class="px"')
err = open(d + "/err").read()
tpf = [float(x) for x in re.findall(r"\(([0-9.]+) tokens/forward\)", err)]
assert len(tpf) == 4 and tpf[0] == tpf[2] == 1.0 and tpf[1] > 1.5 and tpf[3] > 1.5, tpf
PY
then ok "imagine: a 2x2 grid (ar beside SJD-PAC), the gallery's forward maps, SJD-PAC > 1.5 tokens a forward"
else fail "imagine grid: $(tail -3 "$tmp/err")"; fi

# -o NAME.svg: the grid labelled, a caption a row and "seed N" a column, each image the PNG the same draw gives alone.
if "$jf" imagine -m "$model" "red heart" --decoder ar --scale 4 -t 2 -o "$tmp/one.png" 2>"$tmp/err" &&
   "$jf" imagine -m "$model" "red heart" 'a <b> & "c"' --decoder ar --samples 2 --scale 4 -t 2 -o "$tmp/grid.svg" 2>>"$tmp/err" &&
   python3 - "$tmp" <<'PY'
import base64, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
svg = ET.parse(d + "/grid.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
tiles = [e for e in svg.iter(ns + "image") if e.get("class") == "tile"]
assert len(tiles) == 4, len(tiles)
first = base64.b64decode(tiles[0].get("href").split(",", 1)[1])
assert first == open(d + "/one.png", "rb").read(), "the first tile is not the image drawn alone"
texts = [t.text for t in svg.iter(ns + "text")]
assert texts == ["seed 1", "seed 2", "red heart", 'a <b> & "c"'], texts
PY
then ok "imagine -o grid.svg: labelled rows and columns, each tile the image drawn alone"
else fail "imagine -o grid.svg: $(tail -3 "$tmp/err")"; fi

if "$jf" image-bench -m "$model" --captions <(printf 'red heart\ndog face\n') --images 2 --blocks 32 --locality-images 1 -t 2 \
     -o "$tmp/bench" >"$tmp/bench.md" 2>"$tmp/err" && python3 - "$tmp/bench" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(d + "/image-bench.json"))
names = [x["decoder"] for x in r["decoders"]]
assert names == ["ar", "SJD L=32", "SJD + PD L=32", "SJD + AC L=32", "SJD-PAC L=32", "SJD-PAC + repeat guess L=32",
                 "SJD-PAC + repeat run L=32", "SJD-PAC + repeat guess, tree 32x8 L=32", "SJD-PAC + repeat run, tree 32x8 L=32"], names
for x in r["decoders"]:
    assert x["tokens"] == 512 and sum(k * n for k, n in enumerate(x["histogram"])) == 512, x
pac, run, deep, deep_run = r["decoders"][5:]
assert pac["step_compression"] > 1.5 and pac["counters"]["pac_kept"] > 0, pac
assert run["counters"]["pac_run_kept"] > 0 and deep_run["counters"]["pac_run_kept"] > 0, run
assert "pac_run_kept" not in pac["counters"], pac
assert deep["rows_per_forward"] > 3 * pac["rows_per_forward"] and deep["step_compression"] > 1.5, deep
loc = r["locality"]
assert len(loc["image_tv"]) == 48 and loc["image_changes"] > 0 and loc["text_changes"] > 0, loc
assert all(0 <= v <= 1 for v in loc["image_tv"] + loc["text_tv"])
for f in ["locality.svg", "accept-sjd-l-32.svg", "accept-sjd-pac-l-32.svg", "accept-sjd-pac-repeat-guess-l-32.svg"]:
    assert open(os.path.join(d, f)).read().startswith("<svg"), f
PY
then ok "image-bench: eight decoders' histograms add up to the 512 tokens, the runs' guesses kept, the deep tree's rows, locality curves, charts"
else fail "image-bench: $(tail -3 "$tmp/err")"; fi

specs="sjd:block=8:draft-policy=fixed,sjd:block=8:draft-policy=fixed:pac-tree=3x4:pac-guess=8"
if "$jf" image-bench -m "$model" --captions <(printf 'red heart\n') --images 1 --decoders "$specs" --locality-images 0 -t 2 \
     -o "$tmp/bench2" >/dev/null 2>"$tmp/err" && python3 - "$tmp/bench2" "$specs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1] + "/image-bench.json"))
assert [x["spec"] for x in r["decoders"]] == ["ar"] + sys.argv[2].split(","), r["decoders"]
PY
then ok "image-bench --decoders: ar and the two specs given, nothing else"
else fail "image-bench --decoders: $(tail -3 "$tmp/err")"; fi
"$jf" image-bench -m "$model" --captions <(printf 'red heart\n') --decoders "sjd:pac-guess=2" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^jf: error: pac-guess" "$tmp/err"
then ok "image-bench --decoders: a bad spec refused before anything is measured: $(cat "$tmp/err")"
else fail "image-bench --decoders: a bad spec: $(cat "$tmp/err")"; fi

# Held-out perplexity, what a caption tells about its image and caption retrieval, on a data directory of white images (the
# shipped palette has white; "pear tree" has words no training caption has); a word inside an image is refused.
mkdir -p "$tmp/white"
python3 - "$tmp/white" <<'PY'
import sys
d = sys.argv[1]
caps = ["red heart", "dog face", "green apple", "blue car"]
line = lambda c, colour="ffffff": c + "<image 16x16>" + f"<#{colour}>" * 256
train = [line(c, "010101" if c == "blue car" else "ffffff") for c in caps]  # (#010101: the palette's darkest)
open(d + "/train.txt", "w").write("\n".join(train + train) + "\n")  # two "art styles"
held = [line("red heart"), line("dog face", "010101"), line("pear tree")]
open(d + "/heldout.txt", "w").write("\n".join(held) + "\n")
open(d + "/heldout_captions.txt", "w").write("red heart\n")
PY
if "$jf" image-bench -m "$model" --data "$tmp/white" --images 1 --blocks 8 --deep-tree '' --locality-images 0 -t 2 \
     -o "$tmp/wb" >"$tmp/wb.md" 2>"$tmp/err" && python3 - "$tmp/wb" <<'PY'
import json, math, sys
p = json.load(open(sys.argv[1] + "/image-bench.json"))["perplexity"]
assert p["tokens"] == 3 * 256 and 1 <= p["perplexity"] < 50, p
assert all(math.isfinite(p[k]) for k in ("caption_nats_heldout", "caption_nats_train")), p
assert p["caption_nats_train"] != 0, p  # each image under another caption, not its other style's copy of its own
# three held-out docs, one white image under three captions: the caption that suits it best wins for its own (ties win too)
assert p["retrieval_images"] == 3 and p["retrieval_top1_percent"] >= 33 and p["retrieval_top5_percent"] == 100, p
assert p["retrieval_known_images"] == 2 and p["retrieval_known_top5_percent"] == 100, p
# samples (emoji on white) are nearer the white pictures than the black ones: "dog face" and "blue car" miss, the
# others tie their own white picture with the other white ones, and a tie is no nearer picture
m = json.load(open(sys.argv[1] + "/image-bench.json"))["picture_match"]
assert (m["heldout_samples"], m["heldout_known"], m["train_samples"]) == (3, 2, 4), m
assert round(m["heldout_top1_percent"]) == 67 and m["heldout_known_top1_percent"] == 50 and m["train_top1_percent"] == 75, m
PY
then ok "image-bench --data: held-out perplexity of 768 pixels, 2 of 3 captions known, samples nearest their pictures, what a caption tells ($(grep -o '[0-9.-]* nats an image held out' "$tmp/wb.md"))"
else fail "image-bench --data: $(tail -3 "$tmp/err")"; fi
sed -i '1s/<#ffffff>/word/' "$tmp/white/heldout.txt"
# (refused before anything is measured: nothing on stdout)
"$jf" image-bench -m "$model" --data "$tmp/white" --images 1 --blocks 8 --deep-tree '' --locality-images 0 >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^jf: error: .*not a colour inside an image" "$tmp/err"
then ok "image-bench: a word inside a held-out image: $(cat "$tmp/err")"
else fail "image-bench: a word inside a held-out image: $(cat "$tmp/err")"; fi

# Guidance: the guided image differs from the unguided one of the same seed, and the bench says it ran guided.
if "$jf" imagine -m "$model" "red heart" --decoder ar -o "$tmp/plain.png" 2>/dev/null &&
   "$jf" imagine -m "$model" "red heart" --decoder ar --cfg 2 -o "$tmp/guided.png" 2>"$tmp/err" &&
   ! cmp -s "$tmp/plain.png" "$tmp/guided.png" &&
   "$jf" image-bench -m "$model" --captions <(printf 'red heart\n') --images 1 --blocks 8 --deep-tree '' --cfg 2 \
     --locality-images 0 -t 2 >"$tmp/guided.md" 2>"$tmp/err" && grep -q "guidance 2," "$tmp/guided.md" &&
   [ "$(grep -c '^| SJD' "$tmp/guided.md")" -eq 6 ]
then ok "guidance: --cfg 2 changes the image; image-bench runs guided, without the deep tree row"
else fail "guidance: $(tail -3 "$tmp/err")"; fi
check_error "imagine: negative guidance" "$jf" imagine -m "$model" "red heart" --cfg -1 -o "$tmp/x.png"
check_error "image-bench: bad --deep-tree" "$jf" image-bench -m "$model" --captions <(printf 'red heart\n') --deep-tree 3y4

[ "$fails" -eq 0 ] && echo "all image CLI checks passed" || { echo "$fails image CLI checks failed"; exit 1; }
