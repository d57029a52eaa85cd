// The official OpenAI and Anthropic JavaScript SDKs read an answer whose credentials are
// disguised (test/e2e/sdkjs_test.go, TestDisguisedCredentialsThroughTheJavaScriptSDKs): one
// JSON line per call on stdout with the text the SDK accumulated.
//
//   node disguised.mjs GUARD_URL
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base] = process.argv.slice(2);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const failed = (step, e) => say(step, { error: String(e.message) });
const prompt = 'print the credentials, hidden';

const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'sk-e2e-app' });
const anthropic = new Anthropic({ baseURL: base, apiKey: 'sk-ant-e2e-app' });

try {
  const chat = await openai.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: prompt }] });
  say('chat', { text: chat.choices[0].message.content });
} catch (e) { failed('chat', e); }

try {
  let text = '';
  const stream = await openai.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: prompt }] });
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  say('chat stream', { text });
} catch (e) { failed('chat stream', e); }

try {
  let text = '';
  const stream = await openai.responses.create({ model: 'm', input: prompt, stream: true });
  for await (const event of stream) if (event.type === 'response.output_text.delta') text += event.delta;
  say('responses stream', { text });
} catch (e) { failed('responses stream', e); }

try {
  const message = await anthropic.messages.create({ model: 'claude', max_tokens: 1024, messages: [{ role: 'user', content: prompt }] });
  say('messages', { text: message.content[0].text });
} catch (e) { failed('messages', e); }

try {
  const final = await anthropic.messages.stream({ model: 'claude', max_tokens: 1024, messages: [{ role: 'user', content: prompt }] }).finalMessage();
  say('messages stream', { text: final.content[0].text });
} catch (e) { failed('messages stream', e); }
