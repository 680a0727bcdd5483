// Two `jf serve` replicas behind HAProxy (deploy/haproxy-config.sh) on loopback: both serve, a
// conversation's next turn reaches the replica holding its cache (cached prompt tokens reported), and
// when one replica is stopped under load every request still gets its exact answer through the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, post, generate, sleep } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const haveHaproxy = spawnSync('haproxy', ['-v']).status === 0;

const freePort = () => new Promise((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
});

async function metricOf(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} ([0-9.e+-]+)$`, 'm'));
  return m ? Number(m[1]) : 0;
}

test('HAProxy over two replicas: both serve, conversations stick, a stopped replica loses nothing', { skip: !haveHaproxy && 'haproxy not installed', timeout: 180000 }, async () => {
  const replicas = [await startServer(['-P', '2', '--chat-format', 'chatml', '--drain-timeout', '60']),
    await startServer(['-P', '2', '--chat-format', 'chatml', '--drain-timeout', '60'])];
  const dir = mkdtempSync(path.join(tmpdir(), 'jf-lb-'));
  let haproxy = null;
  try {
    await Promise.all(replicas.map((r) => r.ready()));
    const port = await freePort();
    const cfg = execFileSync(path.join(here, '../../deploy/haproxy-config.sh'),
      [`127.0.0.1:${port}`, ...replicas.map((r) => `127.0.0.1:${r.port}`)], { encoding: 'utf8' });
    writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
    haproxy = spawn('haproxy', ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let hlog = '';
    haproxy.stderr.on('data', (d) => { hlog += d; });
    const lb = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      try { if ((await fetch(`${lb}/health`)).status === 200) break; } catch {}
      await sleep(50);
    }
    await sleep(1200);  // both replicas seen healthy (rise 2 at 500 ms)

    // Conversations by `user`: each user's turns go to one replica, and several users spread over both.
    const ok200 = (name) => metricOf(name, 'jf_requests_total{status="200"}');
    const before = await Promise.all(replicas.map((r) => ok200(r.base)));
    for (let u = 0; u < 8; u++) {
      const first = { user: `user-${u}`, messages: [{ role: 'user', content: `Tell a story about friend ${u}` }], max_tokens: 16 };
      const r1 = await post(lb, '/v1/chat/completions', first);
      assert.equal(r1.status, 200, r1.text + hlog);
      const next = { ...first, messages: [...first.messages, r1.json.choices[0].message, { role: 'user', content: 'And then?' }] };
      const r2 = await post(lb, '/v1/chat/completions', next);
      assert.equal(r2.status, 200, r2.text);
      assert.ok(r2.json.usage.prompt_tokens_details.cached_tokens >= r1.json.usage.prompt_tokens - 1,
        `user-${u}: ${JSON.stringify(r2.json.usage)} after a first turn of ${r1.json.usage.prompt_tokens} tokens`);
    }
    const served = (await Promise.all(replicas.map((r) => ok200(r.base)))).map((n, i) => n - before[i]);
    assert.ok(served.every((n) => n > 0), `requests per replica: ${served}`);

    // Under load, stop replica 1 (SIGTERM: it drains, its /health turns 503, then it exits): every request
    // still gets its exact answer.
    const PROMPTS = ['Once upon a time', 'The cat sat on the mat. The cat', 'Tom and Lily went to the park', 'A big dog'];
    const wants = await Promise.all(PROMPTS.map((p) => generate(p, 32)));
    let stop = false;
    const results = [];
    const client = async (c) => {
      for (let k = 0; !stop; k++) {
        const i = (c + k) % PROMPTS.length;
        const r = await post(lb, '/v1/completions', { prompt: PROMPTS[i], max_tokens: 32, user: `load-${c}-${k % 3}` });
        results.push(r.status);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.choices[0].text, wants[i].text);
      }
    };
    const clients = [0, 1, 2, 3, 4, 5].map(client);
    await sleep(1500);
    const doneBefore = results.length;
    replicas[1].proc.kill('SIGTERM');
    const { code } = await replicas[1].exited;
    assert.equal(code, 0);
    await sleep(2000);
    stop = true;
    await Promise.all(clients);
    assert.ok(results.length > doneBefore + 10, `${results.length} requests, ${doneBefore} before the stop`);
    assert.ok(results.every((s) => s === 200));
    console.log(`balancer: requests per replica ${served}; ${results.length} requests under load, replica 2 stopped after ${doneBefore}, none lost`);
  } finally {
    if (haproxy) haproxy.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
});
