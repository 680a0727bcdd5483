#!/usr/bin/env python3
"""Markdown table of Jacobi Forcing results, shared by bench/jacobi_forcing_*.sh.

Usage: jacobi_forcing_table.py WORKDIR DECODER[,DECODER...] NAME[=LABEL] ...
Reads WORKDIR/bench_NAME.json (jf bench --json) and WORKDIR/ppl_NAME.json (jf perplexity --json) for each
NAME; the first NAME is the base model. Prints, per model, each decoder's TPF with its ratio to the base
model's, the perplexity, and the share of greedy tokens (position by position) equal to the base model's.
"""
import json
import sys


def load(work, name):
    bench = json.load(open(f"{work}/bench_{name}.json"))
    tpf = {r["decoder"]: r["tpf"] for r in bench["summary"]}
    ar = [r["tokens"] for r in bench["runs"] if r["decoder"] == "ar"]
    return tpf, ar, json.load(open(f"{work}/ppl_{name}.json"))["perplexity"]


def main():
    work, decoders, models = sys.argv[1], sys.argv[2].split(","), [m.partition("=") for m in sys.argv[3:]]
    base_tpf, base_ar, _ = load(work, models[0][0])
    print("| model | " + " | ".join(f"{d} TPF" for d in decoders) + " | perplexity | greedy tokens equal to base |")
    print("|---" * (len(decoders) + 3) + "|")
    for name, _, label in models:
        tpf, ar, ppl = load(work, name)
        same = sum(x == y for a, b in zip(ar, base_ar) for x, y in zip(a, b))
        total = sum(min(len(a), len(b)) for a, b in zip(ar, base_ar))
        cells = [f"{tpf[d]:.2f} ({tpf[d] / base_tpf[d]:.2f}x)" for d in decoders]
        print(f"| {label or name} | " + " | ".join(cells) + f" | {ppl:.2f} | {100.0 * same / max(1, total):.1f}% |")


if __name__ == "__main__":
    main()
