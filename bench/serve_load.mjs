#!/usr/bin/env node
// Load benchmark of `jf serve`: for each decoder, one server; for each client count, that many clients send
// streamed completions back to back (each a fixed number of new tokens, EOS ignored). Prints aggregate
// generated tokens/s, its ratio to `ar` at the same client count (measured in this run), p50/p95 request
// latency and time to first token, and tokens per forward. Results go to docs/BENCHMARKS.md with the command.
//
//   node bench/serve_load.mjs --model M.gguf [--jf build/bin/jf] [--clients 1,2,4,8,16]
//        [--decoders ar,pld,lookahead] [--n 32] [--requests 3] [--threads 2] [--prompts bench/prompts/code_demo.jsonl]
//        [--serve-args "--draft-tolerance 1.1"]
//
// With --turns T, instead: one conversation of T turns (each prompt is the last one, its answer and the next
// prompt of the file) against a server that keeps each sequence's cache and one started with
// --no-prefix-reuse; prints each turn's time to first token on both and their ratio.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    jf: { type: 'string', default: 'build/bin/jf' },
    model: { type: 'string' },
    clients: { type: 'string', default: '1,2,4,8,16' },
    decoders: { type: 'string', default: 'ar,pld,lookahead' },
    n: { type: 'string', default: '32' },
    requests: { type: 'string', default: '3' },
    threads: { type: 'string', default: '2' },
    prompts: { type: 'string', default: 'bench/prompts/code_demo.jsonl' },
    'serve-args': { type: 'string', default: '' },
    turns: { type: 'string', default: '0' },
  },
});
if (!opt.model) {
  console.error('serve_load: --model is required');
  process.exit(2);
}
const clientCounts = opt.clients.split(',').map(Number);
const decoders = opt.decoders.split(',');
const n = Number(opt.n);
const perClient = Number(opt.requests);
const prompts = readFileSync(opt.prompts, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).prompt);

async function startServer(decoder, extra = []) {
  const args = ['serve', '-m', opt.model, '--port', '0', '-t', opt.threads, '-P', String(Math.max(...clientCounts)),
    '--decoder', decoder.split(':')[0], ...decoder.split(':').slice(1).flatMap((kv) => {
      const [k, v] = kv.split('=');
      return [`--${k}`, v];
    }), ...opt['serve-args'].split(' ').filter(Boolean), ...extra];
  const proc = spawn(opt.jf, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/[\d.]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`jf serve exited ${code}: ${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, base, log: () => log };
}

// One streamed request: latency, time to first token, tokens, forwards.
async function request(base, prompt) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: n, ignore_eos: true, stream: true }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttft = null;
  let buffer = '';
  let stats = null;
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const j = JSON.parse(event.slice(6));
      if (j.choices?.[0]?.text) {
        if (ttft === null) ttft = performance.now() - t0;
        text += j.choices[0].text;
      }
      if (j.jf && j.jf.forwards !== undefined) stats = j.jf;
    }
  }
  const latency = performance.now() - t0;
  return { latency, ttft: ttft ?? latency, tokens: stats.tokens.length, forwards: stats.forwards, text,
    reused: stats.counters?.prompt_tokens_reused ?? 0 };
}

// A conversation's turns against two servers, prefix reuse on and off; the same prompts on both.
async function conversation(turns) {
  const settings = [['reuse', []], ['no reuse', ['--no-prefix-reuse']]];
  const ttft = {};
  const info = [];
  for (const [name, extra] of settings) {
    const srv = await startServer('ar', extra);
    await request(srv.base, prompts[prompts.length - 1]);  // warm-up
    let text = '';
    ttft[name] = [];
    for (let t = 0; t < turns; t++) {
      text += prompts[t % prompts.length];
      const r = await request(srv.base, text);
      ttft[name].push(r.ttft);
      if (name === 'reuse') info.push({ chars: text.length, reused: r.reused });
      text += r.text + '\n';
    }
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.on('exit', r));
  }
  console.log(`model ${opt.model}, ${opt.threads} threads, ${n} new tokens per turn, decoder ar\n`);
  console.log('| turn | prompt chars | prompt tokens reused | TTFT ms, reuse | TTFT ms, --no-prefix-reuse | ratio |');
  console.log('|---|---|---|---|---|---|');
  for (let t = 0; t < turns; t++) {
    const a = ttft.reuse[t], b = ttft['no reuse'][t];
    console.log(`| ${t + 1} | ${info[t].chars} | ${info[t].reused} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(b / a).toFixed(2)}x |`);
  }
}
if (Number(opt.turns) > 0) {
  await conversation(Number(opt.turns));
  process.exit(0);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};

const rows = [];
for (const decoder of decoders) {
  const srv = await startServer(decoder);
  for (let k = 0; k < 3; k++) await request(srv.base, prompts[k % prompts.length]);  // warm-up
  for (const c of clientCounts) {
    const results = [];
    const t0 = performance.now();
    await Promise.all([...Array(c).keys()].map(async (i) => {
      for (let k = 0; k < perClient; k++) results.push(await request(srv.base, prompts[(i + k * c) % prompts.length]));
    }));
    const seconds = (performance.now() - t0) / 1000;
    const tokens = results.reduce((s, r) => s + r.tokens, 0);
    const forwards = results.reduce((s, r) => s + r.forwards, 0);
    rows.push({ decoder, c, tps: tokens / seconds, p50: pct(results.map((r) => r.latency), 0.5),
      p95: pct(results.map((r) => r.latency), 0.95), ttft: pct(results.map((r) => r.ttft), 0.5), tpf: tokens / forwards });
    process.stderr.write(`${decoder} x${c}: ${(tokens / seconds).toFixed(1)} tok/s\n`);
  }
  srv.proc.kill('SIGTERM');
  await new Promise((r) => srv.proc.on('exit', r));
}

console.log(`model ${opt.model}, ${opt.threads} threads, ${n} new tokens per request, ${perClient} requests per client\n`);
console.log('| decoder | clients | tokens/s | vs ar | p50 latency ms | p95 latency ms | p50 TTFT ms | TPF |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const ar = rows.find((x) => x.decoder === 'ar' && x.c === r.c);
  console.log(`| ${r.decoder} | ${r.c} | ${r.tps.toFixed(1)} | ${ar ? (r.tps / ar.tps).toFixed(2) + 'x' : '-'} | ` +
    `${r.p50.toFixed(0)} | ${r.p95.toFixed(0)} | ${r.ttft.toFixed(0)} | ${r.tpf.toFixed(2)} |`);
}
