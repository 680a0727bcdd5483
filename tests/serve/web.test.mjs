// The chat page at the server's `/` in a real browser (Debian's Chromium, headless, driven by
// playwright-core): it loads, a message is sent, streamed text appears equal to `jf generate`, every forward
// has its colour band and multi-token forwards are marked, live statistics show, and nothing is logged to
// the console as an error. A screenshot goes to JF_TEST_OUTPUT.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { startServer, generate } from './helpers.mjs';

const require = createRequire(path.join(process.env.JF_NODE_MODULES, 'package.json'));
const { chromium } = require('playwright-core');

test('the web page streams an answer coloured by forward', { timeout: 120000 }, async () => {
  const srv = await startServer(['--chat-format', 'chatml']);
  const browser = await chromium.launch({ executablePath: process.env.JF_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    await srv.ready();
    const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(String(e)));
    const res = await page.goto(srv.base + '/');
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-type'], /text\/html/);
    // The title comes from /v1/models, fetched after load: wait for it rather than race it.
    await page.waitForFunction(() => document.title !== 'jf', null, { timeout: 10000 }).catch(() => {});
    assert.equal(await page.title(), 'jf · stories260K.gguf');

    // Completion mode with lookahead decoding on a text that repeats: several tokens land per forward.
    const prompt = 'the dog ran. the dog ran. the dog ran.';
    const want = await generate(prompt, 64, 'lookahead:W=4:N=3:G=4');
    await page.selectOption('#mode', 'completion');
    await page.selectOption('#decoder', 'lookahead:W=4:N=3:G=4');
    await page.fill('#max', '64');
    await page.fill('#input', prompt);
    await page.press('#input', 'Enter');
    await page.waitForSelector('.msg.assistant .meta', { timeout: 60000 });

    const text = await page.$$eval('.msg.assistant .tok', (spans) => spans.map((s) => s.textContent).join(''));
    assert.equal(text, want.text);
    const bands = await page.$$eval('.msg.assistant .tok', (spans) => spans.map((s) => s.className));
    assert.ok(bands.every((c) => /\bf[0-3]\b/.test(c)), 'a piece without its colour band');
    const multi = bands.filter((c) => c.includes('multi')).length;
    assert.ok(multi > 0, 'no forward committed several tokens');
    const tokensShown = await page.$$eval('.msg.assistant .tok', (spans) => spans.reduce((n, s) => n + parseInt(s.title, 10), 0));
    assert.equal(tokensShown, want.n_tokens);
    // The statistics shown are the answer's own (how many rows the priced decoder sends follows the machine's
    // load, so the value is checked against the answer's counts, not a threshold).
    const meta = (await page.textContent('.msg.assistant .meta')).match(/lookahead: 64 tokens in (\d+) forwards/);
    assert.ok(meta, 'no statistics line');
    const tpf = Number(await page.textContent('#tpf'));
    assert.ok(Math.abs(tpf - 64 / Number(meta[1])) < 0.01 && tpf > 1, `tokens/forward shown: ${tpf}, ${meta[1]} forwards`);
    assert.ok(Number(await page.textContent('#tps')) > 0);

    // Chat mode, the default decoder picker value: a second message in the same conversation.
    await page.selectOption('#mode', 'chat');
    await page.fill('#input', 'Tell me a story');
    await page.press('#input', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.msg.assistant .meta').length === 2, null, { timeout: 60000 });
    assert.equal(await page.$$eval('.msg.error', (e) => e.length), 0);

    await page.screenshot({ path: path.join(process.env.JF_TEST_OUTPUT ?? '.', 'web-page.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await srv.stop();
  }
});
