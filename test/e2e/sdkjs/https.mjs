// The official OpenAI and Anthropic JavaScript SDKs calling a guard that serves HTTPS (a
// SharedGuard with spec.tls), configured as docs/shared-guard.md tells an app to: the
// guard's https base URL, and the CA that issued its certificate in NODE_EXTRA_CA_CERTS,
// set by the caller. Nothing here trusts a CA itself. One JSON line per step on stdout;
// test/e2e/sdkjs_tls_test.go judges them.
//
//   NODE_EXTRA_CA_CERTS=ca.pem node https.mjs GUARD_URL API_KEY MAX_RETRIES
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [base, apiKey, retries] = process.argv.slice(2);
const maxRetries = Number(retries);
const say = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
const failed = (step, e) => say(step, {
  error: e.constructor?.name ?? 'Error',
  cause: String(e.cause?.code ?? e.cause?.cause?.code ?? e.code ?? ''),
  status: e.status ?? 0,
});

const openai = new OpenAI({ baseURL: base + '/v1', apiKey, maxRetries });
const anthropic = new Anthropic({ baseURL: base, apiKey, maxRetries });
const prompt = [{ role: 'user', content: 'How do I reach Ana?' }];

try {
  const chat = await openai.chat.completions.create({ model: 'm', messages: prompt });
  say('chat', { text: chat.choices[0].message.content });
} catch (e) { failed('chat', e); }

try {
  let text = '';
  const stream = await openai.chat.completions.create({ model: 'm', stream: true, messages: prompt });
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  say('chat stream', { text });
} catch (e) { failed('chat stream', e); }

try {
  const final = await anthropic.messages.stream({ model: 'claude', max_tokens: 64, messages: prompt }).finalMessage();
  say('messages stream', { text: final.content[0].text });
} catch (e) { failed('messages stream', e); }
