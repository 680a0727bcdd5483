// Hostile and malformed traffic against the real `jf serve` on loopback: fuzzed JSON, chunked and length
// bombs, oversized headers, slow clients, hundreds of connections, hang-ups mid-body and mid-stream. The
// server must answer each with the right status (or close), stay up with bounded memory, and keep giving
// well-formed requests running beside them exactly `jf generate`'s text. Also overload with default flags:
// 429 past slots + queue, /health and /metrics fast while full.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { startServer, generate, sleep } from './helpers.mjs';

const residentKiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m)[1]);
const peakKiB = (pid) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmHWM:\s+(\d+) kB/m)[1]);

// Writes `parts` (strings or Buffers) to a fresh connection, `gapMs` apart; resolves with the status of the
// answer (0: none) and the raw text once the server closes, or after `waitMs`.
function raw(port, parts, { gapMs = 0, waitMs = 5000, destroyAfterMs = -1 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let text = '';
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      sock.destroy();
      const m = text.match(/^HTTP\/1\.[01] (\d{3})/);
      resolve({ status: m ? Number(m[1]) : 0, text });
    };
    sock.on('data', (d) => { text += d.toString('latin1'); });
    sock.on('error', done);
    sock.on('close', done);
    setTimeout(done, waitMs);
    if (destroyAfterMs >= 0) setTimeout(done, destroyAfterMs);
    (async () => {
      for (const p of parts) {
        if (settled || sock.destroyed) return;
        sock.write(p);
        if (gapMs) await sleep(gapMs);
      }
    })();
  });
}

