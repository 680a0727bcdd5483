// The real `jf serve` over HTTP: every endpoint and error, the streaming format, chat, stop strings,
// concurrent mixed-decoder requests token-identical to `jf generate`, predicted outputs, a mid-stream
// disconnect, SIGTERM drain, the API key, and the official openai client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServer, post, postStream, generate, jfJson, metric, openaiModule, sleep, JF, MODEL } from './helpers.mjs';

const PROMPTS = ['Once upon a time', 'The cat sat on the mat. The cat', 'Tom and Lily went to the park',
  'One day, a little bird', 'She said hello. She said hello. She said', 'The sun was hot', 'Lily liked her ball', 'A big dog'];
const DECODERS = ['ar', 'jacobi:block=4', 'lookahead:W=4:N=3:G=4', 'pld', 'multiblock:block=8', 'lookahead',
  'jacobi:block=6:window-mode=running', 'pld:draft-max=3'];

let srv;
before(async () => {
  srv = await startServer(['-P', '4', '--chat-format', 'chatml', '--max-body', '100000', '--ctx', '8192']);
  await srv.ready();
});
after(async () => {
  const { code } = await srv.stop();
  assert.equal(code, 0, srv.log());
});

test('health, models and metrics', async () => {
  const h = await fetch(`${srv.base}/health`);
  assert.equal(h.status, 200);
  assert.deepEqual(await h.json(), { status: 'ok' });
  const m = await (await fetch(`${srv.base}/v1/models`)).json();
  assert.equal(m.object, 'list');
  assert.equal(m.data[0].id, 'stories260K.gguf');
  assert.equal(m.data[0].object, 'model');
  assert.equal(typeof m.data[0].created, 'number');
  await post(srv.base, '/v1/completions', { prompt: 'Hi', max_tokens: 3 });
  const text = await (await fetch(`${srv.base}/metrics`)).text();
  for (const name of ['jf_requests_total{status="200"}', 'jf_prompt_tokens_total', 'jf_generated_tokens_total',
    'jf_forwards_total', 'jf_forward_rows_total', 'jf_tokens_per_forward_bucket{le="1"}', 'jf_queue_length',
    'jf_active_sequences', 'jf_request_latency_seconds_count', 'jf_time_to_first_token_seconds_count'])
    assert.ok(text.includes(name), `metrics lack ${name}:\n${text}`);
});

test('completions equal jf generate, text and tokens, for every decoder', async () => {
  for (const [i, decoder] of DECODERS.entries()) {
    const want = await generate(PROMPTS[i], 40, decoder);
    const r = await post(srv.base, '/v1/completions', { prompt: PROMPTS[i], max_tokens: 40, decoder });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.object, 'text_completion');
    assert.match(r.json.id, /^cmpl-/);
    assert.equal(r.json.choices[0].text, want.text, decoder);
    assert.deepEqual(r.json.jf.tokens, want.tokens, decoder);
    assert.equal(r.json.choices[0].finish_reason, want.stop_reason === 'eos' ? 'stop' : 'length');
    assert.equal(r.json.usage.completion_tokens, want.n_tokens);
    assert.equal(r.json.usage.prompt_tokens, want.n_prompt);
    assert.equal(r.json.usage.total_tokens, want.n_prompt + want.n_tokens);
    assert.equal(r.json.jf.decoder, decoder.split(':')[0]);
    assert.ok(r.json.jf.forwards > 0 && r.json.jf.tokens_per_forward >= 1);
  }
});

