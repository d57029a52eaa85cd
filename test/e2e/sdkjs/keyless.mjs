// The official OpenAI and Anthropic JavaScript SDKs as a keyless app configures them: the
// guard's base URL and the injector's placeholder key, the SDKs' default retries. One JSON
// line per step on stdout; test/e2e/sdkjs_test.go judges them.
//
//   node keyless.mjs GUARD_URL PLACEHOLDER OWN_KEY
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base, placeholder, ownKey] = process.argv.slice(2);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const failed = (step, e) => say(step, { status: e.status ?? 0, code: e.error?.code ?? e.error?.error?.type ?? '', message: String(e.message) });

const openai = new OpenAI({ baseURL: base + '/v1', apiKey: placeholder });
const anthropic = new Anthropic({ baseURL: base, apiKey: placeholder });

try {
  const chat = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  say('chat', { text: chat.choices[0].message.content, outputTokens: chat.usage?.completion_tokens ?? 0 });
} catch (e) { failed('chat', e); }

try {
  let text = '';
  let outputTokens = 0;
  const stream = await openai.chat.completions.create({
    model: 'm', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }],
  });
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) outputTokens = chunk.usage.completion_tokens;
  }
  say('chat stream', { text, outputTokens });
} catch (e) { failed('chat stream', e); }

try {
  let text = '';
  const stream = await openai.responses.create({ model: 'm', input: 'hi', stream: true });
  for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
  say('responses stream', { text });
} catch (e) { failed('responses stream', e); }

try {
  const message = await anthropic.messages.create({ model: 'claude', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
  say('messages', { text: message.content[0].text, outputTokens: message.usage.output_tokens });
} catch (e) { failed('messages', e); }

try {
  const final = await anthropic.messages.stream({ model: 'claude', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
  say('messages stream', { text: final.content[0].text });
} catch (e) { failed('messages stream', e); }

try {
  const own = new OpenAI({ baseURL: base + '/v1', apiKey: ownKey });
  await own.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  say('own key', { status: 200 });
} catch (e) { failed('own key', e); }
