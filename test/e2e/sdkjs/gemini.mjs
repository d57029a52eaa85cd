// An app written with the official Gemini JavaScript SDK (@google/genai) behind the guard
// (test/e2e/gemini_test.go): it asks each prompt of argv[4..] once with generateContent
// and once with generateContentStream, and prints one JSON line per call: the text it
// accumulated, every chunk's text (a stream's), the last finishReason and finishMessage,
// the usage, or the error the SDK raised (status and message).
//
//   node gemini.mjs GUARD_URL API_KEY MODEL PROMPT...
import { GoogleGenAI, ApiError } from "@google/genai";

const [, , baseUrl, apiKey, model, ...prompts] = process.argv;
const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl } });

function finishOf(response, out) {
  const c = response.candidates?.[0];
  if (c?.finishReason) {
    out.finishReason = c.finishReason;
    out.finishMessage = c.finishMessage ?? "";
  }
  if (response.usageMetadata) {
    out.promptTokens = response.usageMetadata.promptTokenCount ?? 0;
    out.outputTokens = response.usageMetadata.candidatesTokenCount ?? 0;
  }
}

async function call(prompt, stream) {
  const out = { prompt, stream, text: "", chunks: [] };
  try {
    if (stream) {
      const it = await ai.models.generateContentStream({ model, contents: prompt });
      for await (const chunk of it) {
        const t = chunk.text ?? "";
        out.chunks.push(t);
        out.text += t;
        finishOf(chunk, out);
      }
    } else {
      const r = await ai.models.generateContent({ model, contents: prompt });
      out.text = r.text ?? "";
      finishOf(r, out);
    }
  } catch (e) {
    out.error = { name: e?.name ?? "", status: e instanceof ApiError ? e.status : 0, message: String(e?.message ?? e) };
  }
  return out;
}

for (const prompt of prompts) {
  for (const stream of [false, true]) {
    console.log(JSON.stringify(await call(prompt, stream)));
  }
}