test('8 concurrent requests with mixed decoders are each token-identical to jf generate', async () => {
  const want = await Promise.all(PROMPTS.map((p, i) => generate(p, 48, DECODERS[i])));
  // Its own server, whose first forward waits for all 8: decoded together by construction, not by timing.
  const s = await startServer(['-P', String(PROMPTS.length)], { JF_SERVE_TEST_GATHER: String(PROMPTS.length) });
  await s.ready();
  const before = await metric(s.base, 'jf_forwards_total');
  const got = await Promise.all(PROMPTS.map((p, i) => (i % 2
    ? postStream(s.base, '/v1/completions', { prompt: p, max_tokens: 48, decoder: DECODERS[i] })
    : post(s.base, '/v1/completions', { prompt: p, max_tokens: 48, decoder: DECODERS[i] }))));
  let jobForwards = 0;
  for (const [i, r] of got.entries()) {
    assert.equal(r.status, 200);
    const text = r.events ? r.events.map((e) => e.choices[0]?.text ?? '').join('') : r.json.choices[0].text;
    const jf = r.events ? r.events.find((e) => e.jf?.forwards !== undefined).jf : r.json.jf;
    assert.equal(text, want[i].text, DECODERS[i]);
    assert.deepEqual(jf.tokens, want[i].tokens, DECODERS[i]);
    jobForwards += jf.forwards;
  }
  // They were decoded together: fewer model forwards than the requests' own forwards added up.
  const forwards = (await metric(s.base, 'jf_forwards_total')) - before;
  await s.stop();
  assert.ok(forwards < jobForwards, `${forwards} forwards for ${jobForwards} request forwards`);
});

test('streaming: chunk format, one id, finish_reason last, usage chunk, [DONE]', async () => {
  const want = await generate(PROMPTS[0], 20);
  const r = await postStream(srv.base, '/v1/completions',
    { prompt: PROMPTS[0], max_tokens: 20, stream_options: { include_usage: true } });
  assert.equal(r.status, 200);
  assert.match(r.contentType, /text\/event-stream/);
  assert.ok(r.done, 'no [DONE]');
  const ids = new Set(r.events.map((e) => e.id));
  assert.equal(ids.size, 1);
  const created = new Set(r.events.map((e) => e.created));
  assert.equal(created.size, 1);
  const usage = r.events.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, 20);
  const content = r.events.slice(0, -1);
  for (const e of content.slice(0, -1)) assert.equal(e.choices[0].finish_reason, null);
  assert.equal(content.at(-1).choices[0].finish_reason, 'length');
  assert.equal(content.map((e) => e.choices[0].text).join(''), want.text);
  assert.ok(content.length > 2, 'not streamed in pieces');
  // Each content chunk says how many tokens (one forward's) are behind its text.
  assert.equal(content.slice(0, -1).reduce((n, e) => n + e.jf.n_tokens, 0), 20);
  // Without include_usage there is no usage chunk.
  const r2 = await postStream(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 5 });
  assert.ok(r2.events.every((e) => !e.usage) && r2.done);
});

test('chat completions, whole and streamed, equal jf generate --chat', async () => {
  const want = await jfJson(['generate', '-m', MODEL, '--chat', '--chat-format', 'chatml', '-p', 'Tell a story',
    '-n', '30', '--json']);
  const body = { model: 'x', messages: [{ role: 'user', content: 'Tell a story' }], max_tokens: 30 };
  const r = await post(srv.base, '/v1/chat/completions', body);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.object, 'chat.completion');
  assert.match(r.json.id, /^chatcmpl-/);
  assert.equal(r.json.choices[0].message.role, 'assistant');
  assert.equal(r.json.choices[0].message.content, want.text);
  const s = await postStream(srv.base, '/v1/chat/completions', body);
  assert.equal(s.events[0].object, 'chat.completion.chunk');
  assert.equal(s.events[0].choices[0].delta.role, 'assistant');
  assert.equal(s.events.map((e) => e.choices[0]?.delta?.content ?? '').join(''), want.text);
  assert.equal(s.events.at(-1).choices[0].finish_reason, 'length');
  assert.deepEqual(s.events.at(-1).choices[0].delta, {});
});

