// OpenAI tools through the real server, in the chatml (Qwen2.5 / Hermes), llama3 (Llama 3.1), Mistral and
// Phi-4-mini formats on the tiny test model, which never calls a tool of its own accord: so "required" and
// named tools, whose grammar makes every reply a call. Their arguments validate with ajv against the tool's
// parameters; every decoder answers the same; streamed answers equal whole ones; the official client reads
// the calls, whole and streamed; a conversation with calls and results goes back in; "auto" leaves text as
// text, and its calls (llama3's, led there by a logit bias on "{") validate too; bad requests are 400s naming
// the field.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { createRequire } from 'node:module';
import { startServer, post, postStream, openaiModule } from './helpers.mjs';

const require = createRequire(path.join(process.env.JF_NODE_MODULES, 'package.json'));
const Ajv = require('ajv').default ?? require('ajv');
const ajv = new Ajv({ strict: false });

const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 1, maxLength: 16 },
    unit: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'days'],
  additionalProperties: false,
};
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather of a city', parameters: WEATHER, strict: true } },
  { type: 'function', function: { name: 'now', description: 'The time' } },
];
const SCHEMAS = { get_weather: ajv.compile(WEATHER), now: ajv.compile({ type: 'object', additionalProperties: false }) };
const MESSAGES = [{ role: 'system', content: 'You help.' }, { role: 'user', content: 'What is the weather in Paris?' }];
const DECODERS = ['ar', 'jacobi:block=8', 'pld', 'lookahead:W=4:N=3:G=4'];
const REQUIRED = { messages: MESSAGES, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false, max_tokens: 300 };

// A choice's message and finish without the calls' ids (fresh each time).
const answer = (choice) => ({
  finish: choice.finish_reason,
  content: choice.message.content,
  calls: (choice.message.tool_calls ?? []).map((c) => ({ type: c.type, name: c.function.name, arguments: c.function.arguments })),
});

