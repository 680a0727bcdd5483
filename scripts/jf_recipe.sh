# Sourced by scripts/train_default_jf.sh and bench/large_base_round.sh: the flags of the default Jacobi
# Forcing recipe (docs/TRAINING.md "The recipe"), so both run the same one.
#   pack: linear schedule fitted to each response over a window of 16, NC mask, noisy context blocks above 50%
#         noise seen clean, looping responses kept
#   train (one epoch; add -m, --teacher, --data, --steps, --corpus, --lr, --min-lr, --matmul, -o): 4 packed
#         sequences + 1 sequence of 512 sampled tokens per step, consistency on the first 2 rows after each
#         block's first mismatch, AR weight 1, per-block consistency, sampled text at weight 4
jf_recipe_pack_flags=(--schedule linear --window 16 --mask nc --context-noise-cap 0.5 --max-repeat4 1 --max-len 1024)
jf_recipe_train_flags=(--objective jacobi-forcing --accum 4 --consistency-rows 2 --ar-weight 1 --consistency-norm per-block
  --doc-sep '\n\n\n' --seq-len 512 --text-accum 1 --text-weight 4 --seed 1 --log-every 50 --save-every 100)