test("a conversation's next turn skips prefilling the turns its sequence still holds", async () => {
  const first = { messages: [{ role: 'user', content: 'Tell a story about a cat' }], max_tokens: 20 };
  const r1 = await post(srv.base, '/v1/chat/completions', first);
  assert.equal(r1.status, 200, r1.text);
  const next = { messages: [...first.messages, r1.json.choices[0].message, { role: 'user', content: 'And then?' }], max_tokens: 20 };
  const r2 = await post(srv.base, '/v1/chat/completions', next);
  assert.equal(r2.status, 200, r2.text);
  const reused = r2.json.jf.counters.prompt_tokens_reused ?? 0;
  assert.ok(reused >= r1.json.usage.prompt_tokens - 1 && reused < r2.json.usage.prompt_tokens,
    `${reused} of ${r2.json.usage.prompt_tokens} prompt tokens reused (first turn: ${r1.json.usage.prompt_tokens})`);
  assert.ok((await metric(srv.base, 'jf_prompt_tokens_reused_total')) >= reused);
  // llama-server's cache_prompt: false prefills it all, with the same answer.
  const r3 = await post(srv.base, '/v1/chat/completions', { ...next, cache_prompt: false });
  assert.equal(r3.json.jf.counters.prompt_tokens_reused ?? 0, 0);
  assert.equal(r3.json.choices[0].message.content, r2.json.choices[0].message.content);
  assert.equal((await post(srv.base, '/v1/chat/completions', { ...next, cache_prompt: 'yes' })).status, 400);
});

test('stop strings end the text before them, whole and streamed', async () => {
  const full = (await generate(PROMPTS[0], 60)).text;
  const stop = full.slice(20, 26);
  const cut = full.indexOf(stop);
  const r = await post(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 60, stop: [stop, 'zzzz'] });
  assert.equal(r.json.choices[0].text, full.slice(0, cut));
  assert.equal(r.json.choices[0].finish_reason, 'stop');
  const s = await postStream(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 60, stop, decoder: 'pld' });
  assert.equal(s.events.map((e) => e.choices[0]?.text ?? '').join(''), full.slice(0, cut));
  assert.equal(s.events.at(-1).choices[0].finish_reason, 'stop');
  assert.ok(s.events.at(-1).jf.tokens.length < 60, 'generation went on after the stop string');
});

test('predicted outputs: drafted from the prediction, the same text, acceptance reported', async () => {
  const want = await generate(PROMPTS[2], 60);
  const r = await post(srv.base, '/v1/completions',
    { prompt: PROMPTS[2], max_tokens: 60, decoder: 'pld:draft-policy=fixed', prediction: { type: 'content', content: want.text } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].text, want.text);
  const d = r.json.usage.completion_tokens_details;
  assert.ok(d.accepted_prediction_tokens >= 20, JSON.stringify(r.json.usage));
  assert.ok(d.rejected_prediction_tokens >= 0);
  // Prompt lookup alone finds far less to draft (alone: without the memory of earlier requests, which holds
  // this very text by now). (Fixed draft lengths: the adaptive policy's cuts depend on timing.)
  const plain = await post(srv.base, '/v1/completions',
    { prompt: PROMPTS[2], max_tokens: 60, decoder: 'pld:draft-policy=fixed:ngram-memory=0' });
  assert.equal(plain.json.choices[0].text, want.text);
  assert.equal(plain.json.usage.completion_tokens_details, undefined);
  assert.ok(r.json.jf.tokens_per_forward > plain.json.jf.tokens_per_forward + 0.5,
    `${r.json.jf.tokens_per_forward} vs ${plain.json.jf.tokens_per_forward} tokens per forward`);
  const bad = await post(srv.base, '/v1/completions', { prompt: 'x', prediction: { type: 'content', content: 'y' }, decoder: 'ar' });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.param, 'prediction');
});

test('no seed: a fresh random seed per request, reported so that the answer can be reproduced', async () => {
  const body = { prompt: PROMPTS[0], max_tokens: 24, temperature: 1 };
  const a = await post(srv.base, '/v1/completions', body);
  const b = await post(srv.base, '/v1/completions', body);
  assert.equal(a.status, 200, a.text);
  assert.notEqual(a.json.jf.seed, b.json.jf.seed);
  const again = await post(srv.base, '/v1/completions', { ...body, seed: a.json.jf.seed });
  assert.equal(again.json.jf.seed, a.json.jf.seed);
  assert.equal(again.json.choices[0].text, a.json.choices[0].text);
});

