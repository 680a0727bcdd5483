#!/usr/bin/env python3
"""How often the default model loops when it is run as ./run.sh runs it (sampled with the usual chat settings,
64 tokens): for each opening of a prompt file, the share of repeated 4-grams (4-grams seen earlier in the same
output) of its output, and the share of openings at or under the bound (issue 35: <= 0.15 on most openings).

Usage: demo_loops.py JF MODEL PROMPTS.jsonl [SEED]   (prints one JSON line)
"""
import json
import subprocess
import sys

SETTINGS = ["-n", "64", "--temp", "0.8", "--top-k", "40", "--top-p", "0.95", "--min-p", "0.05", "-t", "1"]
BOUND = 0.15


def repeat4(tokens):
    grams = [tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)]
    seen, repeated = set(), 0
    for g in grams:
        repeated += g in seen
        seen.add(g)
    return repeated / len(grams) if grams else 0.0


def main():
    jf, model, prompts = sys.argv[1:4]
    seed = sys.argv[4] if len(sys.argv) > 4 else "1"
    shares = []
    for line in open(prompts):
        prompt = json.loads(line)["prompt"]
        out = subprocess.run([jf, "generate", "-m", model, "-p", prompt, "--seed", seed, "--json", *SETTINGS],
                             capture_output=True, text=True, check=True)
        shares.append(repeat4(json.loads(out.stdout)["tokens"]))
    under = sum(s <= BOUND for s in shares)
    print(json.dumps({"model": model, "openings": len(shares), "mean_repeat4": round(sum(shares) / len(shares), 4),
                      "share_at_most_0.15": round(under / len(shares), 4)}))


if __name__ == "__main__":
    main()
