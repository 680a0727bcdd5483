#!/usr/bin/env python3
"""Markdown table for bench/jacobi_forcing_recipe.sh: per model, Jacobi TPF at n = 16 (and its ratio to the
base model's), multiblock TPF at n = 16 when the bench measured it, then jf eval's quality measures against the
base.

Usage: jacobi_forcing_recipe.py WORKDIR NAME[=LABEL] ...   (the first NAME is the base model)
Reads WORKDIR/bench_NAME.json (jf bench --json) and WORKDIR/eval_NAME.json (jf eval --json).
"""
import json
import sys


def main():
    work, models = sys.argv[1], [m.partition("=") for m in sys.argv[2:]]
    tpf, multiblock = {}, {}
    for name, _, _ in models:
        bench = json.load(open(f"{work}/bench_{name}.json"))
        by_decoder = {r["decoder"]: r["tpf"] for r in bench["summary"]}
        tpf[name] = by_decoder["jacobi:block=16:draft-policy=fixed"]
        multiblock[name] = by_decoder.get("multiblock:block=16:draft-policy=fixed")
    base, base_mb = tpf[models[0][0]], multiblock[models[0][0]]

    def multiblock_cell(name):
        if multiblock[name] is None or base_mb is None:
            return "-"
        return f"{multiblock[name]:.2f} ({multiblock[name] / base_mb:.2f}x)"

    print("| model | Jacobi TPF n=16 | multiblock TPF n=16 | top-1 agr. text | KL text | top-1 agr. base greedy "
          "| KL base greedy | ppl (x base) | base NLL of greedy (base's own) | rep-4 (base) | median 1st div. |")
    print("|---" * 11 + "|")
    for name, _, label in models:
        e = json.load(open(f"{work}/eval_{name}.json"))
        t, c, g = e["text"], e["continuations"], e["greedy"]
        print(f"| {label or name} | {tpf[name]:.2f} ({tpf[name] / base:.2f}x) | {multiblock_cell(name)} "
              f"| {t['top1_agreement']:.3f} "
              f"| {t['kl_base_model']:.3f} | {c['top1_agreement']:.3f} | {c['kl_base_model']:.3f} "
              f"| {t['perplexity_model']:.2f} ({t['perplexity_ratio']:.2f}x) "
              f"| {g['base_nll_of_model_outputs']:.3f} ({g['base_nll_of_base_outputs']:.3f}) "
              f"| {g['repeat4_model']:.3f} ({g['repeat4_base']:.3f}) | {g['median_first_divergence']:.0f} |")

if __name__ == "__main__":
    main()