test('logprobs: chat and completions (echo), equal whichever decoder runs; /v1/models/{id}; string error codes', async () => {
  const prompt = PROMPTS[1];
  const c = await post(srv.base, '/v1/completions', { prompt, max_tokens: 12, logprobs: 2, echo: true, decoder: 'lookahead' });
  assert.equal(c.status, 200, c.text);
  const lp = c.json.choices[0].logprobs;
  assert.equal(lp.tokens.length, c.json.usage.prompt_tokens + 12);
  assert.equal(lp.token_logprobs[0], null);
  assert.ok(lp.token_logprobs.slice(1).every((x) => x <= 0));
  assert.ok(lp.top_logprobs.slice(1).every((t) => Object.keys(t).length >= 1 && Object.keys(t).length <= 2));
  assert.ok(c.json.choices[0].text.startsWith(prompt));
  const ar = await post(srv.base, '/v1/completions', { prompt, max_tokens: 12, logprobs: 2, echo: true, decoder: 'ar' });
  assert.deepEqual(ar.json.choices[0].logprobs, lp);
  // echo with max_tokens 0 scores a given text (how evaluation harnesses ask for a log-likelihood).
  const score = await post(srv.base, '/v1/completions', { prompt, max_tokens: 0, logprobs: 0, echo: true });
  assert.deepEqual(score.json.choices[0].logprobs.token_logprobs, lp.token_logprobs.slice(0, c.json.usage.prompt_tokens));
  const chatBody = { messages: [{ role: 'user', content: 'Tell a story' }], max_tokens: 10, logprobs: true, top_logprobs: 3 };
  const chat = await post(srv.base, '/v1/chat/completions', { ...chatBody, decoder: 'jacobi:block=4' });
  assert.equal(chat.status, 200, chat.text);
  const content = chat.json.choices[0].logprobs.content;
  assert.equal(content.length, chat.json.usage.completion_tokens);
  assert.ok(content.every((t) => t.logprob <= 0 && t.top_logprobs.length === 3 && Array.isArray(t.bytes)));
  const chatAr = await post(srv.base, '/v1/chat/completions', { ...chatBody, decoder: 'ar' });
  assert.deepEqual(chatAr.json.choices[0].logprobs, chat.json.choices[0].logprobs);
  const streamed = await postStream(srv.base, '/v1/chat/completions', { ...chatBody, decoder: 'ar' });
  assert.deepEqual(streamed.events.find((e) => e.choices[0]?.logprobs).choices[0].logprobs, chat.json.choices[0].logprobs);
  const one = await fetch(`${srv.base}/v1/models/stories260K.gguf`);
  assert.equal(one.status, 200);
  assert.equal((await one.json()).id, 'stories260K.gguf');
  const none = await fetch(`${srv.base}/v1/models/gpt-9`);
  assert.equal(none.status, 404);
  assert.equal((await none.json()).error.code, 'model_not_found');
  const long = await post(srv.base, '/v1/completions', { prompt: 'x '.repeat(9000) });
  assert.equal(long.json.error.code, 'context_length_exceeded');
  assert.equal((await post(srv.base, '/v1/completions', { prompt: 'x', frob: 1 })).json.error.code, 'unknown_parameter');
});

test('n > 1: every choice, whole and streamed; the later choices start from the first one\'s prompt cache', async () => {
  const prompt = PROMPTS[2] + ' and they saw a big red ball and a small blue car';
  const want = await generate(prompt, 20, 'pld');
  const reusedBefore = await metric(srv.base, 'jf_prompt_tokens_reused_total');
  const r = await post(srv.base, '/v1/completions', { prompt, max_tokens: 20, n: 3, decoder: 'pld', cache_prompt: true });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.choices.map((c) => c.index), [0, 1, 2]);
  for (const c of r.json.choices) assert.equal(c.text, want.text);
  assert.equal(r.json.usage.completion_tokens, 60);
  assert.equal(r.json.usage.prompt_tokens, want.n_prompt);
  const reused = (await metric(srv.base, 'jf_prompt_tokens_reused_total')) - reusedBefore;
  assert.ok(reused >= 2 * (want.n_prompt - 1), `${reused} prompt tokens reused for 3 choices of ${want.n_prompt}`);
  const s = await postStream(srv.base, '/v1/completions', { prompt, max_tokens: 20, n: 2, stream_options: { include_usage: true } });
  const plain = await generate(prompt, 20);
  for (const i of [0, 1]) {
    const mine = s.events.filter((e) => e.choices[0]?.index === i);
    assert.equal(mine.map((e) => e.choices[0].text).join(''), plain.text);
    assert.equal(mine.at(-1).choices[0].finish_reason, 'length');
  }
  assert.equal(s.events.at(-1).usage.completion_tokens, 40);
  // Sampled choices differ (seed + i each), and the same seed gives the same choices again.
  const body = { prompt, max_tokens: 20, n: 2, temperature: 1, seed: 11 };
  const a = await post(srv.base, '/v1/completions', body);
  assert.notEqual(a.json.choices[0].text, a.json.choices[1].text);
  assert.deepEqual((await post(srv.base, '/v1/completions', body)).json.choices, a.json.choices);
});

