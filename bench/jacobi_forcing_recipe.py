#!/usr/bin/env python3
"""Markdown table for bench/jacobi_forcing_recipe.sh: per model, the quality figures on held-out real text
(top-1 agreement with the base, KL, perplexity ratio), each decoder's TPF gain over the base on the held-out
prompts, and the repeated-4-gram share of both models' greedy outputs on those prompts.

Usage: jacobi_forcing_recipe.py WORKDIR NAME[=LABEL] ...
Reads WORKDIR/eval_NAME.json (jf eval --json).
"""
import json
import sys


def main():
    work, models = sys.argv[1], [m.partition("=") for m in sys.argv[2:]]
    evals = {}
    for name, _, _ in models:
        try:
            evals[name] = json.load(open(f"{work}/eval_{name}.json"))
        except (OSError, ValueError):
            print(f"{name}: no complete {work}/eval_{name}.json yet, left out", file=sys.stderr)
    models = [m for m in models if m[0] in evals]
    decoders = [d["decoder"] for d in next(iter(evals.values()))["decoders"]]
    print("| recipe | top-1 agr. text | KL text | ppl (x base) | "
          + " | ".join(f"{d} TPF (x base)" for d in decoders) + " | rep-4 (base) |")
    print("|---" * (5 + len(decoders)) + "|")
    for name, _, label in models:
        e = evals[name]
        t, g = e["text"], e["greedy"]
        tpf = {d["decoder"]: d for d in e["decoders"]}
        cells = [f"{tpf[d]['tpf_model']:.2f} (x{tpf[d]['tpf_ratio']:.2f})" for d in decoders]
        print(f"| {label or name} | {t['top1_agreement']:.3f} | {t['kl_base_model']:.3f} "
              f"| x{t['perplexity_ratio']:.3f} | " + " | ".join(cells)
              + f" | {g['repeat4_model']:.3f} ({g['repeat4_base']:.3f}) |")


if __name__ == "__main__":
    main()
