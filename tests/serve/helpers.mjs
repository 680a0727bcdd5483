// Starting the real `jf serve` on a free loopback port, and small HTTP helpers, for the server tests.
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import path from 'node:path';

export const JF = process.env.JF_BIN;
export const MODEL = process.env.JF_MODEL;
const execFileAsync = promisify(execFile);

// The official client, installed by tests/serve_test.sh into JF_NODE_MODULES.
export function openaiModule() {
  const require = createRequire(path.join(process.env.JF_NODE_MODULES, 'package.json'));
  return require('openai');
}

export async function startServer(args = [], env = {}) {
  const proc = spawn(JF, ['serve', '-m', MODEL, '--port', '0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/[\d.]+:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    exited.then(({ code }) => reject(new Error(`jf serve exited with ${code}: ${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  const server = {
    proc, port, base, exited,
    log: () => log,
    async ready() {
      for (let i = 0; i < 600; i++) {
        try {
          if ((await fetch(`${base}/health`)).status === 200) return;
        } catch {}
        await sleep(20);
      }
      throw new Error(`server never became ready: ${log}`);
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
  return server;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function post(base, route, body, headers = {}) {
  const res = await fetch(base + route, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, json, text, headers: res.headers };
}

// Server-sent events of a streamed answer: the parsed `data:` objects, and whether [DONE] ended it.
export async function postStream(base, route, body) {
  const res = await fetch(base + route, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
  });
  const raw = await res.text();
  const events = [];
  let done = false;
  for (const block of raw.split('\n\n')) {
    if (!block.trim() || block.startsWith(':')) continue;
    if (!block.startsWith('data: ')) throw new Error(`not an SSE data line: ${JSON.stringify(block)}`);
    const data = block.slice(6);
    if (data === '[DONE]') { done = true; continue; }
    if (done) throw new Error('data after [DONE]');
    events.push(JSON.parse(data));
  }
  return { status: res.status, contentType: res.headers.get('content-type'), events, done, raw };
}

// What `jf generate --json` produces for the same request: the reference every server answer must equal.
export async function generate(prompt, n, decoder = 'ar', extra = []) {
  return jfJson(['generate', '-m', MODEL, '-p', prompt, '-n', String(n), '--decoder', decoder.split(':')[0],
    ...decoderFlags(decoder), '--json', ...extra]);
}

// Runs jf with these arguments and parses its JSON output. Awaited, not synchronous: a synchronous child
// blocks the event loop for seconds, long enough for a server to close a pooled keep-alive connection that
// the client then reuses ('fetch failed' under load).
export async function jfJson(args) {
  const { stdout } = await execFileAsync(JF, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

// "lookahead:W=4:N=3" -> ["--W", "4", "--N", "3"] (jf generate's flags have the spec's key names).
function decoderFlags(spec) {
  return spec.split(':').slice(1).flatMap((kv) => {
    const [k, v] = kv.split('=');
    return [`--${k}`, v];
  });
}

export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}
