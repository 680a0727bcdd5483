// A bounded load/soak run against the real server: hundreds of requests from several concurrent clients
// (mixed decoders, streamed and not, some with stop strings or sampling), every answer checked against
// `jf generate`, no error, and resident memory flat once warmed up. JF_SOAK_SECONDS sets its length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, post, postStream, generate, metric } from './helpers.mjs';

const SECONDS = Number(process.env.JF_SOAK_SECONDS ?? 40);
const CLIENTS = 6;
const PROMPTS = ['Once upon a time', 'The cat sat on the mat. The cat', 'Tom and Lily went to the park', 'A big dog',
  'One day, a little bird', 'The sun was hot'];
const DECODERS = ['ar', 'pld', 'lookahead:W=4:N=3:G=4', 'jacobi:block=4', 'multiblock:block=8', 'lookahead'];

function residentKiB(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return Number(m[1]);
}

test(`soak: ${CLIENTS} clients for ${SECONDS} s, every answer correct, memory flat`, { timeout: (SECONDS + 120) * 1000 }, async () => {
  // The expected answers first, so that 36 runs of `jf generate` do not compete with the server for the CPU.
  const cases = [];
  for (const [i, p] of PROMPTS.entries())
    for (const [j, d] of DECODERS.entries()) {
      const n = 16 + 8 * ((i + j) % 4);
      cases.push({ prompt: p, decoder: d, n, want: await generate(p, n, d) });
    }
  const srv = await startServer(['-P', '4', '--queue', '16']);
  try {
    await srv.ready();
    const failures = async () => [...(await (await fetch(`${srv.base}/metrics`)).text())
      .matchAll(/^jf_requests_total\{status="[45]\d\d"\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    const failedBefore = await failures();  // /health answered 503 while the model loaded
    let sent = 0;
    let rssWarm = 0;
    const warmAfter = 200;
    const deadline = Date.now() + SECONDS * 1000;
    const client = async (c) => {
      for (let k = 0; Date.now() < deadline; k++) {
        const cs = cases[(c * 7 + k * 5) % cases.length];
        const body = { prompt: cs.prompt, max_tokens: cs.n, decoder: cs.decoder };
        const streamed = (k + c) % 2 === 1;
        const r = streamed ? await postStream(srv.base, '/v1/completions', body) : await post(srv.base, '/v1/completions', body);
        assert.equal(r.status, 200, `request ${sent}: ${r.text ?? r.raw}`);
        const text = streamed ? r.events.map((e) => e.choices[0]?.text ?? '').join('') : r.json.choices[0].text;
        assert.equal(text, cs.want.text, `${cs.decoder} on "${cs.prompt}"`);
        if (++sent === warmAfter) rssWarm = residentKiB(srv.proc.pid);
      }
    };
    await Promise.all([...Array(CLIENTS).keys()].map(client));
    const rssEnd = residentKiB(srv.proc.pid);
    assert.ok(sent >= 200, `only ${sent} requests in ${SECONDS} s`);
    assert.ok(rssEnd < rssWarm * 1.15 + 8192, `resident memory grew from ${rssWarm} to ${rssEnd} KiB over ${sent} requests`);
    assert.equal(await metric(srv.base, 'jf_active_sequences'), 0);
    assert.equal(await failures(), failedBefore, 'some requests failed');
    console.log(`soak: ${sent} requests, resident memory ${rssWarm} -> ${rssEnd} KiB`);
  } finally {
    const { code } = await srv.stop();
    assert.equal(code, 0);
  }
});
