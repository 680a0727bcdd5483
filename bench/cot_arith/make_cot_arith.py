#!/usr/bin/env python3
"""Chain-of-thought arithmetic for evaluating FastCoT (issue 15): running sums written out step by step.

Each example adds 5-9 numbers of 1-2 digits; the rationale writes every partial sum (multi-digit additions,
one per step) and ends with an answer line:

    Q: 12+7+35+4+9
    A: 12+7=19, 19+35=54, 54+4=58, 58+9=67.
    The answer is 67.

Writes a training corpus (examples separated by blank lines, for `jf train --objective ar --doc-sep '\\n\\n'`)
and a held-out test set in GSM8K's JSONL shape ({"question": prompt, "answer": "... #### N"}) for
`jf bench --format gsm8k`. Deterministic (seeded); test questions never occur in the training corpus."""
import argparse
import json
import os
import random


def example(rng):
    terms = [rng.randint(1, 9) if rng.random() < 0.6 else rng.randint(10, 40) for _ in range(rng.randint(5, 9))]
    steps, total = [], terms[0]
    for t in terms[1:]:
        steps.append(f"{total}+{t}={total + t}")
        total += t
    question = "Q: " + "+".join(map(str, terms)) + "\nA:"
    rationale = " " + ", ".join(steps) + "."
    return question, rationale, total


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=60000, help="training examples (default 60000)")
    ap.add_argument("--test", type=int, default=200, help="held-out test questions (default 200)")
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("-o", "--out", required=True, help="output directory (train.txt, test.jsonl)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    test, seen = [], set()
    while len(test) < a.test:
        q, r, total = example(rng)
        if q in seen:
            continue
        seen.add(q)
        test.append({"question": q, "answer": r.strip() + f"\nThe answer is {total}.\n#### {total}"})
    train = []
    while len(train) < a.train:
        q, r, total = example(rng)
        if q in seen:
            continue
        train.append(q + r + f"\nThe answer is {total}.")
    write_atomic(os.path.join(a.out, "train.txt"), "\n\n".join(train) + "\n")
    write_atomic(os.path.join(a.out, "test.jsonl"), "".join(json.dumps(t) + "\n" for t in test))
    print(f"wrote {len(train)} training examples and {len(test)} test questions to {a.out}")


if __name__ == "__main__":
    main()
