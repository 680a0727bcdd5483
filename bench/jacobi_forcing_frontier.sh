#!/usr/bin/env bash
# Every variant of docs/TRAINING.md "The frontier on held-out data", then its tables and pictures.
# Usage: bench/jacobi_forcing_frontier.sh stories|code [WORKDIR] [THREADS]
#   LARGE_ROUNDS: bench/large_base_round.sh's OUTDIR, whose points join the code picture (default /tmp/jfbig/quick).
#   DRAFT_HEADS: bench/draft_head.sh's WORKDIR (NAMEs base, lr1e4r2 on WORKDIR/x3's round 2 from lr 1e-4,
#   shipped, shipped-merged0.5 on its merge at 0.5, lr3e5 on the lr 3e-5 variant; with DRAFT_LAYER=1, layer
#   on the base and shipped-layer, shipped-merged0.5-layer; with STORIES=1 too, stories-layer), whose points
#   join the pictures (default /tmp/dh/heads).
#   (stories: ~2.5 h with one thread; code: ~16 h. Each model and evaluation is skipped when its file exists,
#   so an interrupted run resumes where it stopped, and a second process may run the other model.)
set -euo pipefail
cd "$(dirname "$0")/.."
which="$1"
work="${2:-/tmp/jf-frontier-$which}"
threads="${3:-1}"
recipe() { bench/jacobi_forcing_recipe.sh "$which" "$work" "$threads" "$@"; }
# more_prompts COUNT VARIANT...: the variants on COUNT training openings (WORKDIR/x3), with the same KL text and
# base evaluation; their eval_*.json are copied beside the others.
more_prompts() {
  local count="$1" v
  shift
  mkdir -p "$work/x3"
  [ -e "$work/x3/samples" ] || ln -s "$work/samples" "$work/x3/samples"
  [ -s "$work/x3/eval_base.json" ] || cp "$work/eval_base.json" "$work/x3/"
  PROMPT_COUNT="$count" bench/jacobi_forcing_recipe.sh "$which" "$work/x3" "$threads" "$@"
  for v in "$@"; do
    IFS=: read -r name a b _ <<<"$v"
    [ "$name" = merge ] && name="${a}_a$b"
    cp "$work/x3/eval_$name.json" "$work/"
  done
}