function assertValidCalls(choice, names = ['get_weather', 'now']) {
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
  assert.equal(choice.message.content, null);
  assert.ok(choice.message.tool_calls.length >= 1);
  for (const call of choice.message.tool_calls) {
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.type, 'function');
    assert.ok(names.includes(call.function.name), call.function.name);
    const validate = SCHEMAS[call.function.name];
    assert.ok(validate(JSON.parse(call.function.arguments)), `${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
  }
}

// The streamed answer put together: text, calls (by index), finish.
function joinStream(events) {
  const calls = [];
  let content = '', finish = null;
  for (const e of events) {
    const c = e.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    for (const t of c.delta.tool_calls ?? []) calls[t.index] = { id: t.id, type: t.type, function: { ...t.function } };
    finish = c.finish_reason ?? finish;
  }
  return { finish_reason: finish, message: { content: calls.length ? content || null : content, tool_calls: calls.length ? calls : undefined } };
}

for (const format of ['chatml', 'llama3', 'mistral-v3', 'mistral-v3-tekken', 'phi4-mini']) {
  describe(`tools in the ${format} format`, () => {
    let srv;
    before(async () => {
      srv = await startServer(['-P', '4', '--chat-format', format]);
      await srv.ready();
    });
    after(async () => {
      const { code } = await srv.stop();
      assert.equal(code, 0, srv.log());
    });

    test('required: a valid call, the same from every decoder, greedy and sampled', async () => {
      let want = null;
      for (const decoder of DECODERS) {
        const r = await post(srv.base, '/v1/chat/completions', { ...REQUIRED, decoder });
        assert.equal(r.status, 200, r.text);
        assertValidCalls(r.json.choices[0]);
        assert.equal(r.json.choices[0].message.tool_calls.length, 1);
        if (want) assert.deepEqual(answer(r.json.choices[0]), want, decoder);
        else want = answer(r.json.choices[0]);
        if (decoder.startsWith('jacobi')) assert.ok(r.json.jf.tokens_per_forward > 1, 'the forced text should go as drafts');
      }
      for (const seed of [1, 2, 3]) {
        const r = await post(srv.base, '/v1/chat/completions', { ...REQUIRED, temperature: 0.9, seed });
        assert.equal(r.status, 200, r.text);
        assertValidCalls(r.json.choices[0]);
      }
    });

    test('a named tool is the one called', async () => {
      for (const name of ['now', 'get_weather']) {
        const r = await post(srv.base, '/v1/chat/completions',
          { ...REQUIRED, tool_choice: { type: 'function', function: { name } }, decoder: 'jacobi:block=8' });
        assert.equal(r.status, 200, r.text);
        assertValidCalls(r.json.choices[0], [name]);
      }
    });

    test('streamed calls equal the whole answer\'s', async () => {
      for (const body of [REQUIRED, { ...REQUIRED, tool_choice: 'auto', max_tokens: 40 }, { ...REQUIRED, parallel_tool_calls: true, max_tokens: 60 }]) {
        const whole = await post(srv.base, '/v1/chat/completions', body);
        assert.equal(whole.status, 200, whole.text);
        const s = await postStream(srv.base, '/v1/chat/completions', body);
        assert.equal(s.status, 200);
        assert.ok(s.done);
        assert.deepEqual(answer(joinStream(s.events)), answer(whole.json.choices[0]), JSON.stringify(body));
        const last = s.events.at(-1).choices[0];
        assert.deepEqual(last.delta, {});
      }
    });

    test('a reply cut by max_tokens inside a call is text, finish "length"', async () => {
      const r = await post(srv.base, '/v1/chat/completions', { ...REQUIRED, max_tokens: 12 });
      assert.equal(r.json.choices[0].finish_reason, 'length');
      assert.equal(r.json.choices[0].message.tool_calls, undefined);
      assert.ok(r.json.choices[0].message.content.length > 0);
    });

    test('"auto": the model\'s text stays text; "none" leaves the tools out of the prompt', async () => {
      const auto = await post(srv.base, '/v1/chat/completions', { ...REQUIRED, tool_choice: 'auto', max_tokens: 30 });
      assert.equal(auto.status, 200, auto.text);
      const c = auto.json.choices[0];
      assert.equal(c.message.tool_calls, undefined);
      assert.equal(typeof c.message.content, 'string');
      assert.ok(['stop', 'length'].includes(c.finish_reason));
      const none = await post(srv.base, '/v1/chat/completions', { ...REQUIRED, tool_choice: 'none', max_tokens: 30 });
      const plain = await post(srv.base, '/v1/chat/completions', { messages: MESSAGES, max_tokens: 30 });
      assert.equal(none.json.usage.prompt_tokens, plain.json.usage.prompt_tokens);
      assert.equal(none.json.choices[0].message.content, plain.json.choices[0].message.content);
      assert.ok(auto.json.usage.prompt_tokens > plain.json.usage.prompt_tokens + 50);
    });

    test('"auto": every call validates (its grammar is text, then calls by their schemas)', async () => {
      // llama3's call is the whole reply and text may not start with "{": a bias on "{" (the stories model's
      // token 126) leads the reply into a call. Other formats' markers are words the tiny model never writes.
      const bias = format === 'llama3' ? { logit_bias: { 126: 100 } } : {};
      let calls = 0;
      for (const seed of [1, 2, 3, 4]) {
        const body = { messages: MESSAGES, tools: TOOLS, max_tokens: 120, temperature: 1.2, seed, ...bias };
        const r = await post(srv.base, '/v1/chat/completions', body);
        assert.equal(r.status, 200, r.text);
        const c = r.json.choices[0];
        if (!c.message.tool_calls) continue;
        calls++;
        for (const call of c.message.tool_calls) {
          const validate = SCHEMAS[call.function.name];
          assert.ok(validate(JSON.parse(call.function.arguments)), `${call.function.arguments}: ${ajv.errorsText(validate.errors)}`);
        }
      }
      if (format === 'llama3') assert.ok(calls > 0, 'the bias should have led to calls');
      // With response_format: either its JSON or calls.
      const r = await post(srv.base, '/v1/chat/completions', { messages: MESSAGES, tools: TOOLS, max_tokens: 60,
        response_format: { type: 'json_object' }, ...bias });
      assert.equal(r.status, 200, r.text);
      const c = r.json.choices[0];
      if (!c.message.tool_calls && c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content), 'object');
    });

    test('a conversation with a call and its result goes back in', async () => {
      const first = await post(srv.base, '/v1/chat/completions', REQUIRED);
      const msg = first.json.choices[0].message;
      const messages = [...MESSAGES, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: '{"temp": 21}' }];
      const next = await post(srv.base, '/v1/chat/completions', { messages, tools: TOOLS, max_tokens: 20 });
      assert.equal(next.status, 200, next.text);
      assert.ok(next.json.usage.prompt_tokens > first.json.usage.prompt_tokens);
      const again = await post(srv.base, '/v1/chat/completions', { messages, tools: TOOLS, tool_choice: 'required', parallel_tool_calls: false });
      assertValidCalls(again.json.choices[0]);
    });

    test('the official openai client reads the calls, whole and streamed', async () => {
      const OpenAI = openaiModule().default ?? openaiModule().OpenAI;
      const client = new OpenAI({ baseURL: `${srv.base}/v1`, apiKey: 'unused', maxRetries: 0 });
      const body = { model: 'm', ...REQUIRED };
      const whole = await client.chat.completions.create(body);
      assertValidCalls(whole.choices[0]);
      const calls = [];
      for await (const chunk of await client.chat.completions.create({ ...body, stream: true }))
        for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) calls[t.index] = t;
      assert.equal(calls[0].function.arguments, whole.choices[0].message.tool_calls[0].function.arguments);
      // The stream helper accumulates the calls, and parses a strict tool's arguments.
      const done = [];
      const stream = client.chat.completions.stream(body).on('tool_calls.function.arguments.done', (e) => done.push(e));
      const final = await stream.finalChatCompletion();
      assertValidCalls(final.choices[0]);
      assert.deepEqual(answer(final.choices[0]), answer(whole.choices[0]));
      assert.equal(done.length, 1);
      if (done[0].name === 'get_weather') assert.deepEqual(done[0].parsed_arguments, JSON.parse(done[0].arguments));
    });
  });
}

test('bad tool requests: 400 naming the field', async () => {
  const srv = await startServer(['--chat-format', 'chatml']);
  const gemma = await startServer(['--chat-format', 'gemma']);
  try {
    await srv.ready();
    await gemma.ready();
    const named = (name) => ({ type: 'function', function: { name } });
    const cases = [
      [{ tools: 'x' }, 'tools', /array/],
      [{ tools: [{ type: 'function', function: { name: 'no spaces' } }] }, 'tools[0].function.name', /letters/],
      [{ tools: [{ type: 'function', function: { name: 'f', parameters: [] } }] }, 'tools[0].function.parameters', /object/],
      [{ tools: TOOLS, tool_choice: named('nope') }, 'tool_choice', /not among the tools/],
      [{ tools: TOOLS, tool_choice: 'always' }, 'tool_choice', /must be/],
      [{ tool_choice: 'required' }, 'tool_choice', /needs 'tools'/],
      [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', patternProperties: {} } } }], tool_choice: 'required' },
        'tools[0].function.parameters', /unsupported keyword 'patternProperties'/],
      [{ tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', /response_format/],
      [{ functions: [{ name: 'f' }] }, 'functions', /'tools'/],
      [{ messages: [...MESSAGES, { role: 'tool', content: '1' }] }, 'messages[2].tool_call_id', /tool_call_id/],
      [{ messages: [...MESSAGES, { role: 'tool', tool_call_id: 'c', content: '1' }] }, 'messages[2]', /follow/],
      [{ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{' } }] }] },
        'messages[0].tool_calls[0].function.arguments', /JSON object/],
    ];
    for (const [body, param, message] of cases) {
      const r = await post(srv.base, '/v1/chat/completions', { messages: MESSAGES, ...body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.json.error.param, param, r.text);
      assert.match(r.json.error.message, message);
    }
    const completions = await post(srv.base, '/v1/completions', { prompt: 'x', tools: TOOLS });
    assert.equal(completions.status, 400);
    assert.equal(completions.json.error.param, 'tools');
    const noSyntax = await post(gemma.base, '/v1/chat/completions', { messages: MESSAGES, tools: TOOLS });
    assert.equal(noSyntax.status, 400);
    assert.equal(noSyntax.json.error.param, 'tools');
    assert.match(noSyntax.json.error.message, /chat format 'gemma' has no tool syntax/);
    assert.equal((await post(gemma.base, '/v1/chat/completions', { messages: MESSAGES, tools: TOOLS, tool_choice: 'none', max_tokens: 2 })).status, 200);
  } finally {
    await srv.stop();
    await gemma.stop();
  }
});
