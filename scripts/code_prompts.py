#!/usr/bin/env python3
"""Function openings from Python sources as a JSONL prompt set (deterministic).

Each prompt is a `def` line (top level or method) with up to --context lines of the file before it and the
first line of its docstring, if any. --count prompts are taken evenly spaced over all openings of the sorted
files. Usage: code_prompts.py -o OUT.jsonl [--count N] [--context L] DIR_OR_FILE...
"""
import argparse
import json
import os
import pathlib
import sys


def python_files(paths):
    for p in map(pathlib.Path, paths):
        if p.is_file():
            yield p
        elif p.is_dir():
            yield from sorted(f for f in p.rglob("*.py") if f.is_file())


def openings(path, context):
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (UnicodeDecodeError, OSError):
        return
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not (stripped.startswith("def ") and line.rstrip().endswith(":")):
            continue
        text = "\n".join(lines[max(0, i - context):i + 1]) + "\n"
        if i + 1 < len(lines) and lines[i + 1].strip().startswith(('"""', "'''")):
            text += lines[i + 1] + "\n"
        yield text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--context", type=int, default=0)
    a = ap.parse_args()
    found = [t for f in python_files(a.paths) for t in openings(f, a.context)]
    if not found:
        sys.exit("code_prompts.py: no function openings under " + " ".join(a.paths))
    step = max(1, len(found) // a.count)
    chosen = found[::step][:a.count]
    tmp = a.output + ".tmp"
    with open(tmp, "w") as fh:
        for t in chosen:
            fh.write(json.dumps({"prompt": t}) + "\n")
    os.replace(tmp, a.output)
    print(f"code_prompts.py: {len(chosen)} of {len(found)} openings -> {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