if [ "$which" = stories ]; then
  T="--teacher,BASE,SAMPLES,--consistency-norm,per-block"
  new="$T,--consistency-rows,2,--text-weight,4"
  C=":--context-noise-cap,0.5"
  recipe "old:1e-3:1:--consistency-norm,per-block" "merge:old:0.5" "merge:old:0.25" \
    "old1:1e-3:1:--consistency-norm,per-block:--max-repeat4,1" \
    "k2lr3e5:3e-5:1:$new$C" "k2lr1e4:1e-4:1:$new$C" "k2:3e-4:1:$new$C" "k2lr1e3:1e-3:1:$new$C" "k2lr3e3:3e-3:1:$new$C" \
    "merge:k2lr1e3:0.75" "merge:k2lr1e3:0.5" "merge:k2lr1e3:0.25" "merge:k2lr3e3:0.25" \
    "b32:3e-4:1:$new,--accum,32,--text-accum,8$C" "b32lr1e3:1e-3:1:$new,--accum,32,--text-accum,8$C" "merge:b32lr1e3:0.5" \
    "k1:3e-4:1:$T,--consistency-rows,1,--text-weight,4$C" "all:3e-4:1:$T,--text-weight,4$C" \
    "decay:3e-4:1:$T,--consistency-decay,0.5,--text-weight,4$C" "nocap:3e-4:1:$new" \
    "cc:3e-4:1:$new:--mask,clean-context" "selfc:3e-4:1:$new,--no-teacher-consistency$C" \
    "loops:3e-4:1:$new$C,--max-repeat4,1" "w16:1e-3:1:$T,--consistency-rows,2,--text-weight,16$C" \
    "r2:3e-4:1:$new$C:k2lr1e3" "r3:3e-4:1:$new$C:r2" "r4:3e-4:1:$new$C:r3" "r2n32:3e-4:1:$new$C:k2lr1e3@32" \
    "merge:r2:0.5" "merge:r3:0.5" "merge:r3:0.25" "merge:r4:0.25"
  more_prompts 6000 "k2x3:3e-4:1:$new$C" "k2x3lr1e4:1e-4:1:$new$C" "merge:k2x3:0.5"  # three times the openings
  seeds=()  # seed to seed: K = 2 with the cap and with the clean-context mask, seeds 2-4 (train and pack)
  for s in 2 3 4; do
    seeds+=("k2s$s:3e-4:1:$new,--seed,$s$C,--seed,$s" "ccs$s:3e-4:1:$new,--seed,$s:--mask,clean-context,--seed,$s")
  done
  recipe "${seeds[@]}"
  python3 bench/jacobi_forcing_recipe.py "$work" k2 k2s2 k2s3 k2s4 cc ccs2 ccs3 ccs4
  python3 bench/jacobi_forcing_recipe.py "$work" base old old_a0.5 old_a0.25 old1 k2lr3e5 k2lr1e4 k2 k2lr1e3 k2lr3e3 \
    k2lr1e3_a0.75 k2lr1e3_a0.5 k2lr1e3_a0.25 k2lr3e3_a0.25 b32 b32lr1e3 b32lr1e3_a0.5 k1 all decay nocap cc selfc loops \
    w16 r2 r3 r4 r2n32 r2_a0.5 r3_a0.5 r3_a0.25 r4_a0.25 k2x3lr1e4 k2x3 k2x3_a0.5
  # A draft layer (bench/draft_head.sh's WORKDIR, STORIES=1 DRAFT_LAYER=1, NAME stories-layer), where made.
  layers=()
  h="${DRAFT_HEADS:-/tmp/dh/heads}"
  for f in stories-layer stories-layer-r2 stories-layer-r3; do
    [ -s "$h/eval_$f.json" ] && layers+=("base + draft layer, rounds 1-3=$h/eval_$f.json")
  done
  build/bin/jf frontier -o "$work/frontier.svg" --target 0.95,1.3 "${layers[@]}" \
    "old recipe, merged=$work/eval_old.json" "old recipe, merged=$work/eval_old_a0.5.json" "old recipe, merged=$work/eval_old_a0.25.json" \
    "new recipe, lr sweep=$work/eval_k2lr3e5.json" "new recipe, lr sweep=$work/eval_k2lr1e4.json" "new recipe, lr sweep=$work/eval_k2.json" \
    "new recipe, lr sweep=$work/eval_k2lr1e3.json" "new recipe, lr sweep=$work/eval_k2lr3e3.json" \
    "new recipe lr 1e-3, merged=$work/eval_k2lr1e3.json" "new recipe lr 1e-3, merged=$work/eval_k2lr1e3_a0.75.json" \
    "new recipe lr 1e-3, merged=$work/eval_k2lr1e3_a0.5.json" "new recipe lr 1e-3, merged=$work/eval_k2lr1e3_a0.25.json" \
    "batch 32 lr 1e-3, merged=$work/eval_b32lr1e3.json" "batch 32 lr 1e-3, merged=$work/eval_b32lr1e3_a0.5.json" \
    "round 3, merged=$work/eval_r3.json" "round 3, merged=$work/eval_r3_a0.5.json" "round 3, merged=$work/eval_r3_a0.25.json" \
    "3x prompts: lr 1e-4, 3e-4, merged=$work/eval_k2x3lr1e4.json" "3x prompts: lr 1e-4, 3e-4, merged=$work/eval_k2x3.json" \
    "3x prompts: lr 1e-4, 3e-4, merged=$work/eval_k2x3_a0.5.json"
