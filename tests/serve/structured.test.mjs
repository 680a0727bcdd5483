// Structured output through the real server: response_format json_schema / json_object, llama-server's
// grammar, logit_bias and the penalties. Every answer equals `jf generate` with the same flags (every decoder
// the same text), every JSON answer validates with ajv against its schema, and bad schemas, grammars and
// biases are 400s naming the problem.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startServer, post, postStream, generate, openaiModule } from './helpers.mjs';

const require = createRequire(path.join(process.env.JF_NODE_MODULES, 'package.json'));
const Ajv = require('ajv').default ?? require('ajv');
const ajv = new Ajv({ strict: false });

const PROMPTS = ['Once upon a time', 'Tom and Lily went to the park', 'The cat sat on the mat. The cat'];
const DECODERS = ['ar', 'jacobi:block=8', 'pld', 'lookahead:W=4:N=3:G=4', 'multiblock:block=8'];
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    mood: { enum: ['happy', 'sad', 'sleepy'] },
    age: { type: 'integer', minimum: 1, maximum: 99 },
    friends: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 },
  },
  required: ['name', 'mood', 'age', 'friends'],
  additionalProperties: false,
};

let srv;
let dir;
before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'jf-structured-'));
  srv = await startServer(['-P', '4', '--chat-format', 'chatml']);
  await srv.ready();
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  const { code } = await srv.stop();
  assert.equal(code, 0, srv.log());
});

