#!/usr/bin/env python3
"""Concurrent clients against one `jf serve` (Python's standard library alone, so it runs on a bare device
machine): for each client count, that many clients each send --requests greedy completions of --n tokens
(EOS ignored) back to back. Prints the aggregate generated tokens/s, its ratio to one client's (measured in
this run), the median request latency, and whether every response equals `jf generate`'s text for its prompt
(the server batches the clients' rows into shared forwards; batch invariance keeps each answer its own).

  python3 bench/serve_clients.py --model M.gguf [--jf build/bin/jf] [--device vulkan] [--clients 1,32]
      [--n 32] [--requests 2] [--prompts bench/prompts/code_demo.jsonl] [--decoder ar] [--threads N]

Exit status 1 when a response differs from generate's or a request fails."""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jf", default="build/bin/jf")
    p.add_argument("--model", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--clients", default="1,32")
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--requests", type=int, default=2)
    p.add_argument("--prompts", default="bench/prompts/code_demo.jsonl")
    p.add_argument("--decoder", default="ar")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: jf's default)")
    return p.parse_args()


def start_server(a, slots):
    cmd = [a.jf, "serve", "-m", a.model, "--device", a.device, "--port", "0", "-P", str(slots), "--no-calibrate",
           "--decoder", a.decoder]
    if a.threads:
        cmd += ["-t", str(a.threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []
    deadline = time.time() + 300
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # keep the pipe drained
            port = int(m.group(1))
            while time.time() < deadline and proc.poll() is None:  # /health is 503 until the model is ready
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                        return proc, port
                except Exception:  # noqa: BLE001 - not ready yet
                    time.sleep(0.2)
            break
    proc.kill()
    sys.exit("serve_clients: jf serve did not start: " + "".join(seen[-3:]).strip())


def complete(port, prompt, n):
    body = json.dumps({"prompt": prompt, "max_tokens": n, "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body, {"Content-Type": "application/json"})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=600) as r:
        j = json.load(r)
    return j["choices"][0]["text"], j["usage"]["completion_tokens"], time.time() - t0


def generate_text(a, prompt):
    cmd = [a.jf, "generate", "-m", a.model, "--device", a.device, "-p", prompt, "-n", str(a.n), "--ignore-eos", "--no-echo"]
    out = subprocess.run(cmd, capture_output=True, check=True).stdout  # bytes: text mode would turn \r into \n
    return out.decode("utf-8", errors="replace")


def run_clients(port, prompts, clients, a):
    results, errors = [], []
    lock = threading.Lock()

    def client(c):
        for r in range(a.requests):
            i = (c * a.requests + r) % len(prompts)
            try:
                text, tokens, seconds = complete(port, prompts[i], a.n)
                with lock:
                    results.append((i, text, tokens, seconds))
            except Exception as e:  # noqa: BLE001 - any failure is reported and counted
                with lock:
                    errors.append(f"client {c} request {r}: {e}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors, time.time() - t0


def main():
    a = parse()
    prompts = [json.loads(line)["prompt"] for line in open(a.prompts) if line.strip()]
    counts = [int(c) for c in a.clients.split(",")]
    want = [generate_text(a, p) for p in prompts[: max(counts) * a.requests]]
    proc, port = start_server(a, max(counts))
    bad = 0
    try:
        complete(port, prompts[0], 4)  # warm-up: first-use costs (pipelines, buffers) out of the timings
        print(f"model {a.model}, device {a.device}, decoder {a.decoder}, {a.n} tokens a request, {a.requests} a client\n")
        print("| clients | tokens/s (all clients) | x one client | median request s | identical to generate |")
        print("|---|---|---|---|---|")
        base = None
        for clients in counts:
            results, errors, wall = run_clients(port, prompts, clients, a)
            tps = sum(r[2] for r in results) / wall
            base = base or tps
            differ = [(i, text) for i, text, _, _ in results if text.rstrip("\n") != want[i % len(want)].rstrip("\n")]
            same = len(results) - len(differ)
            bad += len(errors) + len(results) - same
            median = sorted(r[3] for r in results)[len(results) // 2] if results else float("nan")
            print(f"| {clients} | {tps:.1f} | {tps / base:.2f}x | {median:.2f} | {same}/{clients * a.requests} |")
            for e in errors[:3]:
                print("  error:", e)
            for i, text in differ[:2]:
                print(f"  prompt {i}: served {text!r}\n  generate wrote {want[i % len(want)]!r}")
    finally:
        proc.terminate()
        proc.wait()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