else
  T="--teacher,BASE,SAMPLES,--seq-len,512,--consistency-norm,per-block"
  new="$T,--consistency-rows,2,--text-weight,4"
  C=":--context-noise-cap,0.5,--max-repeat4,1"
  # "old": the fine-tune shipped before the recipe (real corpus text as KL text, every noisy row, lr 1e-3).
  mkdir -p "$work"
  [ -s "$work/old-pycode-jf-q8_0.gguf" ] || git show 2f97fc1:models/pycode-jf-q8_0.gguf >"$work/old-pycode-jf-q8_0.gguf"
  recipe "model:old:$work/old-pycode-jf-q8_0.gguf" \
    "k2:3e-4:1:$new$C" "k2lr1e3:1e-3:1:$new$C" "b32:3e-4:1:$new,--accum,32,--text-accum,8$C" \
    "merge:k2:0.5" "merge:k2lr1e3:0.5" "merge:k2lr1e3:0.25" \
    "k2r2:3e-4:1:$new$C:k2" "k2r3:3e-4:1:$new$C:k2r2" "r2:3e-4:1:$new$C:k2lr1e3" "r3:3e-4:1:$new$C:r2" \
    "merge:r2:0.5" "merge:r2:0.25" \
    "k2lr3e5:3e-5:1:$new$C" "k2lr1e4:1e-4:1:$new$C" "k1:3e-4:1:$T,--consistency-rows,1,--text-weight,4$C" \
    "all:3e-4:1:$T,--text-weight,4$C" "decay:3e-4:1:$T,--consistency-decay,0.5,--text-weight,4$C" \
    "nocap:3e-4:1:$new:--max-repeat4,1" "cc:3e-4:1:$new:--mask,clean-context,--max-repeat4,1" \
    "selfc:3e-4:1:$new,--no-teacher-consistency$C" "loopsdropped:3e-4:1:$new:--context-noise-cap,0.5,--max-repeat4,0.6"
  # The base requantized: how far a quantization alone moves held-out agreement.
  for t in q6_k q5_k_m q4_k_m; do
    [ -s "$work/base-$t.gguf" ] || build/bin/jf convert -m models/pycode-ar-q8_0.gguf --type "$t" -o "$work/base-$t.gguf"
    recipe "model:base_$t:$work/base-$t.gguf"
  done
  more_prompts 7200 "k2x3:3e-4:1:$new$C" "k2x3lr1e4:1e-4:1:$new$C" "k2x3r2:3e-4:1:$new$C:k2x3" \
    "merge:k2x3r2:0.75" "merge:k2x3r2:0.5" "k2x3lr1e4r2:1e-4:1:$new$C:k2x3lr1e4" \
    "k2x3cc:3e-4:1:$new:--mask,clean-context,--max-repeat4,1" \
    "k2x3ccr2:3e-4:1:$new:--mask,clean-context,--max-repeat4,1:k2x3cc"  # three times the openings
  recipe "k2s2:3e-4:1:$new,--seed,2$C,--seed,2" "ccs2:3e-4:1:$new,--seed,2:--mask,clean-context,--max-repeat4,1,--seed,2"
  python3 bench/jacobi_forcing_recipe.py "$work" base old k2 k2lr1e3 b32 k2_a0.5 k2lr1e3_a0.5 k2lr1e3_a0.25 k2r2 k2r3 r2 r3 \
    r2_a0.5 r2_a0.25 k2lr3e5 k2lr1e4 k1 all decay nocap cc selfc loopsdropped k2x3 k2x3cc k2x3ccr2 k2x3lr1e4 k2x3lr1e4r2 k2x3r2 k2x3r2_a0.75 k2x3r2_a0.5 k2s2 ccs2 base_q6_k base_q5_k_m base_q4_k_m
  # The larger base's one-round points (bench/large_base_round.sh's OUTDIR), where they have been made.
  large=()
  for lr in 3e-5 1e-4 3e-4; do
    f="${LARGE_ROUNDS:-/tmp/jfbig/quick}/eval-lr$lr.jsonl"
    [ -s "$f" ] || continue
    head -1 "$f" >"$work/eval_large_lr$lr.json"
    large+=("29.4M base, lr 3e-5 .. 3e-4=$work/eval_large_lr$lr.json")
  done
  # Draft heads (bench/draft_head.sh's WORKDIR), where they have been made: the same models, faster drafts.
  heads=()
  h="${DRAFT_HEADS:-/tmp/dh/heads}"
  for f in base base-r2; do [ -s "$h/eval_$f.json" ] && heads+=("base + draft head, rounds 1-2=$h/eval_$f.json"); done
  for f in layer layer-r2 layer-r3; do [ -s "$h/eval_$f.json" ] && heads+=("base + draft layer, rounds 1-3=$h/eval_$f.json"); done
  for f in shipped lr1e4r2 lr3e5 shipped-merged0.5; do  # in order of agreement: one curve
    [ -s "$h/eval_$f.json" ] && heads+=("fine-tunes + draft head=$h/eval_$f.json")
  done
  for f in shipped-layer shipped-merged0.5-layer; do
    [ -s "$h/eval_$f.json" ] && heads+=("fine-tunes + draft layer=$h/eval_$f.json")
  done
  build/bin/jf frontier -o "$work/frontier.svg" --target 0.9,1.5 "old (first release)=$work/eval_old.json" \
    "new, lr 3e-5 .. 1e-3=$work/eval_k2lr3e5.json" "new, lr 3e-5 .. 1e-3=$work/eval_k2lr1e4.json" \
    "new, lr 3e-5 .. 1e-3=$work/eval_k2.json" "new, lr 3e-5 .. 1e-3=$work/eval_k2lr1e3.json" \
    "3x prompts, lr 1e-4 and 3e-4=$work/eval_k2x3lr1e4.json" "3x prompts, lr 1e-4 and 3e-4=$work/eval_k2x3.json" \
    "3x prompts, rounds 1-2 (2: shipped)=$work/eval_k2x3.json" "3x prompts, rounds 1-2 (2: shipped)=$work/eval_k2x3r2.json" \
    "3x prompts, round 2 merged=$work/eval_k2x3r2.json" "3x prompts, round 2 merged=$work/eval_k2x3r2_a0.75.json" \
    "3x prompts, round 2 merged=$work/eval_k2x3r2_a0.5.json" \
    "3x prompts, rounds 1-2 at lr 1e-4=$work/eval_k2x3lr1e4.json" \
    "3x prompts, rounds 1-2 at lr 1e-4=$work/eval_k2x3lr1e4r2.json" \
    "new lr 1e-3, merged=$work/eval_k2lr1e3.json" "new lr 1e-3, merged=$work/eval_k2lr1e3_a0.5.json" \
    "new lr 1e-3, merged=$work/eval_k2lr1e3_a0.25.json" \
    "rounds from lr 3e-4 (2: second release)=$work/eval_k2.json" "rounds from lr 3e-4 (2: second release)=$work/eval_k2r2.json" \
    "rounds from lr 3e-4 (2: second release)=$work/eval_k2r3.json" "rounds from lr 1e-3=$work/eval_k2lr1e3.json" \
    "rounds from lr 1e-3=$work/eval_r2.json" "rounds from lr 1e-3=$work/eval_r3.json" \
    "base requantized Q6_K .. Q4_K_M=$work/eval_base_q6_k.json" "base requantized Q6_K .. Q4_K_M=$work/eval_base_q5_k_m.json" \
    "base requantized Q6_K .. Q4_K_M=$work/eval_base_q4_k_m.json" "batch 32=$work/eval_b32.json" \
    "K = 1=$work/eval_k1.json" "every noisy row=$work/eval_all.json" "decay 0.5 instead of K=$work/eval_decay.json" \
    "no noise cap=$work/eval_nocap.json" "clean-context mask=$work/eval_cc.json" "self-consistency=$work/eval_selfc.json" \
    "loops dropped=$work/eval_loopsdropped.json" "3x prompts, clean-context mask=$work/eval_k2x3cc.json" \
    "3x prompts, clean-context mask=$work/eval_k2x3ccr2.json" "${large[@]}" "${heads[@]}"
fi
