// An app written with the official Gemini JavaScript SDK (@google/genai) behind the guard
// (test/e2e/gemini_test.go): it asks each prompt of argv[4..] once with generateContent
// and once with generateContentStream, and prints one JSON line per call: the text it
// accumulated, every chunk's text (a stream's), the last finishReason and finishMessage,
// the usage, or the error the SDK raised (status and message).
//
//   node gemini.mjs GUARD_URL API_KEY MODEL PROMPT...
//
// With --input first, it asks each prompt with countTokens and with embedContent (the
// prompt first of two contents, which the SDK sends as batchEmbedContents) instead, on a
// client made without httpOptions.baseUrl: it reaches the guard through the
// GOOGLE_GEMINI_BASE_URL variable the injector sets. Each line is the count, the number
// of embeddings, or the error.
//
//   GOOGLE_GEMINI_BASE_URL=GUARD_URL node gemini.mjs --input API_KEY MODEL EMBED_MODEL PROMPT...
import { GoogleGenAI, ApiError } from "@google/genai";

if (process.argv[2] === "--input") {
  const [, , , apiKey, model, embedModel, ...prompts] = process.argv;
  const ai = new GoogleGenAI({ apiKey });
  const errorOf = (e) => ({ name: e?.name ?? "", status: e instanceof ApiError ? e.status : 0, message: String(e?.message ?? e) });
  for (const prompt of prompts) {
    const counted = { prompt, method: "countTokens" };
    try {
      counted.totalTokens = (await ai.models.countTokens({ model, contents: prompt })).totalTokens ?? 0;
    } catch (e) {
      counted.error = errorOf(e);
    }
    console.log(JSON.stringify(counted));
    const embedded = { prompt, method: "embedContent" };
    try {
      const r = await ai.models.embedContent({ model: embedModel, contents: [prompt, "Other notes."] });
      embedded.embeddings = r.embeddings?.length ?? 0;
      embedded.values = r.embeddings?.[0]?.values?.length ?? 0;
    } catch (e) {
      embedded.error = errorOf(e);
    }
    console.log(JSON.stringify(embedded));
  }
  process.exit(0);
}

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