// A well-formed request on a connection of its own (no keep-alive reuse racing the server's idle close):
// its status and text (a stream's pieces joined).
function goodRequest(port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/completions', method: 'POST', agent: false,
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { raw += d; });
      res.on('end', () => {
        if (res.statusCode !== 200 || !body.stream) return resolve({ status: res.statusCode, raw, text: res.statusCode === 200 ? JSON.parse(raw).choices[0].text : '' });
        const events = raw.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)));
        resolve({ status: 200, raw, text: raw.includes('data: [DONE]') ? events.map((e) => e.choices?.[0]?.text ?? '').join('') : null });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const jsonPost = (body, extra = '') => `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

// Deterministic fuzz: mutations of a valid body (cuts, byte flips, wrong types, deep nesting, huge values).
function fuzzBodies(n) {
  const base = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 4, temperature: 0, stop: ['x'], decoder: 'pld' });
  let seed = 12345;
  const rnd = (k) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k; };
  const bodies = ['', '{', '[]', 'null', '"x"', '{"prompt": }', '{"prompt": "a", "prompt": 5}', '\u0000\u0001',
    '['.repeat(100000) + ']'.repeat(100000), `{"prompt": ${'['.repeat(5000)}1${']'.repeat(5000)}}`,
    `{"prompt": "x", "n": ${'['.repeat(3000)}${']'.repeat(3000)}}`, '{"prompt": "\\ud800"}', '{"prompt": "a", "max_tokens": 1e400}',
    '{"prompt": "a", "max_tokens": 99999999999999999999999}', '{"messages": "x"}', '{"prompt": "a", "stop": [1, 2]}',
    '{"prompt": [1, -5]}', '{"prompt": [99999999999]}', '{"prompt": "a", "seed": "x"}', '{"prompt": "a", "decoder": "lookahead:W=999999"}'];
  while (bodies.length < n) {
    const b = Buffer.from(base);
    const kind = rnd(4);
    if (kind === 0) bodies.push(base.slice(0, rnd(base.length)));
    else if (kind === 1) { for (let i = 0; i < 3; i++) b[rnd(b.length)] = rnd(256); bodies.push(b.toString('latin1')); }
    else if (kind === 2) bodies.push(base.replace(/"max_tokens":4/, `"max_tokens":${['"4"', '[]', '{}', 'true', '-1', '4.5'][rnd(6)]}`));
    else bodies.push(base.replace('"pld"', JSON.stringify('x'.repeat(rnd(100000)))));
  }
  return bodies;
}

test('abuse: hostile traffic is refused or survived, and concurrent good requests stay exact', { timeout: 300000 }, async () => {
  const maxBody = 1000000;
  const srv = await startServer(['-P', '2', '--queue', '8', '--max-body', String(maxBody), '--max-header', '8192',
    '--header-timeout', '1', '--body-timeout', '1', '--max-connections', '300']);
  try {
    await srv.ready();
    const rssStart = residentKiB(srv.proc.pid);
    const PROMPTS = ['Once upon a time', 'The cat sat on the mat. The cat', 'Tom and Lily went to the park'];
    const wants = await Promise.all(PROMPTS.map((p) => generate(p, 24, 'lookahead:W=4:N=3:G=4')));
    // Well-formed requests all along, streamed and not, checked against jf generate.
    let stopGood = false;
    let good = 0;
    const goodLoop = (async () => {
      for (let k = 0; !stopGood; k++) {
        const i = k % PROMPTS.length;
        const body = { prompt: PROMPTS[i], max_tokens: 24, decoder: 'lookahead:W=4:N=3:G=4', stream: k % 2 === 1 };
        const r = await goodRequest(srv.port, body).catch((e) => { throw new Error(`good request ${k}: ${e}\n${srv.log()}`); });
        if (r.status === 429 || r.status === 503) { await sleep(20); continue; }  // busy, or past the connection cap: a client retries
        assert.equal(r.status, 200, r.raw);
        assert.equal(r.text, wants[i].text, `good request ${k}: ${r.raw.slice(0, 600)}`);
        good++;
      }
    })();
    goodLoop.catch(() => {});  // awaited below; its failure is reported there
    let hostile = 0;
    const expect = async (promise, statuses, what) => {
      const r = await promise;
      hostile++;
      assert.ok(statuses.includes(r.status), `${what}: got ${r.status} ${r.text.slice(0, 200)}`);
      return r;
    };

    // 1. Fuzzed JSON bodies: 400 with an OpenAI error, never a crash (a 200 for a mutation that stays valid).
    for (const body of fuzzBodies(70)) {
      const r = await expect(raw(srv.port, [jsonPost(body)]), [200, 400, 413], `fuzz ${JSON.stringify(body.slice(0, 60))}`);
      if (r.status === 400) assert.match(r.text, /"error":\{/);
    }
    // 2. Bombs: chunked past the limit, a huge Content-Length, a body sent with neither.
    const chunk = 'x'.repeat(65536);
    const bomb = [`POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`, `${(2 + chunk.length).toString(16)}\r\n{"${chunk}\r\n`];
    for (let i = 0; i < 300; i++) bomb.push(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);  // 20 MB, 20x the limit
    for (let i = 0; i < 3; i++) await expect(raw(srv.port, bomb), [413], 'chunked bomb');
    assert.ok(peakKiB(srv.proc.pid) < rssStart + 3 * maxBody / 1024 + 65536, `peak ${peakKiB(srv.proc.pid)} KiB, start ${rssStart} KiB`);
    await expect(raw(srv.port, ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n{']), [413], 'huge length');
    await expect(raw(srv.port, ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n{"prompt": "x"}']), [400], 'no length');
    for (const bad of ['GARBAGE\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'POST /v1/completions HTTP/1.1\r\nContent-Length: -3\r\n\r\n', 'POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      'GET /health HTTP/1.1\r\nBad Header\r\n\r\n', '\r\n\r\n\r\n'])
      await expect(raw(srv.port, [bad]), [400, 0], `malformed ${JSON.stringify(bad)}`);
    // 3. Oversized headers: one long line, many lines.
    await expect(raw(srv.port, [`GET /health HTTP/1.1\r\nX-Big: ${'a'.repeat(100000)}\r\n\r\n`]), [431], 'long header');
    await expect(raw(srv.port, [`GET /health HTTP/1.1\r\n${'X-A: b\r\n'.repeat(3000)}\r\n`]), [431], 'many headers');
    await expect(raw(srv.port, [`GET /${'a'.repeat(20000)} HTTP/1.1\r\n\r\n`]), [431, 414, 400], 'long target');
    // 4. Slow clients: a header or a body trickled byte by byte runs into the timeouts (408).
    const slow = [];
    const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n';
    for (let i = 0; i < 5; i++) slow.push(expect(raw(srv.port, head.split(''), { gapMs: 150, waitMs: 8000 }), [408], 'slow header'));
    for (let i = 0; i < 5; i++) slow.push(expect(raw(srv.port, [head, ...'{"prompt": "x"'.split('')], { gapMs: 150, waitMs: 8000 }), [408], 'slow body'));
    await Promise.all(slow);
    // 5. Hang-ups mid-body and mid-stream.
    for (let i = 0; i < 10; i++)
      await expect(raw(srv.port, [head, '{"prompt"'], { destroyAfterMs: 50 }), [0], 'hang-up mid-body');
    const stream = jsonPost(JSON.stringify({ prompt: 'Once', max_tokens: 400, ignore_eos: true, stream: true }));
    for (let i = 0; i < 10; i++) await expect(raw(srv.port, [stream], { destroyAfterMs: 100 }), [200, 0], 'hang-up mid-stream');
    // 6. Hundreds of connections at once: idle ones, and one more than the cap gets 503.
    const idle = [];
    for (let i = 0; i < 300; i++) idle.push(raw(srv.port, [], { waitMs: 4000 }));
    await sleep(300);
    const over = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(() => raw(srv.port, ['GET /health HTTP/1.1\r\n\r\n'], { waitMs: 3000 })));
    hostile += idle.length + over.length;
    assert.ok(over.some((r) => r.status === 503), `past the connection cap: ${over.map((r) => r.status)}`);
    assert.ok((await Promise.all(idle)).every((r) => [0, 408, 503].includes(r.status)), 'an idle connection got an answer');

    stopGood = true;
    await goodLoop;
    assert.ok(hostile >= 100, `${hostile} hostile requests`);
    assert.ok(good >= 5, `only ${good} good requests ran beside them`);
    assert.equal((await fetch(`${srv.base}/health`)).status, 200);
    const rssEnd = residentKiB(srv.proc.pid);
    assert.ok(rssEnd < rssStart + 65536, `resident memory grew from ${rssStart} to ${rssEnd} KiB`);
    console.log(`abuse: ${hostile} hostile requests, ${good} good ones beside them, memory ${rssStart} -> ${rssEnd} KiB (peak ${peakKiB(srv.proc.pid)})`);
  } finally {
    const { code } = await srv.stop();
    assert.equal(code, 0, srv.log());
  }
});

test('overload with default flags: 429 with Retry-After past slots + queue, /health and /metrics still fast', { timeout: 120000 }, async () => {
  // Default -P and --queue; a longer context only so the accepted requests are still running when checked.
  const srv = await startServer(['--ctx', '4096']);
  try {
    await srv.ready();
    const ctl = new AbortController();
    const body = JSON.stringify({ prompt: 'Once', max_tokens: 3000, ignore_eos: true });
    const sent = [...Array(100).keys()].map(() => fetch(`${srv.base}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal: ctl.signal,
    }).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), text: r.status === 429 ? await r.text() : '' }),
      () => ({ status: 'aborted' })));
    // Refusals come back at once, while the accepted 68 (4 slots + 64 queued) still run.
    const early = await Promise.race([Promise.all(sent.slice(90)), sleep(3000).then(() => null)]);
    assert.ok(early, 'the requests past slots + queue got no answer');
    // Five of each while every slot and queue place is taken; the median must be under 100 ms.
    const timed = async (route) => {
      const ms = [];
      let res = null;
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        res = await fetch(`${srv.base}${route}`);
        await res.text();
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      return { status: res.status, median: ms[2], max: ms[4] };
    };
    const health = await timed('/health');
    const metrics = await (await fetch(`${srv.base}/metrics`)).text();
    const m = await timed('/metrics');
    const healthMs = health.median, metricsMs = m.median;
    assert.equal(health.status, 200);
    assert.ok(healthMs < 100 && metricsMs < 100, `/health ${healthMs.toFixed(1)} ms, /metrics ${metricsMs.toFixed(1)} ms (medians)`);
    assert.match(metrics, /^jf_queue_length [1-9]/m);
    ctl.abort();
    const all = await Promise.all(sent);
    const refused = all.filter((r) => r.status === 429);
    assert.ok(refused.length >= 20, `${refused.length} of 100 got 429`);
    for (const r of refused) {
      assert.equal(r.retry, '1');
      assert.equal(JSON.parse(r.text).error.type, 'rate_limit_error');
    }
    console.log(`overload: ${refused.length} of 100 refused with 429; /health ${healthMs.toFixed(1)} ms (max ${health.max.toFixed(1)}), /metrics ${metricsMs.toFixed(1)} ms (max ${m.max.toFixed(1)})`);
  } finally {
    await srv.stop();
  }
});