function schemaFile(schema) {
  const f = path.join(dir, `schema-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(f, JSON.stringify(schema));
  return f;
}

const jsonSchema = (schema) => ({ type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } });

test('json_schema: every decoder gives jf generate --json-schema\'s text, and it validates', async () => {
  const validate = ajv.compile(PERSON);
  const file = schemaFile(PERSON);
  let jumped = 0, ended = 0;
  for (const prompt of PROMPTS) {
    const want = await generate(prompt, 160, 'ar', ['--json-schema', file]);
    if (want.stop_reason === 'eos') {
      ended++;
      assert.ok(validate(JSON.parse(want.text)), `${want.text}: ${ajv.errorsText(validate.errors)}`);
    }
    for (const decoder of DECODERS) {
      const r = await post(srv.base, '/v1/completions', { prompt, max_tokens: 160, decoder, response_format: jsonSchema(PERSON) });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].text, want.text, decoder);
      assert.equal(r.json.choices[0].finish_reason, want.stop_reason === 'eos' ? 'stop' : 'length');
      if (decoder.startsWith('jacobi')) jumped += r.json.jf.tokens_per_forward > 1 ? 1 : 0;
    }
  }
  assert.equal(jumped, PROMPTS.length, 'jacobi with jump-forward should commit more than a token a forward');
  assert.ok(ended >= 2, `only ${ended} answers ended within max_tokens`);
});

test('json_whitespace compact: no whitespace, jf generate --json-compact\'s text, jump-forward commits more a forward', async () => {
  const file = schemaFile(PERSON);
  const validate = ajv.compile(PERSON);
  let arForwards = 0, jacobiForwards = 0;
  for (const prompt of PROMPTS) {
    const want = await generate(prompt, 160, 'ar', ['--json-schema', file, '--json-compact']);
    assert.ok(!/[ \n\t](?=(?:[^"]*"[^"]*")*[^"]*$)/.test(want.text), `whitespace outside strings: ${want.text}`);
    // jacobi with every draft row sent: its forward count does not depend on the row pricing, which measures
    // this (possibly busy) machine
    for (const decoder of ['ar', 'jacobi:block=8:draft-policy=fixed', 'pld']) {
      const r = await post(srv.base, '/v1/completions',
        { prompt, max_tokens: 160, decoder, response_format: jsonSchema(PERSON), json_whitespace: 'compact' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].text, want.text, decoder);
      if (r.json.choices[0].finish_reason === 'stop') assert.ok(validate(JSON.parse(r.json.choices[0].text)), r.json.choices[0].text);
      if (decoder === 'ar') arForwards += r.json.jf.forwards;
      if (decoder.startsWith('jacobi')) jacobiForwards += r.json.jf.forwards;
    }
  }
  assert.ok(arForwards >= 1.5 * jacobiForwards, `ar ${arForwards} forwards, jacobi ${jacobiForwards}`);
});

test('json_schema streamed and through chat completions, with the official openai client', async () => {
  const OpenAI = openaiModule().default ?? openaiModule().OpenAI;
  const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const validate = ajv.compile(PERSON);
  const messages = [{ role: 'user', content: 'Describe a person.' }];
  const whole = await client.chat.completions.create({ model: 'm', messages, max_tokens: 120, response_format: jsonSchema(PERSON) });
  const text = whole.choices[0].message.content;
  assert.ok(validate(JSON.parse(text)), text);
  let streamed = '';
  const stream = await client.chat.completions.create({
    model: 'm', messages, max_tokens: 120, response_format: jsonSchema(PERSON), stream: true, decoder: 'jacobi',
  });
  for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(streamed, text);
  const s = await postStream(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 120, response_format: jsonSchema(PERSON) });
  const joined = s.events.map((e) => e.choices[0]?.text ?? '').join('');
  assert.ok(validate(JSON.parse(joined)), joined);
});

test('json_object gives a JSON object; a grammar gives its language; sampling stays inside them', async () => {
  for (const temperature of [0, 0.8]) {
    const r = await post(srv.base, '/v1/completions',
      { prompt: PROMPTS[1], max_tokens: 200, temperature, seed: 3, response_format: { type: 'json_object' } });
    assert.equal(r.status, 200, r.text);
    if (r.json.choices[0].finish_reason === 'stop') {
      const v = JSON.parse(r.json.choices[0].text);
      assert.ok(v && typeof v === 'object' && !Array.isArray(v), r.json.choices[0].text);
    }
  }
  const grammar = 'root ::= "The " ("cat" | "dog") " was " [a-z]{2,8} "."';
  for (const decoder of ['ar', 'pld', 'jacobi']) {
    const r = await post(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 40, decoder, grammar });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.choices[0].text, /^The (cat|dog) was [a-z]{2,8}\.$/);
  }
});

test('random schemas: every answer that ends validates, and every decoder agrees', async () => {
  const rng = (() => { let s = 12345; return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648; })();
  const pick = (a) => a[Math.floor(rng() * a.length)];
  const leaf = () => pick([
    { type: 'string', maxLength: 1 + Math.floor(rng() * 10) }, { type: 'integer' }, { type: 'boolean' },
    { enum: ['red', 'green', 'blue'] }, { type: 'number' }, { const: 'fixed' }, { type: 'null' },
    { anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 4 }] },
  ]);
  const node = (depth) => {
    if (depth > 1 || rng() < 0.4) return leaf();
    if (rng() < 0.3) return { type: 'array', items: node(depth + 1), maxItems: 1 + Math.floor(rng() * 3) };
    const properties = {};
    const n = 1 + Math.floor(rng() * 4);
    for (let i = 0; i < n; i++) properties[`k${i}`] = node(depth + 1);
    const keys = Object.keys(properties);
    return { type: 'object', properties, required: keys.filter(() => rng() < 0.7), additionalProperties: false };
  };
  let ended = 0;
  for (let i = 0; i < 12; i++) {
    const schema = node(0);
    const validate = ajv.compile(schema);
    const answers = [];
    const prompt = pick(PROMPTS);
    for (const decoder of ['ar', 'jacobi', 'pld']) {
      const r = await post(srv.base, '/v1/completions',
        { prompt, max_tokens: 150, decoder, response_format: jsonSchema(schema) });
      assert.equal(r.status, 200, `${JSON.stringify(schema)}: ${r.text}`);
      answers.push(r.json.choices[0].text);
      if (r.json.choices[0].finish_reason !== 'stop') continue;
      ended++;
      const text = r.json.choices[0].text;
      assert.ok(validate(JSON.parse(text)), `${JSON.stringify(schema)} -> ${text}: ${ajv.errorsText(validate.errors)}`);
    }
    assert.equal(answers[1], answers[0], JSON.stringify(schema));
    assert.equal(answers[2], answers[0], JSON.stringify(schema));
  }
  assert.ok(ended >= 18, `only ${ended} of 36 answers ended within max_tokens`);
});

test('logit_bias and the penalties equal jf generate\'s flags, for every decoder', async () => {
  const base = await generate(PROMPTS[0], 40);
  const banned = base.tokens[1];
  const want = await generate(PROMPTS[0], 40, 'ar',
    ['--logit-bias', `${banned}=-100`, '--presence-penalty', '0.5', '--frequency-penalty', '0.8', '--repeat-penalty', '1.1']);
  assert.ok(!want.tokens.includes(banned));
  assert.notDeepEqual(want.tokens, base.tokens);
  for (const decoder of DECODERS) {
    const r = await post(srv.base, '/v1/completions', {
      prompt: PROMPTS[0], max_tokens: 40, decoder, logit_bias: { [banned]: -100 },
      presence_penalty: 0.5, frequency_penalty: 0.8, repeat_penalty: 1.1,
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.jf.tokens, want.tokens, decoder);
  }
});

test('a schema the answer cannot finish within max_tokens stops with finish_reason length', async () => {
  const schema = { type: 'array', items: { type: 'integer' }, minItems: 30 };
  const r = await post(srv.base, '/v1/completions', { prompt: PROMPTS[0], max_tokens: 8, response_format: jsonSchema(schema) });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].finish_reason, 'length');
  assert.match(r.json.choices[0].text, /^\[/);
});

test('bad schemas, grammars and biases are 400s naming the problem', async () => {
  const cases = [
    [{ response_format: jsonSchema({ type: 'string', format: 'email' }) }, 'response_format', /format 'email'/],
    [{ response_format: jsonSchema({ type: 'array', uniqueItems: true }) }, 'response_format', /uniqueItems/],
    [{ response_format: { type: 'json_schema' } }, 'response_format', /json_schema/],
    [{ response_format: { type: 'xml' } }, 'response_format', /json_object/],
    [{ grammar: 'root ::= "a' }, 'grammar', /unterminated/],
    [{ grammar: 'root ::= root "a"' }, 'grammar', /left recursion/],
    [{ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, 'grammar', /not both/],
    [{ logit_bias: { 999999: 1 } }, 'logit_bias', /not a token id/],
    [{ logit_bias: { 5: 500 } }, 'logit_bias', /-100 to 100/],
    [{ logit_bias: [1, 2] }, 'logit_bias', /object/],
    [{ presence_penalty: 3 }, 'presence_penalty', /between/],
    [{ json_whitespace: 'tight', response_format: { type: 'json_object' } }, 'json_whitespace', /compact/],
    [{ decoder: 'fastcot', response_format: { type: 'json_object' } }, 'decoder', /fastcot/],
  ];
  for (const [extra, param, message] of cases) {
    const r = await post(srv.base, '/v1/completions', { prompt: 'x', max_tokens: 4, ...extra });
    assert.equal(r.status, 400, JSON.stringify(extra));
    assert.equal(r.json.error.param, param, JSON.stringify(extra));
    assert.match(r.json.error.message, message);
  }
});