test('bad requests: 400 naming the problem, 404, 405, 413', async () => {
  const cases = [
    ['{"prompt": "x", ', null, /not valid JSON/],
    [{ prompt: 5 }, 'prompt', /string or an array/],
    [{ prompt: 'x', max_tokens: 'ten' }, 'max_tokens', /integer/],
    [{ prompt: 'x', temperature: 9 }, 'temperature', /between/],
    [{ prompt: 'x', n: 30 }, 'n', /between/],
    [{ prompt: 'x', logprobs: 99 }, 'logprobs', /between/],
    [{ prompt: 'x', functions: [{ name: 'f' }] }, 'functions', /not supported/],
    [{ prompt: 'x', decoder: 'nope' }, 'decoder', /unknown decoder/],
    [{ prompt: 'x '.repeat(9000) }, 'prompt', /more than the context size/],
  ];
  for (const [body, param, message] of cases) {
    const r = await post(srv.base, '/v1/completions', body);
    assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.equal(r.json.error.param, param);
    assert.match(r.json.error.message, message);
  }
  const chat = await post(srv.base, '/v1/chat/completions', { messages: [{ role: 'robot', content: 'x' }] });
  assert.equal(chat.status, 400);
  assert.equal(chat.json.error.param, 'messages[0].role');
  assert.equal((await fetch(`${srv.base}/v1/nothing`)).status, 404);
  const wrong = await fetch(`${srv.base}/v1/completions`);
  assert.equal(wrong.status, 405);
  assert.ok((await wrong.json()).error.message.includes('POST'));
  assert.equal((await post(srv.base, '/health', {})).status, 405);
  const chatKw = (kw) => post(srv.base, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, chat_template_kwargs: kw });
  for (const kw of [{ reasoning: 'off' }, { enable_thinking: 'no' }, 'x']) {
    const k = await chatKw(kw);
    assert.equal(k.status, 400, JSON.stringify(kw));
    assert.equal(k.json.error.param, 'chat_template_kwargs');
  }
  assert.equal((await chatKw({ enable_thinking: false })).status, 200);
  const big = await post(srv.base, '/v1/completions', { prompt: 'x'.repeat(200000) });
  assert.equal(big.status, 413);
});

