// The openai npm SDK against `smartgen serve`: a router in front of a prefill and a decode node
// (ROUTER_URL) and a colocated server (LOCAL_URL), both serving the model as "tiny" and
// "tiny-alias". Through the router, in every transfer mode: n = 2, the penalties, min_p,
// logit_bias and ignore_eos, streamed and not, with the same tokens in every mode; logprobs. Every field
// the server refuses comes back as the SDK's BadRequestError naming it. logprobs and
// top_logprobs through the router in every mode (the same numbers in each) and on the
// colocated server (completions and chat, streamed and not). Exits 1 on the first failure.
import OpenAI from 'openai';

const client = (url) =>
  new OpenAI({ baseURL: `${url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const router = client(process.env.ROUTER_URL);
const local = client(process.env.LOCAL_URL);
const MODEL = 'tiny-alias';

function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function expect400(api, body, param, what) {
  try {
    await api(body);
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param,
          `${what}: 400 naming '${param}'`, { status: e.status, param: e.param, msg: e.message });
    return;
  }
  check(false, `${what}: expected a 400 naming '${param}'`);
}

// --- models and names
const models = await router.models.list();
const ids = models.data.map((m) => m.id);
check(ids.includes('tiny') && ids.includes(MODEL), '/v1/models lists both served names', ids);
check((await router.models.retrieve(MODEL)).id === MODEL, '/v1/models/{id}');
try {
  await router.completions.create({ model: 'gpt-4', prompt: 'x', max_tokens: 1 });
  check(false, 'another model name is 404');
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.code === 'model_not_found', 'another model is 404',
        { status: e.status, code: e.code });
}

// --- through the router, every transfer mode: n = 2 and the sampling fields
const modes = ['colocated', 'full', 'layerwise', 'smartgen', 'auto'];
const sampling = {
  temperature: 0.9, seed: 7, presence_penalty: 0.6, frequency_penalty: 0.4,
  repetition_penalty: 1.2, min_p: 0.02, logit_bias: { '40': 3 }, ignore_eos: true,
};
let reference = null;
let routedLogprobs = null;
const msgs = [{ role: 'user', content: 'hi' }];
for (const mode of modes) {
  const ext = { mode, return_token_ids: true };
  if (mode === 'smartgen') ext.options = { budget_fraction: 1.0, proactive_ratio: 8.0 };
  const r = await router.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 8, n: 2, ...sampling, smartgen: ext,
  });
  check(r.choices.length === 2 && r.choices[0].index === 0 && r.choices[1].index === 1,
        `${mode}: n = 2 gives two choices`, r.choices);
  check(r.usage.completion_tokens === 16, `${mode}: usage counts both choices`, r.usage);
  check(r.choices.every((c) => c.finish_reason === 'length'), `${mode}: ignore_eos runs to length`);
  const tokens = r.smartgen.choices_token_ids;
  if (reference === null) reference = tokens;
  check(JSON.stringify(tokens) === JSON.stringify(reference), `${mode}: same tokens as colocated`,
        { tokens, reference });

  const stream = await router.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 6, n: 2,
    ...sampling, stream: true, stream_options: { include_usage: true }, smartgen: ext,
  });
  const texts = ['', ''];
  const finished = [0, 0];
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      texts[c.index] += c.delta.content ?? '';
      if (c.finish_reason) finished[c.index]++;
    }
  }
  check(finished[0] === 1 && finished[1] === 1, `${mode}: streamed chat ends each choice once`);
  check(usage !== null && usage.completion_tokens === 12, `${mode}: streamed usage`, usage);

  // logprobs through the router: token 1's from the prefill node, the rest from the decode node.
  const lr = await router.completions.create({
    model: MODEL, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 2,
    ignore_eos: true, smartgen: ext,
  });
  const lp = lr.choices[0].logprobs;
  check(lp && lp.token_logprobs.length === 6 && lp.top_logprobs.every((t) => Object.keys(t).length >= 1),
        `${mode}: completions logprobs through the router`, lp);
  if (routedLogprobs === null) routedLogprobs = lp.token_logprobs;
  check(lp.token_logprobs.every((x, i) => Math.abs(x - routedLogprobs[i]) < 1e-3),
        `${mode}: the same logprobs as colocated`, { got: lp.token_logprobs, want: routedLogprobs });
  const chatLp = [];
  for await (const chunk of await router.chat.completions.create({
    model: MODEL, messages: msgs, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
    ignore_eos: true, stream: true, smartgen: ext,
  })) {
    for (const ch of chunk.choices) chatLp.push(...(ch.logprobs?.content ?? []));
  }
  check(chatLp.length === 4 && chatLp.every((e) => e.top_logprobs.length === 2),
        `${mode}: streamed chat logprobs through the router`, chatLp);
}

// --- refused fields: each a 400 naming it
const complete = (b) => router.completions.create(b);
const chat = (b) => router.chat.completions.create(b);
await expect400(complete, { model: MODEL, prompt: 'x', n: 17 }, 'n', 'n past 16');
await expect400(complete, { model: MODEL, prompt: 'x', best_of: 3 }, 'best_of', 'best_of');
await expect400(complete, { model: MODEL, prompt: 'x', suffix: 'end' }, 'suffix', 'suffix');
await expect400(complete, { model: MODEL, prompt: 'x', echo: true, logprobs: 1 }, 'logprobs',
                'echo with logprobs');
await expect400(complete, { model: MODEL, prompt: 'x', presence_penalty: 3 }, 'presence_penalty',
                'presence_penalty out of range');
await expect400(complete, { model: MODEL, prompt: 'x', logit_bias: { '1': 500 } }, 'logit_bias',
                'logit_bias out of range');
await expect400(chat, { model: MODEL, messages: msgs, echo: true }, 'echo', 'chat echo');
await expect400(chat, { model: MODEL, messages: msgs, top_logprobs: 2 }, 'top_logprobs',
                'top_logprobs without logprobs');
await expect400(chat, {
  model: MODEL, messages: msgs,
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
}, 'tools', 'tools');
await expect400(chat, { model: MODEL, messages: msgs, tool_choice: 'auto' }, 'tool_choice',
                'tool_choice');
await expect400(chat, { model: MODEL, messages: msgs, response_format: { type: 'json_object' } },
                'response_format', 'response_format json_object');
await expect400(complete, { model: MODEL, prompt: 'x', min_tokens: 4 }, 'min_tokens',
                'min_tokens');

// --- logprobs on the colocated server
const c = await local.completions.create({
  model: MODEL, prompt: 'Once upon a time', max_tokens: 5, temperature: 0, logprobs: 3, echo: false,
});
const lp = c.choices[0].logprobs;
check(lp && lp.tokens.length === c.usage.completion_tokens &&
      lp.token_logprobs.length === lp.tokens.length && lp.top_logprobs.length === lp.tokens.length &&
      lp.text_offset.length === lp.tokens.length, 'completions logprobs shape', lp);
check(lp.token_logprobs.every((x) => x <= 0) &&
      lp.top_logprobs.every((t, i) => Object.values(t).every((v) => v <= lp.token_logprobs[i] + 1e-6)),
      'greedy: the chosen token is the most likely');
const cc = await local.chat.completions.create({
  model: MODEL, messages: msgs, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
});
const content = cc.choices[0].logprobs.content;
check(content.length === cc.usage.completion_tokens &&
      content.every((e) => e.top_logprobs.length === 2 && Array.isArray(e.bytes)),
      'chat logprobs shape', content);
const streamed = [];
for await (const chunk of await local.chat.completions.create({
  model: MODEL, messages: msgs, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2,
  stream: true,
})) {
  for (const ch of chunk.choices) streamed.push(...(ch.logprobs?.content ?? []));
}
check(JSON.stringify(streamed) === JSON.stringify(content), 'streamed chat logprobs equal');
const two = await local.completions.create({
  model: MODEL, prompt: 'Hello', max_tokens: 4, n: 2, temperature: 1, seed: 3, logprobs: 1,
});
check(two.choices.length === 2 && two.choices.every((ch) => ch.logprobs.tokens.length > 0),
      'colocated n = 2 with logprobs (one prefill, forked)');
console.log('all SDK checks passed');