test('a client that disconnects mid-stream cancels its generation and frees its sequence', async () => {
  const generatedBefore = await metric(srv.base, 'jf_generated_tokens_total');
  await new Promise((resolve, reject) => {
    const req = http.request(`${srv.base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let chunks = 0;
      res.on('data', () => {
        if (++chunks === 5) { req.destroy(); resolve(); }
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end(JSON.stringify({ prompt: 'Once', max_tokens: 8000, ignore_eos: true, stream: true }));
    setTimeout(() => reject(new Error('no stream')), 10000);
  });
  let active = NaN;
  for (let i = 0; i < 250; i++) {
    active = await metric(srv.base, 'jf_active_sequences');
    if (active === 0) break;
    await sleep(20);
  }
  assert.equal(active, 0, 'the disconnected request kept its sequence');
  assert.equal((await fetch(`${srv.base}/health`)).status, 200);
  const generated = (await metric(srv.base, 'jf_generated_tokens_total')) - generatedBefore;
  assert.ok(generated < 8000, `the generation ran to the end (${generated} tokens)`);
});

test('a client that hangs up on a non-streamed request cancels its generation too', async () => {
  const generatedBefore = await metric(srv.base, 'jf_generated_tokens_total');
  const req = http.request(`${srv.base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' } });
  req.on('error', () => {});
  req.end(JSON.stringify({ prompt: 'Once', max_tokens: 8000, ignore_eos: true }));
  let active = 0;
  for (let i = 0; i < 250 && active === 0; i++) {
    await sleep(20);
    active = await metric(srv.base, 'jf_active_sequences');
  }
  assert.equal(active, 1, 'the request never started');
  req.destroy();
  for (let i = 0; i < 250; i++) {
    active = await metric(srv.base, 'jf_active_sequences');
    if (active === 0) break;
    await sleep(20);
  }
  assert.equal(active, 0, 'the abandoned request kept its sequence');
  const generated = (await metric(srv.base, 'jf_generated_tokens_total')) - generatedBefore;
  assert.ok(generated < 8000, `the generation ran to the end (${generated} tokens)`);
  const text = await (await fetch(`${srv.base}/metrics`)).text();
  assert.ok(text.includes('jf_requests_total{status="499"} 1'), text);
});

test('the official openai client: completions and chat, streamed and not', async () => {
  const OpenAI = openaiModule().default ?? openaiModule().OpenAI;
  const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const want = await generate(PROMPTS[1], 24, 'lookahead');
  const c = await client.completions.create({ model: 'stories260K.gguf', prompt: PROMPTS[1], max_tokens: 24, decoder: 'lookahead' });
  assert.equal(c.choices[0].text, want.text);
  let streamed = '';
  const cs = await client.completions.create({ model: 'm', prompt: PROMPTS[1], max_tokens: 24, stream: true });
  for await (const chunk of cs) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, want.text);
  const chat = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16 });
  assert.equal(chat.choices[0].message.role, 'assistant');
  assert.ok(chat.choices[0].message.content.length > 0);
  let chatStreamed = '';
  let usage = null;
  const stream = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16,
    stream: true, stream_options: { include_usage: true } });
  for await (const chunk of stream) {
    chatStreamed += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(chatStreamed, chat.choices[0].message.content);
  assert.equal(usage.completion_tokens, chat.usage.completion_tokens);
  await assert.rejects(client.completions.create({ model: 'm', prompt: 'x', n: 17 }), (e) => e.status === 400 && /'n'/.test(e.message));
  const two = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16, n: 2 });
  assert.deepEqual(two.choices.map((c) => c.index), [0, 1]);
  assert.equal(two.choices[1].message.content, chat.choices[0].message.content);
});

test('API key, queue limit, port in use', async () => {
  const s = await startServer(['--api-key', 'sekret', '-P', '1', '--queue', '0']);
  try {
    await s.ready();
    const no = await post(s.base, '/v1/completions', { prompt: 'x', max_tokens: 2 });
    assert.equal(no.status, 401);
    assert.equal(no.json.error.type, 'authentication_error');
    assert.equal((await post(s.base, '/v1/completions', { prompt: 'x', max_tokens: 2 }, { Authorization: 'Bearer wrong' })).status, 401);
    assert.equal((await fetch(`${s.base}/v1/models`)).status, 401);
    assert.equal((await fetch(`${s.base}/health`)).status, 200);
    const auth = { Authorization: 'Bearer sekret' };
    assert.equal((await post(s.base, '/v1/completions', { prompt: 'x', max_tokens: 2 }, auth)).status, 200);
    // One sequence, no queue: of several long requests at once, the extra ones get 429.
    const many = await Promise.all([0, 1, 2].map(() => post(s.base, '/v1/completions', { prompt: 'x', max_tokens: 1500, ignore_eos: true }, auth)));
    const statuses = many.map((r) => r.status).sort();
    assert.ok(statuses.includes(200) && statuses.includes(429), statuses.join(','));
    assert.equal(many.find((r) => r.status === 429).json.error.type, 'rate_limit_error');
    // The same port again: a one-line error and a non-zero exit.
    const again = spawnSync(JF, ['serve', '-m', MODEL, '--port', String(s.port)], { encoding: 'utf8', timeout: 10000 });
    assert.notEqual(again.status, 0);
    assert.match(again.stderr.trim(), /^jf: error: cannot listen on 127\.0\.0\.1:\d+ \(port in use/);
  } finally {
    await s.stop();
  }
});

test('--config sets the default decoder from a jf tune file; requests still pick their own', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'jf-serve-'));
  const config = path.join(dir, 'tuned.json');
  // draft-policy=fixed: every row sent, so the forward count depends on W, N and G alone (priced, it would
  // follow this machine's timings, which differ between the server and jf generate under load).
  writeFileSync(config, JSON.stringify({ format: 'jf-tune-1', decoder: 'lookahead:W=4:N=3:G=4:draft-policy=fixed', why: 'test' }));
  const s = await startServer(['--config', config]);
  try {
    await s.ready();
    assert.equal((await (await fetch(`${s.base}/props`)).json()).decoder, 'lookahead');
    const want = await generate(PROMPTS[4], 32, 'lookahead:W=4:N=3:G=4:draft-policy=fixed');
    const r = await post(s.base, '/v1/completions', { prompt: PROMPTS[4], max_tokens: 32 });
    assert.equal(r.json.jf.decoder, 'lookahead');
    assert.deepEqual(r.json.jf.tokens, want.tokens);
    assert.equal(r.json.jf.forwards, want.n_forwards);  // W=4 N=3 G=4, not the flag defaults
    const own = await post(s.base, '/v1/completions', { prompt: PROMPTS[4], max_tokens: 8, decoder: 'ar' });
    assert.equal(own.json.jf.decoder, 'ar');
    writeFileSync(config, '{"format": "other"}');
    const bad = spawnSync(JF, ['serve', '-m', MODEL, '--port', '0', '--config', config], { encoding: 'utf8', timeout: 10000 });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr.trim(), /^jf: error: .*tuned\.json/);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('/health is 503 while the model loads', async () => {
  const s = await startServer([], { JF_SERVE_TEST_LOAD_DELAY_MS: '1500' });
  try {
    const h = await fetch(`${s.base}/health`);
    assert.equal(h.status, 503);
    assert.deepEqual((await h.json()).error.message, 'Loading model');
    assert.equal((await post(s.base, '/v1/completions', { prompt: 'x' })).status, 503);
    await s.ready();
  } finally {
    await s.stop();
  }
});

// A server with one long completion in flight (attention over up to maxTokens tokens: still running when a
// signal comes 150 ms later), for the drain tests.
async function serverWithLongRequest(maxTokens, drainTimeout) {
  const s = await startServer(['--ctx', String(maxTokens + 1000), '--drain-timeout', drainTimeout]);
  await s.ready();
  const inflight = post(s.base, '/v1/completions', { prompt: 'Once', max_tokens: maxTokens, ignore_eos: true });
  await sleep(150);
  return { s, inflight };
}

test('SIGTERM: in-flight requests finish, new ones are refused, exit 0', async () => {
  // 20k tokens take ~10 s on an idle machine and over 30 s (the default drain timeout) on a loaded one.
  const { s, inflight } = await serverWithLongRequest(20000, '600');
  s.proc.kill('SIGTERM');
  await sleep(50);
  const late = await post(s.base, '/v1/completions', { prompt: 'x', max_tokens: 2 }).catch(() => ({ status: 'refused' }));
  assert.ok(late.status === 503 || late.status === 'refused', String(late.status));
  const r = await inflight;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.usage.completion_tokens, 20000);
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
  assert.match(s.log(), /draining 1 request/);
});

test('SIGTERM past --drain-timeout cancels what is left and still exits 0', async () => {
  const { s, inflight } = await serverWithLongRequest(59000, '0.2');
  s.proc.kill('SIGINT');
  const r = await inflight;
  assert.equal(r.status, 503, r.text);
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
  assert.match(s.log(), /cancelled/);
});

test('a second signal ends the drain at once', async () => {
  const { s, inflight } = await serverWithLongRequest(59000, '600');
  s.proc.kill('SIGTERM');
  await sleep(300);
  const t = Date.now();
  s.proc.kill('SIGINT');
  const r = await inflight;
  assert.equal(r.status, 503, r.text);
  const { code } = await s.exited;
  assert.equal(code, 0, s.log());
  assert.ok(Date.now() - t < 5000, `${Date.now() - t} ms after the second signal`);
  assert.match(s.log(), /second signal/);
});
